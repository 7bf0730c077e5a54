//! `vegas player show`: a player's responsible-gaming page, read-only.

use super::{Global, player_id};
use anyhow::Result;
use vegas::server::{Clock, operator};

#[derive(clap::Subcommand)]
pub enum Player {
    /// A player's balance, limits and what is left of each, pending raises, breaks and exclusions, and
    /// the whole record of them. Read-only: nothing here lifts a break or an exclusion.
    Show {
        /// The player's id (`p-…`) or name.
        player: String,
    },
}

impl Player {
    pub async fn run(self, global: &Global) -> Result<()> {
        let Player::Show { player } = self;
        let store = global.store().await?;
        let id = player_id(&store, &player).await?;
        print!("{}", operator::player_page(&store, &id, Clock::system().now()).await?);
        Ok(())
    }
}
