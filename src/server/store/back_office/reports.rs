//! What the operator reports on: every wallet's day, what the wallets hold, the tickets sold by lot.

use crate::money::Cents;
use crate::server::store::error::Failure;
use crate::server::store::postings::Account;
use crate::server::store::rows::Columns;
use crate::server::store::tx::{Row, Tx};
use crate::server::store::{Store, StoreError, cents};

impl Store {
    /// Every account's day from `start` (unix seconds) for 24 hours.
    pub async fn day_summary(&self, start: i64) -> Result<Vec<DaySummary>, StoreError> {
        self.snapshot(start, |tx, start| Box::pin(day_summary(tx, *start, start + 86_400))).await
    }

    /// What the players' wallets hold: (accounts, guests).
    pub async fn balance_totals(&self) -> Result<(i64, i64), StoreError> {
        self.read((), |tx, ()| Box::pin(balance_totals(tx))).await
    }

    /// Every block's sold tickets counted by lot.
    pub async fn tier_counts(&self) -> Result<Vec<TierCount>, StoreError> {
        self.snapshot((), |tx, ()| Box::pin(tier_counts(tx))).await
    }
}

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
           UNION ALL SELECT debit AS w, kind, -amount AS signed, created_at FROM transfers WHERE debit LIKE \
           'wallet:%') m \
     GROUP BY w, kind ORDER BY w, kind";

/// The summary of every wallet that held money or moved between `start` and `end`.
async fn day_summary(tx: &mut dyn Tx, start: i64, end: i64) -> Result<Vec<DaySummary>, Failure> {
    let moves = tx.query(WALLET_MOVES, &[start.into(), end.into()]).await?;
    let wallets = tx
        .query(
            &format!(
                "SELECT p.id, p.name, p.guest, a.balance FROM players p JOIN {} ORDER BY p.id",
                tx.layout().wallet_of_player
            ),
            &[],
        )
        .await?;
    let mut days = Vec::new();
    for w in &wallets {
        let id = w.text(0)?;
        let account = Account::Wallet(&id).id();
        let mut day = DaySummary {
            player_id: id.clone(),
            name: w.optional_text(1)?,
            guest: w.int(2)? != 0,
            ..DaySummary::default()
        };
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
        day.balanced = day.opening + day.deposits + day.demo - day.stakes + day.wins - day.withdrawals
            + day.adjustments
            == day.closing;
        if moved || day.opening != 0 || day.closing != 0 {
            days.push(day);
        }
    }
    Ok(days)
}

/// What the players' wallets hold: accounts' and guests' (demo money).
async fn balance_totals(tx: &mut dyn Tx) -> Result<(i64, i64), Failure> {
    let sql = format!(
        "SELECT p.guest, CAST(COALESCE(SUM(a.balance), 0) AS BIGINT) FROM players p JOIN {} GROUP BY p.guest",
        tx.layout().wallet_of_player
    );
    let mut totals = (0, 0);
    for r in tx.query(&sql, &[]).await? {
        if r.int(0)? == 0 { totals.0 += r.int(1)? } else { totals.1 += r.int(1)? }
    }
    Ok(totals)
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
async fn tier_counts(tx: &mut dyn Tx) -> Result<Vec<TierCount>, Failure> {
    let rows = tx
        .query(
            "SELECT emission, block, lot_cents, COUNT(*), CAST(SUM(CASE WHEN credited_at IS NULL THEN 0 ELSE 1 END) \
                AS BIGINT) FROM tickets \
             GROUP BY emission, block, lot_cents ORDER BY emission, block, lot_cents",
            &[],
        )
        .await?;
    let count = |r: &Row| -> Result<TierCount, StoreError> {
        let n = |i| u64::try_from(r.int(i)?).map_err(|_| StoreError::Backend("a negative count".into()));
        Ok(TierCount {
            emission: r.unsigned(0)?,
            block: r.unsigned(1)?,
            lot: cents(r.int(2)?)?,
            sold: n(3)?,
            credited: n(4)?,
        })
    };
    Ok(rows.iter().map(count).collect::<Result<_, _>>()?)
}
