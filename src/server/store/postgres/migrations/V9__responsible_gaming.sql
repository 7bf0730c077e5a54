-- SQLite's V9 in PostgreSQL: responsible gaming. A wallet's balance row (its one shard) is its guard:
-- the statement that takes a stake or makes a deposit checks, in its own WHERE, the limits in force,
-- the running totals and any break or exclusion. PostgreSQL re-evaluates that WHERE on the newest
-- version of the row when it waited for another sale's lock, so the check and the move stay one
-- statement, safe under concurrency on its own.
ALTER TABLE balances ADD COLUMN staked BIGINT NOT NULL DEFAULT 0;
ALTER TABLE balances ADD COLUMN deposited BIGINT NOT NULL DEFAULT 0;
ALTER TABLE balances ADD COLUMN stake_day BIGINT;
ALTER TABLE balances ADD COLUMN stake_week BIGINT;
ALTER TABLE balances ADD COLUMN stake_month BIGINT;
ALTER TABLE balances ADD COLUMN deposit_day BIGINT;
ALTER TABLE balances ADD COLUMN deposit_week BIGINT;
ALTER TABLE balances ADD COLUMN deposit_month BIGINT;
ALTER TABLE balances ADD COLUMN paused_until BIGINT NOT NULL DEFAULT 0;

ALTER TABLE tickets ADD COLUMN stake_total BIGINT NOT NULL DEFAULT 0;
-- SQLite finds a player's tickets by time in its tickets_player index; here that index is by seq.
CREATE INDEX tickets_player_time ON tickets (player_id, sold_at);
ALTER TABLE transfers ADD COLUMN wallet_total BIGINT;
CREATE INDEX transfers_deposit_totals ON transfers (credit, created_at) WHERE wallet_total IS NOT NULL;

ALTER TABLE players ADD COLUMN first_name TEXT;
ALTER TABLE players ADD COLUMN last_name TEXT;
ALTER TABLE players ADD COLUMN birth_date TEXT;
ALTER TABLE players ADD COLUMN identity_key TEXT;
ALTER TABLE players ADD COLUMN reality_minutes INTEGER NOT NULL DEFAULT 60 CHECK (reality_minutes IN (15, 30, 60));
ALTER TABLE players ADD COLUMN pause_kind TEXT CHECK (pause_kind IN ('break', 'exclusion', 'closed'));
ALTER TABLE players ADD COLUMN closed_at BIGINT;
CREATE INDEX players_identity ON players (identity_key) WHERE identity_key IS NOT NULL;

ALTER TABLE sessions ADD COLUMN started_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN reality_due_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN reality_told_at BIGINT;

CREATE TABLE limit_raises (
    player_id TEXT NOT NULL REFERENCES players (id),
    flow TEXT NOT NULL CHECK (flow IN ('stake', 'deposit')),
    span TEXT NOT NULL CHECK (span IN ('day', 'week', 'month')),
    amount BIGINT CHECK (amount > 0),
    asked_at BIGINT NOT NULL,
    PRIMARY KEY (player_id, flow, span)
);

CREATE TABLE banned_identities (
    identity_key TEXT PRIMARY KEY,
    imported_at BIGINT NOT NULL
);

CREATE TABLE responsible_events (
    id BIGSERIAL PRIMARY KEY,
    player_id TEXT NOT NULL REFERENCES players (id),
    at BIGINT NOT NULL,
    actor TEXT NOT NULL,
    kind TEXT NOT NULL,
    detail TEXT NOT NULL
);
CREATE INDEX responsible_events_player ON responsible_events (player_id, at);
CREATE FUNCTION responsible_events_append_only() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN RAISE EXCEPTION 'responsible_events is append-only'; END $$;
CREATE TRIGGER responsible_events_append_only BEFORE UPDATE OR DELETE ON responsible_events
    FOR EACH ROW EXECUTE FUNCTION responsible_events_append_only();
