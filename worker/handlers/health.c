/* handlers/health.c - not written yet. */
