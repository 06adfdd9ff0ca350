/*
 * Unit tests for api/openapi.json against the tables it describes: the route tables
 * (worker/routes.c) and the problem table (worker/base/errors.h). A route or a problem type added
 * to either without the document fails here; so does an operation the document describes
 * that no route serves (unless nginx answers it itself: "x-served-by": "nginx").
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/errors.h"
#include "http/router.h"
#include "routes.h"

#define PROBLEM_BASE "https://seatd.dev/problems/"

static cJSON *doc;

static void load_doc(void)
{
    const char *path = SEATD_SOURCE_DIR "/api/openapi.json";
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    long len = ftell(f);
    cr_assert_gt(len, 0);
    rewind(f);
    char *text = malloc((size_t)len);
    cr_assert_eq(fread(text, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    doc = cJSON_ParseWithLength(text, (size_t)len);
    free(text);
    cr_assert_not_null(doc, "api/openapi.json is not valid JSON");
}

static void free_doc(void)
{
    cJSON_Delete(doc);
    doc = NULL;
}

TestSuite(openapi, .init = load_doc, .fini = free_doc);

/* doc[a][b]… (NULL-terminated list of member names), or NULL. */
static const cJSON *at(const cJSON *o, ...)
{
    va_list ap;
    va_start(ap, o);
    for (const char *name; o && (name = va_arg(ap, const char *)) != NULL;)
        o = cJSON_GetObjectItemCaseSensitive(o, name);
    va_end(ap);
    return o;
}

/* The object a "$ref": "#/a/b/c" points to within the document (or 'o' itself). */
static const cJSON *deref(const cJSON *o)
{
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(o, "$ref");
    if (!cJSON_IsString(ref))
        return o;
    cr_assert(strncmp(ref->valuestring, "#/", 2) == 0, "external $ref %s", ref->valuestring);
    char path[256];
    snprintf(path, sizeof(path), "%s", ref->valuestring + 2);
    const cJSON *cur = doc;
    for (char *save = NULL, *seg = strtok_r(path, "/", &save); seg && cur;
         seg = strtok_r(NULL, "/", &save))
        cur = cJSON_GetObjectItemCaseSensitive(cur, seg);
    cr_assert_not_null(cur, "dangling $ref %s", ref->valuestring);
    return cur;
}

/* The operation for 'method' ("GET") on 'pattern', or NULL. */
static const cJSON *operation(const char *method, const char *pattern)
{
    char m[16];
    size_t i = 0;
    for (; method[i] && i + 1 < sizeof(m); i++)
        m[i] = (char)(method[i] >= 'A' && method[i] <= 'Z' ? method[i] + 32 : method[i]);
    m[i] = '\0';
    return at(doc, "paths", pattern, m, NULL);
}

/* True when the operation's security requirements name the bearer scheme (with 'role' among
 * its roles, when 'role' is not NULL). */
static int requires_bearer(const cJSON *op, const char *role)
{
    const cJSON *req = NULL;
    cJSON_ArrayForEach(req, cJSON_GetObjectItemCaseSensitive(op, "security"))
    {
        const cJSON *roles = cJSON_GetObjectItemCaseSensitive(req, "bearer");
        if (!cJSON_IsArray(roles))
            continue;
        if (role == NULL)
            return 1;
        const cJSON *it = NULL;
        cJSON_ArrayForEach(it, roles)
        {
            if (cJSON_IsString(it) && strcmp(it->valuestring, role) == 0)
                return 1;
        }
    }
    return 0;
}

static int has_response(const cJSON *op, const char *status)
{
    return at(op, "responses", status, NULL) != NULL;
}

Test(openapi, is_an_openapi_3_1_document)
{
    const cJSON *v = at(doc, "openapi", NULL);
    cr_assert(cJSON_IsString(v) && strncmp(v->valuestring, "3.1.", 4) == 0);
    cr_assert_not_null(at(doc, "info", "title", NULL));
    cr_assert_not_null(at(doc, "components", "securitySchemes", "bearer", NULL));
}

