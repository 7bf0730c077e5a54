//! The back office's store: staff and their sessions, the audit log, suspensions, withdrawals,
//! adjustments under four eyes, blocks withdrawn from sale. Written once against [`Tx`]; each
//! backend runs it in its own unit of work.
//!
//! Every staff action and configuration change appends one row to `audit_log` in the unit of work
//! that makes the change: the change and its record are one. Each row's hash covers its fields and
//! the previous row's hash ([`entry_hash`]), so that rewriting a row behind the database's back (its
//! triggers refuse UPDATE and DELETE) breaks the chain at that row ([`verify_chain`]).

use super::ledger::{Account, Transfer, TransferKind};
use super::rows::Columns;
use super::tx::{Row, Tx, Value};
use super::{StoreError, cents, sql_amount};
use crate::money::Cents;
use sha2::{Digest, Sha256};

/// What a staff member may do: each route checks it (`server::back_office`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Manages staff and blocks.
    Admin,
    /// Moves money: adjustments, withdrawals, closing an account.
    Finance,
    /// Reads players, suspends and restores them; moves no money.
    Support,
    /// Reads everything, changes nothing.
    Auditor,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Admin, Role::Finance, Role::Support, Role::Auditor];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Finance => "finance",
            Role::Support => "support",
            Role::Auditor => "auditor",
        }
    }

    pub fn parse(text: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == text)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewStaff {
    pub id: String,
    pub name: String,
    pub role: Role,
    pub password_hash: String,
    /// The TOTP secret, base32 (RFC 4648, no padding).
    pub totp_secret: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaffRecord {
    pub id: String,
    pub name: String,
    pub role: Role,
    pub password_hash: String,
    pub totp_secret: String,
    pub created_at: i64,
}

impl StaffRecord {
    /// How the audit log names this member.
    pub fn actor(&self) -> String {
        format!("staff:{}", self.name)
    }
}

const STAFF_COLUMNS: &str = "id, name, role, password_hash, totp_secret, created_at";

fn staff_from(r: &Row) -> Result<StaffRecord, StoreError> {
    let role = r.text(2)?;
    Ok(StaffRecord {
        id: r.text(0)?,
        name: r.text(1)?,
        role: Role::parse(&role).ok_or_else(|| StoreError::Backend(format!("a staff member with role {role:?}")))?,
        password_hash: r.text(3)?,
        totp_secret: r.text(4)?,
        created_at: r.int(5)?,
    })
}

// ---- the audit log -------------------------------------------------------------------------------

/// What an action appends to the audit log: who did what to what, the state before and after (JSON),
/// and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditNote {
    pub actor: String,
    pub action: String,
    pub target: String,
    pub before: Option<serde_json::Value>,
    pub after: Option<serde_json::Value>,
    pub reason: Option<String>,
}

impl AuditNote {
    pub fn new(actor: &str, action: &str, target: impl Into<String>) -> AuditNote {
        AuditNote { actor: actor.to_owned(), action: action.to_owned(), target: target.into(), before: None, after: None, reason: None }
    }

    pub fn change(mut self, before: Option<serde_json::Value>, after: Option<serde_json::Value>) -> AuditNote {
        (self.before, self.after) = (before, after);
        self
    }

    pub fn because(mut self, reason: &str) -> AuditNote {
        self.reason = Some(reason.to_owned());
        self
    }
}

/// A row of the audit log as stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AuditEntry {
    pub seq: i64,
    pub at: i64,
    pub actor: String,
    pub action: String,
    pub target: String,
    pub before: Option<String>,
    pub after: Option<String>,
    pub reason: Option<String>,
    pub prev_hash: String,
    pub hash: String,
}

/// The hash the first row chains to.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// A row's hash: SHA-256 over its fields and the previous row's hash, as a JSON array (one unambiguous
/// encoding of texts that may hold any character), in hex.
pub fn entry_hash(e: &AuditEntry) -> String {
    let fields = serde_json::json!([e.seq, e.at, e.actor, e.action, e.target, e.before, e.after, e.reason, e.prev_hash]);
    crate::block::hex(&Sha256::digest(fields.to_string().as_bytes()))
}

/// Where the chain breaks: the first row that does not follow from the ones before it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("audit log row {seq}: {why}")]
pub struct ChainBreak {
    pub seq: i64,
    pub why: String,
}

/// Walks the log in order from `previous` (the last row checked, or none from the start): numbers
/// follow one another, each row chains to the one before and its hash is its own. The last row
/// checked, to go on from.
pub fn verify_chain(previous: Option<(i64, String)>, entries: &[AuditEntry]) -> Result<Option<(i64, String)>, ChainBreak> {
    let mut last = previous;
    for e in entries {
        let (seq, prev_hash) = last.clone().unwrap_or((0, GENESIS.to_owned()));
        let broken = |why: String| Err(ChainBreak { seq: e.seq, why });
        if e.seq != seq + 1 {
            return broken(format!("follows row {seq}: a row is missing or out of place"));
        }
        if e.prev_hash != prev_hash {
            return broken(format!("chains to {} but row {seq}'s hash is {prev_hash}", e.prev_hash));
        }
        let hash = entry_hash(e);
        if e.hash != hash {
            return broken(format!("its fields hash to {hash}, not to the {} it records: it was changed", e.hash));
        }
        last = Some((e.seq, e.hash.clone()));
    }
    Ok(last)
}

const AUDIT_COLUMNS: &str = "seq, at, actor, action, target, before, after, reason, prev_hash, hash";

fn audit_from(r: &Row) -> Result<AuditEntry, StoreError> {
    Ok(AuditEntry {
        seq: r.int(0)?,
        at: r.int(1)?,
        actor: r.text(2)?,
        action: r.text(3)?,
        target: r.text(4)?,
        before: r.optional_text(5)?,
        after: r.optional_text(6)?,
        reason: r.optional_text(7)?,
        prev_hash: r.text(8)?,
        hash: r.text(9)?,
    })
}

/// Appends `note` after the last row. Two units of work that read the same last row both try its
/// successor's number: the second finds it taken and is run again.
pub async fn append<T: Tx>(tx: &mut T, note: &AuditNote, now: i64) -> Result<AuditEntry, T::Error> {
    let last = tx.query_opt("SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1", &[]).await?;
    let (seq, prev_hash) = match last {
        Some(r) => (r.int(0)? + 1, r.text(1)?),
        None => (1, GENESIS.to_owned()),
    };
    let json = |v: &Option<serde_json::Value>| v.as_ref().map(serde_json::Value::to_string);
    let mut entry = AuditEntry {
        seq,
        at: now,
        actor: note.actor.clone(),
        action: note.action.clone(),
        target: note.target.clone(),
        before: json(&note.before),
        after: json(&note.after),
        reason: note.reason.clone(),
        prev_hash,
        hash: String::new(),
    };
    entry.hash = entry_hash(&entry);
    let e = &entry;
    let params = [
        e.seq.into(),
        e.at.into(),
        e.actor.as_str().into(),
        e.action.as_str().into(),
        e.target.as_str().into(),
        e.before.clone().into(),
        e.after.clone().into(),
        e.reason.clone().into(),
        e.prev_hash.as_str().into(),
        e.hash.as_str().into(),
    ];
    let inserted = tx
        .execute(&format!("INSERT INTO audit_log ({AUDIT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (seq) DO NOTHING"), &params)
        .await?;
    if inserted == 0 {
        return Err(T::conflict(format!("audit log row {seq} was appended meanwhile")));
    }
    Ok(entry)
}

