/* Unit tests for worker/domain/admission.c: signed admissions to a waiting room. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "domain/admission.h"

static const char secret[] = "0123456789abcdef0123456789abcdef-test";

static void key_of(unsigned char key[SEATD_ADMISSION_KEY_LEN])
{
    seatd_admission_key(secret, strlen(secret), key);
}

Test(admission, verifies_its_own_admission_for_the_same_user_show_and_time)
{
    unsigned char key[SEATD_ADMISSION_KEY_LEN];
    key_of(key);
    char *a = seatd_admission_sign(key, "42", "alice.b@x", 2000);
    cr_assert_not_null(a);
    cr_assert_eq(strncmp(a, "A1.42.2000.alice.b@x.", 21), 0, "%s", a);
    cr_assert_eq(seatd_admission_verify(key, a, "42", "alice.b@x", 1999), 0);
    free(a);
}

Test(admission, refuses_expired_other_users_other_shows_and_forgeries)
{
    unsigned char key[SEATD_ADMISSION_KEY_LEN], other[SEATD_ADMISSION_KEY_LEN];
    key_of(key);
    seatd_admission_key("another secret of at least 32 bytes....", 39, other);
    char *a = seatd_admission_sign(key, "42", "alice", 2000);
    cr_assert_not_null(a);
    cr_assert_eq(seatd_admission_verify(key, a, "42", "alice", 2000), SEATD_EQUEUEREQUIRED);
    cr_assert_eq(seatd_admission_verify(key, a, "42", "bob", 1000), SEATD_EQUEUEREQUIRED);
    cr_assert_eq(seatd_admission_verify(key, a, "43", "alice", 1000), SEATD_EQUEUEREQUIRED);
    cr_assert_eq(seatd_admission_verify(other, a, "42", "alice", 1000), SEATD_EQUEUEREQUIRED);
    /* The expiry pushed forward with the old MAC: the signature no longer matches. */
    char *forged = strdup(a);
    forged[6] = '9'; /* A1.42.2000 -> A1.42.9000 */
    cr_assert_eq(seatd_admission_verify(key, forged, "42", "alice", 1000), SEATD_EQUEUEREQUIRED);
    free(forged);
    const char *bad[] = {"", "A1.", "A1.42.2000.alice", "T1.42.2000.alice.xxx", "eyJhbGciOi.x.y"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(seatd_admission_verify(key, bad[i], "42", "alice", 1000), SEATD_EQUEUEREQUIRED,
                     "%s", bad[i]);
    cr_assert_eq(seatd_admission_verify(key, NULL, "42", "alice", 1000), SEATD_EQUEUEREQUIRED);
    free(a);
}

Test(admission, signs_only_valid_ids)
{
    unsigned char key[SEATD_ADMISSION_KEY_LEN];
    key_of(key);
    cr_assert_null(seatd_admission_sign(key, "x", "alice", 1));
    cr_assert_null(seatd_admission_sign(key, "42", "a b", 1));
    cr_assert_null(seatd_admission_sign(key, "42", "alice", 0));
}
