/* payment.c - not written yet. */