/// Up to `limit` rows after row `after`, in order.
pub async fn audit_log<T: Tx>(tx: &mut T, after: i64, limit: u32) -> Result<Vec<AuditEntry>, T::Error> {
    let rows = tx.query(&format!("SELECT {AUDIT_COLUMNS} FROM audit_log WHERE seq > $1 ORDER BY seq LIMIT $2"), &[after.into(), limit.into()]).await?;
    Ok(rows.iter().map(audit_from).collect::<Result<_, _>>()?)
}

// ---- staff ---------------------------------------------------------------------------------------

pub async fn add_staff<T: Tx>(tx: &mut T, staff: &NewStaff, actor: &str, now: i64) -> Result<StaffRecord, T::Error> {
    let added = tx
        .execute(
            &format!("INSERT INTO staff ({STAFF_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING"),
            &[
                staff.id.as_str().into(),
                staff.name.as_str().into(),
                staff.role.as_str().into(),
                staff.password_hash.as_str().into(),
                staff.totp_secret.as_str().into(),
                now.into(),
            ],
        )
        .await?;
    if added == 0 {
        return Err(StoreError::NameTaken.into());
    }
    let note = AuditNote::new(actor, "staff_added", format!("staff:{}", staff.name)).change(None, Some(serde_json::json!({ "role": staff.role })));
    append(tx, &note, now).await?;
    Ok(StaffRecord {
        id: staff.id.clone(),
        name: staff.name.clone(),
        role: staff.role,
        password_hash: staff.password_hash.clone(),
        totp_secret: staff.totp_secret.clone(),
        created_at: now,
    })
}

pub async fn staff_named<T: Tx>(tx: &mut T, name: &str) -> Result<Option<StaffRecord>, T::Error> {
    let row = tx.query_opt(&format!("SELECT {STAFF_COLUMNS} FROM staff WHERE name = $1"), &[name.into()]).await?;
    Ok(row.as_ref().map(staff_from).transpose()?)
}

/// Every member, by name.
pub async fn staff_list<T: Tx>(tx: &mut T) -> Result<Vec<StaffRecord>, T::Error> {
    let rows = tx.query(&format!("SELECT {STAFF_COLUMNS} FROM staff ORDER BY name"), &[]).await?;
    Ok(rows.iter().map(staff_from).collect::<Result<_, _>>()?)
}

/// Gives a member another role; the same role again changes (and records) nothing.
pub async fn set_role<T: Tx>(tx: &mut T, name: &str, role: Role, actor: &str, reason: &str, now: i64) -> Result<(), T::Error> {
    let before = staff_named(tx, name).await?.ok_or(StoreError::NotFound("staff member"))?;
    let changed =
        tx.execute("UPDATE staff SET role = $2 WHERE name = $1 AND role = $3", &[name.into(), role.as_str().into(), before.role.as_str().into()]).await?;
    if before.role == role {
        return Ok(());
    }
    if changed == 0 {
        return Err(T::conflict(format!("{name}'s role changed meanwhile")));
    }
    let note = AuditNote::new(actor, "staff_role_changed", format!("staff:{name}"))
        .change(Some(serde_json::json!({ "role": before.role })), Some(serde_json::json!({ "role": role })))
        .because(reason);
    append(tx, &note, now).await?;
    Ok(())
}

pub async fn create_staff_session<T: Tx>(tx: &mut T, token_hash: &str, staff_id: &str, now: i64, expires_at: i64) -> Result<(), T::Error> {
    tx.execute(
        "INSERT INTO staff_sessions (token_hash, staff_id, created_at, expires_at) VALUES ($1, $2, $3, $4)",
        &[token_hash.into(), staff_id.into(), now.into(), expires_at.into()],
    )
    .await?;
    Ok(())
}

/// The member an unexpired session belongs to.
pub async fn staff_session<T: Tx>(tx: &mut T, token_hash: &str, now: i64) -> Result<Option<StaffRecord>, T::Error> {
    let columns = STAFF_COLUMNS.split(", ").map(|c| format!("s.{c}")).collect::<Vec<_>>().join(", ");
    let row = tx
        .query_opt(
            &format!("SELECT {columns} FROM staff_sessions x JOIN staff s ON s.id = x.staff_id WHERE x.token_hash = $1 AND x.expires_at > $2"),
            &[token_hash.into(), now.into()],
        )
        .await?;
    Ok(row.as_ref().map(staff_from).transpose()?)
}

pub async fn delete_staff_session<T: Tx>(tx: &mut T, token_hash: &str) -> Result<(), T::Error> {
    tx.execute("DELETE FROM staff_sessions WHERE token_hash = $1", &[token_hash.into()]).await?;
    Ok(())
}

// ---- players -------------------------------------------------------------------------------------

fn player_target(player: &str) -> String {
    format!("player:{player}")
}

/// Suspends (`true`) or restores a player's account: a suspended wallet's guard refuses every stake
/// and deposit. Asking for the state it is already in is [`StoreError::AlreadyDone`].
pub async fn suspend<T: Tx>(tx: &mut T, player: &str, suspended: bool, actor: &str, reason: &str, now: i64) -> Result<(), T::Error> {
    let wallet = Account::Wallet(player).id();
    let (table, key) = T::WALLET.split_once(" WHERE ").expect("a guard row names its table and its key");
    let changed = if suspended {
        tx.execute(&format!("UPDATE {table} SET suspended_at = $2 WHERE {key} AND suspended_at IS NULL"), &[wallet.into(), now.into()]).await?
    } else {
        tx.execute(&format!("UPDATE {table} SET suspended_at = NULL WHERE {key} AND suspended_at IS NOT NULL"), &[wallet.into()]).await?
    };
    if changed == 0 {
        let exists = tx.query_opt("SELECT 1 FROM players WHERE id = $1", &[player.into()]).await?.is_some();
        return Err(if exists { StoreError::AlreadyDone(if suspended { "suspended" } else { "not suspended" }) } else { StoreError::NotFound("player") }.into());
    }
    let action = if suspended { "player_suspended" } else { "player_restored" };
    let state = |s: bool| Some(serde_json::json!({ "suspended": s }));
    append(tx, &AuditNote::new(actor, action, player_target(player)).change(state(!suspended), state(suspended)).because(reason), now).await?;
    Ok(())
}

/// Closes an open account for good: its whole balance paid out to `cash` (a withdrawal, `why`), closed
/// forever (sessions ended, nothing staked or deposited again), and `event` in the player's record.
/// What it paid out. Shared by the ban file's import and staff.
pub async fn close_account<T: Tx>(tx: &mut T, player: &str, why: &str, event: &str, now: i64) -> Result<Cents, T::Error> {
    if tx.execute("UPDATE players SET closed_at = $2 WHERE id = $1 AND closed_at IS NULL", &[player.into(), now.into()]).await? == 0 {
        let exists = tx.query_opt("SELECT 1 FROM players WHERE id = $1", &[player.into()]).await?.is_some();
        return Err(if exists { StoreError::AlreadyDone("closed") } else { StoreError::NotFound("player") }.into());
    }
    let paid = balance_of(tx, player).await?;
    if !paid.is_zero() {
        tx.transfer(&Transfer::withdrawal(player, paid, why), now)
            .await?
            .ok_or_else(|| StoreError::Backend("a wallet could not pay out its own balance".into()))?;
    }
    let closed = super::responsible::Pause { kind: super::responsible::PauseKind::Closed, until: super::responsible::FOREVER };
    tx.pause(player, closed, super::responsible::Actor::Operator, now).await?;
    let detail = serde_json::json!({ "paid_out_cents": paid.0 }).to_string();
    tx.execute(super::responsible::RECORD, &[player.into(), now.into(), super::responsible::Actor::Operator.as_str().into(), event.into(), detail.into()])
        .await?;
    Ok(paid)
}

