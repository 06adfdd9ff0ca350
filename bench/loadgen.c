/*
 * loadgen.c - seatd's load generator: main(), the fork/join of load processes, and show
 * creation over HTTP. The drivers are http_load.c (HTTP) and direct.c (Redis).
 *
 *   seatd_loadgen [--direct --redis H:P | --target H:P …] --show ID | --create-show
 *                 [--procs K] [--conns C] [--pipeline D] [--duration S] [--warmup S]
 *                 [--count N]
 *                 [--rate R] [--book-pct P] [--release-pct Q] [--users U] [--hold-ttl S]
 *                 [--seatmap [--inm] [--gzip]] [--secret S]
 *                 [--pay TOK[,TOK…]] [--idem] [--log FILE]
 *                 [--areas ID:N[,ID:N…] [--areas-pct P] [--areas-only | --areas-only-pct Q]]
 *                 [--area-capacity N [--area-tier T]]
 *                 [--group N [--group-id G] [--group-pct P]]
 *
 * Each HTTP connection is one virtual user at a time, in a closed loop (or paced by --rate):
 * POST /v1/shows/{id}/holds for 1-4 seats (scenario.h); a 201 is then booked
 * (POST /v1/bookings {holdId, paymentMethod:"tok_ok"}) with probability P %, released
 * (DELETE /v1/holds/{id}) with probability Q %, or left to expire. --seatmap instead reads
 * GET /v1/shows/{id}/seats, with --inm sending the connection's last ETag in If-None-Match.
 *
 * For the fault suite (tests/faults/run): --pay picks each booking's paymentMethod at random
 * from the list (default tok_ok); --idem sends a unique idempotencyKey with every hold;
 * --log FILE appends one line per answered (or dropped) hold, booking and release:
 *   <wall ms> <op> <http status, 0: no answer> <user> <idempotency key|-> <holdId/bookingId|->
 *   <Retry-After|-> <problem slug or booking status|-> <latency us> <seat ids|-> <places|->
 * (the seat ids, comma-separated, and the places, "FLOOR:2", are the hold's: on a booking or
 * release line, those of the hold it acts on);
 * (each load process writes its own lines; lines are not in time order across processes).
 *
 * Standing areas (issue 30): --areas FLOOR:2 makes each hold also ask for 2 places in area
 * FLOOR ("areas":{"FLOOR":2}; direct: seatd_hold_sell with "named;FLOOR:2"), --areas-pct P
 * only P % of the holds (100), --areas-only-pct Q (or --areas-only, 100) Q % of those places
 * alone, with no seats. --area-capacity N gives a created show one area of N places (its id
 * the first of --areas, else FLOOR; tier --area-tier, standard). A log line then ends with the
 * hold's places ("FLOOR:2", or "-"); the holds and totals lines count places_per_s,
 * area_wins and places_won.
 *
 * Event groups (issue 30, HTTP only): --group N with --create-show (or --create-only) creates N
 * shows, the first plain and the others "groupWith" it (so all share its hash slot), and a
 * group of them (POST /v1/groups, admin), and prints "group id=<id> shows=<a>,<b>,…"; the
 * holds are then group holds (POST /v1/groups/{id}/holds with the same seat choice and places
 * as a named hold, sent without an idempotency key), each one hold in every show of
 * the group. --group-id G --group N uses an existing group of N shows (--show its first);
 * --group-pct P makes only P % of the holds group holds (100), the rest named holds on --show.
 * A group hold counts in the hold figures (a win, a 409) and apart in op=ghold,
 * group_attempts_per_s / group_wins_per_s and the totals' group_wins; a won one is booked with
 * one payment (POST /v1/bookings with the group hold's id, --book-pct) or released whole (DELETE
 * /v1/holds/{group hold id}, --release-pct). Its --log line has op "ghold", the group hold's id
 * and a 12th field: its show holds' ids, comma-separated; its payment's line (op "book", the
 * payment's id) has in its 12th field the payment's show bookings' ids.
 *
 * --warmup S runs S seconds first without measuring (connections, caches, nginx's upstream
 * keep-alive pool); the 'totals' line still counts every hold won, for the audit.
 *
 * Latency is measured from the first byte written to the last byte of the answer; with
 * --rate it does not include time a request waited for its turn (no coordinated-omission
 * correction: compare p99 at a rate well below the peak).
 */
