//! Keeping the WAL bounded while writes never stop.
//!
//! The writer does not checkpoint as it commits (that would copy the WAL into the database and fsync
//! it inside a write). A thread of its own copies the WAL back every [`EVERY`] (PASSIVE: it waits for
//! no reader and no writer). Under a steady stream of writes that copy is always a few frames behind,
//! and the WAL can only start again from its beginning once everything in it is copied; so when the WAL
//! has grown past [`RESTART_FRAMES`], the thread catches up (passes back to back, each copying what
//! was written during the one before) until little is left, then asks the writer to copy that right
//! after its next commit, when no write can land meanwhile; the WAL starts again at the next write.
//!
//! Both figures were set by `make bench-soak` (5 000 sales/s beside 4 500 settlements/s): what stalls
//! sales is the disk, not SQLite's CPU. A pass writes the database through [`super::vfs`], which
//! keeps the disk's queue short for the commits' fsyncs; the writer's pause takes about 10 ms.

use super::super::StoreError;
use rusqlite::Connection;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// A pass a second: each copies a page written many times in that second once (the wallets', the
/// indexes' inner pages) and fsyncs once. Passes every 100 ms made 10 times the fsyncs and three times
/// the commits slower than 5 ms (172 against 53 in two minutes of the soak).
const EVERY: Duration = Duration::from_secs(1);
/// About 2 GiB with 1 KiB pages: at 5 000 sales/s (40 MB of WAL a second) the writer pauses once
/// every 50 s. At 512 MiB it paused every 13 s, and those pauses held two thirds of the slowest 1 % of
/// sales. A longer WAL does not slow reads (a reader looks up only the frames not yet copied back); it
/// costs its disk space, and the copy a crash leaves to be done on the next start (`after_crash`).
const RESTART_FRAMES: i64 = 2_097_152;
/// The frames left for the writer to copy when it finishes a checkpoint: under a megabyte.
const LEFT_FOR_THE_WRITER: i64 = 512;
/// Passes tried to get there; each copies what the one before left, which shrinks as long as copying
/// back is faster than sales write.
const CATCH_UP_PASSES: usize = 16;

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

/// How far a checkpoint got: the frames the WAL holds, and how many of them are copied back.
struct Progress {
    frames: i64,
    copied: i64,
}

/// Copies what it can of the WAL into the database.
fn passive(conn: &Connection) -> rusqlite::Result<Progress> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| Ok(Progress { frames: r.get(1)?, copied: r.get(2)? }))
}

/// Passes run back to back until what is left is at most [`LEFT_FOR_THE_WRITER`]; whether it got there
/// (else the next round tries again).
fn catch_up(conn: &Connection) -> bool {
    for _ in 0..CATCH_UP_PASSES {
        match passive(conn) {
            Ok(Progress { frames, copied }) if frames - copied <= LEFT_FOR_THE_WRITER => return true,
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "checkpoint failed; the next one will try again");
                return false;
            }
        }
    }
    false
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
        Ok(false) => tracing::info!(
            wal_bytes = left,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "copied the WAL a crash left into the database"
        ),
        // Another process (a command run meanwhile) reads the database: the checkpointer copies the WAL.
        Ok(true) => tracing::warn!(
            wal_bytes = left,
            "another process holds the database: the WAL a crash left is copied as the server runs"
        ),
        Err(e) => {
            tracing::warn!(wal_bytes = left, error = %e, "the WAL a crash left could not be copied now; the \
                checkpointer will")
        }
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
                    Ok(Progress { frames, .. }) => {
                        metrics::gauge!("vegas_sqlite_wal_frames").set(frames as f64);
                        if frames > RESTART_FRAMES && catch_up(&conn) {
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