/// Staff close an account (its balance paid out), with why, recorded in the audit log.
pub async fn close_by_staff<T: Tx>(tx: &mut T, player: &str, actor: &str, reason: &str, now: i64) -> Result<Cents, T::Error> {
    let paid = close_account(tx, player, &format!("closed by the operator: {reason}"), "closed_by_operator", now).await?;
    let after = serde_json::json!({ "closed": true, "paid_out_cents": paid.0 });
    append(
        tx,
        &AuditNote::new(actor, "account_closed", player_target(player)).change(Some(serde_json::json!({ "closed": false })), Some(after)).because(reason),
        now,
    )
    .await?;
    Ok(paid)
}

// ---- withdrawals ---------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WithdrawalState {
    Pending,
    Paid,
    Refused,
}

impl WithdrawalState {
    pub fn as_str(self) -> &'static str {
        match self {
            WithdrawalState::Pending => "pending",
            WithdrawalState::Paid => "paid",
            WithdrawalState::Refused => "refused",
        }
    }

    fn parse(text: &str) -> Result<WithdrawalState, StoreError> {
        [WithdrawalState::Pending, WithdrawalState::Paid, WithdrawalState::Refused]
            .into_iter()
            .find(|s| s.as_str() == text)
            .ok_or_else(|| StoreError::Backend(format!("a withdrawal in state {text:?}")))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Withdrawal {
    pub id: i64,
    pub player_id: String,
    pub amount: Cents,
    pub asked_at: i64,
    pub state: WithdrawalState,
    pub decided_at: Option<i64>,
    pub decided_by: Option<String>,
    pub reason: Option<String>,
}

const WITHDRAWAL_COLUMNS: &str = "id, player_id, amount, asked_at, state, decided_at, decided_by, reason";

fn withdrawal_from(r: &Row) -> Result<Withdrawal, StoreError> {
    Ok(Withdrawal {
        id: r.int(0)?,
        player_id: r.text(1)?,
        amount: cents(r.int(2)?)?,
        asked_at: r.int(3)?,
        state: WithdrawalState::parse(&r.text(4)?)?,
        decided_at: r.optional_int(5)?,
        decided_by: r.optional_text(6)?,
        reason: r.optional_text(7)?,
    })
}

async fn balance_of<T: Tx>(tx: &mut T, player: &str) -> Result<Cents, T::Error> {
    let (table, key) = T::WALLET.split_once(" WHERE ").expect("a guard row names its table and its key");
    let row = tx.query_opt(&format!("SELECT balance FROM {table} WHERE {key}"), &[Account::Wallet(player).id().into()]).await?;
    Ok(cents(row.ok_or(StoreError::NotFound("player"))?.int(0)?)?)
}

/// The player asks to withdraw `amount`: it leaves the wallet at once for `withdrawals`, where it
/// cannot be staked, until finance pays it or refuses it.
pub async fn ask_withdrawal<T: Tx>(tx: &mut T, player: &str, amount: Cents, now: i64) -> Result<Withdrawal, T::Error> {
    if amount.is_zero() {
        return Err(StoreError::Invalid("a withdrawal of 0 €".into()).into());
    }
    let moved = tx
        .transfer(&Transfer::between(TransferKind::Withdrawal, Account::Wallet(player), Account::Withdrawals, amount, "retrait demandé par le joueur"), now)
        .await?;
    if moved.is_none() {
        return Err(StoreError::Overdraft { balance: balance_of(tx, player).await?, amount }.into());
    }
    let row = tx
        .query_opt(
            &format!("INSERT INTO withdrawals (player_id, amount, asked_at) VALUES ($1, $2, $3) RETURNING {WITHDRAWAL_COLUMNS}"),
            &[player.into(), sql_amount(amount)?.into(), now.into()],
        )
        .await?
        .ok_or_else(|| StoreError::Backend("a withdrawal inserted returned no row".into()))?;
    Ok(withdrawal_from(&row)?)
}

/// Finance pays a pending withdrawal (`withdrawals` → `cash`) or refuses it (back to the wallet).
pub async fn decide_withdrawal<T: Tx>(tx: &mut T, id: i64, pay: bool, actor: &str, reason: &str, now: i64) -> Result<Withdrawal, T::Error> {
    let state = if pay { WithdrawalState::Paid } else { WithdrawalState::Refused };
    let row = tx
        .query_opt(
            &format!(
                "UPDATE withdrawals SET state = $2, decided_at = $3, decided_by = $4, reason = $5 WHERE id = $1 AND state = 'pending' RETURNING {WITHDRAWAL_COLUMNS}"
            ),
            &[id.into(), state.as_str().into(), now.into(), actor.into(), reason.into()],
        )
        .await?;
    let Some(row) = row else {
        let found = tx.query_opt("SELECT state FROM withdrawals WHERE id = $1", &[id.into()]).await?;
        return Err(match found {
            Some(_) => StoreError::AlreadyDone("decided"),
            None => StoreError::NotFound("withdrawal"),
        }
        .into());
    };
    let w = withdrawal_from(&row)?;
    let (kind, to) = if pay { (TransferKind::WithdrawalPaid, Account::Cash) } else { (TransferKind::WithdrawalRefused, Account::Wallet(&w.player_id)) };
    tx.transfer(&Transfer::between(kind, Account::Withdrawals, to, w.amount, reason), now)
        .await?
        .ok_or_else(|| StoreError::Backend("the withdrawals account could not pay".into()))?;
    let action = if pay { "withdrawal_paid" } else { "withdrawal_refused" };
    let note = AuditNote::new(actor, action, format!("withdrawal:{id}"))
        .change(Some(serde_json::json!({ "state": "pending", "player": w.player_id, "amount_cents": w.amount.0 })), Some(serde_json::json!({ "state": state })))
        .because(reason);
    append(tx, &note, now).await?;
    Ok(w)
}

/// Withdrawals in `state` (all, if none), oldest first, of one player if named.
pub async fn withdrawals<T: Tx>(tx: &mut T, state: Option<WithdrawalState>, player: Option<&str>, limit: u32) -> Result<Vec<Withdrawal>, T::Error> {
    let rows = tx
        .query(
            &format!(
                "SELECT {WITHDRAWAL_COLUMNS} FROM withdrawals WHERE (CAST($1 AS TEXT) IS NULL OR state = $1) AND (CAST($2 AS TEXT) IS NULL OR player_id = $2) ORDER BY asked_at, id LIMIT $3"
            ),
            &[state.map(WithdrawalState::as_str).into(), player.into(), limit.into()],
        )
        .await?;
    Ok(rows.iter().map(withdrawal_from).collect::<Result<_, _>>()?)
}

/// The operator pays real money into a wallet (`vegas wallet credit`: a deposit it received), through
/// the wallet's guard, and records it; the new balance.
pub async fn operator_credit<T: Tx>(tx: &mut T, player: &str, credit: &super::Credit, actor: &str, now: i64) -> Result<Cents, T::Error> {
    let balance = tx.deposit(player, credit, now).await?;
    let after = serde_json::json!({ "amount_cents": credit.amount.0, "balance_cents": balance.0 });
    append(tx, &AuditNote::new(actor, "wallet_credited", player_target(player)).change(None, Some(after)).because(&credit.reason), now).await?;
    Ok(balance)
}

/// The operator pays real money out of a wallet (`vegas wallet debit`), never below zero, and records
/// it; the new balance.
pub async fn operator_debit<T: Tx>(tx: &mut T, player: &str, amount: Cents, reason: &str, actor: &str, now: i64) -> Result<Cents, T::Error> {
    let Some(left) = tx.transfer(&Transfer::withdrawal(player, amount, reason), now).await? else {
        return Err(StoreError::Overdraft { balance: balance_of(tx, player).await?, amount }.into());
    };
    let balance = cents(left)?;
    let after = serde_json::json!({ "amount_cents": amount.0, "balance_cents": balance.0 });
    append(tx, &AuditNote::new(actor, "wallet_debited", player_target(player)).change(None, Some(after)).because(reason), now).await?;
    Ok(balance)
}

// ---- adjustments ---------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AdjustmentState {
    Pending,
    Applied,
    Rejected,
}

