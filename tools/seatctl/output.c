/*
 * output.c - seatctl's output helpers: JSON or text on stdout, failures and usage errors (with
 * --json a JSON document too), the fields of an answer made safe for a terminal, id checks,
 * and reading a JSON file given on the command line.
 */
#include "seatctl.h"
#include "domain/keys.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

/* ---------------------------------------------------------------------------------------
 * Output helpers
 * --------------------------------------------------------------------------------------- */

/* Prints 'j' (taken) as one line of JSON. */
void seatctl_print_json(cJSON *j)
{
    char *s = cJSON_PrintUnformatted(j);
    printf("%s\n", s ? s : "null");
    free(s);
    cJSON_Delete(j);
}

/* A failure: text on stderr, and {"error":text} on stdout with --json. Returns EXIT_FAIL. */
__attribute__((format(printf, 2, 3))) int seatctl_fail(const seatctl_opts_t *o, const char *fmt,
                                                       ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "seatctl: %s\n", msg);
    if (o->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "error", msg);
        seatctl_print_json(j);
    }
    return EXIT_FAIL;
}

int seatctl_json_usage; /* --json given: a usage error is a JSON document on stdout too */

/* A usage error: text on stderr, and {"error":text,"usage":true} on stdout with --json.
 * Returns EXIT_USAGE. */
__attribute__((format(printf, 1, 2))) int seatctl_usage_error(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "seatctl: %s (seatctl --help)\n", msg);
    if (seatctl_json_usage) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "error", msg);
        cJSON_AddBoolToObject(j, "usage", 1);
        seatctl_print_json(j);
    }
    return EXIT_USAGE;
}

int64_t seatctl_now_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* "3m 12.4s" for 'ms' >= 0. */
void seatctl_format_left(int64_t ms, char *out, size_t n)
{
    if (ms >= 60000)
        snprintf(out, n, "%lldm %lld.%llds", (long long)(ms / 60000),
                 (long long)(ms % 60000 / 1000), (long long)(ms % 1000 / 100));
    else
        snprintf(out, n, "%lld.%03llds", (long long)(ms / 1000), (long long)(ms % 1000));
}

const char *seatctl_jstr(const cJSON *o, const char *name)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, name));
    return s ? s : "";
}

/* seatctl_jstr() made safe for a terminal: control characters (C0, DEL, C1) become '?', so a text
 * from the API cannot move the cursor, clear the screen or start a line of its own. The
 * result lives until the fourth call after this one. */
const char *seatctl_tstr(const cJSON *o, const char *name)
{
    static char ring[4][1024];
    static int next;
    char *out = ring[next++ % 4];
    const unsigned char *s = (const unsigned char *)seatctl_jstr(o, name);
    size_t n = 0;
    for (; *s && n + 1 < sizeof ring[0]; s++) {
        if (s[0] == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f) {
            out[n++] = '?';
            s++;
        } else {
            out[n++] = *s < 0x20 || *s == 0x7f ? '?' : (char)*s;
        }
    }
    out[n] = '\0';
    return out;
}

/* Prints an answer's members as "name: value" lines (arrays comma-joined). */
void seatctl_print_record(const cJSON *o)
{
    const cJSON *m = NULL;
    cJSON_ArrayForEach(m, o)
    {
        if (cJSON_IsString(m)) {
            printf("%-14s %s\n", m->string, m->valuestring);
        } else if (cJSON_IsNumber(m)) {
            printf("%-14s %.0f\n", m->string, m->valuedouble);
        } else if (cJSON_IsArray(m)) {
            printf("%-14s ", m->string);
            const cJSON *e = NULL;
            int first = 1;
            cJSON_ArrayForEach(e, m)
            {
                const char *s = cJSON_GetStringValue(e);
                printf("%s%s", first ? "" : ",", s ? s : "?");
                first = 0;
            }
            printf("\n");
        } else if (cJSON_IsBool(m)) {
            printf("%-14s %s\n", m->string, cJSON_IsTrue(m) ? "true" : "false");
        } else if (cJSON_IsObject(m)) { /* {"standard":1200,"vip":2500}: standard=1200,vip=2500 */
            printf("%-14s ", m->string);
            const cJSON *e = NULL;
            int first = 1;
            cJSON_ArrayForEach(e, m)
            {
                if (cJSON_IsNumber(e))
                    printf("%s%s=%.0f", first ? "" : ",", e->string, e->valuedouble);
                else
                    printf("%s%s=%s", first ? "" : ",", e->string,
                           cJSON_IsString(e) ? e->valuestring : "...");
                first = 0;
            }
            printf("\n");
        }
    }
}

/* ---------------------------------------------------------------------------------------
 * Ids
 * --------------------------------------------------------------------------------------- */

int seatctl_check_id(const char *id, char kind)
{
    char show[SEATD_ID_MAX];
    if (seatd_keys_parse_id(id, kind, show) == 0)
        return 0;
    return seatctl_usage_error("'%s' is not a %s id (<show>-%c<20 hex>)", id,
                               kind == 'h'   ? "hold"
                               : kind == 'g' ? "group"
                                             : "booking",
                               kind);
}

int seatctl_check_show_id(const char *id)
{
    if (seatd_keys_valid_show_id(id))
        return 0;
    return seatctl_usage_error("'%s' is not a show id (1-18 digits)", id);
}

/* ---------------------------------------------------------------------------------------
 * Commands over the API
 * --------------------------------------------------------------------------------------- */

/* A show body or layout file, at most: the API takes a body of 16 MiB at most anyway, and
 * /dev/zero or a wrong file must not eat the machine's memory. */
#define SEATCTL_FILE_MAX (32 << 20)

cJSON *seatctl_read_json_file(const char *path, char *why, size_t whylen)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        snprintf(why, whylen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0, n;
    do {
        if (len + 65536 > cap) {
            cap = cap ? cap * 2 : 131072;
            char *b = realloc(buf, cap);
            if (!b)
                abort();
            buf = b;
        }
        n = fread(buf + len, 1, cap - len, f);
        len += n;
    } while (n > 0 && len <= SEATCTL_FILE_MAX);
    if (f != stdin)
        fclose(f);
    cJSON *j = len > SEATCTL_FILE_MAX ? NULL : cJSON_ParseWithLength(buf ? buf : "", len);
    free(buf);
    if (!j && len > SEATCTL_FILE_MAX)
        snprintf(why, whylen, "%s is larger than %d MiB", path, SEATCTL_FILE_MAX >> 20);
    else if (!j)
        snprintf(why, whylen, "%s is not JSON", path);
    return j;
}
