/*
 * handlers.h - every route handler, grouped by resource (the "commands prototypes" of the
 * worker). routes.c binds them to methods and paths; each returns 0 after answering (now or
 * from a callback) or a negative SEATD_E* for the pipeline to answer (STYLE "Handler
 * signature").
 */
#ifndef SEATD_HANDLERS_H
#define SEATD_HANDLERS_H

typedef struct seatd_req_s seatd_req_t;

/* shows.c */
int seatd_handle_shows_list(seatd_req_t *r);
int seatd_handle_shows_get(seatd_req_t *r);
int seatd_handle_shows_create(seatd_req_t *r);
int seatd_handle_shows_layout(seatd_req_t *r);

/* seatmap.c */
int seatd_handle_shows_seats(seatd_req_t *r);
int seatd_handle_shows_availability(seatd_req_t *r);

/* holds.c */
int seatd_handle_holds_create(seatd_req_t *r);
int seatd_handle_holds_get(seatd_req_t *r);
int seatd_handle_holds_delete(seatd_req_t *r);

/* bookings.c */
int seatd_handle_bookings_create(seatd_req_t *r);
int seatd_handle_bookings_get(seatd_req_t *r);
int seatd_handle_bookings_cancel(seatd_req_t *r);
int seatd_handle_tickets_verify(seatd_req_t *r);
/* 1 if 'policy' (a cJSON *) is a refund policy: 1-10 tiers {"beforeSeconds": integer >= 0,
 * "percent": integer 0..100}; used by POST /v1/shows. */
int seatd_refund_policy_valid(const void *policy);
#define SEATD_REFUND_POLICY_HELP                                                                   \
    "'refundPolicy' is [{\"beforeSeconds\":7200,\"percent\":100},…] (1-10 tiers, percent 0-100)"

/* live.c: the WebSocket upgrade, and the server's on_finish hook (hints the sweeper after
 * holds and booking attempts). */
int seatd_handle_live_ws(seatd_req_t *r);
void seatd_handle_live_on_finish(seatd_req_t *r, int status, double seconds, void *app);

/* admin.c: operator routes (role admin) for seatctl */
int seatd_handle_admin_holds_get(seatd_req_t *r);
int seatd_handle_admin_holds_release(seatd_req_t *r);
int seatd_handle_admin_bookings_get(seatd_req_t *r);
int seatd_handle_admin_bookings_cancel(seatd_req_t *r);
int seatd_handle_admin_shows_reap(seatd_req_t *r);

/* health.c */
int seatd_handle_health(seatd_req_t *r);
int seatd_handle_metrics(seatd_req_t *r);

#endif
