//! The double-entry ledger: its accounts, and `vegas ledger check`.
//!
//! Every money move is a transfer of a positive amount from one account (debited) to another
//! (credited): its two postings, −amount and +amount, sum to zero. Each account's balance is stored and
//! updated in the same transaction as its transfers; a player's wallet may never go below zero (a
//! database check). The accounts:
//!
//! | account | kind | moves |
//! |---|---|---|
//! | `wallet:{player}` | wallet | the player's money: stakes out, wins and credits in |
//! | `cash` | cash | real money paid in (or out) by the operator |
//! | `demo` | demo | demo money given to guests and demo players |
//! | `block:{e}:{b}:stakes` | stakes | 3 € in for every ticket of the block sold |
//! | `block:{e}:{b}:prizes` | prizes | every win of the block's tickets paid out |
//! | `withdrawals` | withdrawals | money players asked to withdraw, until finance pays it or refuses it |
//!
//! [`check`] recomputes every balance from the transfers, checks that all balances sum to zero, and
//! reconciles each block: stakes = 3 € × tickets sold, and prizes paid + prizes owed on tickets not yet
//! credited = the lots committed for the tickets sold; and `withdrawals` holds exactly the withdrawals
//! still pending. It attributes money too: each stake left its
//! ticket's owner's wallet for that ticket's block, each win left that block's prizes for the owner's
//! wallet, and every transfer names accounts that exist and that its kind moves money between.
//!
//! The facts come from the store in one snapshot ([`super::Store::ledger_facts`]), read once for both
//! engines.

use super::StoreError;
use super::error::Failure;
use super::postings::Account;
use super::rows::Columns;
use super::sql;
use super::tx::Tx;
use crate::block::{LotCode, lot_of};
use crate::money::format_signed_cents;
use crate::rules::prize_table::TICKET_PRICE;
use std::collections::HashMap;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountFacts {
    pub id: String,
    pub kind: String,
    pub stored: i64,
    /// Credits minus debits over every transfer that names the account.
    pub from_transfers: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockFacts {
    pub emission: u32,
    pub block: u32,
    /// The block's sale counter.
    pub sold: u64,
    /// Ticket rows of the block.
    pub tickets: u64,
    pub stakes_balance: i64,
    pub prizes_balance: i64,
    /// Lots of the block's tickets not yet credited.
    pub owed: i64,
    /// The lots the block's commitment gives the sold tickets' indices (read from the block's lots,
    /// not from the ticket rows).
    pub committed: i64,
    /// Tickets whose recorded lot differs from the committed one.
    pub lot_mismatches: u64,
    /// The block's size and the lots it committed for all its tickets, sold or not.
    pub size: u64,
    pub lots_total: i64,
}

/// Everything [`check`] needs, read from the store in one snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LedgerFacts {
    pub accounts: Vec<AccountFacts>,
    pub transfers: u64,
    pub blocks: Vec<BlockFacts>,
    /// Tickets without exactly one 3 € stake transfer.
    pub tickets_without_one_stake: u64,
    /// Tickets whose win transfer is missing (credited, lot > 0), unexpected (not credited, or 0 €) or
    /// of another amount than the lot.
    pub tickets_with_wrong_win: u64,
    /// Stakes not from the ticket's owner's wallet, or not to that ticket's block's stakes.
    pub misattributed_stakes: u64,
    /// Wins not to the ticket's owner's wallet, or not from that ticket's block's prizes.
    pub misattributed_wins: u64,
    /// Transfers naming an account or a ticket that does not exist, or accounts their kind never
    /// moves money between.
    pub orphan_transfers: u64,
    /// What the withdrawals still pending add up to: all the `withdrawals` account may hold.
    pub pending_withdrawals: i64,
}

/// The counts of [`super::sql::ledger_counts`], in its order.
pub type Counts = [u64; 5];

impl LedgerFacts {
    pub fn new(
        accounts: Vec<AccountFacts>,
        transfers: u64,
        blocks: Vec<BlockFacts>,
        counts: Counts,
        pending_withdrawals: i64,
    ) -> LedgerFacts {
        let [
            tickets_without_one_stake,
            tickets_with_wrong_win,
            misattributed_stakes,
            misattributed_wins,
            orphan_transfers,
        ] = counts;
        LedgerFacts {
            accounts,
            transfers,
            blocks,
            tickets_without_one_stake,
            tickets_with_wrong_win,
            misattributed_stakes,
            misattributed_wins,
            orphan_transfers,
            pending_withdrawals,
        }
    }
}

