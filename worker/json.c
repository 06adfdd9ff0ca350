/* json.c - not written yet. */
