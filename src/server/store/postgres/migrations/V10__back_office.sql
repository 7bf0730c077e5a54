-- SQLite's V10 in PostgreSQL: the back office. Here the kinds are widened in place.
ALTER TABLE accounts DROP CONSTRAINT accounts_kind_check,
    ADD CONSTRAINT accounts_kind_check CHECK (kind IN ('wallet', 'cash', 'demo', 'stakes', 'prizes', 'withdrawals'));
ALTER TABLE balances ADD COLUMN suspended_at BIGINT;

ALTER TABLE transfers DROP CONSTRAINT transfers_kind_check,
    ADD CONSTRAINT transfers_kind_check
    CHECK (kind IN ('deposit', 'withdrawal', 'demo', 'stake', 'win', 'withdrawal_paid', 'withdrawal_refused', 'adjustment'));

CREATE TABLE staff (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    role TEXT NOT NULL CHECK (role IN ('admin', 'finance', 'support', 'auditor')),
    password_hash TEXT NOT NULL,
    totp_secret TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE staff_sessions (
    token_hash TEXT PRIMARY KEY,
    staff_id TEXT NOT NULL REFERENCES staff (id),
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);

CREATE TABLE audit_log (
    seq BIGINT PRIMARY KEY,
    at BIGINT NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    before TEXT,
    after TEXT,
    reason TEXT,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX audit_log_target ON audit_log (target, seq);
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'audit_log is append-only'; END $$;
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();

CREATE TABLE withdrawals (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    player_id TEXT NOT NULL REFERENCES players (id),
    amount BIGINT NOT NULL CHECK (amount > 0),
    asked_at BIGINT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'paid', 'refused')),
    decided_at BIGINT,
    decided_by TEXT,
    reason TEXT,
    CHECK ((state = 'pending') = (decided_at IS NULL))
);
CREATE INDEX withdrawals_pending ON withdrawals (asked_at) WHERE state = 'pending';
CREATE INDEX withdrawals_player ON withdrawals (player_id, asked_at);

CREATE TABLE adjustments (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    player_id TEXT NOT NULL REFERENCES players (id),
    amount BIGINT NOT NULL CHECK (amount <> 0),
    reason TEXT NOT NULL,
    asked_by TEXT NOT NULL,
    asked_at BIGINT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'applied', 'rejected')),
    decided_by TEXT,
    decided_at BIGINT,
    CHECK (decided_by IS NULL OR decided_by <> asked_by)
);
CREATE INDEX adjustments_pending ON adjustments (asked_at) WHERE state = 'pending';

CREATE TABLE block_withdrawals (
    emission INTEGER NOT NULL,
    block INTEGER NOT NULL,
    at BIGINT NOT NULL,
    reason TEXT NOT NULL,
    PRIMARY KEY (emission, block),
    FOREIGN KEY (emission, block) REFERENCES blocks (emission, block)
);
