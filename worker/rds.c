/* rds.c - not written yet. */
