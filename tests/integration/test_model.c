/*
 * A randomised model test of the whole seat lifecycle: forked workers run random holds,
 * releases, payments (begin + confirm or fail), cancellations, reaps and short-TTL expiry
 * on a small show while a subscriber counts the deltas; then an audit against Redis proves
 * the invariant of DESIGN.md on the final state.
 */
#include <criterion/criterion.h>
#include <poll.h>

#include "racer.h"
#include "seats.h"
#include "store_harness.h"

#define WORKERS 4
#define USERS 8
#define RUN_MS 3000
#define SUB_GRACE_MS 1500

/* The run uses A1..A12; A13 is kept for one final long hold. */
static const char *const seats13[] = {"A1", "A2", "A3",  "A4",  "A5",  "A6",  "A7",
                                      "A8", "A9", "A10", "A11", "A12", "A13", NULL};

static void setup(void)
{
    seatd_test_redis_flushall();
}

TestSuite(model, .init = setup, .timeout = 60);

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---------------------------------------------------------------------- the subscriber */

/* Counts deltas on {s:1}:ch and checks their versions are 1, 2, 3, … in order.
 * Reports "<count> <last version> <in order: 1|0>". */
static int subscriber(void)
{
    redisContext *c = seatd_test_redis_connect();
    redisReply *rep = redisCommand(c, "SUBSCRIBE {s:1}:ch");
    if (rep == NULL || rep->type != REDIS_REPLY_ARRAY)
        return 20;
    freeReplyObject(rep);
    seatd_test_racer_ready_and_wait();
    long long end = mono_ms() + RUN_MS + SUB_GRACE_MS;
    long count = 0, last = 0;
    int ordered = 1;
    while (mono_ms() < end) {
        void *r = NULL;
        while (redisGetReplyFromReader(c, &r) == REDIS_OK && r != NULL) {
            redisReply *m = r;
            if (m->type == REDIS_REPLY_ARRAY && m->elements == 3 &&
                strcmp(m->element[0]->str, "message") == 0) {
                const char *p = strstr(m->element[2]->str, "{\"v\":");
                long v = p ? strtol(p + 5, NULL, 10) : -1;
                ordered &= v == last + 1;
                last = v;
                count++;
            }
            freeReplyObject(m);
            r = NULL;
        }
        struct pollfd pfd = {c->fd, POLLIN, 0};
        if (poll(&pfd, 1, 50) > 0 && redisBufferRead(c) != REDIS_OK)
            return 21;
    }
    char line[64];
    snprintf(line, sizeof(line), "%ld %ld %d", count, last, ordered);
    seatd_test_racer_report(line);
    redisFree(c);
    return 0;
}

/* ---------------------------------------------------------------------- the workers */

typedef struct {
    char hold_id[SEATD_ID_MAX]; /* a hold this worker made */
    char owner[16];             /* its owner */
} made_t;

/* Errors a correct system may answer to a random but well-formed request. */
static int expected(int rc)
{
    return rc == 0 || rc == SEATD_ECONFLICT || rc == SEATD_ELIMIT || rc == SEATD_EEXPIRED ||
           rc == SEATD_ESTATE;
}

