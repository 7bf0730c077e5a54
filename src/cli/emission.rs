//! `vegas emission create`: a new emission of blocks, committed before any sale.

use super::{Global, cli_actor, record};
use anyhow::{Result, anyhow};
use std::path::PathBuf;
use vegas::composer::design::DEFAULT_DESIGN_TOML;
use vegas::server::store::back_office::AuditNote;
use vegas::server::{Clock, blocks};

#[derive(clap::Subcommand)]
pub enum Emission {
    /// Make a new emission of N blocks of 1 500 000 tickets.
    Create {
        #[arg(long, default_value_t = 1)]
        blocks: u32,
        /// A design file (TOML); the shipped static/design.toml by default.
        #[arg(long)]
        design: Option<PathBuf>,
    },
}

impl Emission {
    pub async fn run(self, global: &Global) -> Result<()> {
        let Emission::Create { blocks: n, design } = self;
        let text = match design {
            Some(path) => super::read(&path)?,
            None => DEFAULT_DESIGN_TOML.to_owned(),
        };
        let (store, now) = (global.store().await?, Clock::system().now());
        let emission = blocks::create_emission(&store, &text, n, now).await.map_err(|e| anyhow!(e))?;
        println!("emission {emission}: {n} block(s) of 1 500 000 tickets made");
        let design_sha256 = vegas::block::hex(&<sha2::Sha256 as sha2::Digest>::digest(text.as_bytes()));
        let after = serde_json::json!({ "blocks": n, "design_sha256": design_sha256 });
        record(
            &store,
            AuditNote::new(&cli_actor(), "emission_made", format!("emission:{emission}")).change(None, Some(after)),
            now,
        )
        .await
    }
}
