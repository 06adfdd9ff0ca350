/*
 * refund_policy.h - the shape of a show's refund policy (issue 5), checked when a show is
 * created. The refund itself is computed by the cancel script (lua/cancel.lua) on Redis's
 * clock; this module only decides what the script may be given.
 *
 * A policy is 1-SEATD_REFUND_POLICY_MAX_TIERS tiers {"beforeSeconds": integer 0..365 days,
 * "percent": integer 0..100}, no two at one beforeSeconds. Pure logic: no I/O, no loop.
 */
#ifndef SEATD_REFUND_POLICY_H
#define SEATD_REFUND_POLICY_H

struct cJSON;

#define SEATD_REFUND_POLICY_MAX_TIERS 10

/* The client-facing text of a refusal. */
#define SEATD_REFUND_POLICY_HELP                                                                    \
    "'refundPolicy' is [{\"beforeSeconds\":7200,\"percent\":100},…] (1-10 tiers, percent 0-100, " \
    "each beforeSeconds once)"

/* 1 if 'policy' (borrowed) is a refund policy as above, else 0. */
int seatd_refund_policy_valid(const struct cJSON *policy);

#endif
