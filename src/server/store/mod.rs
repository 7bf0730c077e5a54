//! The store: everything the server keeps, behind one type, [`Store`].
//!
//! Handlers speak HTTP and call its methods; domain types ([`records`]) and [`StoreError`] cross it,
//! never a database type. Each method is one unit of work: it happens entirely or not at all, and is
//! acknowledged only once durable. Each statement inside is safe under concurrency on its own
//! (conditional updates, `UPDATE … RETURNING`, unique constraints, `INSERT … ON CONFLICT`), so no
//! lock is held around them.
//!
//! Every unit of work is written once, against [`tx::Tx`]: players and sessions ([`players`]),
//! tickets ([`tickets`]), blocks and keys ([`blocks`]), responsible gaming ([`responsible`]), the
//! back office ([`back_office`]) and the ledger's facts ([`ledger`]). What is left to each engine is
//! how it runs a unit and its hot paths: [`sqlite`] (one writer thread with group commit, a pool of
//! readers, a checkpointer) and [`postgres`] (sales grouped and striped across instances, sharded
//! game accounts, settlement in batches, units run again after a conflict).

pub mod back_office;
mod blocks;
mod error;
pub mod ledger;
mod plan;
mod players;
pub mod postgres;
pub mod postings;
mod records;
pub mod responsible;
mod rows;
mod sql;
pub mod sqlite;
mod tickets;
pub mod tx;

pub use error::{Already, Failure, StoreError, why_not_registered};
pub use records::*;
use tx::{Access, WorkFn};

/// The store on one of its two engines.
pub struct Store {
    engine: Engine,
}

enum Engine {
    Sqlite(sqlite::SqliteStore),
    Postgres(postgres::PostgresStore),
}

impl Store {
    /// Opens (creating if need be) the embedded store in `path`, migrating its schema.
    pub fn sqlite(path: &std::path::Path, opening: sqlite::Opening) -> Result<Store, StoreError> {
        Ok(Store { engine: Engine::Sqlite(sqlite::SqliteStore::open(path, opening)?) })
    }

    /// Connects to PostgreSQL at `url` with a pool of `connections`, migrating its schema.
    pub async fn postgres(url: &str, connections: usize) -> Result<Store, StoreError> {
        Ok(Store { engine: Engine::Postgres(postgres::PostgresStore::connect(url, connections).await?) })
    }

    /// Runs a unit of work as `access` says, on whichever engine this store is.
    async fn run<A, T>(&self, access: Access, args: A, work: WorkFn<A, T>) -> Result<T, StoreError>
    where
        A: Send + Sync + 'static,
        T: Send + 'static,
    {
        match &self.engine {
            Engine::Sqlite(s) => s.run(access, args, work).await,
            Engine::Postgres(p) => p.run(access, args, work).await,
        }
    }

    async fn read<A: Send + Sync + 'static, T: Send + 'static>(
        &self,
        args: A,
        work: WorkFn<A, T>,
    ) -> Result<T, StoreError> {
        self.run(Access::Read, args, work).await
    }

    async fn snapshot<A: Send + Sync + 'static, T: Send + 'static>(
        &self,
        args: A,
        work: WorkFn<A, T>,
    ) -> Result<T, StoreError> {
        self.run(Access::Snapshot, args, work).await
    }

    async fn write<A: Send + Sync + 'static, T: Send + 'static>(
        &self,
        args: A,
        work: WorkFn<A, T>,
    ) -> Result<T, StoreError> {
        self.run(Access::Write, args, work).await
    }

    /// One purchase: replays the Idempotency-Key, or debits 3 €, takes the next unsold ticket of the
    /// lowest open block (closing it when it sells out) and records the ticket.
    pub async fn sell(&self, request: SaleRequest) -> Result<Sale, StoreError> {
        match &self.engine {
            Engine::Sqlite(s) => s.sell(request).await,
            Engine::Postgres(p) => p.sell(request).await,
        }
    }

    /// Credits up to `limit` tickets sold at or before `sold_before` and not yet credited, oldest first,
    /// starting after `after` (where the round has got to, so that a ticket that failed is passed and
    /// never holds up the others), each on its own (one failure does not stop the others).
    pub async fn settle_due(
        &self,
        sold_before: i64,
        after: Option<DuePlace>,
        limit: usize,
        now: i64,
    ) -> Result<SettleReport, StoreError> {
        let start = DuePlace::start(after);
        match &self.engine {
            Engine::Sqlite(_) => self.settle_one_by_one(sold_before, start, limit, now).await,
            Engine::Postgres(p) => match p.settle_together(sold_before, &start, limit, now).await {
                Ok(report) => Ok(report),
                // One ticket the batch cannot settle (its block's prizes account gone) fails the batch:
                // each is tried again alone, so that the others are settled and it is reported.
                Err(e) => {
                    tracing::debug!(error = %e, "a settlement batch failed as a whole; settling its tickets one by \
                        one");
                    self.settle_one_by_one(sold_before, start, limit, now).await
                }
            },
        }
    }

    /// Sets the gauges of what the engine holds (the WAL's size, the pool's connections) for `/metrics`.
    pub fn record_gauges(&self) {
        match &self.engine {
            Engine::Sqlite(s) => s.record_gauges(),
            Engine::Postgres(p) => p.record_gauges(),
        }
    }
}

/// Settles every ticket due by `sold_before` ([`Store::settle_due`]) from the oldest, in [`Batches`],
/// each batch going on after the last ticket the one before looked at: a ticket that fails is passed
/// and reported, never met first again, so failures cannot hold up the others. The report adds up the
/// round's batches.
pub async fn settle_round(
    store: &Store,
    sold_before: i64,
    batches: Batches,
    now: impl Fn() -> i64,
) -> Result<SettleReport, StoreError> {
    let mut round = SettleReport::default();
    let mut batch = batches.first;
    loop {
        let report = store.settle_due(sold_before, round.last.clone(), batch, now()).await?;
        round.examined += report.examined;
        round.settled += report.settled;
        round.failed.extend(report.failed);
        if report.examined < batch {
            return Ok(round);
        }
        round.last = report.last;
        batch = (batch * 2).min(batches.most);
        tokio::time::sleep(batches.breath).await;
    }
}

#[cfg(test)]
mod tests {
    /// The versions and names of a folder of migrations, in order.
    fn migrations(engine: &str) -> Vec<String> {
        let folder =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/server/store").join(engine).join("migrations");
        let mut names: Vec<String> = std::fs::read_dir(&folder)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort_by_key(|name| name.trim_start_matches('V').split('_').next().unwrap().parse::<u32>().unwrap());
        names
    }

    /// Both engines are one schema in two dialects: a version added to one is added to the other, under
    /// the same name, and versions follow one another from 1.
    #[test]
    fn both_engines_list_the_same_migrations() {
        let (sqlite, postgres) = (migrations("sqlite"), migrations("postgres"));
        assert_eq!(sqlite, postgres);
        for (n, name) in sqlite.iter().enumerate() {
            assert!(
                name.starts_with(&format!("V{}__", n + 1)) && name.ends_with(".sql"),
                "{name} is not version {}",
                n + 1
            );
        }
    }
}
