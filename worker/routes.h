/*
 * routes.h - the route tables of the worker (defined in routes.c): the API, and the metrics
 * listener's two routes. Mutable because each row carries its own runtime statistics.
 */
#ifndef SEATD_ROUTES_H
#define SEATD_ROUTES_H

#include <stddef.h>

#include "http/router.h"

extern seatd_route_t seatd_routes[];
extern const size_t seatd_nroutes;

/* GET /metrics and GET /healthz only: the table of the --metrics-listen listener. */
extern seatd_route_t seatd_metrics_routes[];
extern const size_t seatd_metrics_nroutes;

#endif
