//! `vegas wallet credit|debit`: real money the operator received or paid out, recorded in the audit log.

use super::{Global, cli_actor, player_id};
use anyhow::{Result, bail};
use vegas::money::Cents;
use vegas::server::Clock;
use vegas::server::store::{Credit, Funding};

#[derive(clap::Subcommand)]
pub enum Wallet {
    /// Pay money into a player's wallet (a deposit the operator received).
    Credit(Move),
    /// Take money out of a player's wallet (a withdrawal the operator pays out); never below zero.
    Debit(Move),
}

#[derive(clap::Args)]
pub struct Move {
    /// The player's id (`p-…`) or name.
    #[arg(long)]
    player: String,
    /// In euros: 20, 12.50.
    #[arg(long)]
    amount: Cents,
    /// Why, kept with the transfer in the ledger.
    #[arg(long)]
    reason: String,
}

impl Wallet {
    pub async fn run(self, global: &Global) -> Result<()> {
        let (Wallet::Credit(m) | Wallet::Debit(m)) = &self;
        if m.amount.is_zero() || m.reason.trim().is_empty() {
            bail!("give an amount above zero and a reason");
        }
        let (store, now) = (global.store().await?, Clock::system().now());
        let player = player_id(&store, &m.player).await?;
        let balance = match &self {
            Wallet::Credit(m) => {
                let credit = Credit { funding: Funding::Cash, amount: m.amount, reason: m.reason.clone() };
                store.operator_credit(&player, credit, &cli_actor(), now).await?
            }
            Wallet::Debit(m) => store.operator_debit(&player, m.amount, &m.reason, &cli_actor(), now).await?,
        };
        println!("{player}: balance {balance}");
        Ok(())
    }
}
