/* routes.c - not written yet. */
