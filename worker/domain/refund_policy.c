/*
 * refund_policy.c - the shape of a show's refund policy; see refund_policy.h.
 */
#include "domain/refund_policy.h"

#include <cjson/cJSON.h>

int seatd_refund_policy_valid(const struct cJSON *policy)
{
    const cJSON *p = policy;
    int n = cJSON_GetArraySize(p);
    if (!cJSON_IsArray(p) || n < 1 || n > SEATD_REFUND_POLICY_MAX_TIERS)
        return 0;
    const cJSON *tier = NULL;
    double seen[SEATD_REFUND_POLICY_MAX_TIERS];
    int nseen = 0;
    cJSON_ArrayForEach(tier, p)
    {
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(tier, "beforeSeconds");
        const cJSON *pc = cJSON_GetObjectItemCaseSensitive(tier, "percent");
        if (!cJSON_IsObject(tier) || !cJSON_IsNumber(b) || !cJSON_IsNumber(pc))
            return 0;
        double bv = cJSON_GetNumberValue(b), pv = cJSON_GetNumberValue(pc);
        if (bv < 0 || bv > 365.0 * 86400 || bv != (double)(long long)bv || pv < 0 || pv > 100 ||
            pv != (double)(long long)pv)
            return 0;
        /* Two tiers at one beforeSeconds would leave the refund to the order a sort leaves
         * them in (cancel.lua): which one applies is not defined. */
        for (int i = 0; i < nseen; i++)
            if (seen[i] == bv)
                return 0;
        seen[nseen++] = bv;
    }
    return 1;
}
