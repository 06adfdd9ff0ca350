/*
 * channels_groups.c - seatctl's commands for how a venue sells, over the API as admin: what a
 * sales channel keeps on a show (channel set|release), and event groups: shows sold together
 * (group create, group show).
 */
#include "http.h"
#include "seatctl.h"
#include "domain/keys.h"

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

/* The show ids of --shows ("42,16427,...") as a JSON array, into '*out' (owned, cJSON_Delete).
 * Returns 0, or EXIT_USAGE (printed) for an id that is no show id or fewer than two ids. */
static int parse_shows(const char *list, cJSON **out)
{
    cJSON *ids = cJSON_CreateArray();
    for (const char *p = list;; p++) {
        size_t len = strcspn(p, ",");
        char id[SEATD_ID_MAX];
        snprintf(id, sizeof id, "%.*s", (int)(len < sizeof id ? len : sizeof id - 1), p);
        int rc = len < sizeof id ? seatctl_check_show_id(id)
                                 : seatctl_usage_error("'%.*s...' is not a show id", 20, p);
        if (rc) {
            cJSON_Delete(ids);
            return rc;
        }
        cJSON_AddItemToArray(ids, cJSON_CreateString(id));
        p += len;
        if (*p == '\0')
            break;
    }
    if (cJSON_GetArraySize(ids) < 2) {
        cJSON_Delete(ids);
        return seatctl_usage_error("a group needs at least two shows (--shows SHOW,SHOW[,...])");
    }
    *out = ids;
    return 0;
}

/* Prints a group answer's id, title and shows: "group 42-g...: "Season", shows 42,16427". */
static void print_group(const char *verb, const cJSON *g)
{
    printf("%sgroup %s: \"%s\", shows ", verb, seatctl_tstr(g, "id"), seatctl_tstr(g, "title"));
    const cJSON *id = NULL;
    int first = 1;
    cJSON_ArrayForEach(id, cJSON_GetObjectItemCaseSensitive(g, "showIds"))
    {
        const char *s = cJSON_GetStringValue(id);
        printf("%s%s", first ? "" : ",", s ? s : "?");
        first = 0;
    }
    printf("\n");
}

/* group create TITLE --shows ...: POST /v1/groups as admin. */
int seatctl_cmd_group_create(seatctl_opts_t *o)
{
    if (o->shows == NULL)
        return seatctl_usage_error("group create needs --shows SHOW,SHOW[,...]");
    cJSON *ids = NULL;
    int rc = parse_shows(o->shows, &ids);
    if (rc)
        return rc;
    cJSON *body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "title", o->args[0]);
    cJSON_AddItemToObject(body, "showIds", ids);
    char *text = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    seatctl_http_res_t res;
    rc = seatctl_http_admin(o, "POST", "/v1/groups", text, &res);
    free(text);
    if (rc >= 0)
        return rc;
    if (o->json)
        return seatctl_print_answer(o, &res);
    print_group("created ", res.json);
    seatctl_http_res_free(&res);
    return EXIT_OK;
}

/* group show GROUPID: GET /v1/groups/{id}, a public read. */
int seatctl_cmd_group_show(seatctl_opts_t *o)
{
    int rc = seatctl_check_id(o->args[0], 'g');
    if (rc)
        return rc;
    char path[128];
    snprintf(path, sizeof path, "/v1/groups/%s", o->args[0]);
    seatctl_http_res_t res;
    if ((rc = seatctl_http_public(o, path, &res)) >= 0)
        return rc;
    return seatctl_print_answer(o, &res);
}
