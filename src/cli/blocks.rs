//! `vegas blocks`: the blocks and their state; one recomputed from its seed.

use super::Global;
use anyhow::{Result, anyhow};
use vegas::block::hex;

#[derive(clap::Subcommand)]
pub enum Blocks {
    /// Every block with its sold count and commitment.
    List,
    /// Recompute a block from its seed and check it.
    Audit {
        #[arg(long)]
        emission: u32,
        #[arg(long)]
        block: u32,
    },
}

impl Blocks {
    pub async fn run(self, global: &Global) -> Result<()> {
        let store = global.store().await?;
        match self {
            Blocks::List => {
                println!("{:>8} {:>5} {:>9} {:>9}  root", "emission", "block", "sold", "state");
                for b in store.blocks().await? {
                    let state = if b.withdrawn_at.is_some() {
                        "withdrawn"
                    } else if b.closed_at.is_some() {
                        "closed"
                    } else {
                        "open"
                    };
                    println!("{:>8} {:>5} {:>9} {:>9}  {}", b.emission, b.block, b.sold, state, hex(&b.root));
                }
            }
            Blocks::Audit { emission, block } => {
                let report =
                    vegas::server::blocks::audit_stored(&store, emission, block).await.map_err(|e| anyhow!(e))?;
                println!("block E{emission}-B{block}: {} tickets, audit passed", report.tickets);
                for (lot, count) in report.counts.iter().rev() {
                    println!("  {count:>9} × {lot}");
                }
                println!("  total paid out: {}", report.total_payout);
                println!("  root: {}", hex(&report.root));
            }
        }
        Ok(())
    }
}