/// What a passing check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerReport {
    pub accounts: usize,
    pub transfers: u64,
    pub blocks: Vec<BlockFacts>,
}

impl fmt::Display for LedgerReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "ledger check passed: {} accounts, {} transfers, balances sum to 0",
            self.accounts, self.transfers
        )?;
        for b in &self.blocks {
            writeln!(
                f,
                "  block E{}-B{}: {} sold, stakes {}, prizes paid {} + owed {} = committed {}",
                b.emission,
                b.block,
                b.sold,
                format_signed_cents(b.stakes_balance),
                format_signed_cents(-b.prizes_balance),
                format_signed_cents(b.owed),
                format_signed_cents(b.committed),
            )?;
        }
        Ok(())
    }
}

/// Checks the ledger; on failure, every discrepancy found, one per line.
pub fn check(facts: LedgerFacts) -> Result<LedgerReport, Vec<String>> {
    let mut problems = Vec::new();
    let mut total: i128 = 0;
    for a in &facts.accounts {
        total += i128::from(a.stored);
        if a.stored != a.from_transfers {
            problems.push(format!(
                "account {}: stored balance {} but its transfers sum to {}",
                a.id, a.stored, a.from_transfers
            ));
        }
        if a.kind == "wallet" && a.stored < 0 {
            problems.push(format!("account {}: a wallet below zero ({})", a.id, a.stored));
        }
    }
    if total != 0 {
        problems.push(format!("the balances of all accounts sum to {total}, not 0"));
    }
    let held = facts.accounts.iter().find(|a| a.kind == "withdrawals").map_or(0, |a| a.stored);
    if held != facts.pending_withdrawals {
        problems.push(format!(
            "account withdrawals holds {held} but the withdrawals pending add up to {}",
            facts.pending_withdrawals
        ));
    }
    let price = i64::try_from(TICKET_PRICE.0).expect("3 € fits");
    for b in &facts.blocks {
        let name = format!("block E{}-B{}", b.emission, b.block);
        if b.tickets != b.sold {
            problems.push(format!("{name}: the sale counter says {} sold but {} tickets exist", b.sold, b.tickets));
        }
        let expected_stakes = i128::from(price) * i128::from(b.tickets);
        if i128::from(b.stakes_balance) != expected_stakes {
            problems.push(format!(
                "{name}: stakes hold {} but {} tickets × 3 € = {expected_stakes}",
                b.stakes_balance, b.tickets
            ));
        }
        let paid = -i128::from(b.prizes_balance);
        if paid + i128::from(b.owed) != i128::from(b.committed) {
            problems.push(format!(
                "{name}: prizes paid {paid} + owed {} ≠ {} committed for the tickets sold",
                b.owed, b.committed
            ));
        }
        if b.lot_mismatches > 0 {
            problems.push(format!("{name}: {} tickets record another lot than the block committed", b.lot_mismatches));
        }
    }
    let wrong = [
        (facts.tickets_without_one_stake, "tickets without exactly one 3 € stake"),
        (facts.tickets_with_wrong_win, "tickets whose win transfer is missing, extra or wrong"),
        (facts.misattributed_stakes, "stakes not taken from the ticket owner's wallet into its block's stakes"),
        (facts.misattributed_wins, "wins not paid from the ticket's block's prizes into its owner's wallet"),
        (
            facts.orphan_transfers,
            "transfers naming a missing account or ticket, or accounts their kind does not move money between",
        ),
    ];
    problems.extend(wrong.into_iter().filter(|(count, _)| *count > 0).map(|(count, what)| format!("{count} {what}")));
    if problems.is_empty() {
        Ok(LedgerReport { accounts: facts.accounts.len(), transfers: facts.transfers, blocks: facts.blocks })
    } else {
        Err(problems)
    }
}

/// Every account's facts: its balance as stored (`stored`, by id) beside what its transfers sum to
/// (`sums`: id, kind, credits − debits, as [`super::sql::TRANSFER_SUMS`] reads them).
pub fn accounts(sums: Vec<(String, String, i64)>, stored: &HashMap<String, i64>) -> Vec<AccountFacts> {
    sums.into_iter()
        .map(|(id, kind, from_transfers)| AccountFacts {
            stored: stored.get(&id).copied().unwrap_or(0),
            id,
            kind,
            from_transfers,
        })
        .collect()
}

