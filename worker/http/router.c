/* router.c - (method, path) -> route + parameters; see router.h. */
#include "http/router.h"
#include "base/fmt.h"

#include <string.h>

const double seatd_latency_bounds[SEATD_LATENCY_BUCKETS] = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
};

/* One '/'-separated piece of a path or pattern: a borrowed slice. */
typedef struct {
    const char *p; /* first byte, after the '/' */
    size_t len;    /* bytes up to the next '/' or the end */
} seg_t;

/* Splits 's' (which must start with '/') into segments. Returns the count, or -1 if 's' does
 * not start with '/' or has more than SEATD_ROUTE_MAX_SEGMENTS segments. "/" has one empty
 * segment, so "/" and "/v1/" stay distinct from "/v1". */
static int split(const char *s, seg_t *segs)
{
    if (s == NULL || s[0] != '/')
        return -1;
    int n = 0;
    const char *p = s + 1;
    for (;;) {
        if (n == SEATD_ROUTE_MAX_SEGMENTS)
            return -1;
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        segs[n].p = p;
        segs[n].len = len;
        n++;
        if (slash == NULL)
            return n;
        p = slash + 1;
    }
}

static int is_param(const seg_t *s)
{
    return s->len >= 3 && s->p[0] == '{' && s->p[s->len - 1] == '}';
}

/*
 * Structural match of the 'np' path segments against 'route'. Returns -1 when it does not fit,
 * else a specificity score in which literal segments near the start weigh most, so comparing
 * scores implements "the first differing segment that is literal wins". The pattern is walked
 * segment by segment and left at its first mismatch (most routes differ from a path in their
 * second segment; splitting every pattern per request was most of the router's time).
 */
static long match_score(const seatd_route_t *route, const seg_t *path, int np)
{
    const char *p = route->pattern;
    if (p == NULL || p[0] != '/')
        return -1;
    p++;
    long score = 0;
    for (int i = 0;; i++) {
        const char *e = p;
        while (*e && *e != '/')
            e++;
        if (i >= np || i >= SEATD_ROUTE_MAX_SEGMENTS)
            return -1;
        seg_t pat = {p, (size_t)(e - p)};
        if (is_param(&pat)) {
            if (path[i].len == 0)
                return -1; /* a parameter never matches an empty segment */
        } else {
            if (pat.len != path[i].len || memcmp(pat.p, path[i].p, pat.len) != 0)
                return -1;
            score |= 1L << (SEATD_ROUTE_MAX_SEGMENTS - 1 - i);
        }
        if (*e == '\0')
            return i + 1 == np ? score : -1;
        p = e + 1;
    }
}

static void allow_add(char *allow, size_t cap, const char *method)
{
    size_t mlen = strlen(method);
    /* Skip duplicates: "GET" may come from several patterns. */
    for (const char *p = allow; *p;) {
        const char *end = strstr(p, ", ");
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == mlen && memcmp(p, method, mlen) == 0)
            return;
        if (end == NULL)
            break;
        p = end + 2;
    }
    size_t used = strlen(allow);
    size_t need = used + (used ? 2 : 0) + mlen + 1;
    if (need > cap)
        return;
    if (used)
        memcpy(allow + used, ", ", 2), used += 2;
    memcpy(allow + used, method, mlen + 1);
}

int seatd_router_match(seatd_route_t *table, size_t n, const char *method, const char *path,
                       seatd_route_match_t *out)
{
    memset(out, 0, sizeof(*out));
    seg_t segs[SEATD_ROUTE_MAX_SEGMENTS];
    int np = split(path, segs);
    if (np < 0)
        return SEATD_ENOROUTE;

    /* The routes of the request's method only; the others are walked only when none fits,
     * to say which methods the path takes (405 and its Allow). */
    seatd_route_t *best = NULL;
    long best_score = -1;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(table[i].method, method) != 0)
            continue;
        long score = match_score(&table[i], segs, np);
        if (score > best_score) {
            best = &table[i];
            best_score = score;
        }
    }
    if (best == NULL) {
        int any = 0;
        for (size_t i = 0; i < n; i++) {
            if (match_score(&table[i], segs, np) < 0)
                continue;
            any = 1;
            allow_add(out->allow, sizeof(out->allow), table[i].method);
            if (strcmp(table[i].method, "GET") == 0) /* the server answers HEAD for every GET */
                allow_add(out->allow, sizeof(out->allow), "HEAD");
        }
        if (!any) {
            out->allow[0] = '\0';
            return SEATD_ENOROUTE;
        }
        return SEATD_EMETHOD;
    }

    seg_t pat[SEATD_ROUTE_MAX_SEGMENTS];
    split(best->pattern, pat);
    for (int i = 0; i < np; i++) {
        if (!is_param(&pat[i]))
            continue;
        seatd_route_param_t *prm = &out->params[out->nparams++];
        size_t nlen = pat[i].len - 2;
        if (nlen >= sizeof(prm->name))
            nlen = sizeof(prm->name) - 1; /* seatd_router_check() rejects these */
        memcpy(prm->name, pat[i].p + 1, nlen);
        prm->name[nlen] = '\0';
        if (seatd_fmt_pct_decode(segs[i].p, segs[i].len, 0, prm->value, sizeof(prm->value)) < 0) {
            memset(out, 0, sizeof(*out));
            return SEATD_EBADID;
        }
    }
    out->route = best;
    out->allow[0] = '\0';
    return 0;
}

int seatd_router_check(const seatd_route_t *table, size_t n, const seatd_route_t **bad)
{
    static const char *methods[] = {"GET", "POST", "PUT", "PATCH", "DELETE"};
    for (size_t i = 0; i < n; i++) {
        const seatd_route_t *rt = &table[i];
        if (bad)
            *bad = rt;
        int known = 0;
        for (size_t m = 0; rt->method && m < sizeof(methods) / sizeof(methods[0]); m++)
            known |= strcmp(rt->method, methods[m]) == 0;
        if (!known || rt->handler == NULL || rt->name == NULL || rt->name[0] == '\0')
            return SEATD_EINVAL;
        seg_t pat[SEATD_ROUTE_MAX_SEGMENTS];
        int np = split(rt->pattern, pat);
        if (np < 0)
            return SEATD_EINVAL;
        int nparams = 0;
        for (int s = 0; s < np; s++) {
            if (is_param(&pat[s])) {
                if (++nparams > SEATD_ROUTE_MAX_PARAMS || pat[s].len - 2 >= 32)
                    return SEATD_EINVAL;
                for (size_t k = 1; k + 1 < pat[s].len; k++)
                    if (pat[s].p[k] == '{' || pat[s].p[k] == '}')
                        return SEATD_EINVAL;
            } else if (memchr(pat[s].p, '{', pat[s].len) || memchr(pat[s].p, '}', pat[s].len) ||
                       memchr(pat[s].p, '%', pat[s].len)) {
                return SEATD_EINVAL;
            }
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(table[j].method, rt->method) == 0 &&
                strcmp(table[j].pattern, rt->pattern) == 0)
                return SEATD_EINVAL;
    }
    if (bad)
        *bad = NULL;
    return 0;
}

void seatd_route_stats_observe(seatd_route_stats_t *stats, int status, double seconds)
{
    int cls = status / 100;
    if (cls >= 1 && cls <= 5)
        stats->by_status[cls]++;
    if (seconds < 0)
        seconds = 0;
    for (int i = 0; i < SEATD_LATENCY_BUCKETS; i++)
        if (seconds <= seatd_latency_bounds[i])
            stats->latency_buckets[i]++;
    stats->latency_sum_s += seconds;
    stats->count++;
}
