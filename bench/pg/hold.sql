-- bench/pg/hold.sql - one virtual user's hold attempt, all-or-nothing in one transaction
-- (the seed card's conditional UPDATE, compare the row count, COMMIT or ROLLBACK), then with
-- probability :release_pct % an explicit release of a winning hold. Seats: 1-4 adjacent seats
-- (40/40/10/10 %), rows skewed towards row 0 (exponential), seats towards the middle (gaussian):
-- the same distribution as bench/loadgen.c. Variables from pgbench -D: release_pct, ttl_ms.
\set r random(1, 100)
\set n case when :r <= 40 then 1 when :r <= 80 then 2 when :r <= 90 then 3 else 4 end
\set row random_exponential(0, 39, 4.0)
\set col random_gaussian(0, 50 - :n, 2.5)
\set s :row * 50 + :col
\set e :s + :n - 1
\set h random(1, 999999999999)
BEGIN;
WITH won AS (
    UPDATE show_seats SET status = 'HELD', hold_id = :h,
           held_until = now() + make_interval(secs => :ttl_ms / 1000.0)
     WHERE show_id = 1 AND seat_id BETWEEN :s AND :e AND status = 'AVAILABLE'
    RETURNING 1)
SELECT count(*) AS got FROM won \gset
\if :got = :n
COMMIT;
\set q random(1, 100)
\if :q <= :release_pct
UPDATE show_seats SET status = 'AVAILABLE', hold_id = NULL, held_until = NULL
 WHERE show_id = 1 AND hold_id = :h AND status = 'HELD';
\endif
\else
ROLLBACK;
\endif
