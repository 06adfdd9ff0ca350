/*
 * log.h - structured logs: one JSON object per line on stderr.
 *
 * Every line has "ts" (RFC 3339, ms), "level", "msg" and, when given, "req" (the request id
 * nginx passes in X-Request-Id). Extra members come as a printf format that produces JSON
 * members, e.g. seatd_log(SEATD_LOG_INFO, NULL, "listening", "\"port\":%d", port). Strings
 * that came from outside must be escaped first (seatd_buf_json_escape).
 * Single-threaded use per process; lines are written whole, so they never interleave.
 *
 * Batching: a busy worker logs one line per request, and a write() per line was one of the
 * largest costs of a request. With batching on, DEBUG and INFO lines collect in memory and go
 * out in one write() when the owner calls seatd_log_flush() (the worker: 50 ms after the
 * first line that waits) or 64 KiB have collected; a WARN or ERROR line flushes what waits,
 * then itself, at once. A process killed with SIGKILL loses at most its last 50 ms of INFO
 * lines.
 */
#ifndef SEATD_LOG_H
#define SEATD_LOG_H

enum seatd_log_level_e { SEATD_LOG_DEBUG, SEATD_LOG_INFO, SEATD_LOG_WARN, SEATD_LOG_ERROR };

/* Lines below 'level' are dropped. Default: SEATD_LOG_INFO. */
void seatd_log_set_level(int level);
/* 1 when lines of 'level' are written: a caller skips building what would be dropped. */
int seatd_log_enabled(int level);
/* Parses "debug", "info", "warn" or "error"; returns the level or -1. */
int seatd_log_level_parse(const char *name);
/* Sets a constant member added to every line (e.g. the worker's id); 'name' is copied. */
void seatd_log_set_worker(const char *name);

/* Batches INFO/DEBUG lines until seatd_log_flush() when 'on'; off flushes first. */
void seatd_log_set_batching(int on);
/* Writes the batched lines, if any. */
void seatd_log_flush(void);
/* 1 when batched lines wait for seatd_log_flush(). */
int seatd_log_pending(void);

/* Writes one line. 'req' (may be NULL) and 'msg' are borrowed; 'msg' is escaped here. */
void seatd_log(int level, const char *req, const char *msg, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* One line written in parts, without a format (a line per request): seatd_log_begin()
 * answers the line's buffer with its fixed members written, NULL when 'level' is dropped;
 * the caller appends its members, each after a ',', then calls seatd_log_end(). Nothing else
 * may log in between (a line begun while another is open is dropped). */
struct seatd_buf_s *seatd_log_begin(int level, const char *req, const char *msg);
void seatd_log_end(void);

#endif
