/*
 * channels.h - sales channels (issue 30): seats and standing-area places kept for a channel
 * (the box office, house seats, a partner) until it is released. The shape an admin gives
 * them, at a show's creation ("channels":{"boxoffice":{…}}) or later for one channel:
 *   {"seatIds":["A1",…], "areas":{"FLOOR":100}, "releaseAt":"2030-01-01T18:00:00Z"}
 * every member optional: seats of the show's layout, each kept by one channel; places of the
 * show's areas (1..SEATD_AREA_CAPACITY_MAX each; whether they fit is the store's to say);
 * releaseAt an RFC 3339 UTC time (after it the channel's seats and places are everyone's).
 * Channel names are [a-z0-9_-]{1,32}, at most SEATD_CHANNELS_MAX per show; a token carries
 * the channels it may sell in its "channels" claim (http/principal.h).
 * Pure logic: no I/O, no loop.
 */
#ifndef SEATD_CHANNELS_H
#define SEATD_CHANNELS_H

#include <stddef.h>

struct cJSON;
struct seatd_layout_s;

#define SEATD_CHANNELS_MAX 8

/* 1 if 's' is a channel name. */
int seatd_channel_name_valid(const char *s);

/* Checks channel 'name''s body 'body' (borrowed) against the show's layout 'l' and, when not
 * NULL, its areas array 'areas' (the show's "areas"; NULL: not checked here). On success
 * returns 0 and '*out' (owned) as the store takes it: {"seatIds":[…],"areas":{…},"releaseAt":
 * <epoch ms, 0 for none>}. Else SEATD_EINVAL with the reason in 'why' (client-facing). */
int seatd_channel_check(const char *name, const struct cJSON *body, const struct seatd_layout_s *l,
                        const struct cJSON *areas, struct cJSON **out, char *why, size_t whylen);

/* Checks a show's "channels" object (borrowed): 1-SEATD_CHANNELS_MAX channels as above, no
 * seat kept by two, every area's kept places within its capacity. On success returns 0 and
 * '*out_json' (owned text: {"<name>":<the store's form>,…}). Else SEATD_EINVAL and 'why'. */
int seatd_channels_check(const struct cJSON *channels, const struct seatd_layout_s *l,
                         const struct cJSON *areas, char **out_json, char *why, size_t whylen);

#endif
