//! `vegas exclusions import`: the national ban file.

use super::{Global, cli_actor, record};
use anyhow::{Result, anyhow};
use std::path::PathBuf;
use vegas::server::store::back_office::AuditNote;
use vegas::server::{Clock, operator};

#[derive(clap::Subcommand)]
pub enum Exclusions {
    /// Replace the ban file with FILE (CSV with a header: nom;prenom;date_naissance — see
    /// docs/responsible-gaming.md); every open account it lists is closed, its balance paid out to
    /// `cash`, its sessions ended, and a registration it lists is refused. Prints what it matched.
    Import { file: PathBuf },
}

impl Exclusions {
    pub async fn run(self, global: &Global) -> Result<()> {
        let Exclusions::Import { file } = self;
        let identities =
            operator::read_ban_file(&super::read(&file)?).map_err(|e| anyhow!("{}: {e}", file.display()))?;
        let (store, now) = (global.store().await?, Clock::system().now());
        let closed = store.import_bans(identities.iter().map(|i| i.key()).collect(), now).await?;
        println!("{} identities imported; {} open account(s) matched and closed", identities.len(), closed.len());
        for (player, paid) in &closed {
            println!("  {player}: closed, {paid} paid out");
        }
        let after = serde_json::json!({ "identities": identities.len(), "closed": closed.iter().map(|(p, paid)| (p,
            paid.0)).collect::<Vec<_>>() });
        record(&store, AuditNote::new(&cli_actor(), "ban_file_imported", "ban_file").change(None, Some(after)), now)
            .await
    }
}
