-- bench/pg/schema.sql - the PostgreSQL anchor: one 2,000-seat show as rows, the seed card's model.
-- Seat 'seat_id' is the seat index 0..1999: row = seat_id / 50 (row 0 is the best row),
-- number = seat_id % 50. pgbench scripts hold.sql and sweep.sql drive it.
DROP TABLE IF EXISTS show_seats;
CREATE TABLE show_seats (
    show_id    bigint      NOT NULL,
    seat_id    integer     NOT NULL,
    status     text        NOT NULL DEFAULT 'AVAILABLE',
    hold_id    bigint,
    held_until timestamptz,
    PRIMARY KEY (show_id, seat_id)
);
INSERT INTO show_seats (show_id, seat_id) SELECT 1, g FROM generate_series(0, 1999) AS g;
VACUUM ANALYZE show_seats;
