//! A player's account as staff act on it and read it: suspension, closure, search, statement,
//! sessions.

use super::audit::{AuditNote, append};
use crate::money::Cents;
use crate::server::store::error::{Already, Failure};
use crate::server::store::postings::Account;
use crate::server::store::responsible::units::close_account;
use crate::server::store::rows::Columns;
use crate::server::store::tx::{Row, Tx};
use crate::server::store::{Store, StoreError, cents};

impl Store {
    /// Suspends (`true`) or restores a player's account: a suspended wallet's guard refuses every stake
    /// and deposit. Asking for the state it is already in is [`StoreError::AlreadyDone`].
    pub async fn suspend(
        &self,
        player: &str,
        suspended: bool,
        actor: &str,
        reason: &str,
        now: i64,
    ) -> Result<(), StoreError> {
        let args = (player.to_owned(), suspended, actor.to_owned(), reason.to_owned(), now);
        self.write(args, |tx, (player, suspended, actor, reason, now)| {
            Box::pin(suspend(tx, player, *suspended, actor, reason, *now))
        })
        .await
    }

    /// Staff close an account for good, its balance paid out; what was paid.
    pub async fn close_account(&self, player: &str, actor: &str, reason: &str, now: i64) -> Result<Cents, StoreError> {
        let args = (player.to_owned(), actor.to_owned(), reason.to_owned(), now);
        self.write(args, |tx, (player, actor, reason, now)| Box::pin(close_by_staff(tx, player, actor, reason, *now)))
            .await
    }

    /// Players whose id is `query`, whose name starts with it, or whose last name is it.
    pub async fn find_players(&self, query: &str, limit: u32) -> Result<Vec<PlayerSummary>, StoreError> {
        let (query, key) = (query.trim().to_owned(), crate::server::names::key_of(query.trim()));
        self.read((query, key, limit), |tx, (query, key, limit)| Box::pin(find_players(tx, query, key, *limit))).await
    }

    /// The last `limit` moves in or out of a player's wallet, newest first.
    pub async fn statement(&self, player: &str, limit: u32) -> Result<Vec<StatementLine>, StoreError> {
        self.read((player.to_owned(), limit), |tx, (player, limit)| Box::pin(statement(tx, player, *limit))).await
    }

    /// The player's sessions still open at `now`, newest first.
    pub async fn sessions(&self, player: &str, now: i64) -> Result<Vec<SessionSummary>, StoreError> {
        self.read((player.to_owned(), now), |tx, (player, now)| Box::pin(sessions(tx, player, *now))).await
    }
}

pub(super) fn player_target(player: &str) -> String {
    format!("player:{player}")
}

/// Suspends (`true`) or restores a player's account: a suspended wallet's guard refuses every stake
/// and deposit. Asking for the state it is already in is [`StoreError::AlreadyDone`].
async fn suspend(
    tx: &mut dyn Tx,
    player: &str,
    suspended: bool,
    actor: &str,
    reason: &str,
    now: i64,
) -> Result<(), Failure> {
    let wallet = Account::Wallet(player).id();
    let (table, key) = (tx.layout().wallet_table, tx.layout().wallet_key);
    let changed = if suspended {
        tx.execute(
            &format!("UPDATE {table} SET suspended_at = $2 WHERE {key} AND suspended_at IS NULL"),
            &[wallet.into(), now.into()],
        )
        .await?
    } else {
        tx.execute(
            &format!("UPDATE {table} SET suspended_at = NULL WHERE {key} AND suspended_at IS NOT NULL"),
            &[wallet.into()],
        )
        .await?
    };
    if changed == 0 {
        let exists = tx.query_opt("SELECT 1 FROM players WHERE id = $1", &[player.into()]).await?.is_some();
        return Err(if exists {
            StoreError::AlreadyDone(if suspended { Already::Suspended } else { Already::NotSuspended })
        } else {
            StoreError::NotFound("player")
        }
        .into());
    }
    let action = if suspended { "player_suspended" } else { "player_restored" };
    let state = |s: bool| Some(serde_json::json!({ "suspended": s }));
    append(
        tx,
        &AuditNote::new(actor, action, player_target(player))
            .change(state(!suspended), state(suspended))
            .because(reason),
        now,
    )
    .await?;
    Ok(())
}

/// Staff close an account (its balance paid out), with why, recorded in the audit log.
async fn close_by_staff(tx: &mut dyn Tx, player: &str, actor: &str, reason: &str, now: i64) -> Result<Cents, Failure> {
    let paid =
        close_account(tx, player, &format!("closed by the operator: {reason}"), "closed_by_operator", now).await?;
    let after = serde_json::json!({ "closed": true, "paid_out_cents": paid.0 });
    append(
        tx,
        &AuditNote::new(actor, "account_closed", player_target(player))
            .change(Some(serde_json::json!({ "closed": false })), Some(after))
            .because(reason),
        now,
    )
    .await?;
    Ok(paid)
}

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
async fn find_players(tx: &mut dyn Tx, query: &str, name_key: &str, limit: u32) -> Result<Vec<PlayerSummary>, Failure> {
    let sql = format!(
        "SELECT p.id, p.name, p.guest, p.first_name, p.last_name, a.balance, a.suspended_at, a.paused_until, \
            p.closed_at, p.created_at \
         FROM players p JOIN {} WHERE p.id = $1 OR (p.name_key IS NOT NULL AND substr(p.name_key, 1, length($2)) = $2 \
         AND $2 <> '') \
            OR lower(p.last_name) = lower($1) ORDER BY p.guest, p.created_at DESC LIMIT $3",
        tx.layout().wallet_of_player
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
async fn statement(tx: &mut dyn Tx, player: &str, limit: u32) -> Result<Vec<StatementLine>, Failure> {
    let rows = tx
        .query(
            "SELECT id, created_at, kind, CASE WHEN credit = $1 THEN amount ELSE -amount END, ticket_id, reason FROM \
                transfers \
             WHERE credit = $1 OR debit = $1 ORDER BY id DESC LIMIT $2",
            &[Account::Wallet(player).id().into(), limit.into()],
        )
        .await?;
    let line = |r: &Row| -> Result<StatementLine, StoreError> {
        Ok(StatementLine {
            id: r.int(0)?,
            at: r.int(1)?,
            kind: r.text(2)?,
            amount_cents: r.int(3)?,
            ticket: r.optional_text(4)?,
            reason: r.optional_text(5)?,
        })
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
async fn sessions(tx: &mut dyn Tx, player: &str, now: i64) -> Result<Vec<SessionSummary>, Failure> {
    let rows = tx
        .query(
            "SELECT started_at, expires_at FROM sessions WHERE player_id = $1 AND expires_at > $2 ORDER BY \
            started_at DESC",
            &[player.into(), now.into()],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| Ok::<_, StoreError>(SessionSummary { started_at: r.int(0)?, expires_at: r.int(1)? }))
        .collect::<Result<_, _>>()?)
}
