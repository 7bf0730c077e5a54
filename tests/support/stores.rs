//! A store under test on each engine, for the conformance suite and the differential test: a fresh
//! SQLite file, or a fresh database on the PostgreSQL server the suite was given.
// Shared by the conformance suite and the differential test; each uses part of it.
#![allow(dead_code)]

use std::sync::Arc;
use vegas::server::store::Store;
use vegas::server::store::sqlite::Opening;

/// A store under test, with whatever keeps it alive and a way behind its back to its books.
pub struct Backend {
    pub store: Arc<Store>,
    pub books: Books,
    _guard: Box<dyn std::any::Any + Send>,
}

/// Where a backend keeps its rows, for tests that tamper with them as an intruder or a bug would.
pub enum Books {
    Sqlite(std::path::PathBuf),
    Postgres(String),
}

impl Backend {
    pub async fn sqlite() -> Option<Backend> {
        // Always at hand: `Option` only to be called as `postgres` is.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vegas.sqlite3");
        let store = Store::sqlite(&path, Opening::Server).unwrap();
        Some(Backend { store: Arc::new(store), books: Books::Sqlite(path), _guard: Box::new(dir) })
    }

    /// Runs `statements` in one transaction, behind the store's back.
    pub async fn tamper(&self, statements: &str) {
        self.try_tamper(statements).await.unwrap_or_else(|e| panic!("{statements}: {e}"));
    }

    /// As [`Backend::tamper`], saying what the database refused.
    pub async fn try_tamper(&self, statements: &str) -> Result<(), String> {
        match &self.books {
            // As an intruder would, with the foreign keys that guard the books off.
            Books::Sqlite(path) => rusqlite::Connection::open(path)
                .unwrap()
                .execute_batch(&format!("PRAGMA foreign_keys = OFF; BEGIN; {statements}; COMMIT"))
                .map_err(|e| e.to_string()),
            Books::Postgres(url) => {
                let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
                tokio::spawn(connection);
                client.batch_execute(&format!("BEGIN; {statements}; COMMIT")).await.map_err(|e| e.to_string())
            }
        }
    }

    /// The statement that changes an account's stored balance by `delta` (the ledger's own tables differ:
    /// PostgreSQL splits the game's accounts into shards).
    pub fn shift_balance(&self, account: &str, delta: i64) -> String {
        match self.books {
            Books::Sqlite(_) => format!("UPDATE accounts SET balance = balance + {delta} WHERE id = '{account}'"),
            Books::Postgres(_) => {
                format!("UPDATE balances SET balance = balance + {delta} WHERE account = '{account}' AND shard = 0")
            }
        }
    }

    /// The statement that deletes an account's stored balance, so that nothing can be paid from it.
    pub fn drop_balance(&self, account: &str) -> String {
        match self.books {
            Books::Sqlite(_) => format!("DELETE FROM accounts WHERE id = '{account}'"),
            Books::Postgres(_) => format!("DELETE FROM balances WHERE account = '{account}'"),
        }
    }

    /// A database of its own on the PostgreSQL server of `VEGAS_TEST_DATABASE`. These tests are
    /// ignored by a plain `cargo test`; `make test` starts a server and runs them with
    /// `--include-ignored`, and run without one they fail.
    pub async fn postgres() -> Option<Backend> {
        let url = std::env::var("VEGAS_TEST_DATABASE")
            .expect("VEGAS_TEST_DATABASE is not set: run these through `make test` (tests/pg/cluster.sh)");
        let name = format!("conformance_{}", vegas::block::hex(&rand::random::<[u8; 8]>()));
        let (admin, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        admin.batch_execute(&format!("CREATE DATABASE {name}")).await.unwrap();
        let own = format!("{}/{name}", url.rsplit_once('/').unwrap().0);
        let store = Store::postgres(&own, 32).await.unwrap();
        Some(Backend { store: Arc::new(store), books: Books::Postgres(own), _guard: Box::new(admin) })
    }
}
