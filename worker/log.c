/* log.c - one JSON object per line; see log.h. */
#include "log.h"
#include "buf.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int min_level = SEATD_LOG_INFO;
static char worker_name[64];

static const char *level_names[] = {"DEBUG", "INFO", "WARN", "ERROR"};

void seatd_log_set_level(int level)
{
    min_level = level;
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

void seatd_log(int level, const char *req, const char *msg, const char *fmt, ...)
{
    if (level < min_level || level < 0 || level > SEATD_LOG_ERROR)
        return;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char ts[32];
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);

    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_printf(&b, "{\"ts\":\"%s.%03ldZ\",\"level\":\"%s\"", ts, (long)(tv.tv_usec / 1000),
                     level_names[level]);
    if (worker_name[0])
        seatd_buf_printf(&b, ",\"worker\":\"%s\"", worker_name);
    if (req && req[0]) {
        seatd_buf_puts(&b, ",\"req\":\"");
        seatd_buf_json_escape(&b, req, strlen(req));
        seatd_buf_puts(&b, "\"");
    }
    seatd_buf_puts(&b, ",\"msg\":\"");
    seatd_buf_json_escape(&b, msg, strlen(msg));
    seatd_buf_puts(&b, "\"");
    if (fmt && fmt[0]) {
        va_list ap;
        va_start(ap, fmt);
        seatd_buf_puts(&b, ",");
        seatd_buf_vprintf(&b, fmt, ap);
        va_end(ap);
    }
    seatd_buf_puts(&b, "}\n");
    ssize_t rc = write(STDERR_FILENO, b.data, b.len);
    (void)rc;
    seatd_buf_free(&b);
}
