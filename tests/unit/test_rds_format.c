/* Unit tests for the node layer's RESP writer (rds_cmd.c): byte for byte what hiredis's own
 * formatter writes. */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "clients/rds_node.h"

static void check_same(int argc, const char **argv, const size_t *lens)
{
    char *want = NULL;
    long long n = redisFormatCommandArgv(&want, argc, argv, lens);
    cr_assert(n > 0);
    seatd_buf_t got = SEATD_BUF_INIT;
    seatd_buf_puts(&got, "prefix"); /* appended after what the buffer holds */
    seatd__rds_format_command(argc, argv, lens, &got);
    cr_assert_eq(got.len, 6 + (size_t)n);
    cr_assert_eq(memcmp(got.data + 6, want, (size_t)n), 0, "argc %d", argc);
    /* The message a command travels down the layers as holds the same bytes. */
    seatd__rds_msg_t *m = seatd__rds_msg_new(argc, argv, lens);
    cr_assert_eq(m->len, (size_t)n);
    cr_assert_eq(memcmp(m->data, want, (size_t)n), 0, "argc %d", argc);
    size_t args = 0;
    for (int i = 0; i < argc; i++)
        args += lens ? lens[i] : strlen(argv[i]);
    cr_assert_eq(m->args, args);
    cr_assert_eq(m->refs, 1u);
    seatd__rds_msg_unref(seatd__rds_msg_ref(m)); /* one reference left */
    cr_assert_eq(m->refs, 1u);
    seatd__rds_msg_unref(m);
    free(want);
    seatd_buf_free(&got);
}

Test(rds_format, writes_what_hiredis_writes)
{
    const char *fcall[] = {"FCALL", "seatd_hold", "2", "{s:1}:meta", "{s:1}:held", "A1,A2", ""};
    size_t lens[] = {5, 10, 1, 10, 10, 5, 0};
    check_same(7, fcall, lens);
    const char *one[] = {"PING"};
    size_t one_len[] = {4};
    check_same(1, one, one_len);
}

Test(rds_format, nul_terminated_arguments_without_lengths)
{
    const char *slots[] = {"CLUSTER", "SLOTS"};
    char *want = NULL;
    long long n = redisFormatCommandArgv(&want, 2, slots, NULL);
    cr_assert(n > 0);
    seatd__rds_msg_t *m = seatd__rds_msg_new(2, slots, NULL);
    cr_assert_eq(m->len, (size_t)n);
    cr_assert_eq(memcmp(m->data, want, (size_t)n), 0);
    seatd__rds_msg_unref(m);
    free(want);
    check_same(2, slots, NULL);
}

Test(rds_format, binary_and_long_arguments_alike)
{
    srand(7);
    for (int round = 0; round < 200; round++) {
        int argc = 1 + rand() % 40;
        const char *argv[40];
        size_t lens[40];
        char *bytes[40];
        for (int i = 0; i < argc; i++) {
            lens[i] = (size_t)(rand() % 5 == 0 ? rand() % 100000 : rand() % 30);
            bytes[i] = malloc(lens[i] + 1);
            for (size_t k = 0; k < lens[i]; k++)
                bytes[i][k] = (char)(rand() & 0xff); /* NULs and CRLFs among them */
            argv[i] = bytes[i];
        }
        check_same(argc, argv, lens);
        for (int i = 0; i < argc; i++)
            free(bytes[i]);
    }
}
