/*
 * routes.h - the route table of the worker (defined in routes.c). Mutable because each row
 * carries its own runtime statistics.
 */
#ifndef SEATD_ROUTES_H
#define SEATD_ROUTES_H

#include <stddef.h>

#include "router.h"

extern seatd_route_t seatd_routes[];
extern const size_t seatd_nroutes;

#endif
