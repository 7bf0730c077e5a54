//! Money staff move: withdrawals the players ask and finance pays or refuses, the operator's own
//! credits and debits, and adjustments under four eyes.

use super::accounts::player_target;
use super::audit::{AuditNote, append};
use crate::money::Cents;
use crate::server::store::error::{Already, Failure};
use crate::server::store::postings::{Account, Transfer, TransferKind};
use crate::server::store::responsible::units::deposit;
use crate::server::store::rows::Columns;
use crate::server::store::tx::{Row, Tx, Value};
use crate::server::store::{Credit, Store, StoreError, cents, sql_amount};

impl Store {
    /// The player asks to withdraw `amount`: it leaves the wallet at once, out of reach of play, until
    /// finance pays it or refuses it.
    pub async fn ask_withdrawal(&self, player: &str, amount: Cents, now: i64) -> Result<Withdrawal, StoreError> {
        self.write((player.to_owned(), amount, now), |tx, (player, amount, now)| {
            Box::pin(ask_withdrawal(tx, player, *amount, *now))
        })
        .await
    }

    /// Finance pays a pending withdrawal or refuses it (back to the wallet).
    pub async fn decide_withdrawal(
        &self,
        id: i64,
        pay: bool,
        actor: &str,
        reason: &str,
        now: i64,
    ) -> Result<Withdrawal, StoreError> {
        let args = (id, pay, actor.to_owned(), reason.to_owned(), now);
        self.write(args, |tx, (id, pay, actor, reason, now)| {
            Box::pin(decide_withdrawal(tx, *id, *pay, actor, reason, *now))
        })
        .await
    }

