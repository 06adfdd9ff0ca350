/* log.c - one JSON object per line; see log.h. */
#include "base/log.h"
#include "base/buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int min_level = SEATD_LOG_INFO;
static char worker_name[64];

/* Batching (seatd_log_set_batching): lines wait here for seatd_log_flush(). */
#define LOG_BATCH_MAX (64 * 1024) /* flushed at once past this */
static int batching;
static seatd_buf_t batch = SEATD_BUF_INIT;

/* The second-resolution part of the timestamp, formatted once per second. */
static time_t ts_sec = -1;
static char ts_text[32];

static const char *level_names[] = {"DEBUG", "INFO", "WARN", "ERROR"};

void seatd_log_set_level(int level)
{
    min_level = level;
}

int seatd_log_enabled(int level)
{
    return level >= min_level;
}

int seatd_log_level_parse(const char *name)
{
    static const char *names[] = {"debug", "info", "warn", "error"};
    for (int i = 0; i < 4; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

void seatd_log_set_worker(const char *name)
{
    strncpy(worker_name, name, sizeof(worker_name) - 1);
}

static void write_all(const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(STDERR_FILENO, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* nowhere to report it */
        p += n;
        len -= (size_t)n;
    }
}

/* The line being written between seatd_log_begin() and seatd_log_end(). */
static seatd_buf_t line_alone = SEATD_BUF_INIT;
static seatd_buf_t *line_buf;
static int line_batched;

seatd_buf_t *seatd_log_begin(int level, const char *req, const char *msg)
{
    if (level < min_level || level < 0 || level > SEATD_LOG_ERROR || line_buf != NULL)
        return NULL;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    if (tv.tv_sec != ts_sec) {
        struct tm tm;
        gmtime_r(&tv.tv_sec, &tm);
        strftime(ts_text, sizeof(ts_text), "%Y-%m-%dT%H:%M:%S", &tm);
        ts_sec = tv.tv_sec;
    }

    /* A batched line is written straight into the batch; any other goes out alone, after the
     * batch (the order of lines is kept). */
    line_batched = batching && level < SEATD_LOG_WARN;
    seatd_buf_t *b = line_buf = line_batched ? &batch : &line_alone;
    long ms = (long)(tv.tv_usec / 1000);
    char frac[6] = {
        '.', (char)('0' + ms / 100), (char)('0' + ms / 10 % 10), (char)('0' + ms % 10), 'Z', '\0'};
    seatd_buf_puts(b, "{\"ts\":\"");
    seatd_buf_puts(b, ts_text);
    seatd_buf_puts(b, frac);
    seatd_buf_puts(b, "\",\"level\":\"");
    seatd_buf_puts(b, level_names[level]);
    seatd_buf_puts(b, "\"");
    if (worker_name[0])
        seatd_buf_json_member(b, "worker", worker_name);
    if (req && req[0])
        seatd_buf_json_member(b, "req", req);
    seatd_buf_json_member(b, "msg", msg);
    return b;
}

void seatd_log_end(void)
{
    seatd_buf_t *b = line_buf;
    if (b == NULL)
        return;
    line_buf = NULL;
    seatd_buf_puts(b, "}\n");
    if (line_batched) {
        if (batch.len >= LOG_BATCH_MAX)
            seatd_log_flush();
        return;
    }
    seatd_log_flush(); /* keep the order of lines */
    write_all(b->data, b->len);
    seatd_buf_reset(b);
}

void seatd_log(int level, const char *req, const char *msg, const char *fmt, ...)
{
    seatd_buf_t *b = seatd_log_begin(level, req, msg);
    if (b == NULL)
        return;
    if (fmt && fmt[0]) {
        va_list ap;
        va_start(ap, fmt);
        seatd_buf_puts(b, ",");
        seatd_buf_vprintf(b, fmt, ap);
        va_end(ap);
    }
    seatd_log_end();
}

void seatd_log_set_batching(int on)
{
    if (!on)
        seatd_log_flush();
    batching = on;
}

void seatd_log_flush(void)
{
    if (batch.len == 0)
        return;
    write_all(batch.data, batch.len);
    seatd_buf_reset(&batch);
}

int seatd_log_pending(void)
{
    return batch.len > 0;
}
