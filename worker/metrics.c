/* metrics.c - not written yet. */
