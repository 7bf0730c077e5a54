//! The embedded engine: SQLite in WAL mode with `synchronous=FULL` (a commit is on disk before it is
//! acknowledged), one writer thread with group commit ([`writer`]) that runs every write, a pool of
//! read-only connections that never wait for it, and a checkpointer ([`checkpoint`]). The schema is
//! versioned (`migrations/`, applied by refinery on open), so an existing data directory is migrated
//! when the server starts.

mod build_flags;
mod checkpoint;
#[cfg(feature = "sqlite-gathered-wal")]
mod gathered_wal;
mod sale;
mod tx;
mod writer;

use super::StoreError;
use super::rows::LotsCache;
use super::tx::{Access, WorkFn};
use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::{Connection, ffi};
use std::path::Path;
use std::time::Duration;
use tx::SqliteTx;
use writer::{Writer, WriterContext};

mod embedded {
    refinery::embed_migrations!("src/server/store/sqlite/migrations");
}

/// The file in the data directory.
pub const FILE_NAME: &str = "vegas.sqlite3";
const READERS: u32 = 8;
const PAGE_SIZE: i64 = 1024;
/// How long a connection waits for another process's write lock (the CLI beside a running server).
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

pub struct SqliteStore {
    /// The writer keeps the blocks' lots it has read, for the sales.
    writer: Writer<LotsCache>,
    readers: r2d2::Pool<SqliteConnectionManager>,
    _checkpointer: checkpoint::Checkpointer,
    /// The database file (its WAL's size is a gauge).
    file: std::path::PathBuf,
}

fn configure(conn: &Connection, cache_mib: i64) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    // Indexes keyed by player are written at random places: pages kept in memory are not read again
    // from the file for every sale.
    conn.pragma_update(None, "cache_size", -1024 * cache_mib)?;
    // Each write of a group runs in a savepoint, whose journal (the pages it changed, as they were)
    // SQLite otherwise moves to a file once past 64 KiB: a settlement crediting hundreds of tickets
    // made the writer create, fill and delete a file in /var/tmp some 40 times a second, 18 000
    // `pwrite`s a second and file-system changes that the next commit's fsync had to carry. In memory
    // it is a group's changed pages at most (a few MB); it is never needed after a crash.
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(())
}

/// Adds the pages a connection found in its cache and those it had to read since the last call to
/// `vegas_sqlite_writer_pages_total{from}` (a store outgrowing the writer's cache reads more), and
/// (the writer's cache misses).
fn record_cache_use(conn: &Connection) {
    for (op, from) in [(ffi::SQLITE_DBSTATUS_CACHE_HIT, "cache"), (ffi::SQLITE_DBSTATUS_CACHE_MISS, "file")] {
        let (mut current, mut highest) = (0, 0);
        // SAFETY: the connection's own handle, used on its thread; the call only reads its counters
        // (and resets them).
        if unsafe { ffi::sqlite3_db_status(conn.handle(), op, &mut current, &mut highest, 1) } == ffi::SQLITE_OK {
            metrics::counter!("vegas_sqlite_writer_pages_total", "from" => from).increment(current as u64);
        }
    }
}

/// Who opens the store, which decides what is done with a write-ahead log found on opening.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opening {
    /// The server: a WAL there is what a crash left, copied into the database before any request.
    Server,
    /// A command run beside a server that may be selling: the WAL is the server's, left to it.
    Beside,
}