#include "loadgen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <http_parser.h>

#include "jwt.h"

/* ===================================== standing areas ==================================== */

int seatd_bench_pick_places(const seatd_bench_cfg_t *cfg, seatd_bench_rng_t *r, int *alone)
{
    *alone = 0;
    if (!cfg->areas[0] || seatd_bench_rng_unit(r) * 100.0 >= cfg->areas_pct)
        return 0;
    *alone = seatd_bench_rng_unit(r) * 100.0 < cfg->areas_only_pct;
    return 1;
}

void seatd_bench_area_extra(const seatd_bench_cfg_t *cfg, char *out, size_t cap)
{
    if (cfg->area_capacity <= 0)
        snprintf(out, cap, "%s", "");
    else
        snprintf(out, cap, "{\"areas\":[{\"id\":\"%s\",\"capacity\":%ld,\"tier\":\"%s\"}]}",
                 cfg->area_id, cfg->area_capacity, cfg->area_tier);
}

/* Parses --areas "FLOOR:2,BALC:1" into cfg->areas, its JSON object and its place count.
 * Returns 0 or -1. */
static int parse_areas(seatd_bench_cfg_t *cfg, const char *spec)
{
    char copy[64], *save = NULL;
    if (snprintf(copy, sizeof copy, "%s", spec) >= (int)sizeof copy)
        return -1;
    size_t jl = (size_t)snprintf(cfg->areas_json, sizeof cfg->areas_json, "{");
    cfg->places = 0;
    int k = 0;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save), k++) {
        char *colon = strchr(t, ':');
        int n = colon ? atoi(colon + 1) : 0;
        if (!colon || colon == t || n < 1 || (size_t)(colon - t) >= sizeof cfg->area_id)
            return -1;
        *colon = '\0';
        if (k == 0 && !cfg->area_id[0])
            snprintf(cfg->area_id, sizeof cfg->area_id, "%s", t);
        jl += (size_t)snprintf(cfg->areas_json + jl, sizeof cfg->areas_json - jl, "%s\"%s\":%d",
                               k ? "," : "", t, n);
        cfg->places += n;
    }
    if (jl + 2 > sizeof cfg->areas_json || cfg->places == 0)
        return -1;
    snprintf(cfg->areas_json + jl, sizeof cfg->areas_json - jl, "}");
    snprintf(cfg->areas, sizeof cfg->areas, "%s", spec);
    return 0;
}

/* ================================ show creation over HTTP ================================ */

typedef struct blocking_answer_s {
    int done;       /* on_message_complete ran */
    char body[512]; /* the first bytes of the body */
    size_t len;     /* their count */
} blocking_answer_t;

static int on_blocking_body(http_parser *hp, const char *at, size_t len)
{
    blocking_answer_t *a = hp->data;
    size_t room = sizeof a->body - 1 - a->len;
    size_t n = len < room ? len : room;
    memcpy(a->body + a->len, at, n);
    a->len += n;
    a->body[a->len] = '\0';
    return 0;
}

static int on_blocking_complete(http_parser *hp)
{
    ((blocking_answer_t *)hp->data)->done = 1;
    return 0;
}

/* POST 'path' with 'body' (borrowed) and an admin token, blocking; copies the answer's "id"
 * into 'id' ('cap' bytes). Returns 0 on a 201 with an id, else -1 with a message on stderr. */
