//! `vegas backup`: a consistent copy of the embedded store while the server sells.

use super::Global;
use anyhow::{Result, bail};
use std::path::PathBuf;
use vegas::server::Database;
use vegas::server::store::sqlite;

/// Restore: stop the server, put the copy in an empty data directory as `vegas.sqlite3` (mode 600, the
/// directory 700), run `vegas ledger check` on it, start the server there. PostgreSQL is backed up by
/// its own tools: see docs/operations.md, « Backups ».
#[derive(clap::Args)]
pub struct Backup {
    /// The copy's file; it must not exist.
    dest: PathBuf,
}

impl Backup {
    pub fn run(self, global: &Global) -> Result<()> {
        let Database::Sqlite(data) = global.database() else {
            bail!(
                "vegas backup copies the embedded store; back PostgreSQL up with pg_basebackup and WAL archiving \
                    (docs/operations.md)"
            );
        };
        let started = std::time::Instant::now();
        let copy = sqlite::backup(&data.join(sqlite::FILE_NAME), &self.dest)?;
        println!(
            "{}: {} bytes, {} tickets, copied in {:.1} s",
            self.dest.display(),
            copy.bytes,
            copy.tickets,
            started.elapsed().as_secs_f64()
        );
        Ok(())
    }
}
