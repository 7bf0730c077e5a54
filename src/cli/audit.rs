//! `vegas audit`: the hash-chained log of every staff action and configuration change.

use super::Global;
use anyhow::{Result, bail};
use vegas::server::dates::utc;

#[derive(clap::Subcommand)]
pub enum Audit {
    /// Walk the whole chain: each row's hash over its fields and the one before. Names the first row
    /// that does not follow, and exits non-zero.
    Verify,
    /// The log's rows, oldest first.
    Show {
        /// The first row shown.
        #[arg(long, default_value_t = 1)]
        from: i64,
        #[arg(long, default_value_t = 100)]
        limit: u32,
    },
}

impl Audit {
    pub async fn run(self, global: &Global) -> Result<()> {
        let store = global.store().await?;
        match self {
            Audit::Verify => match store.verify_audit_log().await? {
                Ok(rows) => println!("audit log verified: {rows} rows, each chained to the one before"),
                Err(broken) => bail!("audit log broken: {broken}"),
            },
            Audit::Show { from, limit } => {
                for e in store.audit_log(from.max(1) - 1, limit).await? {
                    let change =
                        format!("{} → {}", e.before.as_deref().unwrap_or("-"), e.after.as_deref().unwrap_or("-"));
                    println!(
                        "{:>6} {} {} {} {} {} {}",
                        e.seq,
                        utc(e.at),
                        e.actor,
                        e.action,
                        e.target,
                        change,
                        e.reason.unwrap_or_default()
                    );
                }
            }
        }
        Ok(())
    }
}
