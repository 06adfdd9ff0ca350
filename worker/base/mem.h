/*
 * mem.h - allocation that never returns NULL.
 *
 * A worker is stateless and nginx sends the next request elsewhere, so running out of memory
 * is answered by logging and abort(): callers never check for NULL (STYLE rule 12).
 * seatd_mem_init() installs the same functions as cJSON's hooks; call it once at start-up.
 */
#ifndef SEATD_MEM_H
#define SEATD_MEM_H

#include <stddef.h>

void *seatd_malloc(size_t size);
void *seatd_calloc(size_t n, size_t size);
void *seatd_realloc(void *p, size_t size);
/* Returns an owned copy of 's' (freed with free()). */
char *seatd_strdup(const char *s);
/* Returns an owned copy of the first 'len' bytes of 's', NUL-terminated. */
char *seatd_strndup(const char *s, size_t len);

/* Makes the strings that 'n' borrowed fields point at owned: copies every one of them (a NULL
 * field stays NULL) into one block and points its field '*fields[i]' at the copy. Returns the
 * block, freed with free() once when the strings are no longer used: a context that keeps a
 * struct of borrowed strings past the call that lent them owns one block, not one copy each. */
char *seatd_strs_own(const char **const fields[], size_t n);

/* Installs seatd_malloc/free as cJSON's allocator. */
void seatd_mem_init(void);

#endif
