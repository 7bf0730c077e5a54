-- The settler reads due tickets in (sold_at, id) order, a batch at a time, after the last one it saw.
-- Indexed on sold_at alone, each batch read every unsettled ticket sold in its second and sorted them
-- (4 500 rows for a batch of 128 at 4 500 due a second); on (sold_at, id) it reads only its own rows.
DROP INDEX tickets_due;
CREATE INDEX tickets_due ON tickets(sold_at, id) WHERE credited_at IS NULL;
