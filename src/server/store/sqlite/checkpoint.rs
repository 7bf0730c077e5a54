//! Keeping the WAL small while writes never stop.
//!
//! The writer does not checkpoint as it commits (that would copy the WAL into the database and fsync
//! it inside a write). A thread of its own copies the WAL back every [`EVERY`] (PASSIVE: it waits for
//! no reader and no writer). Under a steady stream of writes that copy is always a few frames behind,
//! and the WAL can only start again from its beginning once everything in it is copied; so when the WAL
//! has grown past [`RESTART_FRAMES`], the thread asks the writer to copy what is left right after its
//! next commit, when no write can land meanwhile. Just after the thread's own pass, that is only the
//! last group or two, and the WAL starts again at the next write.

use super::super::StoreError;
use rusqlite::Connection;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

const EVERY: Duration = Duration::from_millis(100);
/// About 512 MiB with 1 KiB pages. Finishing a checkpoint holds the writer for its two fsyncs, 20 to 60
/// ms on this machine under load, so it should come seldom: at 5 000 sales/s (40 MB of WAL a second)
/// once every 13 s, where 128 MiB made it every 3 s and put these pauses in the p99. A longer WAL does
/// not slow reads: a reader looks up only the frames not yet copied back.
const RESTART_FRAMES: i64 = 524_288;

/// Stops the checkpointer thread when dropped, and waits for it: a store dropped is done with its file.
pub struct Checkpointer {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The writer's side: a request to finish a checkpoint after its next commit.
pub struct FinishRequest {
    wanted: Arc<AtomicBool>,
}

impl FinishRequest {
    /// Called by the writer after each commit: finishes the checkpoint if one was asked for.
    pub fn after_commit(&self, conn: &Connection) {
        if self.wanted.swap(false, Ordering::Relaxed) {
            let started = std::time::Instant::now();
            if let Err(e) = passive(conn) {
                tracing::warn!(error = %e, "the writer's checkpoint failed; the next one will try again");
            }
            metrics::histogram!("vegas_sqlite_checkpoint_pause_seconds").record(started.elapsed().as_secs_f64());
        }
    }
}

/// Copies what it can of the WAL into the database; returns the frames the WAL holds.
fn passive(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get(1))
}

/// The size of the database's write-ahead log, 0 if there is none: a process that closes the store last
/// copies its WAL back and deletes it, so a WAL found before opening was left by a crash (or belongs to
/// a process still running).
pub fn wal_bytes(path: &Path) -> u64 {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(&wal).map_or(0, |m| m.len())
}

/// Copies into the database the `left` bytes of WAL a crash left, and empties it, before the server
/// takes any request. After a crash SQLite rebuilds the WAL's index by reading it all and takes none of
/// it as copied yet: left to the checkpointer, up to [`RESTART_FRAMES`] frames would be copied and
/// fsynced again while players buy, holding up their commits for seconds; here it delays only the
/// start. Only the server does this: a command beside a running server must not hold up its writer.
pub fn after_crash(conn: &Connection, left: u64) {
    let started = std::time::Instant::now();
    match conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get::<_, bool>(0)) {
        Ok(false) => tracing::info!(wal_bytes = left, elapsed_ms = started.elapsed().as_millis() as u64, "copied the WAL a crash left into the database"),
        // Another process (a command run meanwhile) reads the database: the checkpointer copies the WAL.
        Ok(true) => tracing::warn!(wal_bytes = left, "another process holds the database: the WAL a crash left is copied as the server runs"),
        Err(e) => tracing::warn!(wal_bytes = left, error = %e, "the WAL a crash left could not be copied now; the checkpointer will"),
    }
}

pub fn start(path: &Path) -> Result<(Checkpointer, FinishRequest), StoreError> {
    let conn = Connection::open(path)?;
    super::grow_in_chunks(&conn)?;
    let (stop, stopped) = mpsc::channel::<()>();
    let wanted = Arc::new(AtomicBool::new(false));
    let ask = wanted.clone();
    let thread = std::thread::Builder::new()
        .name("sqlite-checkpoint".into())
        .spawn(move || {
            while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(EVERY) {
                match passive(&conn) {
                    Ok(frames) => {
                        metrics::gauge!("vegas_sqlite_wal_frames").set(frames as f64);
                        if frames > RESTART_FRAMES {
                            ask.store(true, Ordering::Relaxed);
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "checkpoint failed; the next one will try again"),
                }
            }
        })
        .map_err(|e| StoreError::Backend(format!("cannot start the checkpointer: {e}")))?;
    Ok((Checkpointer { stop: Some(stop), thread: Some(thread) }, FinishRequest { wanted }))
}