/// A block's tickets, counted one by one as a backend reads them (a block holds up to 1 500 000).
pub struct BlockTally {
    lots: Vec<LotCode>,
    tickets: u64,
    owed: i64,
    committed: i64,
    lot_mismatches: u64,
    beyond: Option<u32>,
}

impl BlockTally {
    /// A tally against the lots the block committed.
    pub fn new(lots: Vec<LotCode>) -> BlockTally {
        BlockTally { lots, tickets: 0, owed: 0, committed: 0, lot_mismatches: 0, beyond: None }
    }

    /// A sold ticket: its index, the lot its row records, and whether that lot is still owed.
    pub fn add(&mut self, index: u32, recorded_lot: i64, owing: bool) {
        self.tickets += 1;
        self.owed += if owing { recorded_lot } else { 0 };
        match self.lots.get(index as usize) {
            Some(&code) => {
                let committed = lot_of(code).0 as i64;
                self.committed += committed;
                self.lot_mismatches += u64::from(committed != recorded_lot);
            }
            None => self.beyond = Some(index),
        }
    }

    /// The block's facts, with its sale counter and the stored balances of its accounts.
    pub fn facts(
        self,
        emission: u32,
        block: u32,
        sold: u64,
        stored: &HashMap<String, i64>,
    ) -> Result<BlockFacts, StoreError> {
        if let Some(index) = self.beyond {
            return Err(StoreError::Backend(format!("E{emission}-B{block}: ticket {index} is beyond the block")));
        }
        let balance = |account: Account| stored.get(&account.id()).copied().unwrap_or(0);
        let lots_total = self.lots.iter().map(|&code| lot_of(code).0 as i64).sum();
        Ok(BlockFacts {
            emission,
            block,
            sold,
            tickets: self.tickets,
            stakes_balance: balance(Account::Stakes { emission, block }),
            prizes_balance: balance(Account::Prizes { emission, block }),
            owed: self.owed,
            committed: self.committed,
            lot_mismatches: self.lot_mismatches,
            size: self.lots.len() as u64,
            lots_total,
        })
    }
}

/// A block's tickets are read this many indices at a time: a block's 1 500 000 are never all in memory.
const TICKETS_AT_ONCE: u32 = 65_536;

impl super::Store {
    /// What `vegas ledger check` verifies, read in one consistent snapshot.
    pub async fn ledger_facts(&self) -> Result<LedgerFacts, StoreError> {
        self.snapshot((), |tx, ()| Box::pin(ledger_facts(tx))).await
    }
}

async fn ledger_facts(tx: &mut dyn Tx) -> Result<LedgerFacts, Failure> {
    let sums = tx.query(sql::TRANSFER_SUMS, &[]).await?;
    let sums = sums.iter().map(|r| Ok((r.text(0)?, r.text(1)?, r.int(2)?))).collect::<Result<_, StoreError>>()?;
    let stored = tx.query(tx.layout().stored_balances, &[]).await?;
    let stored: HashMap<String, i64> =
        stored.iter().map(|r| Ok((r.text(0)?, r.int(1)?))).collect::<Result<_, StoreError>>()?;
    let transfers = count(tx.query_one(sql::TRANSFER_COUNT, &[]).await?.int(0)?)?;
    let mut blocks = Vec::new();
    for row in tx.query(sql::BLOCK_SALES, &[]).await? {
        let (emission, block, sold) = (row.unsigned(0)?, row.unsigned(1)?, count(row.int(2)?)?);
        let lots = tx
            .query_one("SELECT lots FROM blocks WHERE emission = $1 AND block = $2", &[emission.into(), block.into()])
            .await?
            .bytes(0)?;
        let size = u32::try_from(lots.len()).map_err(|e| StoreError::Backend(e.to_string()))?;
        let mut tally = BlockTally::new(lots);
        let mut from = 0u32;
        loop {
            // The last read goes past the block's end: a ticket beyond it is a fault the tally reports.
            let last = from.saturating_add(TICKETS_AT_ONCE) > size;
            let to = if last { i64::from(i32::MAX) } else { i64::from(from + TICKETS_AT_ONCE) };
            for t in tx.query(sql::BLOCK_TICKETS, &[emission.into(), block.into(), from.into(), to.into()]).await? {
                tally.add(t.unsigned(0)?, t.int(1)?, t.int(2)? != 0);
            }
            if last {
                break;
            }
            from += TICKETS_AT_ONCE;
        }
        blocks.push(tally.facts(emission, block, sold, &stored)?);
    }
    let mut counts = Counts::default();
    for (n, query) in counts.iter_mut().zip(sql::ledger_counts()) {
        *n = count(tx.query_one(&query, &[]).await?.int(0)?)?;
    }
    let pending = tx.query_one(sql::PENDING_WITHDRAWALS, &[]).await?.int(0)?;
    Ok(LedgerFacts::new(accounts(sums, &stored), transfers, blocks, counts, pending))
}

