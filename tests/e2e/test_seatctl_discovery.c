/*
 * End-to-end: build/seatctl run as a newcomer would, with nothing but SEATD_PORT set (issue
 * 32): it finds the API, Redis and the runtime folder's secrets as deploy/up placed them, and
 * explicit variables win. Suite seatctl (test_seatctl.c declares it).
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "e2e.h"
#include "seatctl_run.h"
/* ------------------------------------------------------------------------------------------
 * Finding the stack from SEATD_PORT (issue 32): the environment below is all seatctl gets.
 * ------------------------------------------------------------------------------------------ */

typedef struct place_s {
    char dir[64];   /* a folder to run seatctl in */
    char link[128]; /* dir/run/<port> -> the stack's runtime folder, or "" */
    char port[32];  /* "SEATD_PORT=<port>" */
    char rport[48]; /* "SEATD_REDIS_PORT=<port>" when the stack's Redis is not at port + 1000 */
    char *env[4];   /* PATH, SEATD_PORT[, SEATD_REDIS_PORT], NULL */
} place_t;

/* A folder to run seatctl in, holding run/<port> (a link to the stack's runtime folder, as a
 * checkout holds it after deploy/up) when 'with_run', and an environment of SEATD_PORT alone. */
static void place_init(place_t *p, int with_run)
{
    memset(p, 0, sizeof *p);
    snprintf(p->dir, sizeof p->dir, "/tmp/seatctl-cwd.XXXXXX");
    cr_assert_not_null(mkdtemp(p->dir));
    if (with_run) {
        char runs[96];
        snprintf(runs, sizeof runs, "%s/run", p->dir);
        cr_assert_eq(mkdir(runs, 0700), 0);
        snprintf(p->link, sizeof p->link, "%s/%d", runs, e2e_port());
        cr_assert_eq(symlink(getenv("SEATD_E2E_RUN"), p->link), 0);
    }
    snprintf(p->port, sizeof p->port, "SEATD_PORT=%d", e2e_port());
    int n = 0;
    p->env[n++] = "PATH=/usr/local/bin:/usr/bin:/bin";
    p->env[n++] = p->port;
    int redis_port = atoi(getenv("SEATD_E2E_REDIS_PORT"));
    if (redis_port != e2e_port() + 1000) { /* deploy/up was given SEATD_REDIS_PORT */
        snprintf(p->rport, sizeof p->rport, "SEATD_REDIS_PORT=%d", redis_port);
        p->env[n++] = p->rport;
    }
    p->env[n] = NULL;
}

static void place_free(place_t *p)
{
    char runs[96];
    if (p->link[0]) {
        unlink(p->link);
        snprintf(runs, sizeof runs, "%s/run", p->dir);
        rmdir(runs);
    }
    rmdir(p->dir);
}

Test(seatctl, seatd_port_alone_finds_the_api_redis_and_the_runtime_folders_secrets)
{
    char show[32], hold_id[48], want[160];
    cr_assert_eq(e2e_create_show(2, 5, 120, show), 0);
    hold(show, "port-alice", "[\"B2\"]", hold_id);
    place_t p;
    place_init(&p, 1);
    run_t r;

    /* A public read: the stack's API at 127.0.0.1:SEATD_PORT, and the line that names it. */
    seatctl_in(&r, p.dir, p.env, "show", "list", "--json", NULL);
    cr_assert_eq(r.status, 0, "show list with SEATD_PORT alone: exit %d: %s%s", r.status, r.out,
                 r.err);
    cr_assert_not_null(r.json, "not JSON: %s", r.out);
    int found = 0;
    const cJSON *s = NULL;
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(r.json, "items"))
    {
        found += strcmp(jstr(s, "id"), show) == 0;
    }
    cr_assert_eq(found, 1, "show %s not listed: %s", show, r.out);
    snprintf(want, sizeof want, "seatctl: stack 127.0.0.1:%d (run/%d)\n", e2e_port(), e2e_port());
    cr_assert(strstr(r.err, want) != NULL, "stderr does not say '%s': %s", want, r.err);
    run_free(&r);

    /* An admin command: a token minted from run/<port>/jwt_secret. */
    seatctl_in(&r, p.dir, p.env, "hold", "show", hold_id, "--json", NULL);
    cr_assert_eq(r.status, 0, "hold show with SEATD_PORT alone: exit %d: %s%s", r.status, r.out,
                 r.err);
    cr_assert_str_eq(jstr(r.json, "owner"), "port-alice", "%s", r.out);
    run_free(&r);
    seatctl_in(&r, p.dir, p.env, "reap", show, "--json", NULL);
    cr_assert_eq(r.status, 0, "reap with SEATD_PORT alone: exit %d: %s%s", r.status, r.out, r.err);
    run_free(&r);

    /* Redis at SEATD_PORT + 1000, as the stack's admin (run/<port>/redis-admin.pass). */
    seatctl_in(&r, p.dir, p.env, "seat", "who", show, "B2", "--json", NULL);
    cr_assert_eq(r.status, 0, "seat who with SEATD_PORT alone: exit %d: %s%s", r.status, r.out,
                 r.err);
    cr_assert_str_eq(jstr(r.json, "holder"), "port-alice", "%s", r.out);
    snprintf(want, sizeof want, "seatctl: stack redis 127.0.0.1:%s (run/%d)\n",
             getenv("SEATD_E2E_REDIS_PORT"), e2e_port());
    cr_assert(strstr(r.err, want) != NULL, "stderr does not say '%s': %s", want, r.err);
    run_free(&r);

    /* A token for a buyer, signed with the stack's secret: the API takes it. */
    seatctl_in(&r, p.dir, p.env, "token", "--sub", "port-alice", NULL);
    cr_assert_eq(r.status, 0, "token with SEATD_PORT alone: exit %d: %s", r.status, r.err);
    char path[96], auth[1200];
    snprintf(path, sizeof path, "/v1/holds/%s", hold_id);
    snprintf(auth, sizeof auth, "Authorization: Bearer %.*s\r\n", (int)strcspn(r.out, "\n"), r.out);
    run_free(&r);
    e2e_res_t res;
    cr_assert_eq(e2e_call("GET", path, NULL, NULL, auth, &res), 0);
    cr_assert_eq(res.http.status, 200, "the minted token was refused: %d", res.http.status);
    e2e_res_free(&res);

    /* SEATD_RUN_DIR names the folder anywhere (here: no run/ in the current folder). */
    place_t q;
    place_init(&q, 0);
    char run_dir[600];
    snprintf(run_dir, sizeof run_dir, "SEATD_RUN_DIR=%s", getenv("SEATD_E2E_RUN"));
    char *env[] = {q.env[0], q.env[1], run_dir, q.env[2], NULL};
    seatctl_in(&r, q.dir, env, "hold", "show", hold_id, "--json", NULL);
    cr_assert_eq(r.status, 0, "hold show with SEATD_RUN_DIR: exit %d: %s%s", r.status, r.out,
                 r.err);
    cr_assert(strstr(r.err, getenv("SEATD_E2E_RUN")) != NULL, "%s", r.err);
    run_free(&r);
    place_free(&q);
    place_free(&p);
}

