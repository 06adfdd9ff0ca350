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

/* bookings*.c */
int seatd_handle_bookings_create(seatd_req_t *r);
int seatd_handle_bookings_get(seatd_req_t *r);
int seatd_handle_bookings_cancel(seatd_req_t *r);
int seatd_handle_tickets_verify(seatd_req_t *r);

/* queue.c: the waiting room of a queued show (issue 15) */
int seatd_handle_queue_join(seatd_req_t *r);
int seatd_handle_queue_get(seatd_req_t *r);

/* live.c: the WebSocket upgrade. */
int seatd_handle_live_ws(seatd_req_t *r);

/* admin.c: operator routes (role admin) for seatctl */
int seatd_handle_admin_holds_get(seatd_req_t *r);
int seatd_handle_admin_holds_release(seatd_req_t *r);
int seatd_handle_admin_bookings_get(seatd_req_t *r);
int seatd_handle_admin_bookings_cancel(seatd_req_t *r);
int seatd_handle_admin_shows_reap(seatd_req_t *r);
int seatd_handle_admin_channels_set(seatd_req_t *r);
int seatd_handle_groups_create(seatd_req_t *r);
int seatd_handle_groups_get(seatd_req_t *r);
int seatd_handle_groups_hold(seatd_req_t *r);
int seatd_handle_admin_channels_release(seatd_req_t *r);

/* accounts*.c: accounts, token pairs and the buyer's own holds and bookings */
int seatd_handle_auth_register(seatd_req_t *r);
int seatd_handle_auth_login(seatd_req_t *r);
int seatd_handle_auth_refresh(seatd_req_t *r);
int seatd_handle_auth_logout(seatd_req_t *r);
int seatd_handle_me_holds(seatd_req_t *r);
int seatd_handle_me_bookings(seatd_req_t *r);
int seatd_handle_admin_users_create(seatd_req_t *r);

/* health.c */
int seatd_handle_health(seatd_req_t *r);
int seatd_handle_metrics(seatd_req_t *r);

#endif
