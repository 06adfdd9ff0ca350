-- bench/pg/sweep.sql - the expiry sweeper of the PostgreSQL anchor: expired holds go back to
-- AVAILABLE (seatd gets this from Redis key expiry plus lazy reaping). Weighted low in the mix.
UPDATE show_seats SET status = 'AVAILABLE', hold_id = NULL, held_until = NULL
 WHERE show_id = 1 AND status = 'HELD' AND held_until < now();
