/*
 * Every Redis Function is named once (worker/store/functions.h): the list there and the
 * register_function calls of lua/ are the same set, and no other file of worker/ spells a
 * Function's name as a string (a renamed or removed Function then fails to compile, not at
 * the first call in production).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store/functions.h"

#define NAMES_MAX 256

typedef struct {
    char *v[NAMES_MAX];
    size_t n;
} names_t;

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)len + 1);
    cr_assert(s && fread(s, 1, (size_t)len, f) == (size_t)len);
    s[len] = '\0';
    fclose(f);
    return s;
}

static int names_has(const names_t *ns, const char *name)
{
    for (size_t i = 0; i < ns->n; i++)
        if (strcmp(ns->v[i], name) == 0)
            return 1;
    return 0;
}

static void names_add(names_t *ns, const char *name, size_t len)
{
    cr_assert(ns->n < NAMES_MAX);
    ns->v[ns->n] = strndup(name, len);
    cr_assert(!names_has(ns, ns->v[ns->n]), "%s is registered twice", ns->v[ns->n]);
    ns->n++;
}

static void names_free(names_t *ns)
{
    for (size_t i = 0; i < ns->n; i++)
        free(ns->v[i]);
}

/* The names lua/ registers: function_name='…'. */
static void lua_names(names_t *ns)
{
    const char *dir = SEATD_SOURCE_DIR "/lua";
    DIR *d = opendir(dir);
    cr_assert(d != NULL);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".lua") != 0)
            continue;
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        char *text = slurp(path);
        static const char tag[] = "function_name='";
        for (const char *p = strstr(text, tag); p; p = strstr(p, tag)) {
            p += sizeof(tag) - 1;
            const char *end = strchr(p, '\'');
            cr_assert(end != NULL);
            names_add(ns, p, (size_t)(end - p));
        }
        free(text);
    }
    closedir(d);
}

static void table_names(names_t *ns)
{
#define ADD(fn, flags) names_add(ns, fn, strlen(fn));
    SEATD_FUNCTIONS(ADD)
#undef ADD
}

Test(functions, the_table_and_the_lua_library_name_the_same_functions)
{
    names_t lua = {0}, table = {0};
    lua_names(&lua);
    table_names(&table);
    cr_assert_gt(lua.n, 40, "lua/ registers the library (found %zu)", lua.n);
    for (size_t i = 0; i < lua.n; i++)
        cr_expect(names_has(&table, lua.v[i]), "%s is registered by lua/ but not in functions.h",
                  lua.v[i]);
    for (size_t i = 0; i < table.n; i++)
        cr_expect(names_has(&lua, table.v[i]), "functions.h names %s, which lua/ does not register",
                  table.v[i]);
    names_free(&lua);
    names_free(&table);
}

/* Counts the files under 'dir' (recursively) other than functions.h that contain one of the
 * names quoted; prints each. */
static int quoted_elsewhere(const char *dir, const names_t *ns)
{
    int found = 0;
    DIR *d = opendir(dir);
    cr_assert(d != NULL, "cannot open %s", dir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        struct stat sb;
        cr_assert(stat(path, &sb) == 0);
        if (S_ISDIR(sb.st_mode)) {
            found += quoted_elsewhere(path, ns);
            continue;
        }
        size_t len = strlen(e->d_name);
        if (len < 3 || (strcmp(e->d_name + len - 2, ".c") && strcmp(e->d_name + len - 2, ".h")) ||
            strcmp(e->d_name, "functions.h") == 0)
            continue;
        char *text = slurp(path);
        for (size_t i = 0; i < ns->n; i++) {
            char quoted[128];
            snprintf(quoted, sizeof(quoted), "\"%s\"", ns->v[i]);
            if (strstr(text, quoted)) {
                cr_log_error("%s spells %s: use its SEATD_FN_ name", path, quoted);
                found++;
            }
        }
        free(text);
    }
    closedir(d);
    return found;
}

Test(functions, no_other_file_of_the_worker_spells_a_function_name)
{
    names_t table = {0};
    table_names(&table);
    cr_assert_eq(quoted_elsewhere(SEATD_SOURCE_DIR "/worker", &table), 0);
    names_free(&table);
}
