/* Unit tests for errors.c: the error table is the single source of HTTP mapping. */
#include <criterion/criterion.h>
#include <string.h>

#include "base/errors.h"

Test(errors, maps_codes_to_http_status_and_type)
{
    cr_assert_eq(seatd_err_http_status(SEATD_ECONFLICT), 409);
    cr_assert_str_eq(seatd_err_type(SEATD_ECONFLICT), "seat-conflict");
    cr_assert_eq(seatd_err_http_status(SEATD_EUNAVAILABLE), 503);
    cr_assert_eq(seatd_err_http_status(SEATD_EIDEMMISMATCH), 422);
    cr_assert_eq(seatd_err_http_status(-1), 500);
}

Test(errors, maps_lua_words_back_to_codes)
{
    cr_assert_eq(seatd_err_from_lua_word("CONFLICT", 8), SEATD_ECONFLICT);
    cr_assert_eq(seatd_err_from_lua_word("UNKNOWN_SEAT", 12), SEATD_EUNKNOWNSEAT);
    cr_assert_eq(seatd_err_from_lua_word("CONFLICTX", 9), SEATD_EINTERNAL);
    cr_assert_eq(seatd_err_from_lua_word("CONF", 4), SEATD_EINTERNAL);
}

Test(errors, every_code_has_a_distinct_type_slug_or_shares_by_design)
{
    for (int e = SEATD__EBASE + 1; e < SEATD__ELAST; e++) {
        cr_assert(strlen(seatd_err_type(e)) > 0);
        cr_assert(strlen(seatd_err_message(e)) > 0);
        cr_assert(seatd_err_http_status(e) >= 400 && seatd_err_http_status(e) < 600);
    }
}

Test(errors, a_store_that_does_not_answer_in_time_is_503_never_504)
{
    /* A hung Redis is "unavailable, retry later" (503, which always gets Retry-After), not a
     * bare gateway timeout: no code maps to 504. */
    cr_assert_eq(seatd_err_http_status(SEATD_ETIMEOUT), 503);
    for (int e = SEATD__EBASE + 1; e < SEATD__ELAST; e++)
        cr_assert_neq(seatd_err_http_status(e), 504, "%s maps to 504", seatd_err_name(e));
}
