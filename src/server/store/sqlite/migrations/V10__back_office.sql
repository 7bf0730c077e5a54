-- The back office: staff and their sessions, an audit log nobody can rewrite, withdrawals the player
-- asks for and finance pays, adjustments a second staff member approves, blocks withdrawn from sale,
-- suspended accounts. Runs with foreign keys off, as SQLite's procedure for rebuilding a table asks:
-- `accounts` and `transfers` are rebuilt to widen their kinds (SQLite cannot alter a CHECK).

-- Money a player asked to withdraw waits in `withdrawals`, where it cannot be staked. A suspended
-- wallet's guard refuses stakes and deposits, as a pause does, until staff restore it.
CREATE TABLE accounts_v10 (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('wallet', 'cash', 'demo', 'stakes', 'prizes', 'withdrawals')),
    balance INTEGER NOT NULL DEFAULT 0 CHECK (typeof(balance) = 'integer'),
    staked INTEGER NOT NULL DEFAULT 0,
    deposited INTEGER NOT NULL DEFAULT 0,
    stake_day INTEGER,
    stake_week INTEGER,
    stake_month INTEGER,
    deposit_day INTEGER,
    deposit_week INTEGER,
    deposit_month INTEGER,
    paused_until INTEGER NOT NULL DEFAULT 0,
    suspended_at INTEGER,
    CHECK (kind <> 'wallet' OR balance >= 0)
) WITHOUT ROWID;
INSERT INTO accounts_v10 (id, kind, balance, staked, deposited, stake_day, stake_week, stake_month, deposit_day, deposit_week, deposit_month, paused_until)
    SELECT id, kind, balance, staked, deposited, stake_day, stake_week, stake_month, deposit_day, deposit_week, deposit_month, paused_until FROM accounts;
DROP TABLE accounts;
ALTER TABLE accounts_v10 RENAME TO accounts;
INSERT INTO accounts (id, kind) VALUES ('withdrawals', 'withdrawals');

-- A withdrawal asked moves wallet → withdrawals (`withdrawal`, as the operator's direct payout wallet →
-- cash); finance pays it (`withdrawal_paid`, → cash) or refuses it (`withdrawal_refused`, back to the
-- wallet). Staff credits and debits are `adjustment`s, cash ↔ wallet.
CREATE TABLE transfers_v10 (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('deposit', 'withdrawal', 'demo', 'stake', 'win', 'withdrawal_paid', 'withdrawal_refused', 'adjustment')),
    debit TEXT NOT NULL REFERENCES accounts(id),
    credit TEXT NOT NULL REFERENCES accounts(id),
    amount INTEGER NOT NULL CHECK (typeof(amount) = 'integer' AND amount > 0),
    ticket_id TEXT REFERENCES tickets(id),
    reason TEXT,
    created_at INTEGER NOT NULL,
    wallet_total INTEGER,
    CHECK (debit <> credit),
    CHECK ((ticket_id IS NOT NULL) = (kind IN ('stake', 'win')))
);
INSERT INTO transfers_v10 (id, kind, debit, credit, amount, ticket_id, reason, created_at, wallet_total)
    SELECT id, kind, debit, credit, amount, ticket_id, reason, created_at, wallet_total FROM transfers;
DROP TABLE transfers;
ALTER TABLE transfers_v10 RENAME TO transfers;
CREATE UNIQUE INDEX transfers_once_per_ticket ON transfers (ticket_id, kind) WHERE ticket_id IS NOT NULL;
CREATE INDEX transfers_demo_credit ON transfers (credit) WHERE kind = 'demo';
CREATE INDEX transfers_cash_debit ON transfers (debit) WHERE kind IN ('deposit', 'withdrawal');
CREATE INDEX transfers_cash_credit ON transfers (credit) WHERE kind IN ('deposit', 'withdrawal');
CREATE INDEX transfers_deposit_totals ON transfers (credit, created_at) WHERE wallet_total IS NOT NULL;

CREATE TABLE staff (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    role TEXT NOT NULL CHECK (role IN ('admin', 'finance', 'support', 'auditor')),
    password_hash TEXT NOT NULL,
    totp_secret TEXT NOT NULL,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE staff_sessions (
    token_hash TEXT PRIMARY KEY,
    staff_id TEXT NOT NULL REFERENCES staff (id),
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;

-- Every staff action and configuration change, chained: each row's hash covers its fields and the
-- previous row's hash (`vegas audit verify`). `seq` is the previous one's plus one, so two appends
-- racing for the same place cannot both be kept.
CREATE TABLE audit_log (
    seq INTEGER PRIMARY KEY,
    at INTEGER NOT NULL,
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
CREATE TRIGGER audit_log_append_only_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
CREATE TRIGGER audit_log_append_only_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;

CREATE TABLE withdrawals (
    id INTEGER PRIMARY KEY,
    player_id TEXT NOT NULL REFERENCES players (id),
    amount INTEGER NOT NULL CHECK (amount > 0),
    asked_at INTEGER NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'paid', 'refused')),
    decided_at INTEGER,
    decided_by TEXT,
    reason TEXT,
    CHECK ((state = 'pending') = (decided_at IS NULL))
);
CREATE INDEX withdrawals_pending ON withdrawals (asked_at) WHERE state = 'pending';
CREATE INDEX withdrawals_player ON withdrawals (player_id, asked_at);

-- A credit (amount > 0) or debit (< 0) by staff; above the threshold it waits for a second member.
CREATE TABLE adjustments (
    id INTEGER PRIMARY KEY,
    player_id TEXT NOT NULL REFERENCES players (id),
    amount INTEGER NOT NULL CHECK (amount <> 0),
    reason TEXT NOT NULL,
    asked_by TEXT NOT NULL,
    asked_at INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'applied', 'rejected')),
    decided_by TEXT,
    decided_at INTEGER,
    CHECK (decided_by IS NULL OR decided_by <> asked_by)
);
CREATE INDEX adjustments_pending ON adjustments (asked_at) WHERE state = 'pending';

-- A block withdrawn from sale, for good: sales go on from the next block.
CREATE TABLE block_withdrawals (
    emission INTEGER NOT NULL,
    block INTEGER NOT NULL,
    at INTEGER NOT NULL,
    reason TEXT NOT NULL,
    PRIMARY KEY (emission, block),
    FOREIGN KEY (emission, block) REFERENCES blocks (emission, block)
) WITHOUT ROWID;