    /// Withdrawals in `state` (all, if none), oldest first, of one player if named.
    pub async fn withdrawals(
        &self,
        state: Option<WithdrawalState>,
        player: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Withdrawal>, StoreError> {
        let args = (state, player.map(str::to_owned), limit);
        self.read(args, |tx, (state, player, limit)| Box::pin(withdrawals(tx, *state, player.as_deref(), *limit))).await
    }

    /// The operator pays real money into a wallet (a deposit it received), through the wallet's guard,
    /// and records it; the new balance.
    pub async fn operator_credit(
        &self,
        player: &str,
        credit: Credit,
        actor: &str,
        now: i64,
    ) -> Result<Cents, StoreError> {
        let args = (player.to_owned(), credit, actor.to_owned(), now);
        self.write(args, |tx, (player, credit, actor, now)| Box::pin(operator_credit(tx, player, credit, actor, *now)))
            .await
    }

    /// The operator pays real money out of a wallet, never below zero, and records it; the new balance.
    pub async fn operator_debit(
        &self,
        player: &str,
        amount: Cents,
        reason: &str,
        actor: &str,
        now: i64,
    ) -> Result<Cents, StoreError> {
        let args = (player.to_owned(), amount, reason.to_owned(), actor.to_owned(), now);
        self.write(args, |tx, (player, amount, reason, actor, now)| {
            Box::pin(operator_debit(tx, player, *amount, reason, actor, *now))
        })
        .await
    }

    /// A staff credit (`amount_cents` > 0) or debit (< 0) of a real-money wallet: applied at once up to
    /// `threshold`, beyond it kept pending until another member approves it (four eyes).
    pub async fn adjust(
        &self,
        player: &str,
        amount_cents: i64,
        reason: &str,
        actor: &str,
        threshold: Cents,
        now: i64,
    ) -> Result<Adjustment, StoreError> {
        let args = (player.to_owned(), amount_cents, reason.to_owned(), actor.to_owned(), threshold, now);
        self.write(args, |tx, (player, amount, reason, actor, threshold, now)| {
            Box::pin(adjust(tx, player, *amount, reason, actor, *threshold, *now))
        })
        .await
    }

    /// Another member approves (and so applies) or rejects a pending adjustment.
    pub async fn decide_adjustment(
        &self,
        id: i64,
        approve: bool,
        actor: &str,
        now: i64,
    ) -> Result<Adjustment, StoreError> {
        self.write((id, approve, actor.to_owned(), now), |tx, (id, approve, actor, now)| {
            Box::pin(decide_adjustment(tx, *id, *approve, actor, *now))
        })
        .await
    }

    /// Adjustments in `state` (all, if none), newest first, of one player if named.
    pub async fn adjustments(
        &self,
        state: Option<AdjustmentState>,
        player: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Adjustment>, StoreError> {
        let args = (state, player.map(str::to_owned), limit);
        self.read(args, |tx, (state, player, limit)| Box::pin(adjustments(tx, *state, player.as_deref(), *limit))).await
    }
}

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

/// The player asks to withdraw `amount`: it leaves the wallet at once for `withdrawals`, where it
/// cannot be staked, until finance pays it or refuses it.
async fn ask_withdrawal(tx: &mut dyn Tx, player: &str, amount: Cents, now: i64) -> Result<Withdrawal, Failure> {
    if amount.is_zero() {
        return Err(StoreError::Invalid("a withdrawal of 0 €".into()).into());
    }
    let moved = tx
        .transfer(
            &Transfer::between(
                TransferKind::Withdrawal,
                Account::Wallet(player),
                Account::Withdrawals,
                amount,
                "retrait demandé par le joueur",
            ),
            now,
        )
        .await?;
    if moved.is_none() {
        return Err(StoreError::Overdraft { balance: tx.balance(player).await?, amount }.into());
    }
    let row = tx
        .query_opt(
            &format!(
                "INSERT INTO withdrawals (player_id, amount, asked_at) VALUES ($1, $2, $3) RETURNING \
                {WITHDRAWAL_COLUMNS}"
            ),
            &[player.into(), sql_amount(amount)?.into(), now.into()],
        )
        .await?
        .ok_or_else(|| StoreError::Backend("a withdrawal inserted returned no row".into()))?;
    Ok(withdrawal_from(&row)?)
}

/// Finance pays a pending withdrawal (`withdrawals` → `cash`) or refuses it (back to the wallet).
async fn decide_withdrawal(
    tx: &mut dyn Tx,
    id: i64,
    pay: bool,
    actor: &str,
    reason: &str,
    now: i64,
) -> Result<Withdrawal, Failure> {
    let state = if pay { WithdrawalState::Paid } else { WithdrawalState::Refused };
    let row = tx
        .query_opt(
            &format!(
                "UPDATE withdrawals SET state = $2, decided_at = $3, decided_by = $4, reason = $5 WHERE id = $1 AND \
                    state = 'pending' RETURNING {WITHDRAWAL_COLUMNS}"
            ),
            &[id.into(), state.as_str().into(), now.into(), actor.into(), reason.into()],
        )
        .await?;
    let Some(row) = row else {
        let found = tx.query_opt("SELECT state FROM withdrawals WHERE id = $1", &[id.into()]).await?;
        return Err(match found {
            Some(_) => StoreError::AlreadyDone(Already::Decided),
            None => StoreError::NotFound("withdrawal"),
        }
        .into());
    };
    let w = withdrawal_from(&row)?;
    let (kind, to) = if pay {
        (TransferKind::WithdrawalPaid, Account::Cash)
    } else {
        (TransferKind::WithdrawalRefused, Account::Wallet(&w.player_id))
    };
    tx.transfer(&Transfer::between(kind, Account::Withdrawals, to, w.amount, reason), now)
        .await?
        .ok_or_else(|| StoreError::Backend("the withdrawals account could not pay".into()))?;
    let action = if pay { "withdrawal_paid" } else { "withdrawal_refused" };
    let note = AuditNote::new(actor, action, format!("withdrawal:{id}"))
        .change(
            Some(serde_json::json!({ "state": "pending", "player": w.player_id, "amount_cents": w.amount.0 })),
            Some(serde_json::json!({ "state": state })),
        )
        .because(reason);
    append(tx, &note, now).await?;
    Ok(w)
}

/// Withdrawals in `state` (all, if none), oldest first, of one player if named.
async fn withdrawals(
    tx: &mut dyn Tx,
    state: Option<WithdrawalState>,
    player: Option<&str>,
    limit: u32,
) -> Result<Vec<Withdrawal>, Failure> {
    let rows = tx
        .query(
            &format!(
                "SELECT {WITHDRAWAL_COLUMNS} FROM withdrawals WHERE (CAST($1 AS TEXT) IS NULL OR state = $1) AND \
                    (CAST($2 AS TEXT) IS NULL OR player_id = $2) ORDER BY asked_at, id LIMIT $3"
            ),
            &[state.map(WithdrawalState::as_str).into(), player.into(), limit.into()],
        )
        .await?;
    Ok(rows.iter().map(withdrawal_from).collect::<Result<_, _>>()?)
}

/// The operator pays real money into a wallet (`vegas wallet credit`: a deposit it received), through
/// the wallet's guard, and records it; the new balance.
async fn operator_credit(
    tx: &mut dyn Tx,
    player: &str,
    credit: &Credit,
    actor: &str,
    now: i64,
) -> Result<Cents, Failure> {
    let balance = deposit(tx, player, credit, now).await?;
    let after = serde_json::json!({ "amount_cents": credit.amount.0, "balance_cents": balance.0 });
    append(
        tx,
        &AuditNote::new(actor, "wallet_credited", player_target(player))
            .change(None, Some(after))
            .because(&credit.reason),
        now,
    )
    .await?;
    Ok(balance)
}

/// The operator pays real money out of a wallet (`vegas wallet debit`), never below zero, and records
/// it; the new balance.
async fn operator_debit(
    tx: &mut dyn Tx,
    player: &str,
    amount: Cents,
    reason: &str,
    actor: &str,
    now: i64,
) -> Result<Cents, Failure> {
    let Some(left) = tx.transfer(&Transfer::withdrawal(player, amount, reason), now).await? else {
        return Err(StoreError::Overdraft { balance: tx.balance(player).await?, amount }.into());
    };
    let balance = cents(left)?;
    let after = serde_json::json!({ "amount_cents": amount.0, "balance_cents": balance.0 });
    append(
        tx,
        &AuditNote::new(actor, "wallet_debited", player_target(player)).change(None, Some(after)).because(reason),
        now,
    )
    .await?;
    Ok(balance)
}

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
async fn apply(tx: &mut dyn Tx, a: &Adjustment, now: i64) -> Result<(), Failure> {
    let amount = Cents(a.amount_cents.unsigned_abs());
    let wallet = Account::Wallet(&a.player_id);
    let (debit, credit) = if a.amount_cents > 0 { (Account::Cash, wallet) } else { (wallet, Account::Cash) };
    if tx.transfer(&Transfer::between(TransferKind::Adjustment, debit, credit, amount, &a.reason), now).await?.is_none()
    {
        return Err(StoreError::Overdraft { balance: tx.balance(&a.player_id).await?, amount }.into());
    }
    Ok(())
}

fn adjustment_note(a: &Adjustment, actor: &str, action: &str) -> AuditNote {
    AuditNote::new(actor, action, player_target(&a.player_id))
        .change(
            None,
            Some(serde_json::json!({ "adjustment": a.id, "amount_cents": a.amount_cents, "state": a.state,
            "asked_by": a.asked_by })),
        )
        .because(&a.reason)
}

/// A staff credit (`amount_cents` > 0) or debit (< 0) of a real-money wallet: applied at once up to
/// `threshold`, beyond it kept pending until another member approves it (four eyes).
async fn adjust(
    tx: &mut dyn Tx,
    player: &str,
    amount_cents: i64,
    reason: &str,
    actor: &str,
    threshold: Cents,
    now: i64,
) -> Result<Adjustment, Failure> {
    if amount_cents == 0 {
        return Err(StoreError::Invalid("an adjustment of 0 €".into()).into());
    }
    let guest = tx
        .query_opt("SELECT guest FROM players WHERE id = $1", &[player.into()])
        .await?
        .ok_or(StoreError::NotFound("player"))?;
    if guest.int(0)? != 0 {
        return Err(StoreError::Invalid("a guest plays demo money only: no real money can be adjusted".into()).into());
    }
    let pending = amount_cents.unsigned_abs() > threshold.0;
    let state = if pending { AdjustmentState::Pending } else { AdjustmentState::Applied };
    let decided = if pending { Value::Null } else { Value::Int(now) };
    let row = tx
        .query_opt(
            &format!(
                "INSERT INTO adjustments (player_id, amount, reason, asked_by, asked_at, state, decided_at) VALUES \
                    ($1, $2, $3, $4, $5, $6, $7) \
                 RETURNING {ADJUSTMENT_COLUMNS}"
            ),
            &[
                player.into(),
                amount_cents.into(),
                reason.into(),
                actor.into(),
                now.into(),
                state.as_str().into(),
                decided,
            ],
        )
        .await?
        .ok_or_else(|| StoreError::Backend("an adjustment inserted returned no row".into()))?;
    let a = adjustment_from(&row)?;
    if !pending {
        apply(tx, &a, now).await?;
    }
    append(tx, &adjustment_note(&a, actor, if pending { "adjustment_asked" } else { "adjustment_applied" }), now)
        .await?;
    Ok(a)
}

/// Another member approves (and so applies) or rejects a pending adjustment. Whoever asked for it
/// cannot decide it: [`StoreError::FourEyes`].
async fn decide_adjustment(
    tx: &mut dyn Tx,
    id: i64,
    approve: bool,
    actor: &str,
    now: i64,
) -> Result<Adjustment, Failure> {
    let state = if approve { AdjustmentState::Applied } else { AdjustmentState::Rejected };
    let row = tx
        .query_opt(
            &format!(
                "UPDATE adjustments SET state = $2, decided_by = $3, decided_at = $4 WHERE id = $1 AND state = \
                    'pending' AND asked_by <> $3 \
                 RETURNING {ADJUSTMENT_COLUMNS}"
            ),
            &[id.into(), state.as_str().into(), actor.into(), now.into()],
        )
        .await?;
    let Some(row) = row else {
        let found = tx.query_opt("SELECT state, asked_by FROM adjustments WHERE id = $1", &[id.into()]).await?;
        return Err(match found {
            None => StoreError::NotFound("adjustment"),
            Some(r) if r.text(0)? != "pending" => StoreError::AlreadyDone(Already::Decided),
            Some(_) => StoreError::FourEyes,
        }
        .into());
    };
    let a = adjustment_from(&row)?;
    if approve {
        apply(tx, &a, now).await?;
    }
    append(tx, &adjustment_note(&a, actor, if approve { "adjustment_approved" } else { "adjustment_rejected" }), now)
        .await?;
    Ok(a)
}

/// Adjustments in `state` (all, if none), newest first, of one player if named.
async fn adjustments(
    tx: &mut dyn Tx,
    state: Option<AdjustmentState>,
    player: Option<&str>,
    limit: u32,
) -> Result<Vec<Adjustment>, Failure> {
    let rows = tx
        .query(
            &format!(
                "SELECT {ADJUSTMENT_COLUMNS} FROM adjustments WHERE (CAST($1 AS TEXT) IS NULL OR state = $1) AND \
                    (CAST($2 AS TEXT) IS NULL OR player_id = $2) ORDER BY asked_at DESC, id DESC LIMIT $3"
            ),
            &[state.map(AdjustmentState::as_str).into(), player.into(), limit.into()],
        )
        .await?;
    Ok(rows.iter().map(adjustment_from).collect::<Result<_, _>>()?)
}
