/*
 * areas.h - standing (general-admission) areas beside seats (issue 30): their shape at a
 * show's creation, the places a hold asks for, and the texts the scripts keep them in.
 *
 * A show may have 1-SEATD_AREAS_MAX areas [{"id":"FLOOR","capacity":5000,"tier":"standing"}]:
 * ids of [A-Za-z0-9_-]{1,16} (the seat id grammar), each once; capacity an integer
 * 1..SEATD_AREA_CAPACITY_MAX; tier one of the show's priceTiers. The scripts keep them in
 * the show's meta and count the places taken (lua/lib.lua, parse_areas); a hold asks for
 * places as {"FLOOR":2,"BALC":1}, sent to the script as "BALC:1,FLOOR:2" (sorted by id), the
 * form holds and bookings keep ("places text"). The free counts come back as
 * "FLOOR:5000:4862,…" (id:capacity:free, the "free text").
 * Pure logic: no I/O, no loop.
 */
#ifndef SEATD_AREAS_H
#define SEATD_AREAS_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;

#define SEATD_AREAS_MAX 32
#define SEATD_AREA_CAPACITY_MAX 1000000
/* Room for a places text of SEATD_AREAS_MAX areas: an id of 16, ':', a count of up to 7
 * digits (SEATD_AREA_CAPACITY_MAX) and ',' each, and the NUL. */
#define SEATD_AREAS_TEXT_MAX (SEATD_AREAS_MAX * 26 + 1)

/* 0 if 'areas' (borrowed) is a show's areas as above, priced by 'tiers' (the priceTiers
 * object; NULL: tiers are not checked, they were refused already); else SEATD_EINVAL with
 * the reason in 'why' (client-facing). */
int seatd_areas_check(const struct cJSON *areas, const struct cJSON *tiers, char *why,
                      size_t whylen);

/* The places a hold asks for, 'req' {"<area id>": count 1..max_places, …} (1-SEATD_AREAS_MAX
 * members), as the places text in 'out' (SEATD_AREAS_TEXT_MAX bytes) with their sum in
 * '*places'. Returns 0, or SEATD_EINVAL with the reason in 'why'. Whether each area is the
 * show's is the script's to say (UNKNOWN_AREA). */
int seatd_areas_request(const struct cJSON *req, long long max_places, char *out, long long *places,
                        char *why, size_t whylen);

/* A places text "FLOOR:2,…" as the API shows it, {"FLOOR":2,…}; NULL for "" or NULL. */
struct cJSON *seatd_areas_places_json(const char *text);

/* One standing area as a free text names it. */
typedef struct seatd_area_free_s {
    char id[17];       /* [A-Za-z0-9_-]{1,16} */
    uint32_t capacity; /* places */
    uint32_t free;     /* free places (never above capacity) */
} seatd_area_free_t;

/* The areas of free text 'text' ("FLOOR:5000:4862,…", "" or NULL for none) into 'out' (up to
 * 'max'; an id named again is skipped, a free count above the capacity is the capacity), their
 * count into '*n'. Returns 0, or -1 at the first entry that is not "id:capacity:free" or past
 * 'max' ('out' and '*n' then hold the areas before it). */
int seatd_areas_parse_free(const char *text, seatd_area_free_t *out, size_t max, size_t *n);

/* A free text "FLOOR:5000:4862,…" as the availability document shows it,
 * {"FLOOR":{"capacity":5000,"available":4862},…}; NULL for "" or NULL (a malformed tail is
 * left out). */
struct cJSON *seatd_areas_free_json(const char *text);

#endif
