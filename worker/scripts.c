/* scripts.c - not written yet. */
