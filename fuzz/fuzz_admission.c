/*
 * fuzz_admission.c - libFuzzer harness for the waiting room's signed admissions (admission.h),
 * the token a hold on a queued show carries in its Seatd-Admission header.
 *
 * The key is derived from a fixed secret; the clock is fixed (FUZZ_NOW). Byte 0 picks a mode:
 *   0  raw: the rest of the input is the header's value, checked for user "alice" on show 7;
 *   1  sign: the rest is split (byte 1) into a show id and a user id, an admission is signed
 *      for them (when both are valid ids) expiring after FUZZ_NOW, and must verify for them,
 *      for nobody else, for no other show, not once expired, and not with any one character
 *      changed.
 * Invariant of mode 0: an accepted token names show 7 and user alice, expires after FUZZ_NOW
 * and is exactly what seatd_admission_sign() makes for them and its expiry.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain/admission.h"
#include "domain/keys.h"
#include "base/mem.h"
#include "fuzz_check.h"

#define FUZZ_SECRET "seatd-fuzz-secret-0123456789abcdef"
#define FUZZ_NOW 1767225600000LL /* 2026-01-01T00:00:00Z, ms */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned char key[SEATD_ADMISSION_KEY_LEN];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    seatd_mem_init();
    seatd_admission_key(FUZZ_SECRET, strlen(FUZZ_SECRET), key);
    return 0;
}

static char *text(const uint8_t *p, size_t n)
{
    char *s = malloc(n + 1);
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

static void raw(const uint8_t *p, size_t n)
{
    char *tok = text(p, n);
    if (seatd_admission_verify(key, tok, "7", "alice", FUZZ_NOW) == 0) {
        /* "A1.7.<expiry>.alice.<mac>": the signer's own text for that expiry */
        long long exp = 0;
        CHECK(sscanf(tok, "A1.7.%lld.alice.", &exp) == 1 && exp > FUZZ_NOW);
        char *again = seatd_admission_sign(key, "7", "alice", exp);
        CHECK(again != NULL && strcmp(again, tok) == 0);
        free(again);
    }
    free(tok);
}

static void sign(const uint8_t *p, size_t n)
{
    if (n < 1)
        return;
    size_t cut = p[0] % n;
    char *show = text(p + 1, cut > 0 ? cut - 1 : 0);
    char *sub = text(p + cut, n - cut);
    int64_t exp = FUZZ_NOW + 1 + (int64_t)(n * 997);
    char *tok = seatd_admission_sign(key, show, sub, exp);
    if (tok == NULL) {
        CHECK(!seatd_keys_valid_show_id(show) || !seatd_keys_valid_sub(sub));
    } else {
        CHECK(seatd_admission_verify(key, tok, show, sub, FUZZ_NOW) == 0);
        CHECK(seatd_admission_verify(key, tok, show, sub, exp) != 0); /* expired at exp */
        CHECK(seatd_admission_verify(key, tok, "999999999999999999", sub, FUZZ_NOW) != 0 ||
              strcmp(show, "999999999999999999") == 0);
        CHECK(seatd_admission_verify(key, tok, show, "mallory", FUZZ_NOW) != 0 ||
              strcmp(sub, "mallory") == 0);
        size_t len = strlen(tok);
        for (size_t i = 0; i < len; i++) {
            char saved = tok[i];
            tok[i] = saved == 'x' ? 'y' : 'x'; /* the MAC is compared as text: any change fails */
            CHECK(seatd_admission_verify(key, tok, show, sub, FUZZ_NOW) != 0);
            tok[i] = saved;
        }
        free(tok);
    }
    free(show);
    free(sub);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 512)
        return 0;
    if (data[0] % 2 == 0)
        raw(data + 1, size - 1);
    else
        sign(data + 1, size - 1);
    return 0;
}