static int http_admin_post(const seatd_bench_cfg_t *cfg, const char *path, const char *body,
                           char *id, size_t cap)
{
    char tok[SEATD_BENCH_JWT_MAX];
    if (seatd_bench_jwt(cfg->secret, "bench-admin", 1, 3600, tok, sizeof tok) != 0)
        return -1;
    size_t blen = strlen(body);
    char head[1024];
    int hlen = snprintf(head, sizeof head,
                        "POST %s HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer %s\r\n"
                        "Content-Type: application/json\r\nContent-Length: %zu\r\n"
                        "Connection: close\r\n\r\n",
                        path, tok, blen);
    const seatd_bench_target_t *t = &cfg->targets[0];
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons((uint16_t)t->port)};
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    struct sockaddr *addr = (struct sockaddr *)&in;
    socklen_t alen = sizeof in;
    if (t->port == 0) {
        snprintf(un.sun_path, sizeof un.sun_path, "%s", t->host);
        addr = (struct sockaddr *)&un;
        alen = sizeof un;
    } else {
        inet_pton(AF_INET, t->host, &in.sin_addr);
    }
    int rc = -1, fd = socket(t->port == 0 ? AF_UNIX : AF_INET, SOCK_STREAM, 0);
    struct timeval tv = {.tv_sec = 10};
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (fd < 0 || connect(fd, addr, alen) != 0) {
        fprintf(stderr, "loadgen: cannot connect to %s:%d: %s\n", cfg->targets[0].host,
                cfg->targets[0].port, strerror(errno));
        goto out;
    }
    if (write(fd, head, (size_t)hlen) != hlen) /* a blocking write of a few KB */
        goto out;
    for (size_t off = 0; off < blen;) {
        ssize_t w = write(fd, body + off, blen - off);
        if (w <= 0)
            goto out;
        off += (size_t)w;
    }
    http_parser hp;
    http_parser_settings hs = {.on_body = on_blocking_body,
                               .on_message_complete = on_blocking_complete};
    blocking_answer_t a = {0};
    http_parser_init(&hp, HTTP_RESPONSE);
    hp.data = &a;
    char buf[4096];
    while (!a.done) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0)
            break;
        http_parser_execute(&hp, &hs, buf, (size_t)n);
        if (hp.http_errno != HPE_OK)
            break;
    }
    if (!a.done || hp.status_code != 201 || seatd_bench_json_str(a.body, "id", id, cap) != 0) {
        fprintf(stderr, "loadgen: POST %s answered %d: %s\n", path, hp.status_code, a.body);
        goto out;
    }
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    return rc;
}

/* POST /v1/shows, blocking; writes the new show id into cfg->show_id. With 'group_with'
 * (borrowed; NULL or "" for none) the show is created "groupWith" that show. */
static int http_create_show(seatd_bench_cfg_t *cfg, int hold_ttl_s, const char *group_with)
{
    char extra[320];
    seatd_bench_area_extra(cfg, extra, sizeof extra);
    if (group_with && group_with[0]) {
        size_t l = strlen(extra);
        if (l > 2) /* {"areas":[…]} -> {"areas":[…],"groupWith":"42"} */
            snprintf(extra + l - 1, sizeof extra - l + 1, ",\"groupWith\":\"%s\"}", group_with);
        else
            snprintf(extra, sizeof extra, "{\"groupWith\":\"%s\"}", group_with);
    }
    char *body = seatd_bench_show_json("Blockbuster (bench)", hold_ttl_s, extra);
    int rc = http_admin_post(cfg, "/v1/shows", body, cfg->show_id, sizeof cfg->show_id);
    free(body);
    return rc;
}

/* --group N with --create-show: N shows, the first plain and the others "groupWith" it, and a
 * group of them (POST /v1/groups); cfg->show_id ends as the first, cfg->group_id the group.
 * Prints "group id=… shows=…". Returns 0 or -1. */
