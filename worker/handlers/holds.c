/* handlers/holds.c - not written yet. */
