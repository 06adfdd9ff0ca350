/*
 * rds_reply.c - reading and copying hiredis replies: the accessors through which the rest of
 * the worker reads a reply without including hiredis (rds.h), and the deep copies the client
 * keeps across a callback (a durable command's reply while its WAIT runs; the cluster router's
 * merged replies).
 */
#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "clients/rds.h"
#include "clients/rds_cluster.h"

/* ----------------------------------------------------------------------------------------
 * Reply accessors
 * -------------------------------------------------------------------------------------- */

int seatd_rds_reply_type(const struct redisReply *r)
{
    if (!r)
        return SEATD_RDS_REPLY_NONE;
    switch (r->type) {
    case REDIS_REPLY_STRING:
        return SEATD_RDS_REPLY_STRING;
    case REDIS_REPLY_ARRAY:
        return SEATD_RDS_REPLY_ARRAY;
    case REDIS_REPLY_INTEGER:
        return SEATD_RDS_REPLY_INTEGER;
    case REDIS_REPLY_NIL:
        return SEATD_RDS_REPLY_NIL;
    case REDIS_REPLY_STATUS:
        return SEATD_RDS_REPLY_STATUS;
    case REDIS_REPLY_ERROR:
        return SEATD_RDS_REPLY_ERROR;
    default:
        return SEATD_RDS_REPLY_OTHER;
    }
}

const char *seatd_rds_reply_str(const struct redisReply *r, size_t *len)
{
    if (!r || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS &&
               r->type != REDIS_REPLY_ERROR)) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = r->len;
    return r->str;
}

long long seatd_rds_reply_integer(const struct redisReply *r)
{
    return r && r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
}

size_t seatd_rds_reply_elements(const struct redisReply *r)
{
    return r && r->type == REDIS_REPLY_ARRAY ? r->elements : 0;
}

const struct redisReply *seatd_rds_reply_element(const struct redisReply *r, size_t i)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || i >= r->elements)
        return NULL;
    return r->element[i];
}

/* ----------------------------------------------------------------------------------------
 * Reply copies (WAIT holds the command's reply across a callback; the cluster router merges
 * the replies of a command sent to every primary)
 * -------------------------------------------------------------------------------------- */

redisReply *seatd__rds_reply_dup(const redisReply *r)
{
    if (!r)
        return NULL;
    redisReply *d = seatd_calloc(1, sizeof(*d));
    d->type = r->type;
    d->integer = r->integer;
    if (r->str) {
        d->len = r->len;
        d->str = seatd_malloc(r->len + 1);
        memcpy(d->str, r->str, r->len);
        d->str[r->len] = '\0';
    }
    if (r->element && r->elements) {
        d->elements = r->elements;
        d->element = seatd_calloc(r->elements, sizeof(*d->element));
        for (size_t i = 0; i < r->elements; i++)
            d->element[i] = seatd__rds_reply_dup(r->element[i]);
    }
    return d;
}

void seatd__rds_reply_free(redisReply *r)
{
    if (!r)
        return;
    for (size_t i = 0; r->element && i < r->elements; i++)
        seatd__rds_reply_free(r->element[i]);
    free(r->element);
    free(r->str);
    free(r);
}