static int http_create_group(seatd_bench_cfg_t *cfg, int hold_ttl_s)
{
    char first[32] = "", body[64 + SEATD_BENCH_MAX_GROUP * 36];
    size_t bl = (size_t)snprintf(body, sizeof body, "{\"title\":\"bench group\",\"showIds\":[");
    for (int k = 0; k < cfg->group; k++) {
        if (http_create_show(cfg, hold_ttl_s, first) != 0)
            return -1;
        if (k == 0)
            snprintf(first, sizeof first, "%s", cfg->show_id);
        bl += (size_t)snprintf(body + bl, sizeof body - bl, "%s\"%s\"", k ? "," : "", cfg->show_id);
    }
    snprintf(body + bl, sizeof body - bl, "]}");
    if (http_admin_post(cfg, "/v1/groups", body, cfg->group_id, sizeof cfg->group_id) != 0)
        return -1;
    char *ids = strstr(body, "[");
    ids[strlen(ids) - 2] = '\0';
    printf("group id=%s shows=", cfg->group_id);
    for (char *q = ids + 1; *q; q++)
        if (*q != '"')
            putchar(*q);
    printf("\n");
    snprintf(cfg->show_id, sizeof cfg->show_id, "%s", first);
    return 0;
}

/* ========================================= main ========================================== */

static int parse_target(const char *s, seatd_bench_target_t *t)
{
    if (strncmp(s, "unix:", 5) == 0) { /* port 0 marks a unix socket path */
        t->port = 0;
        return snprintf(t->host, sizeof t->host, "%s", s + 5) < (int)sizeof t->host && s[5] ? 0
                                                                                            : -1;
    }
    const char *colon = strrchr(s, ':');
    if (!colon || (size_t)(colon - s) >= sizeof t->host)
        return -1;
    memcpy(t->host, s, (size_t)(colon - s));
    t->host[colon - s] = '\0';
    if (strcmp(t->host, "localhost") == 0)
        strcpy(t->host, "127.0.0.1");
    t->port = atoi(colon + 1);
    struct in_addr a;
    return t->port > 0 && t->port < 65536 && inet_pton(AF_INET, t->host, &a) == 1 ? 0 : -1;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: seatd_loadgen [--target H:P|unix:PATH ... | --direct --redis H:P]\n"
            "         (--show ID | --create-show) [--procs K] [--conns C] [--pipeline D]\n"
            "         [--duration S] [--warmup S] [--count N] [--rate R] [--book-pct P]\n"
            "         [--release-pct Q]\n"
            "         [--users U] [--hold-ttl S] [--ttl-ms MS] [--max-per-user M]\n"
            "         [--seatmap [--inm] [--gzip]] [--secret S (or SEATD_JWT_SECRET)] [--seed N]\n"
            "         [--pay TOK[,TOK...]] [--idem] [--log FILE]\n"
            "         [--areas ID:N[,ID:N...] [--areas-pct P] [--areas-only|--areas-only-pct Q]]\n"
            "         [--group N [--group-id G] [--group-pct P]]\n"
            "       seatd_loadgen (--direct --redis H:P | --target H:P) --create-only\n"
            "         [--shows N] [--numeric-seats] [--hold-ttl S]\n"
            "         [--area-capacity N [--area-tier T]] [--areas ID:N (the area's id)]\n"
            "         [--group N (N shows and a group of them; HTTP)]\n"
            "       group holds: --group N (--create-show | --group-id G --show FIRST)\n"
            "         [--group-pct P]\n"
            "Prints the show id (show id=…, the last one created), one line per operation,\n"
            "statuses, and the\n"
            "'holds …' and 'totals …' lines. Exit status 0 unless the load could not run.\n");
}