impl SqliteStore {
    /// Opens (creating if need be) the store in `path`, migrating its schema to the newest version.
    pub fn open(path: &Path, opening: Opening) -> Result<SqliteStore, StoreError> {
        build_flags::check()?;
        // Measured before this connection writes to the WAL: what is there now, an earlier process left.
        let left = checkpoint::wal_bytes(path);
        #[cfg(not(feature = "sqlite-gathered-wal"))]
        let mut conn = Connection::open(path)?;
        #[cfg(feature = "sqlite-gathered-wal")]
        let mut conn = gathered_wal::open(path)?;
        // A sale changes a few rows at random places (the buyer's wallet, the buyer's index entries):
        // SQLite writes each changed page whole to the WAL, so small pages write less. Only a new
        // database takes it; an existing one keeps its page size.
        conn.pragma_update(None, "page_size", PAGE_SIZE)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        #[cfg(feature = "sqlite-gathered-wal")]
        gathered_wal::check(&conn)?;
        migrate(&mut conn)?;
        if opening == Opening::Server && left > 0 {
            checkpoint::after_crash(&conn, left);
        }
        configure(&conn, 16)?;
        let manager = SqliteConnectionManager::file(path).with_init(|c| {
            configure(c, 1)?;
            c.pragma_update(None, "query_only", "ON")
        });
        let readers = r2d2::Pool::builder()
            .max_size(READERS)
            .test_on_check_out(false)
            .build(manager)
            .map_err(|e| StoreError::Backend(format!("cannot open the readers: {e}")))?;
        // See `checkpoint`: the writer does not checkpoint as it commits.
        conn.pragma_update(None, "wal_autocheckpoint", 0)?;
        grow_in_chunks(&conn)?;
        let (checkpointer, finish) = checkpoint::start(path)?;
        let writer = Writer::start(conn, LotsCache::default(), move |conn| {
            finish.after_commit(conn);
            record_cache_use(conn);
        })?;
        Ok(SqliteStore { writer, readers, _checkpointer: checkpointer, file: path.to_owned() })
    }

    /// Runs a unit of work: a write on the writer's thread, in its next group; a read on a pooled
    /// connection (a snapshot in one read transaction).
    pub(super) async fn run<A, T>(&self, access: Access, args: A, work: WorkFn<A, T>) -> Result<T, StoreError>
    where
        A: Send + Sync + 'static,
        T: Send + 'static,
    {
        match access {
            Access::Write => self.writer.write(move |WriterContext { conn, .. }| unit(conn, &args, work)).await,
            Access::Read => self.on_reader(false, move |conn| unit(conn, &args, work)).await,
            Access::Snapshot => {
                self.on_reader(true, move |conn| {
                    conn.execute_batch("BEGIN")?;
                    let read = unit(conn, &args, work);
                    conn.execute_batch("COMMIT")?;
                    read
                })
                .await
            }
        }
    }

    /// A read on a pooled connection. Point reads take microseconds, less than handing them to another
    /// thread would, so they run here when a connection is free; otherwise, and for reads that scan
    /// (`heavy`), on the blocking pool, off the async executor.
    async fn on_reader<T: Send + 'static>(
        &self,
        heavy: bool,
        read: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        if !heavy && let Some(mut conn) = self.readers.try_get() {
            return read(&mut conn);
        }
        let pool = self.readers.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn = pool.get().map_err(|e| StoreError::Backend(format!("no reader: {e}")))?;
            read(&mut conn)
        })
        .await
        .map_err(|e| StoreError::Backend(format!("read task: {e}")))?
    }

    /// One purchase, on the writer's thread.
    pub(super) async fn sell(&self, request: super::SaleRequest) -> Result<super::Sale, StoreError> {
        self.writer.write(move |WriterContext { conn, state }| sale::sell(conn, state, &request)).await
    }

    pub(super) fn record_gauges(&self) {
        metrics::gauge!("vegas_sqlite_wal_bytes").set(checkpoint::wal_bytes(&self.file) as f64);
    }
}

/// Runs a unit of work on a connection: its futures are ready at once, on this thread.
fn unit<A, T>(conn: &mut Connection, args: &A, work: WorkFn<A, T>) -> Result<T, StoreError> {
    Ok(futures::executor::block_on(work(&mut SqliteTx(conn), args))?)
}

/// Makes the database file grow 32 MiB at a time instead of a page at a time: fewer allocations for the
/// file system, and each fsync of the database has fewer new blocks to record.
pub(crate) fn grow_in_chunks(conn: &Connection) -> Result<(), StoreError> {
    let mut chunk: std::ffi::c_int = 32 << 20;
    // SAFETY: the handle is a live connection owned by `conn`, the file name is a NUL-terminated
    // literal, and SQLITE_FCNTL_CHUNK_SIZE reads one int through the pointer during the call.
    let rc = unsafe {
        rusqlite::ffi::sqlite3_file_control(
            conn.handle(),
            c"main".as_ptr(),
            rusqlite::ffi::SQLITE_FCNTL_CHUNK_SIZE,
            (&raw mut chunk).cast(),
        )
    };
    if rc == rusqlite::ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(StoreError::Backend(format!("cannot set the file's growth chunk ({rc})")))
    }
}

