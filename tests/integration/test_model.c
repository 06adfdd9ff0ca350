/*
 * A randomised model test of the whole seat lifecycle: forked workers run random holds,
 * releases, payments (begin + confirm or fail, or begin and walk away, charged at the fake
 * gateway or not, as a worker that dies mid-payment, or failed and then charged), cancellations,
 * reaps and short-TTL expiry on a small show (holds by name and best available, issue 13), while a
 * reconciler settles the abandoned payments as they go and a subscriber counts the deltas. Then a
 * last reconciler settles what is left, and an audit against Redis proves the invariant of
 * DESIGN.md on the final state and checks every index against the records: per-user hold counts and
 * booked seats
 * ({s}:user:<sub>), the expiry set ({s}:expiry), the pending set ({s}:pending) and the watch of
 * failed bookings ({s}:failed, empty at the end); and against the gateway: a charged booking is
 * confirmed or refunded in full, never both, even when the charge landed after the booking
 * had failed and the worker that sent it died.
 */
#include <criterion/criterion.h>
#include <poll.h>

#include "best_harness.h"
#include "gateway_harness.h"
#include "clients/payment.h"
#include "racer.h"
#include "flows/reconcile.h"
#include "domain/seats.h"
#include "store_harness.h"

#define WORKERS 4 /* racers 1..WORKERS; 0 is the subscriber, WORKERS + 1 the reconciler */
#define USERS 8
/* The charge horizon: while workers run, no booking is failed for want of a charge (a worker
 * may charge a booking any time after it began, as a gateway may still process a charge), and
 * no failed booking is asked about yet; once every worker is gone, no charge can land any more
 * and the last reconciler fails the uncharged ones at once and asks about every failed one. */
#define HORIZON_RUN_MS 600000
#define HORIZON_END_MS 0
#define WAIT_MS 30000 /* waits for an event: only one that never comes reaches it */
#define RUN_MS 3000
#define SUB_GRACE_MS 1500

/* The run uses A1..A12; A13 is kept for one final long hold. */
static const char *const seats13[] = {"A1", "A2", "A3",  "A4",  "A5",  "A6",  "A7",
                                      "A8", "A9", "A10", "A11", "A12", "A13", NULL};

static void setup(void)
{
    seatd_test_redis_flushall();
}

static void teardown(void)
{
    gw_stop();
}