Test(seatctl, public_reads_need_no_secret)
{
    char show[32];
    cr_assert_eq(e2e_create_show(1, 4, 120, show), 0);
    place_t p;
    place_init(&p, 0); /* no runtime folder at all: no secret anywhere */
    run_t r;
    seatctl_in(&r, p.dir, p.env, "show", "list", NULL);
    cr_assert_eq(r.status, 0, "show list without a secret: exit %d: %s%s", r.status, r.out, r.err);
    cr_assert(strstr(r.out, "upcoming shows") != NULL, "%s", r.out);
    run_free(&r);
    seatctl_in(&r, p.dir, p.env, "show", "get", show, "--json", NULL);
    cr_assert_eq(r.status, 0, "show get without a secret: exit %d: %s%s", r.status, r.out, r.err);
    cr_assert_str_eq(jstr(r.json, "id"), show, "%s", r.out);
    cr_assert_eq(jnum(r.json, "seatCount"), 4);
    run_free(&r);
    seatctl_in(&r, p.dir, p.env, "show", "get", show, NULL);
    cr_assert_eq(r.status, 0);
    cr_assert(strstr(r.out, "e2e show") != NULL, "%s", r.out);
    run_free(&r);
    seatctl_in(&r, p.dir, p.env, "show", "get", "999999999", NULL);
    cr_assert_eq(r.status, 1, "an unknown show: exit %d", r.status);
    run_free(&r);

    /* An admin command without a secret says what is missing and where it looked. */
    seatctl_in(&r, p.dir, p.env, "reap", show, NULL);
    cr_assert_eq(r.status, 1);
    char want[64];
    snprintf(want, sizeof want, "run/%d/jwt_secret", e2e_port());
    cr_assert(strstr(r.err, "no admin token") != NULL && strstr(r.err, want) != NULL, "%s", r.err);
    run_free(&r);
    place_free(&p);
}

Test(seatctl, explicit_variables_win_over_seatd_port)
{
    char show[32], hold_id[48];
    cr_assert_eq(e2e_create_show(1, 4, 120, show), 0);
    hold(show, "explicit-bob", "[\"A3\"]", hold_id);
    place_t p;
    place_init(&p, 0);
    /* SEATD_PORT names a port nothing listens on; the explicit variables name the stack. */
    char url[64], redis[64], secret[600], pass[300];
    snprintf(url, sizeof url, "SEATD_URL=http://127.0.0.1:%d/", e2e_port());
    snprintf(redis, sizeof redis, "SEATD_REDIS=127.0.0.1:%s", getenv("SEATD_E2E_REDIS_PORT"));
    snprintf(secret, sizeof secret, "SEATD_JWT_SECRET=%s", getenv("SEATD_JWT_SECRET"));
    char admin_pass[256];
    cr_assert_eq(e2e_redis_password("redis-admin.pass", admin_pass, sizeof admin_pass), 0);
    snprintf(pass, sizeof pass, "REDISCLI_AUTH=%s", admin_pass);
    char *env[] = {p.env[0], "SEATD_PORT=1", url, redis, secret, pass, NULL};
    run_t r;
    seatctl_in(&r, p.dir, env, "hold", "show", hold_id, "--json", NULL);
    cr_assert_eq(r.status, 0, "exit %d: %s%s", r.status, r.out, r.err);
    cr_assert_str_eq(jstr(r.json, "owner"), "explicit-bob");
    char want[96];
    snprintf(want, sizeof want, "seatctl: stack 127.0.0.1:%d (SEATD_URL)\n", e2e_port());
    cr_assert(strstr(r.err, want) != NULL, "stderr does not say '%s': %s", want, r.err);
    run_free(&r);
    seatctl_in(&r, p.dir, env, "seat", "who", show, "A3", "--json", NULL);
    cr_assert_eq(r.status, 0, "exit %d: %s%s", r.status, r.out, r.err);
    cr_assert_str_eq(jstr(r.json, "holder"), "explicit-bob");
    cr_assert(strstr(r.err, "(SEATD_REDIS)") != NULL, "%s", r.err);
    run_free(&r);
    place_free(&p);
}
