//! `vegas verify`: a closed block checked from its published document alone, as any player can.

use anyhow::{Context, Result};
use std::path::PathBuf;
use vegas::block::hex;
use vegas::block::published::{ClosedBlock, PublishedBlock};

/// Every ticket recomputed from the seed, the prize table and the committed root. No store is read.
#[derive(clap::Args)]
pub struct Verify {
    /// The block's document (`GET /api/blocks/{emission}/{block}`): a file, or - for standard input,
    /// e.g. `curl -s https://…/api/blocks/1/1 | vegas verify -`.
    document: PathBuf,
    /// Also print this ticket (its index in the block) as the seed composes it.
    #[arg(long)]
    ticket: Option<u32>,
}

impl Verify {
    pub fn run(self) -> Result<()> {
        let text = if self.document.as_os_str() == "-" {
            std::io::read_to_string(std::io::stdin()).context("reading standard input")?
        } else {
            super::read(&self.document)?
        };
        let published: PublishedBlock =
            vegas::json::from_str(&text).map_err(anyhow::Error::msg).context("not a block's document")?;
        let block = ClosedBlock::read(&published)?;
        if let Some(index) = self.ticket {
            let t = block.ticket(index)?;
            println!("ticket {}: lot {}", t.serial, t.lot);
            println!("  zones: {}", vegas::json::to_string(&t.ticket).map_err(anyhow::Error::msg)?);
            if let Some(salt) = t.salt {
                println!("  salt: {}", hex(&salt));
            }
            println!("  leaf: {}", hex(&t.leaf));
        }
        let report = block.audit().with_context(|| format!("block E{}-B{}", published.emission, published.block))?;
        println!(
            "block E{}-B{} (scheme {}): {} tickets recomputed from the seed, verified",
            published.emission, published.block, published.scheme, report.tickets
        );
        for (lot, count) in report.counts.iter().rev() {
            println!("  {count:>9} × {lot}");
        }
        println!("  total paid out: {}", report.total_payout);
        println!("  root: {} (the committed root)", hex(&report.root));
        Ok(())
    }
}
