//! A ledger's postings as data: the accounts money moves between, and the transfers that move it
//! (each one's two postings, −amount and +amount). The units that write them are in [`super::ledger`].

use super::records::Funding;
use crate::money::Cents;
use crate::rules::prize_table::TICKET_PRICE;

/// An account of the ledger, named as the store keys it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Account<'a> {
    Wallet(&'a str),
    Cash,
    Demo,
    Stakes { emission: u32, block: u32 },
    Prizes { emission: u32, block: u32 },
    Withdrawals,
}

impl Account<'_> {
    pub fn id(&self) -> String {
        match self {
            Account::Wallet(player) => format!("wallet:{player}"),
            Account::Cash => "cash".into(),
            Account::Demo => "demo".into(),
            Account::Stakes { emission, block } => format!("block:{emission}:{block}:stakes"),
            Account::Prizes { emission, block } => format!("block:{emission}:{block}:prizes"),
            Account::Withdrawals => "withdrawals".into(),
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Account::Wallet(_) => "wallet",
            Account::Cash => "cash",
            Account::Demo => "demo",
            Account::Stakes { .. } => "stakes",
            Account::Prizes { .. } => "prizes",
            Account::Withdrawals => "withdrawals",
        }
    }
}

/// Why money moved; at most one `Stake` and one `Win` per ticket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransferKind {
    Deposit,
    /// Out of a wallet: paid out by the operator (→ `cash`), or asked by the player (→ `withdrawals`).
    Withdrawal,
    Demo,
    Stake,
    Win,
    /// A withdrawal asked, paid by finance: `withdrawals` → `cash`.
    WithdrawalPaid,
    /// A withdrawal asked, refused by finance: `withdrawals` → back to the wallet.
    WithdrawalRefused,
    /// A correction by staff: `cash` → wallet (a credit) or wallet → `cash` (a debit).
    Adjustment,
}

impl TransferKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TransferKind::Deposit => "deposit",
            TransferKind::Withdrawal => "withdrawal",
            TransferKind::Demo => "demo",
            TransferKind::Stake => "stake",
            TransferKind::Win => "win",
            TransferKind::WithdrawalPaid => "withdrawal_paid",
            TransferKind::WithdrawalRefused => "withdrawal_refused",
            TransferKind::Adjustment => "adjustment",
        }
    }
}

/// A move of money: `amount` leaves `debit` and enters `credit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transfer<'a> {
    pub kind: TransferKind,
    pub debit: Account<'a>,
    pub credit: Account<'a>,
    pub amount: Cents,
    /// The ticket a stake or a win is for.
    pub ticket: Option<&'a str>,
    /// Why money came in from outside the game.
    pub reason: Option<&'a str>,
}

impl<'a> Transfer<'a> {
    /// A ticket's 3 € stake, from its buyer's wallet to its block's stakes.
    pub fn stake(player: &'a str, ticket: &'a str, emission: u32, block: u32) -> Transfer<'a> {
        let (kind, amount, ticket) = (TransferKind::Stake, TICKET_PRICE, Some(ticket));
        Transfer {
            kind,
            debit: Account::Wallet(player),
            credit: Account::Stakes { emission, block },
            amount,
            ticket,
            reason: None,
        }
    }

    /// A ticket's win, from its block's prizes to its buyer's wallet.
    pub fn win(player: &'a str, ticket: &'a str, emission: u32, block: u32, lot: Cents) -> Transfer<'a> {
        let (kind, ticket) = (TransferKind::Win, Some(ticket));
        Transfer {
            kind,
            debit: Account::Prizes { emission, block },
            credit: Account::Wallet(player),
            amount: lot,
            ticket,
            reason: None,
        }
    }

    /// Money into a wallet from outside the game: demo money, or real money paid in.
    pub fn credit(player: &'a str, funding: Funding, amount: Cents, reason: &'a str) -> Transfer<'a> {
        let (kind, debit) = match funding {
            Funding::Demo => (TransferKind::Demo, Account::Demo),
            Funding::Cash => (TransferKind::Deposit, Account::Cash),
        };
        Transfer { kind, debit, credit: Account::Wallet(player), amount, ticket: None, reason: Some(reason) }
    }
}

impl<'a> Transfer<'a> {
    /// Real money paid out to a player by the operator: from the wallet to `cash`.
    pub fn withdrawal(player: &'a str, amount: Cents, reason: &'a str) -> Transfer<'a> {
        Transfer::between(TransferKind::Withdrawal, Account::Wallet(player), Account::Cash, amount, reason)
    }

    /// A move that is not a ticket's: `amount` from `debit` to `credit`, with why.
    pub fn between(
        kind: TransferKind,
        debit: Account<'a>,
        credit: Account<'a>,
        amount: Cents,
        reason: &'a str,
    ) -> Transfer<'a> {
        Transfer { kind, debit, credit, amount, ticket: None, reason: Some(reason) }
    }
}