TestSuite(model, .init = setup, .fini = teardown, .timeout = 120);

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
    redisReply *rep = seatd_test_redis_command(c, "SUBSCRIBE {s:1}:ch");
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
    int bad = 0, best_made = 0;
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
            int rc;
            if (rand_r(&seed) % 3 == 0) {
                /* best available (issue 13): n adjacent seats of A1..A12, as the worker
                 * proposes them (A13 is left out: it is kept for the final hold) */
                seatd_best_list_t c = {0}, keep = {0};
                char request[32];
                if (seatd_best_candidates(seatd_layout_cache_get("1"), nn, NULL, 0, NULL, &c))
                    bad |= 1 << 9;
                for (size_t k = 0; k < c.n; k++) {
                    const char *seats = strchr(strchr(c.items[k], '|') + 1, '|') + 1;
                    const char *a13 = strstr(seats, "A13:");
                    if (a13 && a13 < seats + strcspn(seats, "|"))
                        continue; /* the block has A13 (its neighbours may) */
                    keep.items = realloc(keep.items, (keep.n + 1) * sizeof(char *));
                    keep.items[keep.n++] = c.items[k];
                    c.items[k] = NULL;
                }
                seatd_best_list_free(&c);
                snprintf(request, sizeof(request), "best:%zu:-:0", nn);
                rc = tb_sell_ttl(&t, &r, "1", m.owner, NULL, 0, request, &keep, NULL, ttl, 4);
                bad |= (rc == SEATD_ENOBLOCK ? 0 : !expected(rc)) << 8;
                best_made += rc == 0;
                if (rc == SEATD_ENOBLOCK)
                    rc = SEATD_ECONFLICT;
            } else {
                rc = th_hold(&t, &r, "1", m.owner, req, ttl, 4, NULL);
            }
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
                th_sleep_ms(rand_r(&seed) % 40); /* the payment runs; others act meanwhile */
                int way = rand_r(&seed) % 11;
                if (way == 10) {
                    /* The booking is failed while its charge is on its way, the charge lands
                     * after it, and the worker that sent it dies before it sees the answer:
                     * only the reconciler's watch of failed bookings can refund it. */
                    rc = th_book_fail(&t, &r, booking);
                    if (rc == 0 && gw_try_charge(gw_port, booking, "tok_ok") != 201)
                        bad |= 1 << 7;
                } else if (way >= 7) {
                    /* The worker dies mid-payment: after the charge (way 7, 8) or before it
                     * (way 9); the reconciler settles the booking. */
                    if (way < 9 && gw_try_charge(gw_port, booking, "tok_ok") != 201)
                        bad |= 1 << 7;
                } else if (way < 5) {
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
    bad |= (best_made == 0) << 10; /* the run made best-available holds too */
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

/* ---------------------------------------------------------------------- the reconcilers */

typedef struct {
    uv_timer_t timer;
    long long end;   /* mono ms at which to stop; 0: stop when no payment is left unsettled */
    redisContext *c; /* for the unsettled check */
    int done;
} run_wait_t;

/* Payments the reconciler still has to settle: bookings pending ({s}:pending), failed while
 * their charge may still land ({s}:failed), and late charges not yet refunded (FAILED
 * bookings in {s}:refunds; a cancelled booking's refund there may stay owed: the model's
 * cancellations refund charges the gateway never made). */
static const char unsettled_lua[] =
    "local n = redis.call('ZCARD', '{s:1}:pending') + redis.call('ZCARD', '{s:1}:failed')\n"
    "for _, id in ipairs(redis.call('ZRANGE', '{s:1}:refunds', 0, -1)) do\n"
    "  if redis.call('HGET', '{s:1}:booking:' .. id, 'status') == 'FAILED' then n = n + 1 end\n"
    "end\n"
    "return n\n";

static void on_run_poll(uv_timer_t *tm)
{
    run_wait_t *w = tm->data;
    if (w->end ? mono_ms() >= w->end : th_int(w->c, "EVAL %s 0", unsettled_lua) == 0) {
        w->done = 1;
        uv_timer_stop(tm);
    }
}

static void on_drained(const struct redisReply *reply, int err, void *data)
{
    (*(int *)data)++;
}

/*
 * Runs a reconciler (every 10 ms, no minimum age, charge horizon 'horizon_ms') against the
 * fake gateway on a loop of its own: for the run ('until_ms' > 0, the mono ms to stop at) or
 * until nothing is pending. Returns 0, or a non-zero code (never asserts: also a racer).
 */
static int reconcile_run(long long until_ms, int limit_ms, long long horizon_ms)
{
    th_t t;
    if (th_open(&t) != 0)
        return 40;
    seatd_log_set_level(SEATD_LOG_ERROR);
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", gw_port);
    seatd_payment_t *pay = seatd_payment_new(t.loop, url, 5000);
    seatd_reconcile_opts_t o = {
        .interval_ms = 10, .min_age_ms = 0, .rescan_every = 1, .horizon_ms = horizon_ms};
    seatd_reconcile_t *rec = pay ? seatd_reconcile_new(t.loop, t.rds, t.store, pay, &o) : NULL;
    if (rec == NULL)
        return 41;
    run_wait_t w = {.end = until_ms, .c = seatd_test_redis_connect()};
    uv_timer_init(t.loop, &w.timer);
    w.timer.data = &w;
    uv_timer_start(&w.timer, on_run_poll, 10, 10);
    int rc = seatd_test_loop_run_until(t.loop, &w.done, limit_ms);
    uv_close((uv_handle_t *)&w.timer, NULL);
    seatd_reconcile_close(rec);
    seatd_payment_close(pay);
    int drained = 0;
    const char *argv[] = {"PING"};
    if (seatd_rds_callv(t.rds, 1, argv, NULL, on_drained, &drained) == 0)
        seatd_test_loop_run_until(t.loop, &drained, limit_ms);
    redisFree(w.c);
    if (th_close(&t) != 0)
        return 42;
    return rc == 0 ? 0 : 43;
}

static int model_racer(int i, void *arg)
{
    if (i == 0)
        return subscriber();
    if (i == WORKERS + 1) {
        seatd_test_racer_ready_and_wait();
        return reconcile_run(mono_ms() + RUN_MS, RUN_MS + WAIT_MS, HORIZON_RUN_MS);
    }
    return worker(i);
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

/* The indexes against the records; same output convention. 'ARGV[1]' is the final hold's
 * owner, whose hold may still be live. */
static const char audit_index_lua[] =
    "local p = '{s:1}'\n"
    "local out = {}\n"
    "local function bad(s) out[#out + 1] = s end\n"
    "local function hash(k)\n"
    "  local a = redis.call('HGETALL', k) local h = {}\n"
    "  for i = 1, #a, 2 do h[a[i]] = a[i + 1] end return h end\n"
    "local function count(list) local n = 0\n"
    "  for _ in string.gmatch(list or '', '[^,]+') do n = n + 1 end return n end\n"
    "local live, users, booked = {}, {}, {}\n"
    "for _, k in ipairs(redis.call('KEYS', p .. ':hold:*')) do\n"
    "  local h = hash(k) local id = string.sub(k, #p + 7)\n"
    "  users[h.owner] = true\n"
    "  local score = redis.call('ZSCORE', p .. ':expiry', id)\n"
    "  local have = redis.call('HGET', p .. ':user:' .. h.owner, id)\n"
    "  if h.status == 'HELD' or h.status == 'PENDING_PAYMENT' then\n"
    "    live[id] = true\n"
    "    if not score then bad(id .. ' live, not in expiry') \n"
    "    elseif tonumber(score) ~= tonumber(h.expiresAt) then\n"
    "      bad(id .. ' expiry ' .. score .. ' vs expiresAt ' .. tostring(h.expiresAt)) end\n"
    "    if tonumber(have) ~= count(h.seats) then\n"
    "      bad(id .. ' counts ' .. tostring(have) .. ' seats for ' .. h.owner .. ', holds ' ..\n"
    "          count(h.seats)) end\n"
    "  else\n"
    "    if score then bad(id .. ' ' .. h.status .. ' but in expiry') end\n"
    "    if have then bad(id .. ' ' .. h.status .. ' but counted for ' .. h.owner) end\n"
    "  end\n"
    "end\n"
    "for _, id in ipairs(redis.call('ZRANGE', p .. ':expiry', 0, -1)) do\n"
    "  if not live[id] then bad(id .. ' in expiry, no live hold') end\n"
    "end\n"
    "local pending = {}\n"
    "for _, k in ipairs(redis.call('KEYS', p .. ':booking:*')) do\n"
    "  local b = hash(k) local id = string.sub(k, #p + 10)\n"
    "  users[b.owner] = true\n"
    "  if b.status == 'CONFIRMED' then\n"
    "    booked[b.owner] = (booked[b.owner] or 0) + count(b.seatIds) end\n"
    "  local score = redis.call('ZSCORE', p .. ':pending', id)\n"
    "  if b.status == 'PENDING_PAYMENT' then\n"
    "    pending[id] = true\n"
    "    if not score then bad(id .. ' pending, not in the pending set')\n"
    "    elseif tonumber(score) ~= tonumber(b.createdAt) then\n"
    "      bad(id .. ' pending since ' .. score .. ' vs createdAt ' .. tostring(b.createdAt)) end\n"
    "  elseif score then bad(id .. ' ' .. b.status .. ' but in the pending set') end\n"
    "end\n"
    "for _, id in ipairs(redis.call('ZRANGE', p .. ':pending', 0, -1)) do\n"
    "  if not pending[id] then bad(id .. ' in the pending set, no pending booking') end\n"
    "end\n"
    "for _, id in ipairs(redis.call('ZRANGE', p .. ':failed', 0, -1)) do\n"
    "  bad(id .. ' still watched for a late charge') end\n"
    "for _, k in ipairs(redis.call('KEYS', p .. ':user:*')) do\n"
    "  local owner = string.sub(k, #p + 7) users[owner] = true\n"
    "  for f, v in pairs(hash(k)) do\n"
    "    if f ~= 'booked' and not live[f] then bad(owner .. ' counts ' .. f .. ', not live') end\n"
    "  end\n"
    "end\n"
    "for owner in pairs(users) do\n"
    "  local n = tonumber(redis.call('HGET', p .. ':user:' .. owner, 'booked') or '0')\n"
    "  if n ~= (booked[owner] or 0) then\n"
    "    bad(owner .. ' booked ' .. n .. ' vs ' .. (booked[owner] or 0) .. ' confirmed seats') "
    "end\n"
    "end\n"
    "return table.concat(out, '\\n')\n";

/* The gateway's books against the bookings: every charged booking is CONFIRMED with nothing
 * refunded, CANCELLED by its owner with at most its cancellation refund given back (once the
 * booking says it succeeded), or FAILED and refunded in full, once. */
static void audit_gateway(redisContext *c)
{
    cJSON *stats = NULL;
    cr_assert_eq(gw_call("GET", "/v1/stats", NULL, NULL, &stats), 200);
    const cJSON *by = cJSON_GetObjectItemCaseSensitive(stats, "byKey");
    int charged = 0, refunded = 0, late = 0;
    for (const cJSON *k = by ? by->child : NULL; k; k = k->next) {
        charged++;
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(k, "refunds");
        const cJSON *amt = cJSON_GetObjectItemCaseSensitive(k, "refundedAmount");
        long long refunds = cJSON_IsNumber(n) ? (long long)n->valuedouble : 0;
        long long amount = cJSON_IsNumber(amt) ? (long long)amt->valuedouble : 0;
        char st[32], ref[64];
        cr_assert_eq(th_str(c, st, sizeof(st), "HGET {s:1}:booking:%s status", k->string), 1);
        th_str(c, ref, sizeof(ref), "HGET {s:1}:booking:%s refund", k->string);
        if (strcmp(st, "FAILED") == 0) {
            char why[128];
            th_str(c, why, sizeof(why), "HGET {s:1}:booking:%s reason", k->string);
            refunded++;
            late += strstr(why, "charged_late_refunded") != NULL; /* landed after the failure */
            cr_assert(refunds == 1 && amount == GW_AMOUNT && atoll(ref) == GW_AMOUNT,
                      "%s: FAILED after a charge, refunded %lld in %lld refunds (recorded %s)",
                      k->string, amount, refunds, ref);
        } else if (strcmp(st, "CANCELLED") == 0) {
            char rs[32];
            th_str(c, rs, sizeof(rs), "HGET {s:1}:booking:%s refundStatus", k->string);
            long long want = strcmp(rs, "succeeded") == 0 ? atoll(ref) : 0;
            cr_assert(refunds <= 1 && amount == want,
                      "%s: cancelled (refund %s, %s), refunded %lld in %lld refunds", k->string,
                      ref, rs, amount, refunds);
        } else {
            cr_assert_str_eq(st, "CONFIRMED", "%s: charged, but %s", k->string, st);
            cr_assert_eq(refunds, 0, "%s: confirmed and refunded", k->string);
        }
    }
    cJSON_Delete(stats);
    cr_log_info("model: %d charged at the gateway, %d of them refunded (%d charged after their "
                "booking failed)",
                charged, refunded, late);
}

/* Waits until Redis's clock is past every deadline in {s:1}:expiry below 'below' ms. */
static void wait_deadlines_before(redisContext *c, long long below)
{
    redisReply *z =
        seatd_test_redis_command(c, "ZRANGEBYSCORE {s:1}:expiry -inf (%lld WITHSCORES", below);
    cr_assert(z && z->type == REDIS_REPLY_ARRAY);
    long long last = 0;
    for (size_t i = 1; i < z->elements; i += 2)
        if (atoll(z->element[i]->str) > last)
            last = atoll(z->element[i]->str);
    freeReplyObject(z);
    cr_assert_eq(th_wait_redis_ms(c, last, WAIT_MS), 0, "Redis's clock passed %lld", last);
}

Test(model, random_operations_keep_the_seat_invariant_and_every_index)
{
    th_t t;
    th_res_t r = {0};
    gw_start();
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats13, 60000), 0);
    cr_assert_eq(th_close(&t), 0);

    int status[WORKERS + 2];
    char *reports[WORKERS + 2];
    cr_assert_eq(seatd_test_race(WORKERS + 2, model_racer, NULL, status, reports,
                                 RUN_MS + SUB_GRACE_MS + WAIT_MS),
                 0);
    for (int i = 0; i <= WORKERS + 1; i++)
        cr_assert_eq(status[i], 0, "racer %d exited %d", i, status[i]);
    long deltas = -1, last = -1;
    int ordered = 0;
    cr_assert_not_null(reports[0]);
    cr_assert_eq(sscanf(reports[0], "%ld %ld %d", &deltas, &last, &ordered), 3);
    for (int i = 0; i <= WORKERS + 1; i++)
        free(reports[i]);

    redisContext *c = seatd_test_redis_connect();
    char v[32];
    cr_assert_eq(th_str(c, v, sizeof(v), "GET {s:1}:ver"), 1);
    cr_assert(deltas > 10, "the model did something: %ld deltas", deltas);
    cr_assert_eq(atol(v), deltas, "one delta per version");
    cr_assert_eq(last, deltas);
    cr_assert(ordered, "deltas arrived in version order without gaps");
    cr_log_info("model: %ld versions, %lld stream events, %lld bookings, %lld still pending",
                deltas, th_int(c, "XLEN {s:1}:bookings"),
                th_int(c, "EVAL %s 0", "return #redis.call('KEYS', '{s:1}:booking:*')"),
                th_int(c, "ZCARD {s:1}:pending"));

    /* A last reconciler settles every payment the workers walked away from. */
    cr_assert_eq(reconcile_run(0, WAIT_MS, HORIZON_END_MS), 0,
                 "the reconciler settled every payment ({s}:pending, {s}:failed, late refunds)");

    /* Once Redis's clock is past every deadline of the run (the final hold's is 30 s out), a
     * reap brings the projection up to date; then audit. */
    redisReply *fh = seatd_test_redis_command(c, "HKEYS {s:1}:user:final");
    cr_assert(fh && fh->type == REDIS_REPLY_ARRAY && fh->elements == 1, "the final hold");
    char fs[64];
    cr_assert_eq(th_str(c, fs, sizeof(fs), "ZSCORE {s:1}:expiry %s", fh->element[0]->str), 1);
    freeReplyObject(fh);
    wait_deadlines_before(c, atoll(fs));
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_reap(&t, &r, "1"), 0);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
    cr_assert_eq(th_int(c, "GETBIT {s:1}:held 12"), 1, "the final long hold is live");
    cr_assert_eq(th_int(c, "ZCARD {s:1}:expiry"), 1, "only the final hold is due later");
    char *violations = calloc(1, 65536);
    cr_assert_geq(th_str(c, violations, 65536, "EVAL %s 0", audit_lua), 0);
    cr_assert_str_eq(violations, "", "invariant violated:\n%s", violations);
    cr_assert_geq(th_str(c, violations, 65536, "EVAL %s 0", audit_index_lua), 0);
    cr_assert_str_eq(violations, "", "an index disagrees with the records:\n%s", violations);
    free(violations);
    audit_gateway(c);
    redisFree(c);
}
