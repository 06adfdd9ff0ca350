/*
 * log.h - structured logs: one JSON object per line on stderr.
 *
 * Every line has "ts" (RFC 3339, ms), "level", "msg" and, when given, "req" (the request id
 * nginx passes in X-Request-Id). Extra members come as a printf format that produces JSON
 * members, e.g. seatd_log(SEATD_LOG_INFO, NULL, "listening", "\"port\":%d", port). Strings
 * that came from outside must be escaped first (seatd_buf_json_escape).
 * Single-threaded use per process; a line is written with one write() so lines never interleave.
 */
#ifndef SEATD_LOG_H
#define SEATD_LOG_H

enum seatd_log_level_e { SEATD_LOG_DEBUG, SEATD_LOG_INFO, SEATD_LOG_WARN, SEATD_LOG_ERROR };

/* Lines below 'level' are dropped. Default: SEATD_LOG_INFO. */
void seatd_log_set_level(int level);
/* Parses "debug", "info", "warn" or "error"; returns the level or -1. */
int seatd_log_level_parse(const char *name);
/* Sets a constant member added to every line (e.g. the worker's id); 'name' is copied. */
void seatd_log_set_worker(const char *name);

/* Writes one line. 'req' (may be NULL) and 'msg' are borrowed; 'msg' is escaped here. */
void seatd_log(int level, const char *req, const char *msg, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
