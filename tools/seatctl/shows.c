/*
 * shows.c - seatctl's show commands over the API: show create (as admin), show list and
 * show get (public reads).
 */
#include "http.h"
#include "seatctl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void set_member(cJSON *obj, const char *name, cJSON *value)
{
    cJSON_DeleteItemFromObjectCaseSensitive(obj, name);
    cJSON_AddItemToObject(obj, name, value);
}

int seatctl_cmd_show_create(seatctl_opts_t *o)
{
    char why[512];
    if (!o->layout && !o->body)
        return seatctl_usage_error("show create needs --layout FILE or --body FILE");
    cJSON *body = NULL;
    if (o->body) {
        body = seatctl_read_json_file(o->body, why, sizeof why);
        if (!body || !cJSON_IsObject(body)) {
            cJSON_Delete(body);
            return seatctl_usage_error("--body: %s", body ? "not a JSON object" : why);
        }
    } else {
        body = cJSON_CreateObject();
    }
    if (o->layout) {
        cJSON *l = seatctl_read_json_file(o->layout, why, sizeof why);
        cJSON *seats = cJSON_IsArray(l) ? l : cJSON_DetachItemFromObjectCaseSensitive(l, "seats");
        if (!cJSON_IsArray(seats)) {
            if (seats != l)
                cJSON_Delete(seats);
            cJSON_Delete(l);
            cJSON_Delete(body);
            return seatctl_usage_error("--layout: %s", l ? "no seats array" : why);
        }
        set_member(body, "seats", seats);
        if (seats != l)
            cJSON_Delete(l);
    }
    if (o->title)
        set_member(body, "title", cJSON_CreateString(o->title));
    if (o->starts_at)
        set_member(body, "startsAt", cJSON_CreateString(o->starts_at));
    if (o->sales_close_at)
        set_member(body, "salesCloseAt", cJSON_CreateString(o->sales_close_at));
    if (o->hold_ttl) {
        char *end = NULL;
        long ttl = strtol(o->hold_ttl, &end, 10);
        if (*end != '\0' || ttl <= 0) {
            cJSON_Delete(body);
            return seatctl_usage_error("--hold-ttl takes seconds (a positive integer)");
        }
        set_member(body, "holdTtlSeconds", cJSON_CreateNumber((double)ttl));
    }
    if (o->nprices) {
        cJSON *tiers = cJSON_CreateObject();
        for (int i = 0; i < o->nprices; i++) {
            const char *eq = strchr(o->prices[i], '=');
            char *end = NULL;
            long long amount = eq ? strtoll(eq + 1, &end, 10) : -1;
            if (!eq || eq == o->prices[i] || !end || *end != '\0' || eq[1] == '\0' || amount < 0) {
                cJSON_Delete(tiers);
                cJSON_Delete(body);
                return seatctl_usage_error("--price takes TIER=AMOUNT (minor units), not '%s'",
                                           o->prices[i]);
            }
            char tier[64];
            snprintf(tier, sizeof tier, "%.*s", (int)(eq - o->prices[i]), o->prices[i]);
            set_member(tiers, tier, cJSON_CreateNumber((double)amount));
        }
        set_member(body, "priceTiers", tiers);
    }
    static const char *const required[] = {"title", "startsAt", "priceTiers", "seats"};
    static const char *const flag[] = {"--title", "--starts-at", "--price", "--layout"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!cJSON_GetObjectItemCaseSensitive(body, required[i])) {
            cJSON_Delete(body);
            return seatctl_usage_error("show create needs %s (or \"%s\" in --body)", flag[i],
                                       required[i]);
        }
    char *text = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    seatctl_http_res_t res;
    int rc = seatctl_http_admin(o, "POST", "/v1/shows", text, &res);
    free(text);
    if (rc >= 0)
        return rc;
    if (o->json)
        return seatctl_print_answer(o, &res);
    printf("created show %s: \"%s\", %.0f seats, starts %s\n", seatctl_jstr(res.json, "id"),
           seatctl_tstr(res.json, "title"),
           cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(res.json, "seatCount")),
           seatctl_jstr(res.json, "startsAt"));
    seatctl_http_res_free(&res);
    return EXIT_OK;
}

static int parse_count(const char *v, const char *name, long max, long *out)
{
    char *end = NULL;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || errno || n < 1 || n > max)
        return seatctl_usage_error("%s takes 1..%ld", name, max);
    *out = n;
    return 0;
}

int seatctl_cmd_show_list(seatctl_opts_t *o)
{
    long page = 1, size = 100;
    if (o->page && parse_count(o->page, "--page", 100000, &page) != 0)
        return EXIT_USAGE;
    if (o->size && parse_count(o->size, "--size", 100, &size) != 0)
        return EXIT_USAGE;
    cJSON *items = cJSON_CreateArray();
    double total = 0;
    for (;; page++) {
        char path[96];
        snprintf(path, sizeof path, "/v1/shows?page=%ld&size=%ld", page, size);
        seatctl_http_res_t res;
        int rc = seatctl_http_public(o, path, &res);
        if (rc >= 0) {
            cJSON_Delete(items);
            return rc;
        }
        cJSON *got = cJSON_GetObjectItemCaseSensitive(res.json, "items");
        total = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(res.json, "total"));
        int n = cJSON_GetArraySize(got);
        while (cJSON_GetArraySize(got) > 0)
            cJSON_AddItemToArray(items, cJSON_DetachItemFromArray(got, 0));
        seatctl_http_res_free(&res);
        if (o->page || n < size || (double)cJSON_GetArraySize(items) >= total)
            break;
    }
    if (o->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddItemToObject(j, "items", items);
        cJSON_AddNumberToObject(j, "total", total);
        seatctl_print_json(j);
        return EXIT_OK;
    }
    printf("%-8s %-26s %7s  %s\n", "ID", "STARTS", "SEATS", "TITLE");
    const cJSON *s = NULL;
    cJSON_ArrayForEach(s, items)
    {
        printf("%-8s %-26s %7.0f  %s\n", seatctl_tstr(s, "id"), seatctl_tstr(s, "startsAt"),
               cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(s, "seatCount")),
               seatctl_tstr(s, "title"));
    }
    printf("%d of %.0f upcoming shows\n", cJSON_GetArraySize(items), total);
    cJSON_Delete(items);
    return EXIT_OK;
}

int seatctl_cmd_show_get(seatctl_opts_t *o)
{
    int rc = seatctl_check_show_id(o->args[0]);
    if (rc)
        return rc;
    char path[96];
    snprintf(path, sizeof path, "/v1/shows/%s", o->args[0]);
    seatctl_http_res_t res;
    if ((rc = seatctl_http_public(o, path, &res)) >= 0)
        return rc;
    return seatctl_print_answer(o, &res);
}