static int worker(int i)
{
    th_t t;
    th_res_t r = {0};
    made_t made[64]; /* a ring of this worker's latest holds */
    size_t nmade = 0, made_total = 0;
    char bookings[64][SEATD_ID_MAX]; /* a ring of its latest confirmed bookings */
    size_t nbook = 0, book_total = 0;
    unsigned seed = (unsigned)(i * 7919 + 17);
    int bad = 0;
    if (th_open(&t) != 0)
        return 10;
    if (th_reap(&t, &r, "1") != 0)
        return 11;
    seatd_test_racer_ready_and_wait();
    long long end = mono_ms() + RUN_MS;
    while (mono_ms() < end && bad == 0) {
        int op = rand_r(&seed) % 100;
        if (op < 40 || nmade == 0) {
            const char *pick[4] = {0}, *norm[3];
            int n = 1 + rand_r(&seed) % 3;
            for (int k = 0; k < n; k++)
                pick[k] = seats13[rand_r(&seed) % 12];
            size_t nn = (size_t)n;
            if (seatd_seats_normalise(pick, nn, 3, NULL, norm, NULL) != 0)
                continue; /* a duplicate pick */
            const char *req[4] = {norm[0], nn > 1 ? norm[1] : NULL, nn > 2 ? norm[2] : NULL, NULL};
            made_t m;
            snprintf(m.owner, sizeof(m.owner), "u%d", rand_r(&seed) % USERS);
            long long ttl = rand_r(&seed) % 2 ? 30 + rand_r(&seed) % 220 /* expires in the run */
                                              : 500 + rand_r(&seed) % 1000;
            int rc = th_hold(&t, &r, "1", m.owner, req, ttl, 4, NULL);
            if (rc == 0) {
                snprintf(m.hold_id, sizeof(m.hold_id), "%s", th_get(&r, "holdId"));
                made[made_total++ % 64] = m;
                nmade = made_total < 64 ? made_total : 64;
            }
            bad |= !expected(rc);
        } else if (op < 55) {
            made_t *m = &made[rand_r(&seed) % nmade];
            int rc = th_release(&t, &r, m->hold_id, m->owner);
            bad |= !expected(rc) << 1;
        } else if (op < 85) {
            made_t *m = &made[rand_r(&seed) % nmade];
            long long window = rand_r(&seed) % 2 ? 20 + rand_r(&seed) % 200 : 5000;
            int rc = th_book_begin(&t, &r, "1", m->hold_id, m->owner, window);
            bad |= !expected(rc) << 2;
            if (rc == 0) {
                char booking[SEATD_ID_MAX];
                snprintf(booking, sizeof(booking), "%s", th_get(&r, "bookingId"));
                th_sleep_ms(rand_r(&seed) % 40);
                if (rand_r(&seed) % 10 < 7) {
                    rc = th_book_confirm(&t, &r, booking);
                    if (rc == 0) {
                        snprintf(bookings[book_total++ % 64], SEATD_ID_MAX, "%s", booking);
                        nbook = book_total < 64 ? book_total : 64;
                    }
                    if (rc == SEATD_EEXPIRED) /* the handler then refunds and fails it */
                        rc = th_book_fail(&t, &r, booking);
                } else {
                    rc = th_book_fail(&t, &r, booking);
                }
                bad |= !expected(rc) << 3;
            }
        } else if (op < 90 && nbook > 0) {
            th_res_clear(&r);
            int rc = th_finish(&t, &r,
                               seatd_store_cancel(t.store, bookings[rand_r(&seed) % nbook], NULL,
                                                  100, th_on_result, &r));
            bad |= !expected(rc) << 4;
        } else if (op < 95) {
            bad |= (th_reap(&t, &r, "1") != 0) << 5;
        } else {
            th_sleep_ms(rand_r(&seed) % 30);
        }
    }
    /* Worker 1 ends with a long hold on A13, which the run never touches, so the audit also
     * sees a live hold (every hold of the run is past its deadline by then). */
    if (i == 1 && bad == 0) {
        const char *last[] = {"A13", NULL};
        bad |= (th_hold(&t, &r, "1", "final", last, 30000, 0, NULL) != 0) << 6;
    }
    if (bad)
        fprintf(stderr, "model worker %d: unexpected answer %d (%s %s)\n", i, bad,
                seatd_err_name(r.err), r.detail);
    th_res_clear(&r);
    if (th_close(&t) != 0 && bad == 0)
        return 12;
    return bad ? 30 : 0;
}

static int model_racer(int i, void *arg)
{
    return i == 0 ? subscriber() : worker(i);
}

/* ---------------------------------------------------------------------- the audit */

