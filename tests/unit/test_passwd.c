/* Unit tests for worker/clients/passwd.c: argon2id at OWASP's parameters, on libuv's thread pool.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "clients/passwd.h"

Test(passwd, hashes_with_argon2id_at_owasp_parameters_and_verifies)
{
    char enc[SEATD_PASSWD_ENCODED_MAX], enc2[SEATD_PASSWD_ENCODED_MAX];
    cr_assert_eq(seatd_passwd_hash_sync("correct horse", 13, enc), 0);
    cr_assert(strncmp(enc, "$argon2id$v=19$m=19456,t=2,p=1$", 31) == 0, "%s", enc);
    cr_assert_eq(seatd_passwd_verify_sync(enc, "correct horse", 13), 1);
    cr_assert_eq(seatd_passwd_verify_sync(enc, "correct horsE", 13), 0);
    cr_assert_eq(seatd_passwd_hash_sync("correct horse", 13, enc2), 0);
    cr_assert_str_neq(enc, enc2); /* salted */
    cr_assert_eq(seatd_passwd_verify_sync("$argon2i$whatever", "x", 1), 0);
    cr_assert_eq(seatd_passwd_verify_sync(NULL, "x", 1), 0);
}

typedef struct {
    int done, ok, err;
    char enc[SEATD_PASSWD_ENCODED_MAX];
    uv_thread_t loop_thread;
    int on_loop_thread;
} res_t;

static void on_hash(int err, const char *encoded, void *data)
{
    res_t *r = data;
    r->done++;
    r->err = err;
    uv_thread_t self = uv_thread_self();
    r->on_loop_thread = uv_thread_equal(&self, &r->loop_thread);
    if (encoded)
        snprintf(r->enc, sizeof(r->enc), "%s", encoded);
}

static void on_verify(int ok, void *data)
{
    res_t *r = data;
    r->done++;
    r->ok = ok;
}

Test(passwd, the_pool_answers_once_on_the_loop_thread)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    res_t h = {.loop_thread = uv_thread_self()};
    cr_assert_eq(seatd_passwd_hash(&loop, "pa55 word!", 10, on_hash, &h), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    cr_assert_eq(h.done, 1);
    cr_assert_eq(h.err, 0);
    cr_assert(h.on_loop_thread);
    res_t v = {0}, w = {0}, d = {0};
    cr_assert_eq(seatd_passwd_verify(&loop, h.enc, "pa55 word!", 10, on_verify, &v), 0);
    cr_assert_eq(seatd_passwd_verify(&loop, h.enc, "pa55 word?", 10, on_verify, &w), 0);
    cr_assert_eq(seatd_passwd_verify(&loop, NULL, "pa55 word!", 10, on_verify, &d), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    cr_assert_eq(v.done + w.done + d.done, 3);
    cr_assert_eq(v.ok, 1);
    cr_assert_eq(w.ok, 0);
    cr_assert_eq(d.ok, 0); /* the dummy hash never matches */
    cr_assert_eq(uv_loop_close(&loop), 0);
}

typedef struct {
    int *order, *n;
    int me;
} turn_t;

static void on_turn(int ok, void *data)
{
    turn_t *t = data;
    (void)ok;
    t->order[(*t->n)++] = t->me;
}

Test(passwd, at_most_one_hash_runs_at_once_and_the_others_wait_their_turn_in_order)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    int order[4] = {-1, -1, -1, -1}, n = 0;
    turn_t t[4];
    for (int i = 0; i < 4; i++) {
        t[i] = (turn_t){.order = order, .n = &n, .me = i};
        cr_assert_eq(seatd_passwd_verify(&loop, NULL, "pa55 word!", 10, on_turn, &t[i]), 0);
    }
    cr_assert_eq(seatd_passwd_in_flight(), SEATD_PASSWD_IN_FLIGHT);
    cr_assert_eq(seatd_passwd_waiting(), 4 - SEATD_PASSWD_IN_FLIGHT);
    uv_run(&loop, UV_RUN_DEFAULT);
    cr_assert_eq(n, 4, "every call answered once");
    for (int i = 0; i < 4; i++)
        cr_assert_eq(order[i], i, "answered in the order asked");
    cr_assert_eq(seatd_passwd_in_flight(), 0);
    cr_assert_eq(seatd_passwd_waiting(), 0);
    cr_assert_eq(uv_loop_close(&loop), 0);
}

Test(passwd, the_concurrency_setting_bounds_the_hashes_on_the_pool)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    seatd_passwd_set_in_flight(2);
    int order[5] = {-1, -1, -1, -1, -1}, n = 0;
    turn_t t[5];
    for (int i = 0; i < 5; i++) {
        t[i] = (turn_t){.order = order, .n = &n, .me = i};
        cr_assert_eq(seatd_passwd_verify(&loop, NULL, "pa55 word!", 10, on_turn, &t[i]), 0);
    }
    cr_assert_eq(seatd_passwd_in_flight(), 2);
    cr_assert_eq(seatd_passwd_waiting(), 3);
    uv_run(&loop, UV_RUN_DEFAULT);
    cr_assert_eq(n, 5, "every call answered once");
    seatd_passwd_set_in_flight(99);
    seatd_passwd_set_in_flight(0); /* clamped to 1..SEATD_PASSWD_IN_FLIGHT_MAX */
    n = 0;                         /* order[] is filled again from its start */
    cr_assert_eq(seatd_passwd_verify(&loop, NULL, "x", 1, on_turn, &t[0]), 0);
    cr_assert_eq(seatd_passwd_verify(&loop, NULL, "x", 1, on_turn, &t[1]), 0);
    cr_assert_eq(seatd_passwd_in_flight(), 1);
    cr_assert_eq(seatd_passwd_waiting(), 1);
    uv_run(&loop, UV_RUN_DEFAULT);
    cr_assert_eq(n, 2);
    seatd_passwd_set_in_flight(SEATD_PASSWD_IN_FLIGHT);
    cr_assert_eq(uv_loop_close(&loop), 0);
}
