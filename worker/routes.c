/*
 * routes.c - the HTTP API v1 at a glance: one row per route (method, path, metric name,
 * handler, flags). The server walks this table; the per-route statistics live in the rows.
 */
#include "routes.h"

#include "handlers/handlers.h"

#define AUTH SEATD_ROUTE_AUTH
#define ADMIN (SEATD_ROUTE_AUTH | SEATD_ROUTE_ADMIN)
#define JSON SEATD_ROUTE_JSON_BODY
#define LARGE SEATD_ROUTE_LARGE_BODY
#define ROUTE(m, p, n, h, f)                                                                       \
    {                                                                                              \
        .method = m, .pattern = p, .name = n, .handler = h, .flags = f                             \
    }

seatd_route_t seatd_routes[] = {
    ROUTE("GET", "/v1/shows", "shows_list", seatd_handle_shows_list, 0),
    ROUTE("POST", "/v1/shows", "shows_create", seatd_handle_shows_create, ADMIN | JSON | LARGE),
    ROUTE("GET", "/v1/shows/{id}", "shows_get", seatd_handle_shows_get, 0),
    ROUTE("GET", "/v1/shows/{id}/layout", "shows_layout", seatd_handle_shows_layout, 0),
    ROUTE("GET", "/v1/shows/{id}/seats", "shows_seats", seatd_handle_shows_seats, 0),
    ROUTE("GET", "/v1/shows/{id}/availability", "shows_availability",
          seatd_handle_shows_availability, 0),
    ROUTE("GET", "/v1/shows/{id}/seats/ws", "live_ws", seatd_handle_live_ws, 0),
    ROUTE("POST", "/v1/shows/{id}/holds", "holds_create", seatd_handle_holds_create, AUTH | JSON),
    ROUTE("POST", "/v1/shows/{id}/queue", "queue_join", seatd_handle_queue_join, AUTH),
    ROUTE("GET", "/v1/queue/{ticket}", "queue_get", seatd_handle_queue_get, AUTH),
    ROUTE("POST", "/v1/groups", "groups_create", seatd_handle_groups_create, ADMIN | JSON),
    ROUTE("GET", "/v1/groups/{id}", "groups_get", seatd_handle_groups_get, 0),
    ROUTE("POST", "/v1/groups/{id}/holds", "groups_hold", seatd_handle_groups_hold, AUTH | JSON),
    ROUTE("GET", "/v1/holds/{id}", "holds_get", seatd_handle_holds_get, AUTH),
    ROUTE("DELETE", "/v1/holds/{id}", "holds_delete", seatd_handle_holds_delete, AUTH),
    ROUTE("POST", "/v1/bookings", "bookings_create", seatd_handle_bookings_create, AUTH | JSON),
    ROUTE("GET", "/v1/bookings/{id}", "bookings_get", seatd_handle_bookings_get, AUTH),
    ROUTE("DELETE", "/v1/bookings/{id}", "bookings_cancel", seatd_handle_bookings_cancel, AUTH),
    ROUTE("POST", "/v1/tickets/verify", "tickets_verify", seatd_handle_tickets_verify, JSON),
    ROUTE("GET", "/v1/admin/holds/{id}", "admin_holds_get", seatd_handle_admin_holds_get, ADMIN),
    ROUTE("DELETE", "/v1/admin/holds/{id}", "admin_holds_release", seatd_handle_admin_holds_release,
          ADMIN),
    ROUTE("GET", "/v1/admin/bookings/{id}", "admin_bookings_get", seatd_handle_admin_bookings_get,
          ADMIN),
    ROUTE("DELETE", "/v1/admin/bookings/{id}", "admin_bookings_cancel",
          seatd_handle_admin_bookings_cancel, ADMIN),
    ROUTE("PUT", "/v1/admin/shows/{id}/channels/{name}", "admin_channels_set",
          seatd_handle_admin_channels_set, ADMIN | JSON),
    ROUTE("DELETE", "/v1/admin/shows/{id}/channels/{name}", "admin_channels_release",
          seatd_handle_admin_channels_release, ADMIN),
    ROUTE("POST", "/v1/admin/shows/{id}/reap", "admin_shows_reap", seatd_handle_admin_shows_reap,
          ADMIN),
    ROUTE("POST", "/v1/auth/register", "auth_register", seatd_handle_auth_register, JSON),
    ROUTE("POST", "/v1/auth/login", "auth_login", seatd_handle_auth_login, JSON),
    ROUTE("POST", "/v1/auth/refresh", "auth_refresh", seatd_handle_auth_refresh, JSON),
    ROUTE("POST", "/v1/auth/logout", "auth_logout", seatd_handle_auth_logout, JSON),
    ROUTE("GET", "/v1/me/holds", "me_holds", seatd_handle_me_holds, AUTH),
    ROUTE("GET", "/v1/me/bookings", "me_bookings", seatd_handle_me_bookings, AUTH),
    ROUTE("POST", "/v1/admin/users", "admin_users_create", seatd_handle_admin_users_create,
          ADMIN | JSON),
    ROUTE("GET", "/healthz", "healthz", seatd_handle_health, 0),
    ROUTE("GET", "/metrics", "metrics", seatd_handle_metrics, 0),
};

const size_t seatd_nroutes = sizeof(seatd_routes) / sizeof(seatd_routes[0]);

/* The metrics listener (--metrics-listen): what a scraper and a probe need, nothing else. */
seatd_route_t seatd_metrics_routes[] = {
    ROUTE("GET", "/metrics", "metrics", seatd_handle_metrics, 0),
    ROUTE("GET", "/healthz", "healthz", seatd_handle_health, 0),
};

const size_t seatd_metrics_nroutes = sizeof(seatd_metrics_routes) / sizeof(seatd_metrics_routes[0]);
