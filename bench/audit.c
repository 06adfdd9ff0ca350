/*
 * audit.c - checks the seat invariant of one show straight in Redis, after a benchmark.
 *
 *   seatd_audit --redis H:P --show ID [--wins N] [--bookings N] [--settle]
 *
 * The checks are tools/show_audit.c's (shared with `seatctl audit`; the list is in
 * show_audit.h). Each violation is printed on its own line ("VIOLATION <what>", at most 50),
 * then one line "audit show=… violations=N holds=… bookings=…". Exit status: 0 with no
 * violation, 1 with any, 2 when the audit could not run.
 *   --settle: first waits until every hold's deadline has passed and runs seatd_reap until
 *             nothing is due (what the sweeper would do anyway; the only write), then also
 *             requires that no seat key, held bit or live hold is left;
 *   --wins N: the hold records of the show number N (records outlive their hold by an
 *             hour, and the show is fresh per scenario); --bookings N: N CONFIRMED bookings.
 * With REDISCLI_AUTH set it authenticates first (as SEATD_AUDIT_REDIS_USER when set).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "show_audit.h"

static void on_violation(const char *check, const char *text, void *data)
{
    long *printed = data;
    (void)check;
    if (++*printed <= 50)
        printf("VIOLATION %s\n", text);
    else if (*printed == 51)
        printf("VIOLATION (more violations not printed)\n");
}

static redisReply *cmd(redisContext *c, const char *fmt, const char *prefix)
{
    redisReply *r = redisCommand(c, fmt, prefix);
    if (!r) {
        fprintf(stderr, "audit: redis: %s\n", c->errstr);
        exit(2);
    }
    return r;
}

/* The name of the reap function: "seatd_reap" on a single node, "seatd_v<version>_reap" on a
 * cluster, where the library is versioned (worker/store/scripts.c): the one FUNCTION LIST shows. */
static void reap_function(redisContext *c, char *out, size_t size)
{
    snprintf(out, size, "seatd_reap");
    redisReply *r = redisCommand(c, "FUNCTION LIST LIBRARYNAME seatd*");
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        const redisReply *lib = r->element[i];
        for (size_t k = 0; lib->type == REDIS_REPLY_ARRAY && k + 1 < lib->elements; k += 2) {
            const redisReply *fns = lib->element[k + 1];
            if (lib->element[k]->str == NULL || strcmp(lib->element[k]->str, "functions") != 0 ||
                fns->type != REDIS_REPLY_ARRAY)
                continue;
            for (size_t f = 0; f < fns->elements; f++) {
                const redisReply *fn = fns->element[f];
                for (size_t j = 0; fn->type == REDIS_REPLY_ARRAY && j + 1 < fn->elements; j += 2) {
                    const char *v = fn->element[j + 1]->str;
                    size_t n = v ? strlen(v) : 0;
                    if (fn->element[j]->str && strcmp(fn->element[j]->str, "name") == 0 && n > 5 &&
                        strcmp(v + n - 5, "_reap") == 0)
                        snprintf(out, size, "%s", v);
                }
            }
        }
    }
    if (r)
        freeReplyObject(r);
}

/* Waits past the last hold deadline, then reaps until nothing is due. */
static void settle(redisContext *c, const char *prefix)
{
    char reap[128];
    reap_function(c, reap, sizeof(reap));
    for (int round = 0; round < 600; round++) {
        redisReply *last = cmd(c, "ZRANGE %s:expiry -1 -1 WITHSCORES", prefix);
        redisReply *t = redisCommand(c, "TIME");
        if (!t) {
            fprintf(stderr, "audit: redis: %s\n", c->errstr);
            exit(2);
        }
        double now = atof(t->element[0]->str) * 1000.0 + atof(t->element[1]->str) / 1000.0;
        double due = last->elements == 2 ? atof(last->element[1]->str) : 0;
        freeReplyObject(last);
        freeReplyObject(t);
        if (due >= now) {
            usleep((useconds_t)((due - now + 50) * 1000));
            continue;
        }
        redisReply *r = redisCommand(c, "FCALL %s 1 %s:meta 10000", reap, prefix);
        if (!r) {
            fprintf(stderr, "audit: redis: %s\n", c->errstr);
            exit(2);
        }
        if (r->type == REDIS_REPLY_ERROR) {
            fprintf(stderr, "audit: %s: %s\n", reap, r->str);
            exit(2);
        }
        freeReplyObject(r);
        redisReply *z = cmd(c, "ZCARD %s:expiry", prefix);
        long left = z->integer;
        freeReplyObject(z);
        if (left == 0)
            return;
    }
    fprintf(stderr, "audit: holds still due after 60 s of settling\n");
}