impl AdjustmentState {
    pub fn as_str(self) -> &'static str {
        match self {
            AdjustmentState::Pending => "pending",
            AdjustmentState::Applied => "applied",
            AdjustmentState::Rejected => "rejected",
        }
    }

    fn parse(text: &str) -> Result<AdjustmentState, StoreError> {
        [AdjustmentState::Pending, AdjustmentState::Applied, AdjustmentState::Rejected]
            .into_iter()
            .find(|s| s.as_str() == text)
            .ok_or_else(|| StoreError::Backend(format!("an adjustment in state {text:?}")))
    }
}

/// A credit (`amount_cents` > 0) or debit (< 0) of a wallet by staff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Adjustment {
    pub id: i64,
    pub player_id: String,
    pub amount_cents: i64,
    pub reason: String,
    pub asked_by: String,
    pub asked_at: i64,
    pub state: AdjustmentState,
    pub decided_by: Option<String>,
    pub decided_at: Option<i64>,
}

const ADJUSTMENT_COLUMNS: &str = "id, player_id, amount, reason, asked_by, asked_at, state, decided_by, decided_at";

fn adjustment_from(r: &Row) -> Result<Adjustment, StoreError> {
    Ok(Adjustment {
        id: r.int(0)?,
        player_id: r.text(1)?,
        amount_cents: r.int(2)?,
        reason: r.text(3)?,
        asked_by: r.text(4)?,
        asked_at: r.int(5)?,
        state: AdjustmentState::parse(&r.text(6)?)?,
        decided_by: r.optional_text(7)?,
        decided_at: r.optional_int(8)?,
    })
}

/// Moves an adjustment's money: `cash` → wallet for a credit, wallet → `cash` for a debit (never below
/// zero).
async fn apply<T: Tx>(tx: &mut T, a: &Adjustment, now: i64) -> Result<(), T::Error> {
    let amount = Cents(a.amount_cents.unsigned_abs());
    let wallet = Account::Wallet(&a.player_id);
    let (debit, credit) = if a.amount_cents > 0 { (Account::Cash, wallet) } else { (wallet, Account::Cash) };
    if tx.transfer(&Transfer::between(TransferKind::Adjustment, debit, credit, amount, &a.reason), now).await?.is_none() {
        return Err(StoreError::Overdraft { balance: balance_of(tx, &a.player_id).await?, amount }.into());
    }
    Ok(())
}

fn adjustment_note(a: &Adjustment, actor: &str, action: &str) -> AuditNote {
    AuditNote::new(actor, action, player_target(&a.player_id))
        .change(None, Some(serde_json::json!({ "adjustment": a.id, "amount_cents": a.amount_cents, "state": a.state, "asked_by": a.asked_by })))
        .because(&a.reason)
}

/// A staff credit (`amount_cents` > 0) or debit (< 0) of a real-money wallet: applied at once up to
/// `threshold`, beyond it kept pending until another member approves it (four eyes).
pub async fn adjust<T: Tx>(tx: &mut T, player: &str, amount_cents: i64, reason: &str, actor: &str, threshold: Cents, now: i64) -> Result<Adjustment, T::Error> {
    if amount_cents == 0 {
        return Err(StoreError::Invalid("an adjustment of 0 €".into()).into());
    }
    let guest = tx.query_opt("SELECT guest FROM players WHERE id = $1", &[player.into()]).await?.ok_or(StoreError::NotFound("player"))?;
    if guest.int(0)? != 0 {
        return Err(StoreError::Invalid("a guest plays demo money only: no real money can be adjusted".into()).into());
    }
    let pending = amount_cents.unsigned_abs() > threshold.0;
    let state = if pending { AdjustmentState::Pending } else { AdjustmentState::Applied };
    let decided = if pending { Value::Null } else { Value::Int(now) };
    let row = tx
        .query_opt(
            &format!(
                "INSERT INTO adjustments (player_id, amount, reason, asked_by, asked_at, state, decided_at) VALUES ($1, $2, $3, $4, $5, $6, $7) \
                 RETURNING {ADJUSTMENT_COLUMNS}"
            ),
            &[player.into(), amount_cents.into(), reason.into(), actor.into(), now.into(), state.as_str().into(), decided],
        )
        .await?
        .ok_or_else(|| StoreError::Backend("an adjustment inserted returned no row".into()))?;
    let a = adjustment_from(&row)?;
    if !pending {
        apply(tx, &a, now).await?;
    }
    append(tx, &adjustment_note(&a, actor, if pending { "adjustment_asked" } else { "adjustment_applied" }), now).await?;
    Ok(a)
}

/// Another member approves (and so applies) or rejects a pending adjustment. Whoever asked for it
/// cannot decide it: [`StoreError::FourEyes`].
pub async fn decide_adjustment<T: Tx>(tx: &mut T, id: i64, approve: bool, actor: &str, now: i64) -> Result<Adjustment, T::Error> {
    let state = if approve { AdjustmentState::Applied } else { AdjustmentState::Rejected };
    let row = tx
        .query_opt(
            &format!(
                "UPDATE adjustments SET state = $2, decided_by = $3, decided_at = $4 WHERE id = $1 AND state = 'pending' AND asked_by <> $3 \
                 RETURNING {ADJUSTMENT_COLUMNS}"
            ),
            &[id.into(), state.as_str().into(), actor.into(), now.into()],
        )
        .await?;
    let Some(row) = row else {
        let found = tx.query_opt("SELECT state, asked_by FROM adjustments WHERE id = $1", &[id.into()]).await?;
        return Err(match found {
            None => StoreError::NotFound("adjustment"),
            Some(r) if r.text(0)? != "pending" => StoreError::AlreadyDone("decided"),
            Some(_) => StoreError::FourEyes,
        }
        .into());
    };
    let a = adjustment_from(&row)?;
    if approve {
        apply(tx, &a, now).await?;
    }
    append(tx, &adjustment_note(&a, actor, if approve { "adjustment_approved" } else { "adjustment_rejected" }), now).await?;
    Ok(a)
}

/// Adjustments in `state` (all, if none), newest first, of one player if named.
pub async fn adjustments<T: Tx>(tx: &mut T, state: Option<AdjustmentState>, player: Option<&str>, limit: u32) -> Result<Vec<Adjustment>, T::Error> {
    let rows = tx
        .query(
            &format!(
                "SELECT {ADJUSTMENT_COLUMNS} FROM adjustments WHERE (CAST($1 AS TEXT) IS NULL OR state = $1) AND (CAST($2 AS TEXT) IS NULL OR player_id = $2) ORDER BY asked_at DESC, id DESC LIMIT $3"
            ),
            &[state.map(AdjustmentState::as_str).into(), player.into(), limit.into()],
        )
        .await?;
    Ok(rows.iter().map(adjustment_from).collect::<Result<_, _>>()?)
}