/* Returns the violations of the invariant as one string per line (empty: none). */
static const char audit_lua[] =
    "local p = '{s:1}'\n"
    "local out = {}\n"
    "local n = tonumber(redis.call('HGET', p .. ':meta', 'seatCount'))\n"
    "local owners = {}\n"
    "for _, k in ipairs(redis.call('KEYS', p .. ':booking:*')) do\n"
    "  local b = redis.call('HGETALL', k)\n"
    "  local h = {} for i = 1, #b, 2 do h[b[i]] = b[i + 1] end\n"
    "  if h.status == 'CONFIRMED' then\n"
    "    for s in string.gmatch(h.seatIds, '[^,]+') do\n"
    "      if owners[s] then out[#out + 1] = s .. ' in two confirmed bookings' end\n"
    "      owners[s] = k\n"
    "    end\n"
    "  end\n"
    "end\n"
    "for i = 0, n - 1 do\n"
    "  local s = 'A' .. (i + 1)\n"
    "  local booked = redis.call('GETBIT', p .. ':booked', i)\n"
    "  local held = redis.call('GETBIT', p .. ':held', i)\n"
    "  local key = redis.call('GET', p .. ':seat:' .. s)\n"
    "  if (booked == 1) ~= (owners[s] ~= nil) then out[#out + 1] = s .. ' booked bit ' .. booked "
    ".. ' vs bookings' end\n"
    "  if (held == 1) ~= (key ~= false) then out[#out + 1] = s .. ' held bit ' .. held .. ' vs "
    "seat key' end\n"
    "  if booked == 1 and key then out[#out + 1] = s .. ' booked and held' end\n"
    "  if key then\n"
    "    local st = redis.call('HGET', p .. ':hold:' .. key, 'status')\n"
    "    if st ~= 'HELD' and st ~= 'PENDING_PAYMENT' then out[#out + 1] = s .. ' key names a ' .. "
    "tostring(st) .. ' hold' end\n"
    "  end\n"
    "end\n"
    "for _, k in ipairs(redis.call('KEYS', p .. ':hold:*')) do\n"
    "  local st = redis.call('HGET', k, 'status')\n"
    "  if st == 'HELD' or st == 'PENDING_PAYMENT' then\n"
    "    local id = string.sub(k, #p + 7)\n"
    "    for s in string.gmatch(redis.call('HGET', k, 'seats'), '[^,]+') do\n"
    "      if redis.call('GET', p .. ':seat:' .. s) ~= id then out[#out + 1] = id .. ' live but "
    "lost ' .. s end\n"
    "    end\n"
    "  end\n"
    "end\n"
    "return table.concat(out, '\\n')\n";

Test(model, random_operations_keep_the_seat_invariant)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats13, 60000), 0);
    cr_assert_eq(th_close(&t), 0);

    int status[WORKERS + 1];
    char *reports[WORKERS + 1];
    cr_assert_eq(seatd_test_race(WORKERS + 1, model_racer, NULL, status, reports,
                                 RUN_MS + SUB_GRACE_MS + 20000),
                 0);
    for (int i = 0; i <= WORKERS; i++)
        cr_assert_eq(status[i], 0, "racer %d exited %d", i, status[i]);
    long deltas = -1, last = -1;
    int ordered = 0;
    cr_assert_not_null(reports[0]);
    cr_assert_eq(sscanf(reports[0], "%ld %ld %d", &deltas, &last, &ordered), 3);
    for (int i = 0; i <= WORKERS; i++)
        free(reports[i]);

    redisContext *c = seatd_test_redis_connect();
    char v[32];
    cr_assert_eq(th_str(c, v, sizeof(v), "GET {s:1}:ver"), 1);
    cr_assert(deltas > 10, "the model did something: %ld deltas", deltas);
    cr_assert_eq(atol(v), deltas, "one delta per version");
    cr_assert_eq(last, deltas);
    cr_assert(ordered, "deltas arrived in version order without gaps");
    cr_log_info("model: %ld versions, %lld stream events, %lld bookings", deltas,
                th_int(c, "XLEN {s:1}:bookings"),
                th_int(c, "EVAL %s 0", "return #redis.call('KEYS', '{s:1}:booking:*')"));

    /* A final reap brings the projection up to date with Redis's clock; then audit. */
    cr_assert_eq(th_open(&t), 0);
    th_sleep_ms(300); /* every short hold is past its deadline */
    cr_assert_eq(th_reap(&t, &r, "1"), 0);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
    cr_assert_eq(th_int(c, "GETBIT {s:1}:held 12"), 1, "the final long hold is live");
    char *violations = calloc(1, 65536);
    cr_assert_geq(th_str(c, violations, 65536, "EVAL %s 0", audit_lua), 0);
    cr_assert_str_eq(violations, "", "invariant violated:\n%s", violations);
    free(violations);
    redisFree(c);
}
