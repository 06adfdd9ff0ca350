/* mem.c - abort-on-OOM allocation; see mem.h. */
#include "base/mem.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(size_t size)
{
    fprintf(stderr, "{\"level\":\"ERROR\",\"msg\":\"out of memory\",\"bytes\":%zu}\n", size);
    abort();
}

void *seatd_malloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (p == NULL)
        oom(size);
    return p;
}

void *seatd_calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (p == NULL)
        oom(n * size);
    return p;
}

void *seatd_realloc(void *p, size_t size)
{
    void *q = realloc(p, size ? size : 1);
    if (q == NULL)
        oom(size);
    return q;
}

char *seatd_strdup(const char *s)
{
    return seatd_strndup(s, strlen(s));
}

char *seatd_strndup(const char *s, size_t len)
{
    char *p = seatd_malloc(len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

void seatd_mem_init(void)
{
    cJSON_Hooks hooks = {seatd_malloc, free};
    cJSON_InitHooks(&hooks);
}

char *seatd_strs_own(const char **const fields[], size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        if (*fields[i])
            total += strlen(*fields[i]) + 1;
    char *block = seatd_malloc(total), *p = block;
    for (size_t i = 0; i < n; i++) {
        if (*fields[i] == NULL)
            continue;
        size_t len = strlen(*fields[i]) + 1;
        memcpy(p, *fields[i], len);
        *fields[i] = p;
        p += len;
    }
    return block;
}