Test(openapi, describes_every_route_of_the_route_table)
{
    for (size_t i = 0; i < seatd_nroutes; i++) {
        const seatd_route_t *rt = &seatd_routes[i];
        const cJSON *op = operation(rt->method, rt->pattern);
        cr_assert_not_null(op, "route %s %s (%s) is not in api/openapi.json", rt->method,
                           rt->pattern, rt->name);
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(op, "operationId");
        cr_assert(cJSON_IsString(id) && strcmp(id->valuestring, rt->name) == 0,
                  "%s %s: operationId must be the route's name %s", rt->method, rt->pattern,
                  rt->name);
        const cJSON *rs = cJSON_GetObjectItemCaseSensitive(op, "responses");
        cr_assert(cJSON_IsObject(rs) && rs->child, "%s has no responses", rt->name);
        int auth = (rt->flags & (SEATD_ROUTE_AUTH | SEATD_ROUTE_ADMIN)) != 0;
        cr_assert_eq(requires_bearer(op, NULL), auth, "%s: security must %sname bearer", rt->name,
                     auth ? "" : "not ");
        /* Public routes answer 401 only where they check credentials of their own. */
        int own = strcmp(rt->name, "auth_login") == 0 || strcmp(rt->name, "auth_refresh") == 0;
        cr_assert_eq(has_response(op, "401"), auth || own, "%s: 401 %s", rt->name,
                     auth || own ? "missing" : "on a public route");
        int admin = (rt->flags & SEATD_ROUTE_ADMIN) != 0;
        cr_assert_eq(requires_bearer(op, "admin"), admin, "%s: the admin role", rt->name);
        /* 403: the admin role, /metrics from elsewhere, a hold on a queued show without a
         * valid admission (queue-required; a group hold never carries one). */
        int forbids = admin || strcmp(rt->name, "metrics") == 0 ||
                      strcmp(rt->name, "holds_create") == 0 || strcmp(rt->name, "groups_hold") == 0;
        cr_assert_eq(has_response(op, "403"), forbids, "%s: 403", rt->name);
        int body = (rt->flags & SEATD_ROUTE_JSON_BODY) != 0;
        cr_assert_eq(at(op, "requestBody", "content", "application/json", "schema", NULL) != NULL,
                     body, "%s: requestBody", rt->name);
        if (body)
            cr_assert(has_response(op, "413") && has_response(op, "415"), "%s: 413/415", rt->name);
        /* Every path parameter of the pattern is declared. */
        for (const char *p = strchr(rt->pattern, '{'); p; p = strchr(p + 1, '{')) {
            const char *end = strchr(p, '}');
            int found = 0;
            const cJSON *prm = NULL;
            cJSON_ArrayForEach(prm, cJSON_GetObjectItemCaseSensitive(op, "parameters"))
            {
                prm = deref(prm);
                const cJSON *n = cJSON_GetObjectItemCaseSensitive(prm, "name");
                const cJSON *in = cJSON_GetObjectItemCaseSensitive(prm, "in");
                if (cJSON_IsString(n) && cJSON_IsString(in) &&
                    strcmp(in->valuestring, "path") == 0 &&
                    strlen(n->valuestring) == (size_t)(end - p - 1) &&
                    strncmp(n->valuestring, p + 1, (size_t)(end - p - 1)) == 0)
                    found = 1;
            }
            cr_assert(found, "%s: path parameter %.*s not declared", rt->name, (int)(end - p + 1),
                      p);
        }
    }
}

Test(openapi, describes_the_routes_of_the_metrics_listener)
{
    for (size_t i = 0; i < seatd_metrics_nroutes; i++) {
        const seatd_route_t *rt = &seatd_metrics_routes[i];
        const cJSON *id = at(operation(rt->method, rt->pattern), "operationId", NULL);
        cr_assert(cJSON_IsString(id) && strcmp(id->valuestring, rt->name) == 0,
                  "metrics listener route %s %s (%s) is not in api/openapi.json", rt->method,
                  rt->pattern, rt->name);
    }
}

