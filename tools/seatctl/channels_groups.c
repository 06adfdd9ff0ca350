/*
 * channels_groups.c - seatctl's commands for how a venue sells, over the API as admin: what a
 * sales channel keeps on a show (channel set|release).
 */
#include "http.h"
#include "seatctl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* channel set / release: the admin route of channel o->args[1] of show o->args[0]. */
static int channel_cmd(seatctl_opts_t *o, const char *method, const char *body)
{
    int rc = seatctl_check_show_id(o->args[0]);
    if (rc)
        return rc;
    char path[160];
    snprintf(path, sizeof path, "/v1/admin/shows/%s/channels/%.40s", o->args[0], o->args[1]);
    seatctl_http_res_t res;
    if ((rc = seatctl_http_admin(o, method, path, body, &res)) >= 0)
        return rc;
    if (o->json)
        return seatctl_print_answer(o, &res);
    printf("show %s: channel %s %s, version %.0f\n", o->args[0], o->args[1],
           strcmp(method, "DELETE") == 0 ? "released" : "set",
           cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(res.json, "version")));
    seatctl_http_res_free(&res);
    return EXIT_OK;
}

int seatctl_cmd_channel_set(seatctl_opts_t *o)
{
    char why[512];
    if (o->body == NULL)
        return seatctl_usage_error("channel set needs --body FILE");
    cJSON *body = seatctl_read_json_file(o->body, why, sizeof why);
    if (body == NULL)
        return seatctl_usage_error("%s", why);
    char *text = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    int rc = channel_cmd(o, "PUT", text);
    free(text);
    return rc;
}

int seatctl_cmd_channel_release(seatctl_opts_t *o)
{
    return channel_cmd(o, "DELETE", NULL);
}