// ---- blocks --------------------------------------------------------------------------------------

/// Withdraws a block from sale for good: no ticket of it is sold again, and sales go on from the next.
pub async fn withdraw_block<T: Tx>(tx: &mut T, emission: u32, block: u32, actor: &str, reason: &str, now: i64) -> Result<(), T::Error> {
    let exists = tx.query_opt("SELECT 1 FROM blocks WHERE emission = $1 AND block = $2", &[emission.into(), block.into()]).await?.is_some();
    if !exists {
        return Err(StoreError::NotFound("block").into());
    }
    let added = tx
        .execute(
            "INSERT INTO block_withdrawals (emission, block, at, reason) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
            &[emission.into(), block.into(), now.into(), reason.into()],
        )
        .await?;
    if added == 0 {
        return Err(StoreError::AlreadyDone("withdrawn from sale").into());
    }
    let note = AuditNote::new(actor, "block_withdrawn", format!("block:E{emission}-B{block}"))
        .change(Some(serde_json::json!({ "on_sale": true })), Some(serde_json::json!({ "on_sale": false })))
        .because(reason);
    append(tx, &note, now).await?;
    Ok(())
}

// ---- what staff read -----------------------------------------------------------------------------

/// A player as the back office lists one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlayerSummary {
    pub id: String,
    pub name: Option<String>,
    pub guest: bool,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub balance: Cents,
    pub suspended_at: Option<i64>,
    pub paused_until: i64,
    pub closed_at: Option<i64>,
    pub created_at: i64,
}

fn player_summary_from(r: &Row) -> Result<PlayerSummary, StoreError> {
    Ok(PlayerSummary {
        id: r.text(0)?,
        name: r.optional_text(1)?,
        guest: r.int(2)? != 0,
        first_name: r.optional_text(3)?,
        last_name: r.optional_text(4)?,
        balance: cents(r.int(5)?)?,
        suspended_at: r.optional_int(6)?,
        paused_until: r.int(7)?,
        closed_at: r.optional_int(8)?,
        created_at: r.int(9)?,
    })
}

/// Players whose id is `query`, whose name starts with it (as names are compared: `names::key_of`),
/// or whose last name is it; accounts before guests, newest first.
pub async fn find_players<T: Tx>(tx: &mut T, query: &str, name_key: &str, limit: u32) -> Result<Vec<PlayerSummary>, T::Error> {
    let sql = format!(
        "SELECT p.id, p.name, p.guest, p.first_name, p.last_name, a.balance, a.suspended_at, a.paused_until, p.closed_at, p.created_at \
         FROM players p JOIN {} WHERE p.id = $1 OR (p.name_key IS NOT NULL AND substr(p.name_key, 1, length($2)) = $2 AND $2 <> '') \
            OR lower(p.last_name) = lower($1) ORDER BY p.guest, p.created_at DESC LIMIT $3",
        T::WALLET_OF_PLAYER
    );
    let rows = tx.query(&sql, &[query.into(), name_key.into(), limit.into()]).await?;
    Ok(rows.iter().map(player_summary_from).collect::<Result<_, _>>()?)
}

/// A move of money as a wallet's statement shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatementLine {
    pub id: i64,
    pub at: i64,
    pub kind: String,
    /// Into the wallet (> 0) or out of it (< 0).
    pub amount_cents: i64,
    pub ticket: Option<String>,
    pub reason: Option<String>,
}

/// The last `limit` moves in or out of a player's wallet, newest first.
pub async fn statement<T: Tx>(tx: &mut T, player: &str, limit: u32) -> Result<Vec<StatementLine>, T::Error> {
    let rows = tx
        .query(
            "SELECT id, created_at, kind, CASE WHEN credit = $1 THEN amount ELSE -amount END, ticket_id, reason FROM transfers \
             WHERE credit = $1 OR debit = $1 ORDER BY id DESC LIMIT $2",
            &[Account::Wallet(player).id().into(), limit.into()],
        )
        .await?;
    let line = |r: &Row| -> Result<StatementLine, StoreError> {
        Ok(StatementLine { id: r.int(0)?, at: r.int(1)?, kind: r.text(2)?, amount_cents: r.int(3)?, ticket: r.optional_text(4)?, reason: r.optional_text(5)? })
    };
    Ok(rows.iter().map(line).collect::<Result<_, _>>()?)
}

/// A player's session as staff see it: when it began and ends (its token never leaves the store).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionSummary {
    pub started_at: i64,
    pub expires_at: i64,
}

/// The player's sessions still open at `now`, newest first.
pub async fn sessions<T: Tx>(tx: &mut T, player: &str, now: i64) -> Result<Vec<SessionSummary>, T::Error> {
    let rows = tx
        .query("SELECT started_at, expires_at FROM sessions WHERE player_id = $1 AND expires_at > $2 ORDER BY started_at DESC", &[player.into(), now.into()])
        .await?;
    Ok(rows.iter().map(|r| Ok::<_, StoreError>(SessionSummary { started_at: r.int(0)?, expires_at: r.int(1)? })).collect::<Result<_, _>>()?)
}

/// How many of a block's sold tickets carry a lot, and how many of them are credited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TierCount {
    pub emission: u32,
    pub block: u32,
    pub lot: Cents,
    pub sold: u64,
    pub credited: u64,
}

/// Every block's sold tickets counted by lot.
pub async fn tier_counts<T: Tx>(tx: &mut T) -> Result<Vec<TierCount>, T::Error> {
    let rows = tx
        .query(
            "SELECT emission, block, lot_cents, COUNT(*), CAST(SUM(CASE WHEN credited_at IS NULL THEN 0 ELSE 1 END) AS BIGINT) FROM tickets \
             GROUP BY emission, block, lot_cents ORDER BY emission, block, lot_cents",
            &[],
        )
        .await?;
    let count = |r: &Row| -> Result<TierCount, StoreError> {
        let n = |i| u64::try_from(r.int(i)?).map_err(|_| StoreError::Backend("a negative count".into()));
        Ok(TierCount { emission: r.unsigned(0)?, block: r.unsigned(1)?, lot: cents(r.int(2)?)?, sold: n(3)?, credited: n(4)? })
    };
    Ok(rows.iter().map(count).collect::<Result<_, _>>()?)
}

// ---- the daily summary of the players' accounts ---------------------------------------------------

/// One wallet's day: opening + deposits + demo − stakes + wins − withdrawals ± adjustments = closing.
/// `closing` is read apart from the movements (the stored balance, less what moved after the day), so
/// that `balanced` checks the one against the other.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct DaySummary {
    pub player_id: String,
    pub name: Option<String>,
    pub guest: bool,
    pub opening: i64,
    pub deposits: i64,
    pub demo: i64,
    pub stakes: i64,
    pub wins: i64,
    /// Asked or paid out, less what came back refused.
    pub withdrawals: i64,
    /// Staff credits less staff debits.
    pub adjustments: i64,
    pub closing: i64,
    pub balanced: bool,
}

