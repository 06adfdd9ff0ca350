/* handlers/bookings.c - not written yet. */
