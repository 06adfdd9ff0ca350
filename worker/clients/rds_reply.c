/*
 * rds_reply.c - the public client's reply accessors (rds.h), through which the rest of the
 * worker reads a reply without including hiredis. Part of the facade layer: the node layer's
 * reply copies are in rds_node.c.
 */
#include <hiredis/hiredis.h>
#include <stddef.h>

#include "clients/rds.h"

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