fn count(n: i64) -> Result<u64, StoreError> {
    u64::try_from(n).map_err(|_| StoreError::Backend(format!("a count of {n}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn balanced() -> LedgerFacts {
        let account = |id: &str, kind: &str, balance: i64| AccountFacts {
            id: id.into(),
            kind: kind.into(),
            stored: balance,
            from_transfers: balance,
        };
        LedgerFacts {
            accounts: vec![
                account("demo", "demo", -10_000),
                account("wallet:p", "wallet", 10_000 - 600 + 500),
                account("block:1:1:stakes", "stakes", 600),
                account("block:1:1:prizes", "prizes", -500),
            ],
            transfers: 4,
            blocks: vec![BlockFacts {
                emission: 1,
                block: 1,
                sold: 2,
                tickets: 2,
                stakes_balance: 600,
                prizes_balance: -500,
                owed: 1_000,
                committed: 1_500,
                lot_mismatches: 0,
                size: 4,
                lots_total: 2_000,
            }],
            tickets_without_one_stake: 0,
            tickets_with_wrong_win: 0,
            misattributed_stakes: 0,
            misattributed_wins: 0,
            orphan_transfers: 0,
            pending_withdrawals: 0,
        }
    }

    #[test]
    fn a_balanced_ledger_passes() {
        let report = check(balanced()).unwrap();
        assert_eq!((report.accounts, report.transfers), (4, 4));
        assert!(
            report.to_string().contains("prizes paid 5,00\u{a0}€ + owed 10,00\u{a0}€ = committed 15,00\u{a0}€"),
            "{report}"
        );
    }

    #[test]
    fn each_discrepancy_is_reported() {
        let mut f = balanced();
        f.accounts[1].stored += 1;
        let problems = check(f).unwrap_err();
        assert_eq!(problems.len(), 2, "{problems:?}: the account and the total");

        let mut f = balanced();
        f.blocks[0].stakes_balance = 300;
        f.blocks[0].owed = 0;
        f.blocks[0].sold = 3;
        f.blocks[0].lot_mismatches = 1;
        f.tickets_without_one_stake = 1;
        f.tickets_with_wrong_win = 2;
        f.misattributed_stakes = 1;
        f.misattributed_wins = 1;
        f.orphan_transfers = 2;
        let problems = check(f).unwrap_err();
        assert_eq!(problems.len(), 9, "{problems:?}");

        let mut f = balanced();
        f.accounts.push(AccountFacts {
            id: "withdrawals".into(),
            kind: "withdrawals".into(),
            stored: 500,
            from_transfers: 500,
        });
        f.accounts[1].stored -= 500;
        f.accounts[1].from_transfers -= 500;
        f.pending_withdrawals = 300;
        assert_eq!(check(f.clone()).unwrap_err().len(), 1, "withdrawals held but not pending");
        f.pending_withdrawals = 500;
        check(f).unwrap();

        let mut f = balanced();
        f.accounts[1].stored = -1;
        f.accounts[1].from_transfers = -1;
        assert!(check(f).unwrap_err().iter().any(|p| p.contains("below zero")));
    }

    #[test]
    fn a_tally_reads_committed_lots_at_the_sold_indices() {
        let stored = HashMap::from([("block:1:2:stakes".to_string(), 600), ("block:1:2:prizes".to_string(), -300)]);
        let mut tally = BlockTally::new(vec![0, 9, 0, 1]);
        tally.add(1, 300, false);
        tally.add(3, 4_000_000, true);
        tally.add(0, 500, true);
        let b = tally.facts(1, 2, 3, &stored).unwrap();
        assert_eq!((b.tickets, b.committed, b.owed, b.lot_mismatches), (3, 300 + 4_000_000, 4_000_500, 1));
        assert_eq!((b.stakes_balance, b.prizes_balance), (600, -300));
        let mut tally = BlockTally::new(vec![0]);
        tally.add(4, 0, true);
        assert!(tally.facts(1, 1, 1, &stored).is_err(), "an index outside the block");
    }
}
