-- The schema as the server first created it (SQLite's V1, in PostgreSQL's types), so that both stores
-- share one history of versions.
CREATE TABLE players (
    id TEXT PRIMARY KEY,
    name TEXT UNIQUE,
    password_hash TEXT,
    guest BOOLEAN NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE TABLE sessions (
    token_hash TEXT PRIMARY KEY,
    player_id TEXT NOT NULL REFERENCES players(id),
    expires_at BIGINT NOT NULL
);
CREATE TABLE designs (
    hash BYTEA PRIMARY KEY,
    text TEXT NOT NULL
);
CREATE TABLE blocks (
    emission INTEGER NOT NULL,
    block INTEGER NOT NULL,
    seed BYTEA NOT NULL,
    root BYTEA NOT NULL,
    design_hash BYTEA NOT NULL REFERENCES designs(hash),
    lots BYTEA NOT NULL,
    sold INTEGER NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    closed_at BIGINT,
    PRIMARY KEY (emission, block)
);
CREATE TABLE tickets (
    id TEXT PRIMARY KEY,
    player_id TEXT NOT NULL REFERENCES players(id),
    emission INTEGER NOT NULL,
    block INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    mode TEXT NOT NULL CHECK (mode IN ('jouez', 'auto')),
    payload TEXT NOT NULL,
    lot_cents BIGINT NOT NULL,
    revealed TEXT NOT NULL DEFAULT '[]',
    sold_at BIGINT NOT NULL,
    credited_at BIGINT,
    finished_at BIGINT,
    UNIQUE (emission, block, idx)
);
CREATE INDEX tickets_player ON tickets(player_id, sold_at);
CREATE TABLE ledger (
    id BIGSERIAL PRIMARY KEY,
    player_id TEXT NOT NULL REFERENCES players(id),
    kind TEXT NOT NULL CHECK (kind IN ('deposit', 'stake', 'win')),
    amount_cents BIGINT NOT NULL,
    ticket_id TEXT REFERENCES tickets(id),
    created_at BIGINT NOT NULL
);
CREATE INDEX ledger_player ON ledger(player_id);
CREATE UNIQUE INDEX ledger_once_per_ticket ON ledger(ticket_id, kind) WHERE ticket_id IS NOT NULL;
CREATE TABLE idempotency (
    player_id TEXT NOT NULL,
    key TEXT NOT NULL,
    ticket_id TEXT NOT NULL REFERENCES tickets(id),
    PRIMARY KEY (player_id, key)
);
