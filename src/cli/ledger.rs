//! `vegas ledger check`: every balance recomputed from the transfers, every block reconciled.

use super::Global;
use anyhow::{Result, bail};
use vegas::server::store::ledger;

#[derive(clap::Subcommand)]
pub enum Ledger {
    /// Recompute every balance from its transfers, check they sum to zero, and reconcile each block's
    /// stakes and prizes with its tickets and its committed lots. Exits non-zero on any discrepancy.
    Check,
}

impl Ledger {
    pub async fn run(self, global: &Global) -> Result<()> {
        let Ledger::Check = self;
        match ledger::check(global.store().await?.ledger_facts().await?) {
            Ok(report) => {
                print!("{report}");
                Ok(())
            }
            Err(problems) => bail!("ledger check failed:\n  {}", problems.join("\n  ")),
        }
    }
}
