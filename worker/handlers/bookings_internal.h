/*
 * bookings_internal.h - what the booking handlers share: the heap context a POST /v1/bookings
 * carries through its steps (book_op_t), and the helpers one file calls in another. Not an
 * interface: include it only from bookings.c (the request up to the flow), bookings_outcome.c
 * (the flow's outcome answered) and bookings_render.c (a booking's JSON, GET, DELETE, ticket
 * verification); the routes are declared in handlers.h.
 */
#ifndef SEATD_BOOKINGS_INTERNAL_H
#define SEATD_BOOKINGS_INTERNAL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "app.h"
#include "domain/config.h"
#include "domain/keys.h"
#include "flows/booking.h"
#include "handlers/common.h"
#include "http/http_request.h"
#include "store/store.h"

#define CURRENCY "EUR"
#define CTR_HOLD 1u /* book_begin counted an attempt in the hold's decline counter */
#define CTR_USER 2u /* an attempt is counted in the user's decline counter */

typedef struct {
    seatd__op_t base; /* the request (NULL once nobody waits: the work goes on), the free */
    seatd_app_t *app; /* borrowed */
    cJSON *body;      /* owned */
    char hold_id[SEATD_ID_MAX];
    char show_id[SEATD_ID_MAX];
    char booking_id[SEATD_ID_MAX];
    char method[65];   /* payment token, e.g. "tok_ok" */
    char owner[65];    /* the JWT sub: the booking's buyer, kept for after the client left */
    char idem[201];    /* the request's Idempotency-Key, "" when none */
    int idem_claimed;  /* 'idem' is claimed for this body (released if nothing begins) */
    int begin_sent;    /* book_begin was sent: a booking may have begun */
    int begin_refused; /* ... and the script refused it (a 4xx): nothing began */
    char decline[64];
    char hold_ctr[SEATD_KEY_MAX]; /* the per-hold decline counter (book_begin takes it) */
    char user_ctr[SEATD_KEY_MAX]; /* the per-user decline counter */
    unsigned ctrs;                /* CTR_*: the counters holding one attempt of this request */
    int64_t retry_after_ms;       /* when a capped attempt may be made again */
} book_op_t;

/* ---------------------------------------------------------------- bookings.c */

void bookings__counters_give(book_op_t *op);
void bookings__idem_fingerprint(const book_op_t *op, char *out, size_t size);

/* ---------------------------------------------------------------- bookings_outcome.c */

void bookings__on_paid(const seatd_booking_end_t *end, void *data);
void bookings__answer_with_booking(book_op_t *op);
void bookings__answer_capped(book_op_t *op, const char *which);

/* ---------------------------------------------------------------- bookings_render.c */

cJSON *bookings__booking_to_json(const seatd_config_t *cfg, const seatd_store_result_t *res);
/* Adds "bookings": a group payment's show bookings, one object each ('members': store.h
 * seatd_payment_member_t's text). */
void bookings__add_members(cJSON *o, const char *members);

#endif
