/* http_server.c - not written yet. */
