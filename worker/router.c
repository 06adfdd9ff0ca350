/* router.c - not written yet. */
