/* hold_batch.c - the holds of one show sent to Redis together; see hold_batch.h. */
#include "store/hold_batch.h"
#include "store/functions.h"

#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/errors.h"
#include "base/fmt.h"
#include "domain/keys.h"
#include "base/mem.h"
#include "domain/seats.h"

#define OPEN_MAX 8    /* shows with a batch being filled; one more sends the oldest */
#define FLIGHT_MAX 32 /* shows with batches in flight that are counted; more go uncounted */

/* One queued call: its arguments (one owned block: the pointers, then the bytes) and who
 * waits for its reply. */
typedef struct item_s {
    seatd_rds_reply_cb cb;
    void *data;
    int admitted;
    int argc;
    char **argv;
} item_t;

typedef struct batch_s {
    char key[SEATD_KEY_MAX];  /* the show's meta key */
    char qkey[SEATD_KEY_MAX]; /* its qadmit key, "" until an admitted hold comes */
    size_t n;
    item_t items[SEATD_HOLD_BATCH_MAX];
    char counts[SEATD_HOLD_BATCH_MAX + 1][SEATD_FMT_INT_MAX]; /* the call's numbers, as text */
} batch_t;

/* A show's batches on their way to Redis and back. */
typedef struct flight_s {
    char key[SEATD_KEY_MAX]; /* "" : a free slot */
    unsigned n;
} flight_t;

/* A batch on its way: who waits for which element of the reply. */
typedef struct sent_s {
    seatd_hold_batch_t *b; /* holds a reference until the batch lands */
    int flight;            /* its show's slot in b->flights; -1: not counted */
    size_t n;
    struct {
        seatd_rds_reply_cb cb;
        void *data;
    } to[];
} sent_t;

struct seatd_hold_batch_s {
    seatd_scripts_t *scripts; /* borrowed */
    uv_idle_t *idle;          /* owned; freed by its close callback */
    unsigned max;
    unsigned in_flight;      /* batches of a show in flight at once; 0: no limit */
    batch_t *open[OPEN_MAX]; /* oldest first */
    size_t nopen;
    /* Reused from batch to batch: a batch (4 KB) and its argument list are large enough
     * that allocating them each time made malloc consolidate its free lists each time. */
    batch_t *spare[OPEN_MAX];
    size_t nspare;
    const char **args;
    size_t args_cap;
    flight_t flights[FLIGHT_MAX];
    unsigned refs; /* 1 for the owner + 1 per batch in flight (as scripts.c) */
    int freed;     /* seatd_hold_batch_free() was called */
};

static void on_idle(uv_idle_t *h);

static batch_t *batch_take(seatd_hold_batch_t *b)
{
    if (b->nspare > 0)
        return b->spare[--b->nspare];
    return seatd_calloc(1, sizeof(batch_t));
}

/* Returns 'bt' (its items' arguments already freed) for the next batch. */
static void batch_put(seatd_hold_batch_t *b, batch_t *bt)
{
    if (b->nspare == OPEN_MAX) {
        free(bt);
        return;
    }
    bt->n = 0;
    bt->qkey[0] = '\0';
    b->spare[b->nspare++] = bt;
}

static char **copy_args(int argc, const char *const *argv)
{
    size_t bytes = (size_t)argc * sizeof(char *);
    for (int i = 0; i < argc; i++)
        bytes += strlen(argv[i]) + 1;
    char **out = seatd_malloc(bytes ? bytes : 1);
    char *p = (char *)(out + argc);
    for (int i = 0; i < argc; i++) {
        size_t len = strlen(argv[i]) + 1;
        memcpy(p, argv[i], len);
        out[i] = p;
        p += len;
    }
    return out;
}

/* The batch whose callbacks are running: its element shared by every request. */
static const struct redisReply *running_shared;

const struct redisReply *seatd_hold_batch_shared(void)
{
    return running_shared;
}

/* Counts a batch of show 'key' on its way; returns its slot, or -1 when every slot is taken
 * (the batch goes uncounted). */
static int flight_enter(seatd_hold_batch_t *b, const char *key)
{
    int free_slot = -1;
    for (int i = 0; i < FLIGHT_MAX; i++) {
        if (b->flights[i].key[0] == '\0') {
            if (free_slot < 0)
                free_slot = i;
        } else if (strcmp(b->flights[i].key, key) == 0) {
            b->flights[i].n++;
            return i;
        }
    }
    if (free_slot >= 0) {
        seatd_fmt_copy(b->flights[free_slot].key, sizeof(b->flights[free_slot].key), key);
        b->flights[free_slot].n = 1;
    }
    return free_slot;
}

