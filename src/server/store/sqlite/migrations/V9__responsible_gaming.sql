-- Responsible gaming. A wallet's row is its guard: the statement that takes a stake or makes a deposit
-- checks, in its own WHERE, the limits in force, the running totals and any break or exclusion, so
-- that the check and the move are one statement, safe under concurrency on its own.
-- `staked` and `deposited` only ever grow; each ticket keeps the wallet's `staked` after its stake,
-- each deposit its `deposited` after it, so that what a rolling window holds is the total now minus
-- the total kept by the last one before the window began (exact to the second, one index seek).
ALTER TABLE accounts ADD COLUMN staked INTEGER NOT NULL DEFAULT 0;
ALTER TABLE accounts ADD COLUMN deposited INTEGER NOT NULL DEFAULT 0;
ALTER TABLE accounts ADD COLUMN stake_day INTEGER;
ALTER TABLE accounts ADD COLUMN stake_week INTEGER;
ALTER TABLE accounts ADD COLUMN stake_month INTEGER;
ALTER TABLE accounts ADD COLUMN deposit_day INTEGER;
ALTER TABLE accounts ADD COLUMN deposit_week INTEGER;
ALTER TABLE accounts ADD COLUMN deposit_month INTEGER;
-- A break, a self-exclusion or a closed account: nothing is staked or deposited before then.
ALTER TABLE accounts ADD COLUMN paused_until INTEGER NOT NULL DEFAULT 0;

ALTER TABLE tickets ADD COLUMN stake_total INTEGER NOT NULL DEFAULT 0;
ALTER TABLE transfers ADD COLUMN wallet_total INTEGER;
-- Tickets from before this version count as staked before any window: their totals stay 0.
CREATE INDEX transfers_deposit_totals ON transfers (credit, created_at) WHERE wallet_total IS NOT NULL;

-- The identity a real-money account declares (matched against the national ban file), how often its
-- reality check comes, why it is paused, and when it was closed.
ALTER TABLE players ADD COLUMN first_name TEXT;
ALTER TABLE players ADD COLUMN last_name TEXT;
ALTER TABLE players ADD COLUMN birth_date TEXT;
ALTER TABLE players ADD COLUMN identity_key TEXT;
ALTER TABLE players ADD COLUMN reality_minutes INTEGER NOT NULL DEFAULT 60 CHECK (reality_minutes IN (15, 30, 60));
ALTER TABLE players ADD COLUMN pause_kind TEXT CHECK (pause_kind IN ('break', 'exclusion', 'closed'));
ALTER TABLE players ADD COLUMN closed_at INTEGER;
CREATE INDEX players_identity ON players (identity_key) WHERE identity_key IS NOT NULL;

-- A session's play time counts from its start; its reality check is due at `reality_due_at`.
ALTER TABLE sessions ADD COLUMN started_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN reality_due_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN reality_told_at INTEGER;

-- A raise (or removal) of a limit waits 48 h, then applies only once the player confirms it.
CREATE TABLE limit_raises (
    player_id TEXT NOT NULL REFERENCES players (id),
    flow TEXT NOT NULL CHECK (flow IN ('stake', 'deposit')),
    span TEXT NOT NULL CHECK (span IN ('day', 'week', 'month')),
    amount INTEGER CHECK (amount > 0),
    asked_at INTEGER NOT NULL,
    PRIMARY KEY (player_id, flow, span)
) WITHOUT ROWID;

-- The national ban file as last imported: identity keys (names folded, date of birth).
CREATE TABLE banned_identities (
    identity_key TEXT PRIMARY KEY,
    imported_at INTEGER NOT NULL
) WITHOUT ROWID;

-- Every responsible-gaming event, appended and never changed.
CREATE TABLE responsible_events (
    id INTEGER PRIMARY KEY,
    player_id TEXT NOT NULL REFERENCES players (id),
    at INTEGER NOT NULL,
    actor TEXT NOT NULL,
    kind TEXT NOT NULL,
    detail TEXT NOT NULL
);
CREATE INDEX responsible_events_player ON responsible_events (player_id, at);
CREATE TRIGGER responsible_events_append_only_update BEFORE UPDATE ON responsible_events
BEGIN SELECT RAISE(ABORT, 'responsible_events is append-only'); END;
CREATE TRIGGER responsible_events_append_only_delete BEFORE DELETE ON responsible_events
BEGIN SELECT RAISE(ABORT, 'responsible_events is append-only'); END;
