/* seats.c - not written yet. */