int main(int argc, char **argv)
{
    seatd_bench_cfg_t cfg = {.procs = 2,
                             .conns = 32,
                             .pipeline = 32,
                             .duration_s = 10,
                             .book_pct = 2,
                             .release_pct = 50,
                             .users = 10000,
                             .max_per_user = 10,
                             .ttl_ms = 3000,
                             .areas_pct = 100,
                             .group_pct = 100,
                             .area_tier = "standard",
                             .secret = getenv("SEATD_JWT_SECRET")};
    int create = 0, hold_ttl_s = 3, create_only = 0, shows = 1;
    cfg.seed = (uint64_t)getpid() * 2654435761u ^ seatd_bench_now_us();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define ARG(name) (strcmp(a, name) == 0 && v && ++i)
        if (ARG("--target")) {
            if (cfg.ntargets == SEATD_BENCH_MAX_TARGETS ||
                parse_target(v, &cfg.targets[cfg.ntargets++]) != 0)
                return usage(), 2;
        } else if (ARG("--redis")) {
            if (parse_target(v, &cfg.redis) != 0)
                return usage(), 2;
        } else if (strcmp(a, "--direct") == 0) {
            cfg.direct = 1;
        } else if (strcmp(a, "--seatmap") == 0) {
            cfg.seatmap = 1;
        } else if (strcmp(a, "--inm") == 0) {
            cfg.inm = 1;
        } else if (strcmp(a, "--gzip") == 0) {
            cfg.gzip = 1;
        } else if (strcmp(a, "--create-show") == 0) {
            create = 1;
        } else if (strcmp(a, "--create-only") == 0) {
            create = create_only = 1;
        } else if (strcmp(a, "--numeric-seats") == 0) {
            cfg.numeric_seats = 1;
        } else if (ARG("--shows")) {
            shows = atoi(v);
        } else if (ARG("--show")) {
            snprintf(cfg.show_id, sizeof cfg.show_id, "%s", v);
        } else if (ARG("--procs")) {
            cfg.procs = atoi(v);
        } else if (ARG("--conns")) {
            cfg.conns = atoi(v);
        } else if (ARG("--pipeline")) {
            cfg.pipeline = atoi(v);
        } else if (ARG("--duration")) {
            cfg.duration_s = atof(v);
        } else if (ARG("--warmup")) {
            cfg.warmup_s = atof(v);
        } else if (ARG("--count")) {
            cfg.count = atol(v);
        } else if (ARG("--rate")) {
            cfg.rate = atof(v);
        } else if (ARG("--book-pct")) {
            cfg.book_pct = atof(v);
        } else if (ARG("--release-pct")) {
            cfg.release_pct = atof(v);
        } else if (ARG("--users")) {
            cfg.users = atoi(v);
        } else if (ARG("--hold-ttl")) {
            hold_ttl_s = atoi(v);
        } else if (ARG("--ttl-ms")) {
            cfg.ttl_ms = atol(v);
        } else if (ARG("--max-per-user")) {
            cfg.max_per_user = atoi(v);
        } else if (ARG("--secret")) {
            cfg.secret = v;
        } else if (ARG("--seed")) {
            cfg.seed = strtoull(v, NULL, 10);
        } else if (ARG("--pay")) {
            char copy[256], *save = NULL;
            snprintf(copy, sizeof copy, "%s", v);
            for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                if (cfg.npay == 8 || strlen(t) >= sizeof cfg.pay[0])
                    return usage(), 2;
                snprintf(cfg.pay[cfg.npay++], sizeof cfg.pay[0], "%s", t);
            }
        } else if (strcmp(a, "--idem") == 0) {
            cfg.idem = 1;
        } else if (ARG("--log")) {
            cfg.log_path = v;
        } else if (ARG("--areas")) {
            if (parse_areas(&cfg, v) != 0)
                return usage(), 2;
        } else if (ARG("--areas-pct")) {
            cfg.areas_pct = atof(v);
        } else if (strcmp(a, "--areas-only") == 0) {
            cfg.areas_only_pct = 100;
        } else if (ARG("--areas-only-pct")) {
            cfg.areas_only_pct = atof(v);
        } else if (ARG("--group")) {
            cfg.group = atoi(v);
        } else if (ARG("--group-pct")) {
            cfg.group_pct = atof(v);
        } else if (ARG("--group-id")) {
            snprintf(cfg.group_id, sizeof cfg.group_id, "%s", v);
        } else if (ARG("--area-capacity")) {
            cfg.area_capacity = atol(v);
        } else if (ARG("--area-tier")) {
            if (strcmp(v, "standard") != 0 && strcmp(v, "premium") != 0) /* the show's tiers */
                return usage(), 2;
            snprintf(cfg.area_tier, sizeof cfg.area_tier, "%s", v);
        } else {
            usage();
            return 2;
        }
