-- SQLite's V2 in PostgreSQL: the double-entry ledger, sale counters apart from the lots, idempotency
-- keys on the tickets, payloads printed on demand. (No server ever kept its data in PostgreSQL before
-- this version, so unlike SQLite's there is no single-entry ledger to convert.) Two differences make sales scale across instances:
-- - a block's indices are cut into stripes, each with its own counter row: a sale takes a free stripe
--   of the lowest open block (FOR UPDATE SKIP LOCKED), so concurrent sales do not queue on one row;
-- - the balances of the game's own accounts (stakes, prizes, cash, demo) are split into shards summed
--   on reading: a sale credits the stakes shard of its stripe, which it already holds.

CREATE TABLE accounts (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('wallet', 'cash', 'demo', 'stakes', 'prizes'))
);
CREATE TABLE balances (
    account TEXT NOT NULL REFERENCES accounts(id),
    shard INTEGER NOT NULL CHECK (shard >= 0),
    -- A wallet has one shard, which never goes below zero.
    wallet BOOLEAN NOT NULL,
    balance BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (account, shard),
    CHECK (NOT wallet OR (shard = 0 AND balance >= 0))
);

CREATE TABLE block_stripes (
    emission INTEGER NOT NULL,
    block INTEGER NOT NULL,
    stripe INTEGER NOT NULL,
    start INTEGER NOT NULL,
    next INTEGER NOT NULL,
    stop INTEGER NOT NULL,
    exhausted_at BIGINT,
    PRIMARY KEY (emission, block, stripe),
    FOREIGN KEY (emission, block) REFERENCES blocks(emission, block),
    CHECK (start <= next AND next <= stop),
    CHECK ((exhausted_at IS NULL) = (next < stop))
);
ALTER TABLE blocks DROP COLUMN sold;
ALTER TABLE blocks DROP COLUMN closed_at;

ALTER TABLE tickets DROP COLUMN payload;
ALTER TABLE tickets ADD COLUMN idempotency_key TEXT;
UPDATE tickets t SET idempotency_key = COALESCE((SELECT i.key FROM idempotency i WHERE i.ticket_id = t.id), 'before-v2:' || t.id);
ALTER TABLE tickets ALTER COLUMN idempotency_key SET NOT NULL;
ALTER TABLE tickets ADD CONSTRAINT tickets_player_key UNIQUE (player_id, idempotency_key);
ALTER TABLE tickets ADD CONSTRAINT tickets_lot CHECK (lot_cents >= 0);
-- No foreign key from a ticket to its block, nor from a transfer to its accounts: each check would
-- share-lock the one parent row every sale names (the block, its stakes account), and PostgreSQL
-- serialises such locks. A sale names only rows it has just read or updated; `ledger check` finds a
-- transfer to an account that does not exist (the balances would no longer sum to zero).
-- History in sale order: a sequence number, as SQLite's rowid.
ALTER TABLE tickets ADD COLUMN seq BIGINT GENERATED ALWAYS AS IDENTITY;
DROP INDEX tickets_player;
CREATE INDEX tickets_player ON tickets(player_id, seq);
CREATE INDEX tickets_due ON tickets(sold_at) WHERE credited_at IS NULL;

CREATE TABLE transfers (
    id BIGSERIAL PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('deposit', 'withdrawal', 'demo', 'stake', 'win')),
    debit TEXT NOT NULL,
    credit TEXT NOT NULL,
    amount BIGINT NOT NULL CHECK (amount > 0),
    ticket_id TEXT REFERENCES tickets(id),
    reason TEXT,
    created_at BIGINT NOT NULL,
    CHECK (debit <> credit),
    CHECK ((ticket_id IS NOT NULL) = (kind IN ('stake', 'win')))
);
CREATE UNIQUE INDEX transfers_once_per_ticket ON transfers(ticket_id, kind) WHERE ticket_id IS NOT NULL;

DROP TABLE idempotency;
DROP TABLE ledger;

-- A block's size, sale count and closing time, from its stripes: closed once every stripe is sold out.
CREATE VIEW block_sales AS
    SELECT emission, block, SUM(stop - start)::BIGINT AS size, SUM(next - start)::BIGINT AS sold,
           CASE WHEN bool_and(next = stop) THEN MAX(exhausted_at) END AS closed_at
    FROM block_stripes GROUP BY emission, block;
