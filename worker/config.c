/* config.c - not written yet. */
