/* Unit tests for mem.c: the one-block copy of a struct's borrowed strings. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

Test(mem, strs_own_copies_every_string_into_one_block_and_keeps_null_fields_null)
{
    char lent[3][8] = {"show", "", "owner"};
    struct {
        const char *a, *b, *c, *d;
    } s = {lent[0], lent[1], NULL, lent[2]};
    const char **const fields[] = {&s.a, &s.b, &s.c, &s.d};
    char *block = seatd_strs_own(fields, 4);
    memset(lent, 'x', sizeof(lent)); /* the lender's strings end */
    cr_assert_str_eq(s.a, "show");
    cr_assert_str_eq(s.b, "");
    cr_assert_null(s.c);
    cr_assert_str_eq(s.d, "owner");
    cr_assert_eq(s.a, block);
    cr_assert(s.d > s.a && s.d < block + 12);
    free(block);
    const char **const none[] = {&s.c};
    free(seatd_strs_own(none, 1)); /* nothing to copy: still a block to free */
}
