/* e2e.c - end-to-end helpers; see e2e.h. */
#include "e2e.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/auth.h"
#include "base/buf.h"

static int env_int(const char *name)
{
    const char *v = getenv(name);
    if (v == NULL) {
        fprintf(stderr, "e2e: %s is not set: run the suite through tests/e2e/run\n", name);
        abort();
    }
    return atoi(v);
}

int e2e_port(void)
{
    return env_int("SEATD_E2E_PORT");
}

const char *e2e_token(const char *sub, int admin)
{
    return e2e_token_channels(sub, admin, NULL);
}

const char *e2e_token_channels(const char *sub, int admin, const char *channels)
{
    static char token[1024];
    const char *secret = getenv("SEATD_JWT_SECRET");
    seatd_auth_t *auth = NULL;
    if (secret == NULL || seatd_auth_new(secret, strlen(secret), &auth) < 0)
        abort();
    char *t = NULL;
    if (seatd_auth_sign_channels(auth, sub, admin, channels, 3600, &t) < 0)
        abort();
    snprintf(token, sizeof(token), "%s", t);
    free(t);
    seatd_auth_free(auth);
    return token;
}

int e2e_call(const char *method, const char *path, const char *sub, const char *body,
             const char *extra, e2e_res_t *out)
{
    return e2e_call_at("127.0.0.1", method, path, sub, body, extra, out);
}

int e2e_call_at(const char *host, const char *method, const char *path, const char *sub,
                const char *body, const char *extra, e2e_res_t *out)
{
    memset(out, 0, sizeof(*out));
    seatd_buf_t h = SEATD_BUF_INIT;
    if (sub)
        seatd_buf_printf(&h, "Authorization: Bearer %s\r\n",
                         e2e_token(sub, strcmp(sub, "admin") == 0));
    if (body)
        seatd_buf_puts(&h, "Content-Type: application/json\r\n");
    if (extra)
        seatd_buf_puts(&h, extra);
    int rc = seatd_test_http_request(host, e2e_port(), method, path, h.data ? h.data : "", body,
                                     body ? strlen(body) : 0, &out->http);
    seatd_buf_free(&h);
    if (rc == 0 && out->http.body_len)
        out->json = cJSON_ParseWithLength(out->http.body, out->http.body_len);
    return rc;
}

void e2e_res_free(e2e_res_t *res)
{
    seatd_test_http_response_free(&res->http);
    cJSON_Delete(res->json);
    res->json = NULL;
}

const char *e2e_str(const e2e_res_t *res, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(res->json, name);
    return cJSON_IsString(v) ? v->valuestring : "";
}

void e2e_hold(const char *show, const char *sub, const char *seats_json, char *hold_id, size_t n)
{
    char path[96], body[512];
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
    snprintf(body, sizeof(body), "{\"seatIds\":%s}", seats_json);
    e2e_res_t res;
    cr_assert_eq(e2e_call("POST", path, sub, body, NULL, &res), 0);
    cr_assert_eq(res.http.status, 201, "hold %s: %d %.*s", seats_json, res.http.status,
                 (int)res.http.body_len, res.http.body ? res.http.body : "");
    snprintf(hold_id, n, "%s", e2e_str(&res, "holdId"));
    e2e_res_free(&res);
}

void e2e_release(const char *sub, const char *hold_id)
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/holds/%s", hold_id);
    e2e_res_t res;
    cr_assert_eq(e2e_call("DELETE", path, sub, NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200, "release %s: %d", hold_id, res.http.status);
    e2e_res_free(&res);
}

int e2e_create_show(int rows, int per_row, int ttl_s, char *id)
{
    return e2e_create_show_at("127.0.0.1", rows, per_row, ttl_s, id);
}

/* POST /v1/shows 'body' as admin through 'host' (see e2e_call_at); the new show's id into
 * 'id' (32 bytes). Returns 0, or -1 (logged) unless 201. */
static int post_show(const char *host, const char *body, char *id)
{
    e2e_res_t res;
    int rc = e2e_call_at(host, "POST", "/v1/shows", "admin", body, NULL, &res);
    if (rc < 0 || res.http.status != 201) {
        fprintf(stderr, "e2e: create show failed: %d %.*s\n", res.http.status,
                (int)res.http.body_len, res.http.body ? res.http.body : "");
        e2e_res_free(&res);
        return -1;
    }
    snprintf(id, 32, "%s", e2e_str(&res, "id"));
    e2e_res_free(&res);
    return id[0] ? 0 : -1;
}