static int usage(void)
{
    fprintf(stderr, "usage: seatd_audit --redis H:P --show ID [--wins N] [--bookings N] "
                    "[--settle]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *show = NULL;
    char host[64] = "127.0.0.1";
    int port = 0;
    seatd_audit_opts_t o = {.wins = -1, .bookings = -1};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--redis") == 0 && i + 1 < argc) {
            const char *v = argv[++i], *colon = strrchr(v, ':');
            if (!colon)
                return usage();
            snprintf(host, sizeof host, "%.*s", (int)(colon - v), v);
            port = atoi(colon + 1);
        } else if (strcmp(argv[i], "--show") == 0 && i + 1 < argc) {
            show = argv[++i];
        } else if (strcmp(argv[i], "--wins") == 0 && i + 1 < argc) {
            o.wins = atol(argv[++i]);
        } else if (strcmp(argv[i], "--bookings") == 0 && i + 1 < argc) {
            o.bookings = atol(argv[++i]);
        } else if (strcmp(argv[i], "--settle") == 0) {
            o.settled = 1;
        } else {
            return usage();
        }
    }
    if (!show || port <= 0)
        return usage();
    redisContext *c = redisConnectWithTimeout(host, port, (struct timeval){.tv_sec = 5});
    if (!c || c->err) {
        fprintf(stderr, "audit: cannot connect to redis %s:%d\n", host, port);
        return 2;
    }
    redisSetTimeout(c, (struct timeval){.tv_sec = 60});
    /* deploy/up's Redis refuses anonymous clients: the password as redis-cli takes it
     * (REDISCLI_AUTH), for the user SEATD_AUDIT_REDIS_USER (default: the default user). */
    const char *pass = getenv("REDISCLI_AUTH"), *user = getenv("SEATD_AUDIT_REDIS_USER");
    if (pass && pass[0]) {
        redisReply *r = user && user[0] ? redisCommand(c, "AUTH %s %s", user, pass)
                                        : redisCommand(c, "AUTH %s", pass);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            fprintf(stderr, "audit: AUTH: %s\n", r ? r->str : c->errstr);
            return 2;
        }
        freeReplyObject(r);
    }
    char prefix[64];
    snprintf(prefix, sizeof prefix, "{s:%s}", show);
    if (o.settled)
        settle(c, prefix);

    long printed = 0;
    o.user = user && user[0] ? user : NULL; /* for a redirection to the layout's shard */
    o.password = pass && pass[0] ? pass : NULL;
    o.on_violation = on_violation;
    o.data = &printed;
    seatd_audit_report_t rep;
    char err[256];
    if (seatd_audit_show(c, show, &o, &rep, err, sizeof err) < 0) {
        fprintf(stderr, "audit: %s\n", err);
        redisFree(c);
        return 2;
    }
    printf("audit show=%s seats=%d holds=%ld live_holds=%ld bookings=%ld booked_seats=%ld "
           "held_seats=%ld areas=%ld area_places=%ld settled=%d violations=%ld\n",
           show, rep.nseats, rep.holds, rep.live_holds, rep.confirmed, rep.booked_seats,
           rep.held_seats, rep.areas, rep.area_places, o.settled, rep.violations);
    redisFree(c);
    return rep.violations ? 1 : 0;
}