/// Every wallet's movements by kind, split at `$1` and `$2`: before, during, after.
const WALLET_MOVES: &str = "SELECT w, kind, \
       CAST(COALESCE(SUM(CASE WHEN created_at < $1 THEN signed END), 0) AS BIGINT), \
       CAST(COALESCE(SUM(CASE WHEN created_at >= $1 AND created_at < $2 THEN signed END), 0) AS BIGINT), \
       CAST(COALESCE(SUM(CASE WHEN created_at >= $2 THEN signed END), 0) AS BIGINT) \
     FROM (SELECT credit AS w, kind, amount AS signed, created_at FROM transfers WHERE credit LIKE 'wallet:%' \
           UNION ALL SELECT debit AS w, kind, -amount AS signed, created_at FROM transfers WHERE debit LIKE 'wallet:%') m \
     GROUP BY w, kind ORDER BY w, kind";

/// The summary of every wallet that held money or moved between `start` and `end`.
pub async fn day_summary<T: Tx>(tx: &mut T, start: i64, end: i64) -> Result<Vec<DaySummary>, T::Error> {
    let moves = tx.query(WALLET_MOVES, &[start.into(), end.into()]).await?;
    let wallets = tx.query(&format!("SELECT p.id, p.name, p.guest, a.balance FROM players p JOIN {} ORDER BY p.id", T::WALLET_OF_PLAYER), &[]).await?;
    let mut days = Vec::new();
    for w in &wallets {
        let id = w.text(0)?;
        let account = Account::Wallet(&id).id();
        let mut day = DaySummary { player_id: id.clone(), name: w.optional_text(1)?, guest: w.int(2)? != 0, ..DaySummary::default() };
        let mut after = 0;
        let mut moved = false;
        for m in moves.iter().filter(|m| m.text(0).is_ok_and(|a| a == account)) {
            let (kind, before, during) = (m.text(1)?, m.int(2)?, m.int(3)?);
            after += m.int(4)?;
            day.opening += before;
            moved |= during != 0;
            match kind.as_str() {
                "deposit" => day.deposits += during,
                "demo" => day.demo += during,
                "stake" => day.stakes -= during,
                "win" => day.wins += during,
                "withdrawal" | "withdrawal_refused" => day.withdrawals -= during,
                "adjustment" => day.adjustments += during,
                other => return Err(StoreError::Backend(format!("a wallet moved by a {other:?} transfer")).into()),
            }
        }
        day.closing = w.int(3)? - after;
        day.balanced = day.opening + day.deposits + day.demo - day.stakes + day.wins - day.withdrawals + day.adjustments == day.closing;
        if moved || day.opening != 0 || day.closing != 0 {
            days.push(day);
        }
    }
    Ok(days)
}

/// What the players' wallets hold: accounts' and guests' (demo money).
pub async fn balance_totals<T: Tx>(tx: &mut T) -> Result<(i64, i64), T::Error> {
    let sql = format!("SELECT p.guest, CAST(COALESCE(SUM(a.balance), 0) AS BIGINT) FROM players p JOIN {} GROUP BY p.guest", T::WALLET_OF_PLAYER);
    let mut totals = (0, 0);
    for r in tx.query(&sql, &[]).await? {
        if r.int(0)? == 0 { totals.0 += r.int(1)? } else { totals.1 += r.int(1)? }
    }
    Ok(totals)
}

// ---- secrets the instances share ----------------------------------------------------------------

/// The secret named `name`: the one stored, or else `fresh` (hex), stored now. Instances starting
/// together agree on the first one written.
pub async fn server_secret<T: Tx>(tx: &mut T, name: &str, fresh: &str, now: i64) -> Result<String, T::Error> {
    tx.execute("INSERT INTO server_secrets (name, secret, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING", &[name.into(), fresh.into(), now.into()])
        .await?;
    let row = tx.query_opt("SELECT secret FROM server_secrets WHERE name = $1", &[name.into()]).await?;
    Ok(row.ok_or_else(|| StoreError::Backend(format!("the secret {name} is not there")))?.text(0)?)
}

// ---- one entry point for the backends --------------------------------------------------------

/// A back-office unit of work: each backend runs [`run`] in one of its own ([`super::Store::back_office`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    AddStaff { staff: NewStaff, actor: String },
    SetRole { name: String, role: Role, actor: String, reason: String },
    StaffNamed(String),
    StaffList,
    DaySummary { start: i64, end: i64 },
    BalanceTotals,
    Sessions(String),
    ServerSecret { name: String, fresh: String },
    CreateStaffSession { token_hash: String, staff_id: String, expires_at: i64 },
    StaffSession(String),
    DeleteStaffSession(String),
    Record(AuditNote),
    AuditLog { after: i64, limit: u32 },
    Suspend { player: String, suspended: bool, actor: String, reason: String },
    AskWithdrawal { player: String, amount: Cents },
    DecideWithdrawal { id: i64, pay: bool, actor: String, reason: String },
    Withdrawals { state: Option<WithdrawalState>, player: Option<String>, limit: u32 },
    Adjust { player: String, amount_cents: i64, reason: String, actor: String, threshold: Cents },
    DecideAdjustment { id: i64, approve: bool, actor: String },
    Adjustments { state: Option<AdjustmentState>, player: Option<String>, limit: u32 },
    WithdrawBlock { emission: u32, block: u32, actor: String, reason: String },
    FindPlayers { query: String, name_key: String, limit: u32 },
    OperatorCredit { player: String, credit: super::Credit, actor: String },
    CloseAccount { player: String, actor: String, reason: String },
    OperatorDebit { player: String, amount: Cents, reason: String, actor: String },
    Statement { player: String, limit: u32 },
    TierCounts,
}

impl Op {
    /// Whether it only reads (a backend may run it apart from its writes).
    pub fn reads_only(&self) -> bool {
        matches!(
            self,
            Op::StaffNamed(_)
                | Op::StaffList
                | Op::DaySummary { .. }
                | Op::BalanceTotals
                | Op::Sessions(_)
                | Op::StaffSession(_)
                | Op::AuditLog { .. }
                | Op::Withdrawals { .. }
                | Op::Adjustments { .. }
                | Op::FindPlayers { .. }
                | Op::Statement { .. }
                | Op::TierCounts
        )
    }
}

/// What an [`Op`] gives back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Done {
    Nothing,
    Staff(Option<StaffRecord>),
    StaffList(Vec<StaffRecord>),
    Days(Vec<DaySummary>),
    Totals(i64, i64),
    Sessions(Vec<SessionSummary>),
    Secret(String),
    Entry(AuditEntry),
    Entries(Vec<AuditEntry>),
    Withdrawal(Withdrawal),
    Withdrawals(Vec<Withdrawal>),
    Adjustment(Adjustment),
    Adjustments(Vec<Adjustment>),
    Players(Vec<PlayerSummary>),
    Statement(Vec<StatementLine>),
    Tiers(Vec<TierCount>),
    Balance(Cents),
}