#undef ARG
    }
    if (cfg.procs < 1 || cfg.conns < 1 || cfg.pipeline < 1 || cfg.users < 1 ||
        (cfg.duration_s <= 0 && cfg.count <= 0 && !create_only) || shows < 1 ||
        (!cfg.direct && cfg.ntargets == 0) || (cfg.direct && cfg.redis.port == 0) ||
        (!create && !cfg.show_id[0]) || (!cfg.direct && !cfg.seatmap && !cfg.secret) ||
        (create && !cfg.direct && !cfg.secret) || cfg.area_capacity < 0 ||
        cfg.area_capacity > 1000000 || cfg.group < 0 || cfg.group > SEATD_BENCH_MAX_GROUP ||
        cfg.group == 1 || (cfg.group && cfg.direct) || (cfg.group && !create && !cfg.group_id[0]) ||
        cfg.group_pct < 0 || cfg.group_pct > 100) {
        usage();
        return 2;
    }
    if (!cfg.area_id[0])
        snprintf(cfg.area_id, sizeof cfg.area_id, "FLOOR");
    for (int k = 0; create && k < shows; k++) {
        int rc = cfg.direct      ? seatd_bench_direct_create_show(&cfg, hold_ttl_s)
                 : cfg.group > 0 ? http_create_group(&cfg, hold_ttl_s)
                                 : http_create_show(&cfg, hold_ttl_s, NULL);
        if (rc != 0)
            return 1;
    }
    printf("show id=%s\n", cfg.show_id);
    fflush(stdout);
    if (create_only)
        return 0;
    if (cfg.duration_s <= 0)
        cfg.duration_s = 0;

    size_t bytes = sizeof(seatd_bench_slot_t) * (size_t)cfg.procs;
    seatd_bench_slot_t *slots =
        mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (slots == MAP_FAILED) {
        perror("loadgen: mmap");
        return 1;
    }
    memset(slots, 0, bytes);
    signal(SIGPIPE, SIG_IGN);
    pid_t *pids = calloc((size_t)cfg.procs, sizeof *pids);
    for (int k = 0; k < cfg.procs; k++) {
        pids[k] = fork();
        if (pids[k] < 0) {
            perror("loadgen: fork");
            return 1;
        }
        if (pids[k] == 0) {
            int rc = cfg.direct ? seatd_bench_direct_run(&cfg, k, &slots[k])
                                : seatd_bench_http_run(&cfg, k, &slots[k]);
            slots[k].done = rc == 0;
            _exit(rc == 0 ? 0 : 1);
        }
    }
    int failed = 0;
    for (int k = 0; k < cfg.procs; k++) {
        int st = 0;
        if (waitpid(pids[k], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0 ||
            !slots[k].done) {
            fprintf(stderr, "loadgen: load process %d failed (status %d)\n", k, st);
            failed = 1;
        }
    }
    seatd_bench_slot_t *total = calloc(1, sizeof *total);
    for (int k = 0; k < cfg.procs; k++)
        seatd_bench_slot_merge(total, &slots[k]);
    printf("run mode=%s scenario=%s procs=%d conns=%d pipeline=%d show=%s areas=%s group=%s "
           "group_shows=%d group_pct=%.0f\n",
           cfg.direct ? "direct" : "http",
           cfg.seatmap ? (cfg.inm    ? "seatmap-inm"
                          : cfg.gzip ? "seatmap-gzip"
                                     : "seatmap")
                       : "blockbuster",
           cfg.procs, cfg.direct ? 1 : cfg.conns, cfg.direct ? cfg.pipeline : 1, cfg.show_id,
           cfg.areas[0] ? cfg.areas : "-", cfg.group ? cfg.group_id : "-", cfg.group,
           cfg.group ? cfg.group_pct : 0.0);
    seatd_bench_report(stdout, total, total->elapsed_s);
    uint64_t answers = 0;
    for (int op = 0; op < SEATD_BENCH_NOPS; op++)
        answers += total->lat[op].count;
    if (answers == 0 && total->all_wins == 0) {
        fprintf(stderr, "loadgen: no request was answered (%llu connection errors)\n",
                (unsigned long long)total->conn_errors);
        failed = 1;
    }
    free(total);
    free(pids);
    munmap(slots, bytes);
    return failed;
}