/* Batches of show 'key' on their way. */
static unsigned flight_count(const seatd_hold_batch_t *b, const char *key)
{
    for (int i = 0; i < FLIGHT_MAX; i++)
        if (b->flights[i].key[0] != '\0' && strcmp(b->flights[i].key, key) == 0)
            return b->flights[i].n;
    return 0;
}

/* May show 'key''s open batch go now? */
static int may_send(const seatd_hold_batch_t *b, const char *key)
{
    return b->in_flight == 0 || flight_count(b, key) < b->in_flight;
}

/* Drops one reference to 'b'; the last frees it (its idle handle is closed by then). */
static void batcher_unref(seatd_hold_batch_t *b)
{
    if (--b->refs > 0)
        return;
    for (size_t i = 0; i < b->nspare; i++)
        free(b->spare[i]);
    free(b->args);
    free(b);
}

/* Batch 's' came back: it no longer counts, and a batch its show filled meanwhile may go
 * early in the loop's next turn (on_idle). */
static void sent_landed(sent_t *s)
{
    seatd_hold_batch_t *b = s->b;
    if (!b->freed) {
        if (s->flight >= 0 && --b->flights[s->flight].n == 0)
            b->flights[s->flight].key[0] = '\0';
        if (b->nopen > 0 && !uv_is_active((uv_handle_t *)b->idle))
            uv_idle_start(b->idle, on_idle);
    }
    batcher_unref(b);
}

static void on_sent_reply(const struct redisReply *reply, int err, void *data)
{
    sent_t *s = data;
    sent_landed(s);
    size_t elements = seatd_rds_reply_elements(reply);
    int whole = err == 0 && seatd_rds_reply_type(reply) == SEATD_RDS_REPLY_ARRAY &&
                (elements == s->n || elements == s->n + 1);
    const struct redisReply *shared = NULL;
    if (whole && elements == s->n + 1) {
        shared = seatd_rds_reply_element(reply, s->n);
        whole = seatd_rds_reply_type(shared) == SEATD_RDS_REPLY_ARRAY;
    }
    const struct redisReply *outer = running_shared; /* a callback may run a batch's reply */
    running_shared = whole ? shared : NULL;
    for (size_t i = 0; i < s->n; i++) {
        if (whole)
            s->to[i].cb(seatd_rds_reply_element(reply, i), 0, s->to[i].data);
        else if (err || seatd_rds_reply_type(reply) == SEATD_RDS_REPLY_ERROR)
            s->to[i].cb(reply, err, s->to[i].data); /* failed whole: each decodes its error */
        else
            s->to[i].cb(NULL, SEATD_EPROTO, s->to[i].data); /* not a batch's answer */
    }
    running_shared = outer;
    free(s);
}

/* Sends batch 'bt' (taken: returned to the spares here) as one seatd_hold_batch call. */
static void send_batch(seatd_hold_batch_t *b, batch_t *bt)
{
    size_t argc = 1, admitted = 0;
    for (size_t i = 0; i < bt->n; i++) {
        argc += 2 + (size_t)bt->items[i].argc;
        admitted |= bt->items[i].admitted != 0;
    }
    if (argc > b->args_cap) {
        b->args = seatd_realloc(b->args, argc * sizeof(*b->args));
        b->args_cap = argc;
    }
    const char **args = b->args;
    char(*counts)[SEATD_FMT_INT_MAX] = bt->counts;
    sent_t *s = seatd_malloc(sizeof(*s) + bt->n * sizeof(s->to[0]));
    s->n = bt->n;
    s->b = b;
    b->refs++;
    s->flight = flight_enter(b, bt->key);
    size_t at = 0;
    seatd_fmt_uint(counts[bt->n], bt->n);
    args[at++] = counts[bt->n];
    for (size_t i = 0; i < bt->n; i++) {
        item_t *it = &bt->items[i];
        seatd_fmt_uint(counts[i], (unsigned long long)it->argc);
        args[at++] = counts[i];
        args[at++] = it->admitted ? "1" : "0";
        for (int j = 0; j < it->argc; j++)
            args[at++] = it->argv[j];
        s->to[i].cb = it->cb;
        s->to[i].data = it->data;
    }
    const char *keys[2] = {bt->key, bt->qkey};
    int rc = seatd_scripts_fcall(b->scripts, SEATD_FN_HOLD_BATCH, admitted ? 2 : 1, keys, (int)argc,
                                 args, NULL, on_sent_reply, s);
    for (size_t i = 0; i < bt->n; i++)
        free(bt->items[i].argv);
    batch_put(b, bt);
    if (rc < 0)
        on_sent_reply(NULL, rc, s);
}