pub async fn run<T: Tx>(tx: &mut T, op: &Op, now: i64) -> Result<Done, T::Error> {
    Ok(match op {
        Op::AddStaff { staff, actor } => Done::Staff(Some(add_staff(tx, staff, actor, now).await?)),
        Op::SetRole { name, role, actor, reason } => set_role(tx, name, *role, actor, reason, now).await.map(|()| Done::Nothing)?,
        Op::StaffNamed(name) => Done::Staff(staff_named(tx, name).await?),
        Op::StaffList => Done::StaffList(staff_list(tx).await?),
        Op::DaySummary { start, end } => Done::Days(day_summary(tx, *start, *end).await?),
        Op::Sessions(player) => Done::Sessions(sessions(tx, player, now).await?),
        Op::ServerSecret { name, fresh } => Done::Secret(server_secret(tx, name, fresh, now).await?),
        Op::BalanceTotals => balance_totals(tx).await.map(|(accounts, guests)| Done::Totals(accounts, guests))?,
        Op::CreateStaffSession { token_hash, staff_id, expires_at } => {
            create_staff_session(tx, token_hash, staff_id, now, *expires_at).await.map(|()| Done::Nothing)?
        }
        Op::StaffSession(token_hash) => Done::Staff(staff_session(tx, token_hash, now).await?),
        Op::DeleteStaffSession(token_hash) => delete_staff_session(tx, token_hash).await.map(|()| Done::Nothing)?,
        Op::Record(note) => Done::Entry(append(tx, note, now).await?),
        Op::AuditLog { after, limit } => Done::Entries(audit_log(tx, *after, *limit).await?),
        Op::Suspend { player, suspended, actor, reason } => suspend(tx, player, *suspended, actor, reason, now).await.map(|()| Done::Nothing)?,
        Op::AskWithdrawal { player, amount } => Done::Withdrawal(ask_withdrawal(tx, player, *amount, now).await?),
        Op::DecideWithdrawal { id, pay, actor, reason } => Done::Withdrawal(decide_withdrawal(tx, *id, *pay, actor, reason, now).await?),
        Op::Withdrawals { state, player, limit } => Done::Withdrawals(withdrawals(tx, *state, player.as_deref(), *limit).await?),
        Op::Adjust { player, amount_cents, reason, actor, threshold } => {
            Done::Adjustment(adjust(tx, player, *amount_cents, reason, actor, *threshold, now).await?)
        }
        Op::DecideAdjustment { id, approve, actor } => Done::Adjustment(decide_adjustment(tx, *id, *approve, actor, now).await?),
        Op::Adjustments { state, player, limit } => Done::Adjustments(adjustments(tx, *state, player.as_deref(), *limit).await?),
        Op::WithdrawBlock { emission, block, actor, reason } => withdraw_block(tx, *emission, *block, actor, reason, now).await.map(|()| Done::Nothing)?,
        Op::FindPlayers { query, name_key, limit } => Done::Players(find_players(tx, query, name_key, *limit).await?),
        Op::Statement { player, limit } => Done::Statement(statement(tx, player, *limit).await?),
        Op::TierCounts => Done::Tiers(tier_counts(tx).await?),
        Op::CloseAccount { player, actor, reason } => Done::Balance(close_by_staff(tx, player, actor, reason, now).await?),
        Op::OperatorCredit { player, credit, actor } => Done::Balance(operator_credit(tx, player, credit, actor, now).await?),
        Op::OperatorDebit { player, amount, reason, actor } => Done::Balance(operator_debit(tx, player, *amount, reason, actor, now).await?),
    })
}

/// The back office's operations, typed, over any store.
pub struct BackOffice<'s>(pub &'s dyn super::Store);

fn unexpected(done: Done) -> StoreError {
    StoreError::Backend(format!("a back-office operation gave {done:?}"))
}

