/* auth.c - not written yet. */