int e2e_create_show_at(const char *host, int rows, int per_row, int ttl_s, char *id)
{
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_printf(&b,
                     "{\"title\":\"e2e show\",\"startsAt\":\"2030-01-01T20:00:00Z\","
                     "\"holdTtlSeconds\":%d,\"priceTiers\":{\"standard\":1200,\"premium\":1800},"
                     "\"seats\":[",
                     ttl_s);
    for (int r = 0; r < rows; r++)
        for (int s = 1; s <= per_row; s++)
            seatd_buf_printf(&b,
                             "%s{\"id\":\"%c%d\",\"row\":\"%c\",\"number\":%d,\"tier\":\"%s\","
                             "\"x\":%d,\"y\":%d}",
                             (r || s > 1) ? "," : "", 'A' + r, s, 'A' + r, s,
                             r < rows / 2 ? "standard" : "premium", s, r);
    seatd_buf_puts(&b, "]}");
    int rc = post_show(host, b.data, id);
    seatd_buf_free(&b);
    return rc;
}

int e2e_create_groupable_show(const char *with, char *id)
{
    char body[1024], member[64] = "";
    if (with)
        snprintf(member, sizeof(member), "\"groupWith\":\"%s\",", with);
    snprintf(body, sizeof(body),
             "{\"title\":\"season\",\"startsAt\":\"2030-01-01T20:00:00Z\",%s"
             "\"priceTiers\":{\"standard\":1200},"
             "\"areas\":[{\"id\":\"FLOOR\",\"capacity\":2,\"tier\":\"standard\"}],\"seats\":["
             "{\"id\":\"A1\",\"row\":\"A\",\"number\":1,\"tier\":\"standard\",\"x\":1,\"y\":1},"
             "{\"id\":\"A2\",\"row\":\"A\",\"number\":2,\"tier\":\"standard\",\"x\":2,\"y\":1},"
             "{\"id\":\"A3\",\"row\":\"A\",\"number\":3,\"tier\":\"standard\",\"x\":3,\"y\":1}]}",
             member);
    return post_show("127.0.0.1", body, id);
}

int e2e_redis_password(const char *file, char *out, size_t size)
{
    char path[1024];
    const char *run = getenv("SEATD_E2E_RUN");
    out[0] = '\0';
    if (run == NULL)
        return -1;
    snprintf(path, sizeof(path), "%s/%s", run, file);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    if (fgets(out, (int)size, f) == NULL)
        out[0] = '\0';
    fclose(f);
    out[strcspn(out, "\r\n")] = '\0';
    return out[0] ? 0 : -1;
}

int e2e_cluster(void)
{
    const char *v = getenv("SEATD_E2E_CLUSTER");
    return v != NULL && strcmp(v, "1") == 0;
}

int e2e_redis_ports(int *ports, int max)
{
    char path[1024], line[4096];
    const char *run = getenv("SEATD_E2E_RUN");
    int n = 0;
    snprintf(path, sizeof(path), "%s/redis-nodes", run ? run : ".");
    FILE *f = run ? fopen(path, "r") : NULL;
    if (f != NULL) {
        if (fgets(line, sizeof(line), f) != NULL)
            for (char *tok = strtok(line, ",\r\n"); tok && n < max; tok = strtok(NULL, ",\r\n")) {
                const char *colon = strrchr(tok, ':');
                if (colon && atoi(colon + 1) > 0)
                    ports[n++] = atoi(colon + 1);
            }
        fclose(f);
    }
    if (n == 0 && max > 0)
        ports[n++] = env_int("SEATD_E2E_REDIS_PORT");
    return n;
}

redisContext *e2e_redis_node(int port)
{
    char pass[256];
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, (struct timeval){.tv_sec = 5});
    if (c == NULL || c->err) {
        redisFree(c);
        return NULL;
    }
    if (e2e_redis_password("redis-admin.pass", pass, sizeof(pass)) == 0) {
        redisReply *r = redisCommand(c, "AUTH %s", pass);
        int ok = r && r->type == REDIS_REPLY_STATUS;
        freeReplyObject(r);
        if (!ok) {
            redisFree(c);
            return NULL;
        }
    }
    return c;
}

int e2e_redis_node_is_primary(redisContext *c)
{
    redisReply *r = redisCommand(c, "ROLE");
    int primary = r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                  r->element[0]->type == REDIS_REPLY_STRING &&
                  strcmp(r->element[0]->str, "master") == 0;
    freeReplyObject(r);
    return primary;
}

int e2e_wait_workers_ready(int limit_ms)
{
    char cmd[1024];
    snprintf(
        cmd, sizeof(cmd),
        "targets=$(grep -o '\"[0-9.]*:[0-9]*\"' '%s/prometheus-targets.json' | tr -d '\"'); "
        "[ -n \"$targets\" ] || exit 1; "
        "for i in $(seq 1 %d); do ok=1; for t in $targets; do "
        "[ \"$(curl -s -m 2 -o /dev/null -w '%%{http_code}' http://$t/healthz)\" = 200 ] || ok=0; "
        "done; [ $ok = 1 ] && exit 0; sleep 0.1; done; exit 1",
        getenv("SEATD_E2E_RUN"), limit_ms / 100 + 1);
    return system(cmd) == 0 ? 0 : -1;
}