impl BackOffice<'_> {
    async fn run(&self, op: Op, now: i64) -> Result<Done, StoreError> {
        self.0.back_office(op, now).await
    }

    async fn nothing(&self, op: Op, now: i64) -> Result<(), StoreError> {
        match self.run(op, now).await? {
            Done::Nothing => Ok(()),
            other => Err(unexpected(other)),
        }
    }

    async fn staff(&self, op: Op, now: i64) -> Result<Option<StaffRecord>, StoreError> {
        match self.run(op, now).await? {
            Done::Staff(staff) => Ok(staff),
            other => Err(unexpected(other)),
        }
    }

    async fn withdrawal(&self, op: Op, now: i64) -> Result<Withdrawal, StoreError> {
        match self.run(op, now).await? {
            Done::Withdrawal(w) => Ok(w),
            other => Err(unexpected(other)),
        }
    }

    async fn adjustment(&self, op: Op, now: i64) -> Result<Adjustment, StoreError> {
        match self.run(op, now).await? {
            Done::Adjustment(a) => Ok(a),
            other => Err(unexpected(other)),
        }
    }

    pub async fn add_staff(&self, staff: NewStaff, actor: &str, now: i64) -> Result<StaffRecord, StoreError> {
        self.staff(Op::AddStaff { staff, actor: actor.into() }, now).await?.ok_or_else(|| StoreError::Backend("a member added is not there".into()))
    }

    pub async fn set_role(&self, name: &str, role: Role, actor: &str, reason: &str, now: i64) -> Result<(), StoreError> {
        self.nothing(Op::SetRole { name: name.into(), role, actor: actor.into(), reason: reason.into() }, now).await
    }

    pub async fn staff_named(&self, name: &str) -> Result<Option<StaffRecord>, StoreError> {
        self.staff(Op::StaffNamed(name.into()), 0).await
    }

    /// Every account's day from `start` (unix seconds) for 24 hours.
    pub async fn day_summary(&self, start: i64) -> Result<Vec<DaySummary>, StoreError> {
        match self.run(Op::DaySummary { start, end: start + 86_400 }, 0).await? {
            Done::Days(d) => Ok(d),
            other => Err(unexpected(other)),
        }
    }

    /// What the players' wallets hold: (accounts, guests).
    pub async fn balance_totals(&self) -> Result<(i64, i64), StoreError> {
        match self.run(Op::BalanceTotals, 0).await? {
            Done::Totals(accounts, guests) => Ok((accounts, guests)),
            other => Err(unexpected(other)),
        }
    }

    /// The 32-byte secret named `name`, made (from the operating system's randomness) if none is stored.
    pub async fn server_secret(&self, name: &str, now: i64) -> Result<[u8; 32], StoreError> {
        let fresh = crate::block::hex(&crate::server::os_random::<32>());
        match self.run(Op::ServerSecret { name: name.into(), fresh }, now).await? {
            Done::Secret(hex) => crate::block::from_hex(&hex).ok_or_else(|| StoreError::Backend(format!("the secret {name} is not 32 bytes in hex"))),
            other => Err(unexpected(other)),
        }
    }

    pub async fn sessions(&self, player: &str, now: i64) -> Result<Vec<SessionSummary>, StoreError> {
        match self.run(Op::Sessions(player.into()), now).await? {
            Done::Sessions(s) => Ok(s),
            other => Err(unexpected(other)),
        }
    }

    pub async fn staff_list(&self) -> Result<Vec<StaffRecord>, StoreError> {
        match self.run(Op::StaffList, 0).await? {
            Done::StaffList(s) => Ok(s),
            other => Err(unexpected(other)),
        }
    }

    pub async fn create_staff_session(&self, token_hash: &str, staff_id: &str, now: i64, expires_at: i64) -> Result<(), StoreError> {
        self.nothing(Op::CreateStaffSession { token_hash: token_hash.into(), staff_id: staff_id.into(), expires_at }, now).await
    }

    pub async fn staff_session(&self, token_hash: &str, now: i64) -> Result<Option<StaffRecord>, StoreError> {
        self.staff(Op::StaffSession(token_hash.into()), now).await
    }

    pub async fn delete_staff_session(&self, token_hash: &str) -> Result<(), StoreError> {
        self.nothing(Op::DeleteStaffSession(token_hash.into()), 0).await
    }

    /// Appends a note of a change made elsewhere (an emission made, a key added…).
    pub async fn record(&self, note: AuditNote, now: i64) -> Result<AuditEntry, StoreError> {
        match self.run(Op::Record(note), now).await? {
            Done::Entry(e) => Ok(e),
            other => Err(unexpected(other)),
        }
    }

    pub async fn audit_log(&self, after: i64, limit: u32) -> Result<Vec<AuditEntry>, StoreError> {
        match self.run(Op::AuditLog { after, limit }, 0).await? {
            Done::Entries(e) => Ok(e),
            other => Err(unexpected(other)),
        }
    }

    /// Walks the whole log in pages: the rows checked, or the first broken one.
    pub async fn verify_audit_log(&self) -> Result<Result<i64, ChainBreak>, StoreError> {
        const PAGE: u32 = 1_000;
        let mut last = None;
        loop {
            let after = last.as_ref().map_or(0, |(seq, _)| *seq);
            let page = self.audit_log(after, PAGE).await?;
            match verify_chain(last.clone(), &page) {
                Err(broken) => return Ok(Err(broken)),
                Ok(checked) => last = checked,
            }
            if page.len() < PAGE as usize {
                return Ok(Ok(last.map_or(0, |(seq, _)| seq)));
            }
        }
    }

    pub async fn suspend(&self, player: &str, suspended: bool, actor: &str, reason: &str, now: i64) -> Result<(), StoreError> {
        self.nothing(Op::Suspend { player: player.into(), suspended, actor: actor.into(), reason: reason.into() }, now).await
    }

    pub async fn ask_withdrawal(&self, player: &str, amount: Cents, now: i64) -> Result<Withdrawal, StoreError> {
        self.withdrawal(Op::AskWithdrawal { player: player.into(), amount }, now).await
    }

    pub async fn decide_withdrawal(&self, id: i64, pay: bool, actor: &str, reason: &str, now: i64) -> Result<Withdrawal, StoreError> {
        self.withdrawal(Op::DecideWithdrawal { id, pay, actor: actor.into(), reason: reason.into() }, now).await
    }

    pub async fn withdrawals(&self, state: Option<WithdrawalState>, player: Option<&str>, limit: u32) -> Result<Vec<Withdrawal>, StoreError> {
        match self.run(Op::Withdrawals { state, player: player.map(Into::into), limit }, 0).await? {
            Done::Withdrawals(w) => Ok(w),
            other => Err(unexpected(other)),
        }
    }

    pub async fn adjust(&self, player: &str, amount_cents: i64, reason: &str, actor: &str, threshold: Cents, now: i64) -> Result<Adjustment, StoreError> {
        self.adjustment(Op::Adjust { player: player.into(), amount_cents, reason: reason.into(), actor: actor.into(), threshold }, now).await
    }

    pub async fn decide_adjustment(&self, id: i64, approve: bool, actor: &str, now: i64) -> Result<Adjustment, StoreError> {
        self.adjustment(Op::DecideAdjustment { id, approve, actor: actor.into() }, now).await
    }

    pub async fn adjustments(&self, state: Option<AdjustmentState>, player: Option<&str>, limit: u32) -> Result<Vec<Adjustment>, StoreError> {
        match self.run(Op::Adjustments { state, player: player.map(Into::into), limit }, 0).await? {
            Done::Adjustments(a) => Ok(a),
            other => Err(unexpected(other)),
        }
    }

    pub async fn withdraw_block(&self, emission: u32, block: u32, actor: &str, reason: &str, now: i64) -> Result<(), StoreError> {
        self.nothing(Op::WithdrawBlock { emission, block, actor: actor.into(), reason: reason.into() }, now).await
    }

    pub async fn find_players(&self, query: &str, limit: u32) -> Result<Vec<PlayerSummary>, StoreError> {
        let op = Op::FindPlayers { query: query.trim().into(), name_key: crate::server::names::key_of(query.trim()), limit };
        match self.run(op, 0).await? {
            Done::Players(p) => Ok(p),
            other => Err(unexpected(other)),
        }
    }

    pub async fn statement(&self, player: &str, limit: u32) -> Result<Vec<StatementLine>, StoreError> {
        match self.run(Op::Statement { player: player.into(), limit }, 0).await? {
            Done::Statement(lines) => Ok(lines),
            other => Err(unexpected(other)),
        }
    }

    async fn balance(&self, op: Op, now: i64) -> Result<Cents, StoreError> {
        match self.run(op, now).await? {
            Done::Balance(b) => Ok(b),
            other => Err(unexpected(other)),
        }
    }

    /// Closes an account for good, its balance paid out; what was paid.
    pub async fn close_account(&self, player: &str, actor: &str, reason: &str, now: i64) -> Result<Cents, StoreError> {
        self.balance(Op::CloseAccount { player: player.into(), actor: actor.into(), reason: reason.into() }, now).await
    }

    pub async fn operator_credit(&self, player: &str, credit: super::Credit, actor: &str, now: i64) -> Result<Cents, StoreError> {
        self.balance(Op::OperatorCredit { player: player.into(), credit, actor: actor.into() }, now).await
    }

    pub async fn operator_debit(&self, player: &str, amount: Cents, reason: &str, actor: &str, now: i64) -> Result<Cents, StoreError> {
        self.balance(Op::OperatorDebit { player: player.into(), amount, reason: reason.into(), actor: actor.into() }, now).await
    }

    pub async fn tier_counts(&self) -> Result<Vec<TierCount>, StoreError> {
        match self.run(Op::TierCounts, 0).await? {
            Done::Tiers(t) => Ok(t),
            other => Err(unexpected(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(n: i64) -> Vec<AuditEntry> {
        let mut entries: Vec<AuditEntry> = Vec::new();
        for seq in 1..=n {
            let prev_hash = entries.last().map_or(GENESIS.to_owned(), |e| e.hash.clone());
            let mut e = AuditEntry {
                seq,
                at: 1_000 + seq,
                actor: "cli:root".into(),
                action: "staff_added".into(),
                target: format!("staff:s{seq}"),
                before: None,
                after: Some(r#"{"role":"finance"}"#.into()),
                reason: (seq % 2 == 0).then(|| "embauche".into()),
                prev_hash,
                hash: String::new(),
            };
            e.hash = entry_hash(&e);
            entries.push(e);
        }
        entries
    }

    #[test]
    fn a_chain_verifies_whole_and_in_pages() {
        let entries = chain(5);
        assert_eq!(verify_chain(None, &entries).unwrap(), Some((5, entries[4].hash.clone())));
        let first = verify_chain(None, &entries[..2]).unwrap();
        assert_eq!(verify_chain(first, &entries[2..]).unwrap().unwrap().0, 5);
        assert_eq!(verify_chain(None, &[]).unwrap(), None);
    }

    #[test]
    fn the_first_changed_missing_or_rechained_row_is_named() {
        let mut changed = chain(5);
        changed[2].reason = Some("autre chose".into());
        assert_eq!(verify_chain(None, &changed).unwrap_err().seq, 3);

        // Rewriting a row with its own hash made again breaks the next one's link.
        let mut rehashed = chain(5);
        rehashed[2].actor = "staff:mallory".into();
        rehashed[2].hash = entry_hash(&rehashed[2]);
        let broken = verify_chain(None, &rehashed).unwrap_err();
        assert_eq!(broken.seq, 4, "{broken}");

        let mut missing = chain(5);
        missing.remove(1);
        assert_eq!(verify_chain(None, &missing).unwrap_err().seq, 3);
    }
}
