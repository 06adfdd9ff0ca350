/* errors.c - walks SEATD_ERRNO_MAP; see errors.h. */
#include "base/errors.h"

#include <string.h>

typedef struct {
    int code;
    int status;
    const char *type;
    const char *word;
    const char *message;
    const char *name;
} err_row_t;

static const err_row_t rows[] = {
#define SEATD_ERRNO_ROW(name, status, type, word, msg)                                             \
    {SEATD_E##name, status, type, word, msg, #name},
    SEATD_ERRNO_MAP(SEATD_ERRNO_ROW)
#undef SEATD_ERRNO_ROW
};

static const err_row_t *find(int err)
{
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        if (rows[i].code == err)
            return &rows[i];
    return NULL;
}

int seatd_err_http_status(int err)
{
    const err_row_t *row = find(err);
    return row ? row->status : 500;
}

const char *seatd_err_type(int err)
{
    const err_row_t *row = find(err);
    return row ? row->type : "internal";
}

const char *seatd_err_message(int err)
{
    const err_row_t *row = find(err);
    return row ? row->message : "internal error";
}

const char *seatd_err_name(int err)
{
    const err_row_t *row = find(err);
    return row ? row->name : "INTERNAL";
}

int seatd_err_from_lua_word(const char *word, unsigned long len)
{
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        if (strlen(rows[i].word) == len && memcmp(rows[i].word, word, len) == 0)
            return rows[i].code;
    return SEATD_EINTERNAL;
}