/// Applies the migrations not yet applied, with foreign keys off while tables are rebuilt (SQLite's
/// documented procedure), then, if any was, checks every foreign key. (The check reads the whole
/// database: a command run beside a live server, whose schema is already current, skips it.)
fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    conn.pragma_update(None, "foreign_keys", "OFF")?;
    let report = embedded::migrations::runner()
        .run(conn)
        .map_err(|e| StoreError::Backend(format!("migrating the schema: {e}")))?;
    if report.applied_migrations().is_empty() {
        return Ok(());
    }
    let broken: i64 = conn.query_row("SELECT COUNT(*) FROM pragma_foreign_key_check", [], |r| r.get(0))?;
    if broken > 0 {
        return Err(StoreError::Backend(format!("{broken} rows break a foreign key after migrating")));
    }
    Ok(())
}

/// What [`backup`] copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackupReport {
    pub bytes: u64,
    pub tickets: i64,
}

/// Copies the store in `database` to `dest`, consistent as of one instant, while a server may be selling:
/// `VACUUM INTO` reads one snapshot (a read transaction, which blocks no writer) and writes a compact
/// copy. SQLite's page-by-page backup would start over at every write another process makes, and
/// never end under a steady stream of sales. The copy is written beside `dest` owner-only (it holds the
/// store's secrets), checked, flushed to disk, and only then renamed to `dest`: a copy found under
/// that name is whole. `dest` must not exist.
pub fn backup(database: &Path, dest: &Path) -> Result<BackupReport, StoreError> {
    use std::os::unix::fs::OpenOptionsExt;
    let io = |what: &str, e: std::io::Error| StoreError::Backend(format!("{what} {}: {e}", dest.display()));
    if dest.exists() {
        return Err(StoreError::Backend(format!(
            "{} exists already: a backup never overwrites a file",
            dest.display()
        )));
    }
    if !database.exists() {
        return Err(StoreError::Backend(format!("no store in {}", database.display())));
    }
    let mut partial = dest.as_os_str().to_owned();
    partial.push(".partial");
    let partial = std::path::PathBuf::from(partial);
    // VACUUM INTO fills an empty file it finds: made here, owner-only, before any byte is in it.
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&partial)
        .map_err(|e| io("cannot create the copy of", e))?;
    let copied = (|| -> Result<BackupReport, StoreError> {
        let conn = Connection::open_with_flags(
            database,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let target = partial.to_str().ok_or_else(|| StoreError::Backend("the backup's path is not UTF-8".into()))?;
        conn.execute("VACUUM INTO ?1", [target])?;
        let copy = Connection::open_with_flags(&partial, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        let check: String = copy.query_row("PRAGMA quick_check", [], |r| r.get(0))?;
        if check != "ok" {
            return Err(StoreError::Backend(format!("the copy fails SQLite's check: {check}")));
        }
        let tickets = copy.query_row("SELECT COUNT(*) FROM tickets", [], |r| r.get(0))?;
        drop(copy);
        let file = std::fs::File::open(&partial).map_err(|e| io("cannot reopen", e))?;
        file.sync_all().map_err(|e| io("cannot flush", e))?;
        Ok(BackupReport { bytes: file.metadata().map_err(|e| io("cannot read", e))?.len(), tickets })
    })();
    let report = match copied {
        Ok(report) => report,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
    };
    std::fs::rename(&partial, dest).map_err(|e| io("cannot name the copy", e))?;
    // The rename itself is durable once the directory is flushed.
    let folder = dest.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::File::open(folder).and_then(|d| d.sync_all()).map_err(|e| io("cannot flush the folder of", e))?;
    Ok(report)
}
