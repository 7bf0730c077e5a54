-- The double-entry ledger, block sale counters apart from the lots, idempotency keys on the tickets,
-- payloads printed on demand instead of stored. Runs with foreign keys off (SQLite's procedure for
-- rebuilding a table); the store checks them all once the migrations are done.

-- Accounts, with their balances stored. A wallet never goes below zero; a balance is always an integer
-- (SQLite would turn an overflowing sum into a float).
CREATE TABLE accounts (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('wallet', 'cash', 'demo', 'stakes', 'prizes')),
    balance INTEGER NOT NULL DEFAULT 0 CHECK (typeof(balance) = 'integer'),
    CHECK (kind <> 'wallet' OR balance >= 0)
) WITHOUT ROWID;
INSERT INTO accounts (id, kind) VALUES ('cash', 'cash'), ('demo', 'demo');
INSERT INTO accounts (id, kind) SELECT 'wallet:' || id, 'wallet' FROM players;
INSERT INTO accounts (id, kind) SELECT 'block:' || emission || ':' || block || ':stakes', 'stakes' FROM blocks;
INSERT INTO accounts (id, kind) SELECT 'block:' || emission || ':' || block || ':prizes', 'prizes' FROM blocks;

-- A sale updates this small row, never the block's 1.5 MB of lots.
CREATE TABLE block_sales (
    emission INTEGER NOT NULL,
    block INTEGER NOT NULL,
    size INTEGER NOT NULL CHECK (size > 0),
    sold INTEGER NOT NULL DEFAULT 0,
    closed_at INTEGER,
    PRIMARY KEY (emission, block),
    FOREIGN KEY (emission, block) REFERENCES blocks(emission, block),
    CHECK (sold >= 0 AND sold <= size),
    CHECK ((closed_at IS NULL) = (sold < size))
) WITHOUT ROWID;
INSERT INTO block_sales (emission, block, size, sold, closed_at)
    SELECT emission, block, length(lots), sold, CASE WHEN sold = length(lots) THEN COALESCE(closed_at, created_at) END FROM blocks;
ALTER TABLE blocks DROP COLUMN sold;
ALTER TABLE blocks DROP COLUMN closed_at;

CREATE TABLE tickets_v2 (
    id TEXT PRIMARY KEY,
    player_id TEXT NOT NULL REFERENCES players(id),
    emission INTEGER NOT NULL,
    block INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    mode TEXT NOT NULL CHECK (mode IN ('jouez', 'auto')),
    lot_cents INTEGER NOT NULL CHECK (lot_cents >= 0),
    revealed TEXT NOT NULL DEFAULT '[]',
    sold_at INTEGER NOT NULL,
    credited_at INTEGER,
    finished_at INTEGER,
    idempotency_key TEXT NOT NULL,
    UNIQUE (emission, block, idx),
    UNIQUE (player_id, idempotency_key),
    FOREIGN KEY (emission, block) REFERENCES block_sales(emission, block)
);
INSERT INTO tickets_v2 (id, player_id, emission, block, idx, mode, lot_cents, revealed, sold_at, credited_at, finished_at, idempotency_key)
    SELECT t.id, t.player_id, t.emission, t.block, t.idx, t.mode, t.lot_cents, t.revealed, t.sold_at, t.credited_at, t.finished_at,
           COALESCE(i.key, 'before-v2:' || t.id)
    FROM tickets t LEFT JOIN idempotency i ON i.ticket_id = t.id;

-- Every money move: `amount` leaves `debit` and enters `credit`.
CREATE TABLE transfers (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('deposit', 'withdrawal', 'demo', 'stake', 'win')),
    debit TEXT NOT NULL REFERENCES accounts(id),
    credit TEXT NOT NULL REFERENCES accounts(id),
    amount INTEGER NOT NULL CHECK (typeof(amount) = 'integer' AND amount > 0),
    ticket_id TEXT REFERENCES tickets(id),
    reason TEXT,
    created_at INTEGER NOT NULL,
    CHECK (debit <> credit),
    CHECK ((ticket_id IS NOT NULL) = (kind IN ('stake', 'win')))
);
CREATE UNIQUE INDEX transfers_once_per_ticket ON transfers(ticket_id, kind) WHERE ticket_id IS NOT NULL;

-- The single-entry ledger becomes transfers: deposits were demo money (the only kind there was).
INSERT INTO transfers (kind, debit, credit, amount, ticket_id, reason, created_at)
    SELECT 'demo', 'demo', 'wallet:' || player_id, amount_cents, NULL, 'demo credit', created_at
    FROM ledger WHERE kind = 'deposit' AND amount_cents > 0 ORDER BY id;
INSERT INTO transfers (kind, debit, credit, amount, ticket_id, reason, created_at)
    SELECT 'stake', 'wallet:' || l.player_id, 'block:' || t.emission || ':' || t.block || ':stakes', -l.amount_cents, l.ticket_id, NULL, l.created_at
    FROM ledger l JOIN tickets t ON t.id = l.ticket_id WHERE l.kind = 'stake' ORDER BY l.id;
INSERT INTO transfers (kind, debit, credit, amount, ticket_id, reason, created_at)
    SELECT 'win', 'block:' || t.emission || ':' || t.block || ':prizes', 'wallet:' || l.player_id, l.amount_cents, l.ticket_id, NULL, l.created_at
    FROM ledger l JOIN tickets t ON t.id = l.ticket_id WHERE l.kind = 'win' AND l.amount_cents > 0 ORDER BY l.id;
UPDATE accounts SET balance =
    COALESCE((SELECT SUM(amount) FROM transfers WHERE credit = accounts.id), 0)
  - COALESCE((SELECT SUM(amount) FROM transfers WHERE debit = accounts.id), 0);

DROP TABLE idempotency;
DROP TABLE ledger;
DROP TABLE tickets;
ALTER TABLE tickets_v2 RENAME TO tickets;
CREATE INDEX tickets_player ON tickets(player_id, sold_at);
-- The settler's work list: tickets not yet credited, oldest sale first.
CREATE INDEX tickets_due ON tickets(sold_at) WHERE credited_at IS NULL;
