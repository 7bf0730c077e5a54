//! `vegas keys`: the keys tickets are signed with.

use super::{Global, cli_actor, record};
use anyhow::Result;
use vegas::server::store::back_office::AuditNote;
use vegas::server::{Clock, printer};

#[derive(clap::Subcommand)]
pub enum Keys {
    /// Add a new signing key. Every instance lists it within 15 s and signs with it after 60 s; tickets
    /// signed with the previous keys still verify.
    Rotate,
    /// Every key, oldest first.
    List,
}

impl Keys {
    pub async fn run(self, global: &Global) -> Result<()> {
        let (store, now) = (global.store().await?, Clock::system().now());
        if let Keys::Rotate = self {
            let key = printer::new_signing_key(now);
            println!(
                "added signing key {}: listed by every instance within {} s, signing after {} s",
                key.kid,
                printer::KEY_REFRESH.as_secs(),
                printer::KEY_ACTIVATION.as_secs()
            );
            let kid = key.kid.clone();
            store.add_signing_key(key).await?;
            record(&store, AuditNote::new(&cli_actor(), "signing_key_added", format!("key:{kid}")), now).await?;
        }
        for key in store.signing_keys().await? {
            println!("{}  created {}", key.kid, key.created_at);
        }
        Ok(())
    }
}