Test(openapi, describes_no_operation_that_no_route_serves)
{
    static const char *const methods[] = {"get",     "put",  "post",  "delete",
                                          "options", "head", "patch", "trace"};
    const cJSON *item = NULL;
    cJSON_ArrayForEach(item, at(doc, "paths", NULL))
    {
        for (size_t m = 0; m < sizeof(methods) / sizeof(methods[0]); m++) {
            const cJSON *op = cJSON_GetObjectItemCaseSensitive(item, methods[m]);
            if (op == NULL)
                continue;
            const cJSON *by = cJSON_GetObjectItemCaseSensitive(op, "x-served-by");
            if (cJSON_IsString(by) && strcmp(by->valuestring, "nginx") == 0)
                continue;
            int found = 0;
            for (size_t i = 0; i < seatd_nroutes && !found; i++)
                found = strcmp(seatd_routes[i].pattern, item->string) == 0 &&
                        strcasecmp(seatd_routes[i].method, methods[m]) == 0;
            cr_assert(found, "api/openapi.json describes %s %s, which no route serves", methods[m],
                      item->string);
        }
    }
}

/* True when 'uri' is in the enum of problem response 'name' (components.responses). */
static int response_lists_type(const char *name, const char *uri)
{
    const cJSON *schema = at(doc, "components", "responses", name, "content",
                             "application/problem+json", "schema", NULL);
    const cJSON *it = NULL;
    cJSON_ArrayForEach(it, at(schema, "properties", "type", "enum", NULL))
    {
        if (cJSON_IsString(it) && strcmp(it->valuestring, uri) == 0)
            return 1;
    }
    return 0;
}

Test(openapi, describes_every_problem_type_of_the_error_table)
{
    const cJSON *types = at(doc, "x-problem-types", NULL);
    const cJSON *uris = at(doc, "components", "schemas", "ProblemType", "enum", NULL);
    cr_assert(cJSON_IsObject(types) && cJSON_IsArray(uris));
#define CHECK_ROW(name, status, slug, word, msg)                                                   \
    do {                                                                                           \
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(types, slug);                            \
        cr_assert_not_null(t, "problem type %s (SEATD_E" #name ") is not in api/openapi.json",     \
                           slug);                                                                  \
        cr_assert_eq(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(t, "status")), status,  \
                     "%s: status", slug);                                                          \
        const cJSON *title = cJSON_GetObjectItemCaseSensitive(t, "title");                         \
        cr_assert(cJSON_IsString(title) && strcmp(title->valuestring, msg) == 0, "%s: title",      \
                  slug);                                                                           \
        char uri[128], resp[32];                                                                   \
        snprintf(uri, sizeof(uri), PROBLEM_BASE "%s", slug);                                       \
        int listed = 0;                                                                            \
        const cJSON *u = NULL;                                                                     \
        cJSON_ArrayForEach(u, uris) listed |= cJSON_IsString(u) && !strcmp(u->valuestring, uri);   \
        cr_assert(listed, "%s is not in ProblemType", uri);                                        \
        snprintf(resp, sizeof(resp), "Problem%d", status);                                         \
        cr_assert(response_lists_type(resp, uri), "%s does not list %s", resp, slug);              \
    } while (0);
    SEATD_ERRNO_MAP(CHECK_ROW)
#undef CHECK_ROW
}

Test(openapi, lists_no_worker_problem_type_that_the_error_table_lacks)
{
    const cJSON *t = NULL;
    cJSON_ArrayForEach(t, at(doc, "x-problem-types", NULL))
    {
        const cJSON *src = cJSON_GetObjectItemCaseSensitive(t, "source");
        if (cJSON_IsString(src) && strcmp(src->valuestring, "nginx") == 0)
            continue; /* answered by nginx only (nginx/seatd.conf.in) */
        int found = 0;
        for (int e = SEATD__EBASE + 1; e < SEATD__ELAST && !found; e++)
            found = strcmp(seatd_err_type(e), t->string) == 0;
        cr_assert(found, "x-problem-types lists %s, which worker/base/errors.h does not have",
                  t->string);
    }
}
