/* handlers/shows.c - not written yet. */