seatd_redis_t *e2e_redis(void)
{
    /* The stack's Redis refuses anonymous clients: log in as its admin, the default user. On a
     * cluster the client follows MOVED/ASK from the first node that answers. */
    char pass[256], err[256] = "";
    int has_pass = e2e_redis_password("redis-admin.pass", pass, sizeof(pass)) == 0;
    int ports[64];
    int n = e2e_redis_ports(ports, 64);
    for (int i = 0; i < n; i++) {
        seatd_redis_opts_t o = {
            .host = "127.0.0.1", .port = ports[i], .password = has_pass ? pass : NULL};
        seatd_redis_t *c = seatd_redis_connect(&o, err, sizeof(err));
        if (c != NULL)
            return c;
    }
    fprintf(stderr, "e2e: cannot connect to redis: %s\n", err);
    abort();
}

void e2e_function_name(seatd_redis_t *c, const char *fn, char *out, size_t size)
{
    snprintf(out, size, "%s", fn);
    redisReply *r = seatd_redis_command(c, "FUNCTION LIST");
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        const redisReply *lib = r->element[i];
        for (size_t k = 0; k + 1 < lib->elements; k += 2) {
            const redisReply *name = lib->element[k + 1];
            if (lib->element[k]->str && strcmp(lib->element[k]->str, "library_name") == 0 &&
                name->str && strncmp(name->str, "seatd_v", 7) == 0 && strncmp(fn, "seatd_", 6) == 0)
                snprintf(out, size, "%s_%s", name->str, fn + 6);
        }
    }
    freeReplyObject(r);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char *e2e_show_snapshot(const char *id)
{
    seatd_redis_t *c = e2e_redis();
    char pattern[64];
    snprintf(pattern, sizeof(pattern), "{s:%s}:*", id);
    redisReply *keys = seatd_redis_command(c, "KEYS %s", pattern);
    size_t n = keys->elements;
    char **lines = calloc(n ? n : 1, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        const char *k = keys->element[i]->str;
        redisReply *dump = seatd_redis_command(c, "DUMP %s", k);
        seatd_buf_t line = SEATD_BUF_INIT;
        seatd_buf_puts(&line, k);
        seatd_buf_puts(&line, "=");
        static const char hex[] = "0123456789abcdef";
        if (dump->type == REDIS_REPLY_STRING)
            for (size_t j = 0; j < dump->len; j++) {
                unsigned char ch = (unsigned char)dump->str[j];
                char hx[2] = {hex[ch >> 4], hex[ch & 15]};
                seatd_buf_append(&line, hx, 2);
            }
        freeReplyObject(dump);
        lines[i] = seatd_buf_steal(&line, NULL);
    }
    freeReplyObject(keys);
    seatd_redis_free(c);
    qsort(lines, n, sizeof(char *), cmp_str);
    seatd_buf_t all = SEATD_BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        seatd_buf_puts(&all, lines[i]);
        seatd_buf_puts(&all, "\n");
        free(lines[i]);
    }
    free(lines);
    return seatd_buf_steal(&all, NULL);
}

void e2e_show_counts(const char *id, long *seat_keys, long *held_bits, long *booked_bits)
{
    seatd_redis_t *c = e2e_redis();
    redisReply *keys = seatd_redis_command(c, "KEYS {s:%s}:seat:*", id);
    *seat_keys = (long)keys->elements;
    freeReplyObject(keys);
    redisReply *r = seatd_redis_command(c, "BITCOUNT {s:%s}:held", id);
    *held_bits = r->integer;
    freeReplyObject(r);
    r = seatd_redis_command(c, "BITCOUNT {s:%s}:booked", id);
    *booked_bits = r->integer;
    freeReplyObject(r);
    seatd_redis_free(c);
}

long long e2e_show_version(const char *id)
{
    seatd_redis_t *c = e2e_redis();
    redisReply *r = seatd_redis_command(c, "GET {s:%s}:ver", id);
    long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
    freeReplyObject(r);
    seatd_redis_free(c);
    return v;
}

int e2e_seat_map(const char *id, long long min_version, e2e_res_t *out)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/shows/%s/seats?minVersion=%lld", id, min_version);
    return e2e_call("GET", path, NULL, NULL, NULL, out);
}

double e2e_num(const e2e_res_t *res, const char *name)
{
    return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(res->json, name));
}
