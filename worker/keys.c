/* keys.c - not written yet. */
