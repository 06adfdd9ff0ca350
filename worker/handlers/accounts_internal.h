/*
 * accounts_internal.h - what the account handlers share: rendering an accounts flow's end
 * (flows/accounts.h), which login (accounts.c) and refresh (accounts_session.c) both answer
 * with a token pair. Not an interface: include it only from accounts.c (sign-up, login) and
 * accounts_session.c (token pairs, refresh, logout); the routes are declared in handlers.h.
 */
#ifndef SEATD_ACCOUNTS_INTERNAL_H
#define SEATD_ACCOUNTS_INTERNAL_H

#include "flows/accounts.h"
#include "http/http_request.h"

/* ---------------------------------------------------------------- accounts.c */

/* Answers 'r' for a flow that did not end DONE ('res', borrowed): 429 with Retry-After, 401
 * invalid-credentials, the store's problem or the flow's failure. Returns 1 when answered
 * (or when there was nothing to answer: GONE), 0 for DONE (the caller answers). */
int accounts__answered_unless_done(seatd_req_t *r, const seatd_accounts_result_t *res);

/* ---------------------------------------------------------------- accounts_session.c */

/* The end of a login or a refresh (a flows/accounts.h callback whose context is the request):
 * a flow that did not end DONE is answered by accounts__answered_unless_done(), a DONE one 200
 * with its token pair (a signed access token for res->user and res->refresh_token). */
void accounts__on_pair(const seatd_accounts_result_t *res, void *data);

#endif
