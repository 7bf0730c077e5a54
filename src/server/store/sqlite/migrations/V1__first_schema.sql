-- The schema as the server first created it, before versioned migrations. Existing data directories
-- already hold it, hence IF NOT EXISTS: for them this version only records that it is there.
CREATE TABLE IF NOT EXISTS players (
    id TEXT PRIMARY KEY,
    name TEXT UNIQUE,
    password_hash TEXT,
    guest INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
    token_hash TEXT PRIMARY KEY,
    player_id TEXT NOT NULL REFERENCES players(id),
    expires_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS ledger (
    id INTEGER PRIMARY KEY,
    player_id TEXT NOT NULL REFERENCES players(id),
    kind TEXT NOT NULL CHECK (kind IN ('deposit', 'stake', 'win')),
    amount_cents INTEGER NOT NULL,
    ticket_id TEXT REFERENCES tickets(id),
    created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS ledger_player ON ledger(player_id);
CREATE UNIQUE INDEX IF NOT EXISTS ledger_once_per_ticket ON ledger(ticket_id, kind) WHERE ticket_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS designs (
    hash BLOB PRIMARY KEY,
    text TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS blocks (
    emission INTEGER NOT NULL,
    block INTEGER NOT NULL,
    seed BLOB NOT NULL,
    root BLOB NOT NULL,
    design_hash BLOB NOT NULL REFERENCES designs(hash),
    lots BLOB NOT NULL,
    sold INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    closed_at INTEGER,
    PRIMARY KEY (emission, block)
);
CREATE TABLE IF NOT EXISTS tickets (
    id TEXT PRIMARY KEY,
    player_id TEXT NOT NULL REFERENCES players(id),
    emission INTEGER NOT NULL,
    block INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    mode TEXT NOT NULL CHECK (mode IN ('jouez', 'auto')),
    payload TEXT NOT NULL,
    lot_cents INTEGER NOT NULL,
    revealed TEXT NOT NULL DEFAULT '[]',
    sold_at INTEGER NOT NULL,
    credited_at INTEGER,
    finished_at INTEGER,
    UNIQUE (emission, block, idx)
);
CREATE INDEX IF NOT EXISTS tickets_player ON tickets(player_id, sold_at);
CREATE TABLE IF NOT EXISTS idempotency (
    player_id TEXT NOT NULL,
    key TEXT NOT NULL,
    ticket_id TEXT NOT NULL REFERENCES tickets(id),
    PRIMARY KEY (player_id, key)
);
