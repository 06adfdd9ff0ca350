/* http_request.c - not written yet. */
