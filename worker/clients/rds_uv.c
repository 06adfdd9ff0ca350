/*
 * rds_uv.c - the libuv event adapter for hiredis async contexts; see rds_uv.h.
 *
 * Same shape as hiredis' adapters/libuv.h (one uv_poll_t per context, events added and
 * removed by hiredis' hooks, the state freed in the handles' close callbacks) except for:
 *   - on_poll(): a negative status is a socket error, which is handed to hiredis instead of
 *     being dropped;
 *   - writes on a connected context are flushed once per loop turn, just before the loop
 *     polls (a uv_prepare_t), instead of by polling the socket for POLLOUT: hiredis asks for a
 *     write with every command and cancels it once the buffer is out, and turning POLLOUT on
 *     and off costs two to four epoll_ctl calls per command (the worker's most frequent
 *     syscall under load, more than read and write together); the socket is nearly always
 *     writable, and every command queued in one turn goes out in one write. Only when a
 *     flush leaves bytes behind (a full socket buffer) is POLLOUT polled, until it drains.
 */
#include "clients/rds_uv.h"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/mem.h"

typedef struct uvev_s {
    redisAsyncContext *ac; /* borrowed; NULL once hiredis ran the cleanup hook */
    uv_poll_t handle;      /* polls ac->c.fd */
    uv_prepare_t flush;    /* runs the deferred write before the loop polls */
    int events;            /* UV_READABLE | UV_WRITABLE polled */
    int want_write;        /* hiredis has bytes to write: flush before the next poll */
    int flushing;          /* inside our own redisAsyncHandleWrite() call */
    int open_handles;      /* handles not closed yet: the state is freed with the last */
} uvev_t;

static unsigned long long poll_errors;

unsigned long long seatd_rds_uv_poll_errors(void)
{
    return poll_errors;
}

/* Fails a connected context that hiredis did not fail by itself: the same path hiredis takes
 * on a read error (pending callbacks with NULL, then the disconnect callback). Runs from the
 * poll callback, never inside a hiredis callback, so freeing here is allowed. */
static void fail_context(redisAsyncContext *ac, int status)
{
    redisContext *c = &ac->c;
    if (c->err == 0) {
        c->err = REDIS_ERR_IO;
        snprintf(c->errstr, sizeof(c->errstr), "socket error: %s", uv_strerror(status));
    }
    ac->err = c->err;
    ac->errstr = c->errstr;
    redisAsyncFree(ac);
}

static void on_poll(uv_poll_t *handle, int status, int events)
{
    uvev_t *p = handle->data;
    if (status < 0) {
        /* libuv has stopped this handle. Let hiredis look at the socket now: a read (or the
         * connect check while connecting) returns the pending socket error. */
        poll_errors++;
        if (p->ac)
            redisAsyncHandleRead(p->ac);
        if (!p->ac)
            return; /* hiredis saw the error and freed the context */
        if (p->ac->c.flags & REDIS_CONNECTED) {
            fail_context(p->ac, status);
            return;
        }
        /* Still connecting (connect in progress): watch the socket again. */
        if (p->events)
            uv_poll_start(&p->handle, p->events, on_poll);
        return;
    }
    if (p->ac && (events & UV_READABLE))
        redisAsyncHandleRead(p->ac);
    if (p->ac && (events & UV_WRITABLE))
        redisAsyncHandleWrite(p->ac);
}

static void update(uvev_t *p)
{
    if (p->events)
        uv_poll_start(&p->handle, p->events, on_poll);
    else
        uv_poll_stop(&p->handle);
}

/* hiredis asks for reads again after every read and every write: only a change reaches
 * libuv (uv_poll_start stops and restarts the watcher, an epoll_ctl DEL and ADD). */
static void add_read(void *privdata)
{
    uvev_t *p = privdata;
    if (!(p->events & UV_READABLE)) {
        p->events |= UV_READABLE;
        update(p);
    }
}

static void del_read(void *privdata)
{
    uvev_t *p = privdata;
    if (p->events & UV_READABLE) {
        p->events &= ~UV_READABLE;
        update(p);
    }
}

static void on_flush(uv_prepare_t *handle)
{
    uvev_t *p = handle->data;
    uv_prepare_stop(&p->flush);
    if (p->ac == NULL || !p->want_write)
        return;
    p->want_write = 0;
    p->flushing = 1;
    redisAsyncHandleWrite(p->ac); /* may free the context (a write error): 'p' lives on */
    p->flushing = 0;
}

static void add_write(void *privdata)
{
    uvev_t *p = privdata;
    if (p->flushing || !(p->ac->c.flags & REDIS_CONNECTED)) {
        /* A flush that left bytes behind, or a connect in progress (its completion is the
         * socket becoming writable): poll. */
        if (!(p->events & UV_WRITABLE)) {
            p->events |= UV_WRITABLE;
            update(p);
        }
        return;
    }
    if (p->events & UV_WRITABLE)
        return; /* already polling until the socket drains */
    if (!p->want_write) {
        p->want_write = 1;
        uv_prepare_start(&p->flush, on_flush);
    }
}

static void del_write(void *privdata)
{
    uvev_t *p = privdata;
    p->want_write = 0;
    if (p->events & UV_WRITABLE) {
        p->events &= ~UV_WRITABLE;
        update(p);
    }
}

static void on_closed(uv_handle_t *handle)
{
    uvev_t *p = handle->data;
    if (--p->open_handles == 0)
        free(p);
}

static void cleanup(void *privdata)
{
    uvev_t *p = privdata;
    p->ac = NULL; /* the context is going away; the state lives until the close callbacks */
    p->want_write = 0;
    uv_close((uv_handle_t *)&p->handle, on_closed);
    uv_close((uv_handle_t *)&p->flush, on_closed);
}

int seatd_rds_uv_attach(redisAsyncContext *ac, uv_loop_t *loop)
{
    if (ac->ev.data != NULL)
        return SEATD_EINVAL;
    uvev_t *p = seatd_calloc(1, sizeof(*p));
    if (uv_poll_init(loop, &p->handle, ac->c.fd) != 0) {
        free(p);
        return SEATD_EINVAL;
    }
    uv_prepare_init(loop, &p->flush);
    p->handle.data = p;
    p->flush.data = p;
    p->open_handles = 2;
    p->ac = ac;
    ac->ev.addRead = add_read;
    ac->ev.delRead = del_read;
    ac->ev.addWrite = add_write;
    ac->ev.delWrite = del_write;
    ac->ev.cleanup = cleanup;
    ac->ev.data = p;
    return 0;
}
