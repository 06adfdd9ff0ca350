/*
 * holds_bookings.c - seatctl's admin commands on any user's holds and bookings (hold
 * show|release, booking show|cancel) and on a show's expired holds (reap), over the API.
 */
#include "http.h"
#include "seatctl.h"
#include "base/timefmt.h"

#include <stdio.h>
#include <string.h>

static int64_t iso_ms(const cJSON *o, const char *name)
{
    int64_t ms = 0;
    const char *s = seatctl_jstr(o, name);
    return s[0] && seatd_time_parse(s, &ms) == 0 ? ms : 0;
}

static int record_cmd(seatctl_opts_t *o, const char *method, const char *what, char kind)
{
    int rc = seatctl_check_id(o->args[0], kind);
    if (rc)
        return rc;
    char path[128];
    snprintf(path, sizeof path, "/v1/admin/%s/%s", what, o->args[0]);
    seatctl_http_res_t res;
    if ((rc = seatctl_http_admin(o, method, path, NULL, &res)) >= 0)
        return rc;
    if (!o->json && kind == 'h') {
        const char *status = seatctl_jstr(res.json, "status");
        int64_t exp = iso_ms(res.json, "expiresAt");
        if (exp && (strcmp(status, "HELD") == 0 || strcmp(status, "PENDING_PAYMENT") == 0)) {
            char left[48];
            int64_t ms = exp - seatctl_now_ms();
            seatctl_format_left(ms > 0 ? ms : 0, left, sizeof left);
            seatctl_print_record(res.json);
            printf("%-14s %s (this machine's clock)\n", "timeLeft", left);
            seatctl_http_res_free(&res);
            return EXIT_OK;
        }
    }
    return seatctl_print_answer(o, &res);
}

int seatctl_cmd_hold_show(seatctl_opts_t *o)
{
    return record_cmd(o, "GET", "holds", 'h');
}

int seatctl_cmd_hold_release(seatctl_opts_t *o)
{
    return record_cmd(o, "DELETE", "holds", 'h');
}

int seatctl_cmd_booking_show(seatctl_opts_t *o)
{
    return record_cmd(o, "GET", "bookings", 'b');
}

int seatctl_cmd_booking_cancel(seatctl_opts_t *o)
{
    return record_cmd(o, "DELETE", "bookings", 'b');
}
int seatctl_cmd_reap(seatctl_opts_t *o)
{
    int rc = seatctl_check_show_id(o->args[0]);
    if (rc)
        return rc;
    char path[96];
    snprintf(path, sizeof path, "/v1/admin/shows/%s/reap", o->args[0]);
    seatctl_http_res_t res;
    if ((rc = seatctl_http_admin(o, "POST", path, NULL, &res)) >= 0)
        return rc;
    if (o->json)
        return seatctl_print_answer(o, &res);
    printf("show %s: reaped %.0f expired holds, %.0f still due, version %.0f\n", o->args[0],
           cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(res.json, "reaped")),
           cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(res.json, "due")),
           cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(res.json, "version")));
    seatctl_http_res_free(&res);
    return EXIT_OK;
}
