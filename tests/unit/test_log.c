/* test_log.c - log lines: whole JSON lines; batching holds INFO until a flush, never WARN. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"

static int saved_stderr = -1;
static int pipe_rd = -1;

/* Points stderr at a non-blocking pipe whose read end the test reads. */
static void capture(void)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    saved_stderr = dup(STDERR_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[1]);
    pipe_rd = fds[0];
}

static void restore(void)
{
    seatd_log_set_batching(0);
    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
    close(pipe_rd);
}

/* What was written since the last call ("" when nothing). */
static const char *written(void)
{
    static char buf[8192];
    ssize_t n = read(pipe_rd, buf, sizeof(buf) - 1);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

TestSuite(log, .init = capture, .fini = restore);

Test(log, an_unbatched_line_is_written_at_once_as_one_json_object)
{
    seatd_log(SEATD_LOG_INFO, "r1", "hello \"you\"", "\"n\":%d", 7);
    const char *out = written();
    cr_assert(strncmp(out, "{\"ts\":\"", 7) == 0, "%s", out);
    /* "2026-12-03T01:02:03.045Z": the time to the millisecond, zero-padded, then the level */
    const char *shape = "dddd-dd-ddTdd:dd:dd.dddZ\",\"level\":\"INFO\"";
    for (size_t i = 0; shape[i]; i++) {
        char c = out[7 + i];
        if (shape[i] == 'd')
            cr_assert(c >= '0' && c <= '9', "%s", out);
        else
            cr_assert_eq(c, shape[i], "%s", out);
    }
    cr_assert(strstr(out, "\"req\":\"r1\",\"msg\":\"hello \\\"you\\\"\",\"n\":7}\n") != NULL, "%s",
              out);
}

Test(log, batched_info_lines_wait_for_a_flush_and_a_warning_flushes_them_first)
{
    seatd_log_set_batching(1);
    seatd_log(SEATD_LOG_INFO, NULL, "first", NULL);
    seatd_log(SEATD_LOG_INFO, NULL, "second", NULL);
    cr_assert_str_eq(written(), "", "INFO lines wait for the flush");
    seatd_log_flush();
    const char *out = written();
    const char *a = strstr(out, "\"msg\":\"first\""), *b = strstr(out, "\"msg\":\"second\"");
    cr_assert(a && b && a < b, "%s", out);

    seatd_log(SEATD_LOG_INFO, NULL, "third", NULL);
    seatd_log(SEATD_LOG_WARN, NULL, "trouble", NULL);
    out = written();
    a = strstr(out, "\"msg\":\"third\"");
    b = strstr(out, "\"msg\":\"trouble\"");
    cr_assert(a && b && a < b, "a warning goes out at once, after what waited: %s", out);
}