/* Sends open batch number 'i'. */
static void send_open(seatd_hold_batch_t *b, size_t i)
{
    batch_t *bt = b->open[i];
    memmove(b->open + i, b->open + i + 1, (b->nopen - i - 1) * sizeof(b->open[0]));
    b->nopen--;
    send_batch(b, bt);
}

/* Early in the loop's next turn: whatever the last turn queued goes now, unless its show has
 * 'in_flight' batches on their way already: then it goes when one comes back (sent_landed),
 * with whatever else arrived meanwhile. An idle handle, not a prepare one: the Redis client
 * writes in a prepare callback (rds_uv.c) that must run after this, in the same turn, before
 * the loop polls; and an active idle handle keeps the loop from blocking, so it stops here
 * even when batches stay open. */
static void on_idle(uv_idle_t *h)
{
    seatd_hold_batch_t *b = h->data;
    size_t i = 0;
    while (i < b->nopen) {
        if (may_send(b, b->open[i]->key))
            send_open(b, i);
        else
            i++;
    }
    uv_idle_stop(h);
    /* A send that failed at once ran its callbacks here, which may have queued holds or freed
     * a show's count after its batch was passed over: what may go now goes next turn. */
    for (i = 0; i < b->nopen; i++)
        if (may_send(b, b->open[i]->key)) {
            uv_idle_start(h, on_idle);
            break;
        }
}

seatd_hold_batch_t *seatd_hold_batch_new(uv_loop_t *loop, seatd_scripts_t *scripts, unsigned max,
                                         unsigned in_flight)
{
    seatd_hold_batch_t *b = seatd_calloc(1, sizeof(*b));
    b->scripts = scripts;
    b->in_flight = in_flight;
    b->refs = 1;
    b->max = max < 2 ? 2 : max > SEATD_HOLD_BATCH_MAX ? SEATD_HOLD_BATCH_MAX : max;
    b->idle = seatd_calloc(1, sizeof(*b->idle));
    uv_idle_init(loop, b->idle);
    b->idle->data = b;
    return b;
}

int seatd_hold_batch_add(seatd_hold_batch_t *b, const char *meta_key, const char *qadmit_key,
                         int argc, const char *const *argv, seatd_rds_reply_cb cb, void *data)
{
    batch_t *bt = NULL;
    for (size_t i = 0; i < b->nopen && bt == NULL; i++)
        if (strcmp(b->open[i]->key, meta_key) == 0)
            bt = b->open[i];
    if (bt == NULL) {
        if (b->nopen == OPEN_MAX)
            send_open(b, 0);
        bt = batch_take(b);
        seatd_fmt_copy(bt->key, sizeof(bt->key), meta_key);
        b->open[b->nopen++] = bt;
    }
    if (qadmit_key != NULL && bt->qkey[0] == '\0')
        seatd_fmt_copy(bt->qkey, sizeof(bt->qkey), qadmit_key);
    item_t *it = &bt->items[bt->n++];
    it->cb = cb;
    it->data = data;
    it->admitted = qadmit_key != NULL;
    it->argc = argc;
    it->argv = copy_args(argc, argv);
    if (bt->n >= b->max) { /* a full batch goes at once, whatever is in flight */
        for (size_t i = 0; i < b->nopen; i++)
            if (b->open[i] == bt) {
                send_open(b, i);
                break;
            }
    } else if (!uv_is_active((uv_handle_t *)b->idle) && may_send(b, bt->key)) {
        uv_idle_start(b->idle, on_idle); /* else it goes when its show's batch comes back */
    }
    return 0;
}

static void on_idle_closed(uv_handle_t *h)
{
    free(h);
}

void seatd_hold_batch_free(seatd_hold_batch_t *b)
{
    if (b == NULL)
        return;
    b->freed = 1; /* batches in flight keep 'b' until their replies come (or fail) */
    for (size_t i = 0; i < b->nopen; i++) {
        batch_t *bt = b->open[i];
        for (size_t j = 0; j < bt->n; j++) {
            bt->items[j].cb(NULL, SEATD_ESHUTDOWN, bt->items[j].data);
            free(bt->items[j].argv);
        }
        free(bt);
    }
    b->nopen = 0;
    uv_close((uv_handle_t *)b->idle, on_idle_closed);
    batcher_unref(b);
}
