//! Two VFSes of our own, each SQLite's own (`unix`) but for one thing, one for each connection that
//! writes: the checkpointer's ([`PACED`]) and the store's writer's ([`GATHERED`]).
//!
//! **Paced**: as a checkpoint copies pages into the database it has the kernel write them out 64 KiB
//! at a time, waits for each (`sync_file_range`, as PostgreSQL's checkpointer does with
//! `checkpoint_flush_after`), and starts none while the store's writer commits ([`Committing`]).
//! Without it a pass copies a second of writes (the pages that sales and settlements changed,
//! scattered over the file) into the page cache at memory speed, and its closing fsync hands them all
//! to the disk at once: the commits' own fsyncs queue behind them. In `make bench-soak` three
//! quarters of the purchases slower than the p99 were answered during a pass. Flushed a megabyte at
//! a time without a breath, the disk's queue stayed full for the whole pass and the p99 did not move
//! (19–26 ms); a quarter of a megabyte and a breath of 1 ms took it to 13–16 ms at first, yet commits
//! still took 10–40 ms when they came during a flush (a flush of scattered pages is hundreds of
//! writes). Flushes of 64 KiB started only between commits: the purchases the server itself answered
//! in over 25 ms, per 30 s window of the soak, went from a median of about 800 (100–1 500, 12 windows)
//! to about 90 (4–1 200, 8 windows; the worst still hold a stall of the disk's own). A pass takes
//! longer (about 0.2 s for a second of writes), which the checkpointer, working beside the writer,
//! can afford.
//!
//! **Gathered**: the writer's appends to the WAL are handed to the kernel when the commit syncs the
//! WAL, in `pwrite`s of 64 KiB, not two per page (a frame's header, then its page). With 1 KiB pages a group
//! commit is hundreds of frames: in `make bench-soak` the `pwrite`s were a sixth of the writer's CPU.
//! Only for a connection with `synchronous=FULL`: its commit syncs the WAL, so the frames are with the
//! kernel, before the WAL's index tells any reader of them. The writer's own reads of the WAL, and every
//! other call on it, see the gathered bytes written first; a crash loses only bytes that no commit had
//! synced, which SQLite never counted on.

use rusqlite::ffi;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The name the checkpointer's connection opens the database with.
pub const PACED: &CStr = c"vegas-paced";
/// The name the writer's connection opens the database with.
pub const GATHERED: &CStr = c"vegas-gathered";
/// The most the writer gathers before writing it out, commit or not.
const GATHER_AT_MOST: usize = 1 << 20;
/// The most the `unix` VFS writes in one call (it takes only the low 17 bits of a length).
const WRITE_AT_MOST: usize = 64 << 10;
/// Written by a checkpoint between two flushes: pages copied back land all over the file, so a flush
/// of 64 KiB is up to 64 writes for the disk, which a commit that comes during it waits behind.
const FLUSH_EVERY: i64 = 64 << 10;
/// A breath after each flush, in which the commits' fsyncs find the disk's queue empty.
const BREATH: Duration = Duration::from_micros(250);
/// The longest a flush waits for commits to end: under a stream of back-to-back commits the
/// checkpoint still moves on.
const LONGEST_WAIT: Duration = Duration::from_millis(20);
/// Files SQLite makes for itself beside a connection's (a savepoint's journal, a sort, a temporary
/// table) when they outgrow memory: the store keeps them in memory (`temp_store`), so each one counted
/// is a file created and deleted on the store's disk.
const TEMPORARY: c_int = ffi::SQLITE_OPEN_SUBJOURNAL | ffi::SQLITE_OPEN_TEMP_JOURNAL | ffi::SQLITE_OPEN_TEMP_DB | ffi::SQLITE_OPEN_TRANSIENT_DB;
/// Commits of the store's writer under way (see [`Committing`]).
static COMMITTING: AtomicUsize = AtomicUsize::new(0);

/// Held by the store's writer while it commits: the checkpointer starts no flush (nor fsync) of the
/// database meanwhile, so the commit's fsync of the WAL does not queue behind scattered page writes.
pub struct Committing;

impl Committing {
    pub fn begin() -> Committing {
        COMMITTING.fetch_add(1, Ordering::SeqCst);
        Committing
    }
}

impl Drop for Committing {
    fn drop(&mut self) {
        COMMITTING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Waits until no commit is under way, or [`LONGEST_WAIT`].
fn after_commits() {
    let started = Instant::now();
    while COMMITTING.load(Ordering::SeqCst) > 0 && started.elapsed() < LONGEST_WAIT {
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// Flushes asked for since the process started.
static FLUSHES: AtomicU64 = AtomicU64::new(0);
/// Bytes checkpoints copied into databases since the process started.
static WRITTEN: AtomicU64 = AtomicU64::new(0);

/// Bytes checkpoints copied into databases through this VFS since the process started: the pages
/// that changed between passes, each once, whatever the WAL's length.
pub fn written_bytes() -> u64 {
    WRITTEN.load(Ordering::Relaxed)
}

/// SQLite's file object for one open file: ours in front, the `unix` VFS's right after it.
#[repr(C)]
struct ShimFile {
    base: ffi::sqlite3_file,
    real: *mut ffi::sqlite3_file,
    /// Paced: the database file's descriptor, of our own (`sync_file_range` acts on the file, whichever
    /// descriptor names it); -1 for the WAL and the others, which are not paced.
    database: c_int,
    unflushed: i64,
    /// Gathered: the writer's WAL appends not yet written; null for every other file.
    gathered: *mut Gathered,
}

/// Bytes for the file from offset `at` on, in one piece.
#[derive(Default)]
struct Gathered {
    at: i64,
    bytes: Vec<u8>,
}

/// Registers both VFSes once (neither as the default); an error if SQLite has no `unix` VFS to build on.
pub fn register() -> Result<(), String> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| unsafe {
            // Looking the VFS up starts SQLite, which takes its page cache only before.
            super::page_cache::install();
            let real = ffi::sqlite3_vfs_find(c"unix".as_ptr());
            if real.is_null() {
                return Err("SQLite has no unix VFS".into());
            }
            for name in [PACED, GATHERED] {
                // Everything but opening a file is the `unix` VFS's own, which does not look at the VFS it
                // is called on beyond what is copied here.
                let mut ours = *real;
                ours.szOsFile = (std::mem::size_of::<ShimFile>() as c_int) + (*real).szOsFile;
                ours.zName = name.as_ptr();
                ours.pAppData = real.cast();
                ours.pNext = std::ptr::null_mut();
                ours.xOpen = Some(open);
                let rc = ffi::sqlite3_vfs_register(Box::into_raw(Box::new(ours)), 0);
                if rc != ffi::SQLITE_OK {
                    return Err(format!("cannot register the {name:?} VFS: SQLite error {rc}"));
                }
            }
            Ok(())
        })
        .clone()
}

unsafe extern "C" fn open(vfs: *mut ffi::sqlite3_vfs, name: ffi::sqlite3_filename, file: *mut ffi::sqlite3_file, flags: c_int, out_flags: *mut c_int) -> c_int {
    unsafe {
        let real_vfs: *mut ffi::sqlite3_vfs = (*vfs).pAppData.cast();
        let paced = CStr::from_ptr((*vfs).zName) == PACED;
        let shim: *mut ShimFile = file.cast();
        let real: *mut ffi::sqlite3_file = file.cast::<u8>().add(std::mem::size_of::<ShimFile>()).cast();
        (*shim).base.pMethods = std::ptr::null();
        let Some(real_open) = (*real_vfs).xOpen else { return ffi::SQLITE_CANTOPEN };
        let rc = real_open(real_vfs, name, real, flags, out_flags);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        if flags & TEMPORARY != 0 {
            metrics::counter!("vegas_sqlite_temporary_files_total").increment(1);
        }
        let database = if paced && flags & ffi::SQLITE_OPEN_MAIN_DB != 0 && !name.is_null() {
            libc::open(name as *const c_char, libc::O_RDONLY | libc::O_CLOEXEC)
        } else {
            -1
        };
        let gathered = if !paced && flags & ffi::SQLITE_OPEN_WAL != 0 { Box::into_raw(Box::new(Gathered::default())) } else { std::ptr::null_mut() };
        // The memory is SQLite's, not initialized: written, not assigned.
        std::ptr::write(&raw mut (*shim).real, real);
        std::ptr::write(&raw mut (*shim).database, database);
        std::ptr::write(&raw mut (*shim).unflushed, 0);
        std::ptr::write(&raw mut (*shim).gathered, gathered);
        (*shim).base.pMethods = &METHODS;
        rc
    }
}

/// The `unix` file behind ours, and its methods.
unsafe fn real(file: *mut ffi::sqlite3_file) -> (*mut ffi::sqlite3_file, &'static ffi::sqlite3_io_methods) {
    unsafe {
        let real = (*file.cast::<ShimFile>()).real;
        (real, &*(*real).pMethods)
    }
}

/// Writes out what the writer gathered for this file, if anything: before anything else is asked of
/// it, so that no call sees the file without those bytes.
unsafe fn write_gathered(file: *mut ffi::sqlite3_file) -> c_int {
    unsafe {
        let Some(gathered) = (*file.cast::<ShimFile>()).gathered.as_mut() else { return ffi::SQLITE_OK };
        if gathered.bytes.is_empty() {
            return ffi::SQLITE_OK;
        }
        let (real, methods) = real(file);
        let Some(write) = methods.xWrite else { return ffi::SQLITE_IOERR };
        let mut rc = ffi::SQLITE_OK;
        for (n, piece) in gathered.bytes.chunks(WRITE_AT_MOST).enumerate() {
            rc = write(real, piece.as_ptr().cast(), piece.len() as c_int, gathered.at + (n * WRITE_AT_MOST) as i64);
            if rc != ffi::SQLITE_OK {
                break;
            }
        }
        // Written or failed, they are not written again: after a failure SQLite rolls back and writes anew.
        gathered.bytes.clear();
        rc
    }
}

/// Calls the `unix` file's method, or answers `SQLITE_IOERR` if it has none; for a method that reads or
/// measures the file (`after_gathered`), once any gathered bytes are written.
macro_rules! forward {
    ($name:ident = $method:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty) => {
        forward!(@ $name = $method ( $($arg : $ty),* ) -> $ret, false);
    };
    (after_gathered $name:ident = $method:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty) => {
        forward!(@ $name = $method ( $($arg : $ty),* ) -> $ret, true);
    };
    (@ $name:ident = $method:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty, $after_gathered:literal) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file $(, $arg: $ty)*) -> $ret {
            unsafe {
                let rc = if $after_gathered { write_gathered(file) } else { ffi::SQLITE_OK };
                if rc != ffi::SQLITE_OK {
                    return rc;
                }
                let (real, methods) = real(file);
                match methods.$method {
                    Some(method) => method(real $(, $arg)*),
                    None => ffi::SQLITE_IOERR,
                }
            }
        }
    };
}

forward!(after_gathered read = xRead(buffer: *mut c_void, amount: c_int, offset: i64) -> c_int);
forward!(after_gathered truncate = xTruncate(size: i64) -> c_int);
/// The pass's fsyncs (of the WAL before it copies, of the database after), once no commit is under way;
/// the writer's, once what it gathered is written.
unsafe extern "C" fn sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    unsafe {
        let rc = write_gathered(file);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let (real, methods) = real(file);
        if (*file.cast::<ShimFile>()).gathered.is_null() {
            after_commits();
        }
        match methods.xSync {
            Some(method) => method(real, flags),
            None => ffi::SQLITE_IOERR,
        }
    }
}
forward!(after_gathered file_size = xFileSize(size: *mut i64) -> c_int);
forward!(lock = xLock(level: c_int) -> c_int);
forward!(unlock = xUnlock(level: c_int) -> c_int);
forward!(check_reserved_lock = xCheckReservedLock(out: *mut c_int) -> c_int);
forward!(after_gathered file_control = xFileControl(op: c_int, arg: *mut c_void) -> c_int);
forward!(sector_size = xSectorSize() -> c_int);
forward!(device_characteristics = xDeviceCharacteristics() -> c_int);
forward!(shm_map = xShmMap(region: c_int, size: c_int, extend: c_int, out: *mut *mut c_void) -> c_int);
forward!(shm_lock = xShmLock(offset: c_int, n: c_int, flags: c_int) -> c_int);
forward!(shm_unmap = xShmUnmap(delete: c_int) -> c_int);
forward!(after_gathered fetch = xFetch(offset: i64, amount: c_int, out: *mut *mut c_void) -> c_int);
forward!(unfetch = xUnfetch(offset: i64, page: *mut c_void) -> c_int);

unsafe extern "C" fn shm_barrier(file: *mut ffi::sqlite3_file) {
    unsafe {
        let (real, methods) = real(file);
        if let Some(barrier) = methods.xShmBarrier {
            barrier(real);
        }
    }
}

unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
    unsafe {
        let written = write_gathered(file);
        let shim = file.cast::<ShimFile>();
        if !(*shim).gathered.is_null() {
            drop(Box::from_raw((*shim).gathered));
            (*shim).gathered = std::ptr::null_mut();
        }
        if (*shim).database >= 0 {
            libc::close((*shim).database);
            (*shim).database = -1;
        }
        let (real, methods) = real(file);
        let closed = methods.xClose.map_or(ffi::SQLITE_OK, |close| close(real));
        if written != ffi::SQLITE_OK { written } else { closed }
    }
}

unsafe extern "C" fn write(file: *mut ffi::sqlite3_file, data: *const c_void, amount: c_int, offset: i64) -> c_int {
    unsafe {
        let shim = file.cast::<ShimFile>();
        if let Some(gathered) = (*shim).gathered.as_mut() {
            // Only what continues the bytes gathered is added to them; anything else writes them first.
            if !gathered.bytes.is_empty() && offset != gathered.at + gathered.bytes.len() as i64 {
                let rc = write_gathered(file);
                if rc != ffi::SQLITE_OK {
                    return rc;
                }
            }
            if gathered.bytes.is_empty() {
                gathered.at = offset;
            }
            gathered.bytes.extend_from_slice(std::slice::from_raw_parts(data.cast::<u8>(), amount as usize));
            return if gathered.bytes.len() >= GATHER_AT_MOST { write_gathered(file) } else { ffi::SQLITE_OK };
        }
        let (real, methods) = real(file);
        let Some(write) = methods.xWrite else { return ffi::SQLITE_IOERR };
        let rc = write(real, data, amount, offset);
        if rc == ffi::SQLITE_OK && (*shim).database >= 0 {
            WRITTEN.fetch_add(amount as u64, Ordering::Relaxed);
            (*shim).unflushed += i64::from(amount);
            if (*shim).unflushed >= FLUSH_EVERY {
                (*shim).unflushed = 0;
                FLUSHES.fetch_add(1, Ordering::Relaxed);
                after_commits();
                flush((*shim).database);
                std::thread::sleep(BREATH);
            }
        }
        rc
    }
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(lock),
    xUnlock: Some(unlock),
    xCheckReservedLock: Some(check_reserved_lock),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device_characteristics),
    xShmMap: Some(shm_map),
    xShmLock: Some(shm_lock),
    xShmBarrier: Some(shm_barrier),
    xShmUnmap: Some(shm_unmap),
    xFetch: Some(fetch),
    xUnfetch: Some(unfetch),
};

/// Writes out the database's dirty pages and waits for them. Only a hint: if it fails, or on a system
/// without it, the pass's fsync writes them all the same.
fn flush(database: c_int) {
    #[cfg(target_os = "linux")]
    // SAFETY: a descriptor this file opened and has not closed; the call reads no memory of ours.
    unsafe {
        libc::sync_file_range(database, 0, 0, libc::SYNC_FILE_RANGE_WRITE | libc::SYNC_FILE_RANGE_WAIT_AFTER);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = database;
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::{Connection, OpenFlags};

    /// A flush (or fsync) waits while a commit is under way, and goes on once it ends. Other tests'
    /// commits, at the same time, can only lengthen the wait, which [`LONGEST_WAIT`] bounds.
    #[test]
    fn the_checkpointer_waits_for_the_commit_under_way() {
        let commit = Committing::begin();
        let started = Instant::now();
        let checkpointer = std::thread::spawn(move || {
            after_commits();
            started.elapsed()
        });
        std::thread::sleep(Duration::from_millis(8));
        drop(commit);
        let waited = checkpointer.join().unwrap();
        assert!(waited >= Duration::from_millis(8), "went on during the commit, after {waited:?}");
        assert!(waited < LONGEST_WAIT + Duration::from_millis(200), "waited {waited:?}");
    }

    /// A database written through SQLite's own VFS, its WAL copied back through the paced one while
    /// the writer's connection stays open: same rows, an intact file, a flush as it goes.
    #[test]
    fn a_checkpoint_through_the_paced_vfs_copies_every_page_and_flushes_as_it_goes() {
        register().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("paced.sqlite");
        let writer = Connection::open(&path).unwrap();
        writer.pragma_update(None, "journal_mode", "WAL").unwrap();
        writer.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        writer.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, data BLOB NOT NULL)", []).unwrap();
        for id in 0..2_000 {
            writer.execute("INSERT INTO t (id, data) VALUES (?1, randomblob(4000))", [id]).unwrap();
        }
        let sample = |conn: &Connection| -> Vec<(i64, Vec<u8>)> {
            let mut rows = conn.prepare("SELECT id, data FROM t WHERE id % 97 = 0 ORDER BY id").unwrap();
            rows.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
        };
        let written = sample(&writer);

        let (flushed, written_before) = (FLUSHES.load(Ordering::Relaxed), written_bytes());
        let checkpointer = Connection::open_with_flags_and_vfs(&path, OpenFlags::default(), PACED).unwrap();
        let (busy, frames, copied): (i64, i64, i64) =
            checkpointer.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap();
        assert_eq!((busy, frames, copied), (0, 0, 0), "copied back and the WAL emptied");
        assert!(FLUSHES.load(Ordering::Relaxed) - flushed >= 120, "8 MB copied, a flush every 64 KiB");
        assert!(written_bytes() - written_before >= 8_000_000, "every page copied is counted");

        drop((writer, checkpointer));
        let reader = Connection::open(&path).unwrap();
        assert_eq!(reader.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0)).unwrap(), "ok");
        assert_eq!(reader.query_row("SELECT COUNT(*) FROM t", [], |r| r.get::<_, i64>(0)).unwrap(), 2_000);
        assert_eq!(sample(&reader), written);
    }

    /// The writer's connection through the gathered VFS: pages spilled in the middle of a transaction
    /// (gathered, then written when read back) read right; each commit is in the files once it returns,
    /// as a copy of them taken then (what a crash would leave) shows; a rollback leaves nothing.
    #[test]
    fn through_the_gathered_vfs_the_writer_reads_its_own_writes_and_every_commit_is_in_the_files() {
        register().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gathered.sqlite");
        let writer = Connection::open_with_flags_and_vfs(&path, OpenFlags::default(), GATHERED).unwrap();
        writer.pragma_update(None, "page_size", 1024).unwrap();
        writer.pragma_update(None, "journal_mode", "WAL").unwrap();
        writer.pragma_update(None, "synchronous", "FULL").unwrap();
        writer.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        writer.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, data BLOB NOT NULL)", []).unwrap();
        let wal = dir.path().join("gathered.sqlite-wal");
        let wal_bytes = || std::fs::metadata(&wal).unwrap().len();
        let reader = Connection::open(&path).unwrap();
        let count = |conn: &Connection| {
            conn.query_row("SELECT COUNT(*), COALESCE(SUM(length(data)), 0) FROM t", [], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))).unwrap()
        };

        const ROWS: i64 = 1_200;
        // A cache of 20 pages: a transaction of hundreds spills most of them to the WAL before it commits.
        // Of 4 000: nothing spills, and the commit writes 400 KB gathered.
        for (round, cache_pages) in [(0, 20), (1, 4_000), (2, 20), (3, 4_000), (4, 4_000)] {
            writer.pragma_update(None, "cache_size", cache_pages).unwrap();
            let before = wal_bytes();
            writer.execute_batch("BEGIN").unwrap();
            for id in round * ROWS..(round + 1) * ROWS {
                writer.execute("INSERT INTO t (id, data) VALUES (?1, randomblob(300))", [id]).unwrap();
            }
            let seen = count(&writer);
            assert_eq!(seen, ((round + 1) * ROWS, (round + 1) * ROWS * 300), "the writer reads its own writes");
            writer.execute_batch("COMMIT").unwrap();
            assert!(wal_bytes() > before + (ROWS * 300) as u64, "round {round}: written at the commit");
            assert_eq!(count(&reader), seen, "a reader sees each commit");

            // What a crash right after the commit would leave: the database and the WAL as they are now.
            let copy = tempfile::tempdir().unwrap();
            std::fs::copy(&path, copy.path().join("c.sqlite")).unwrap();
            std::fs::copy(&wal, copy.path().join("c.sqlite-wal")).unwrap();
            let recovered = Connection::open(copy.path().join("c.sqlite")).unwrap();
            assert_eq!(count(&recovered), seen, "round {round}: the commit is in the files");
            assert_eq!(recovered.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0)).unwrap(), "ok");
        }

        // A transaction rolled back after its pages spilled leaves nothing behind, and the next commits.
        writer.execute_batch("BEGIN").unwrap();
        for id in 100_000..100_000 + ROWS {
            writer.execute("INSERT INTO t (id, data) VALUES (?1, randomblob(300))", [id]).unwrap();
        }
        writer.execute_batch("ROLLBACK").unwrap();
        writer.execute("INSERT INTO t (id, data) VALUES (200000, randomblob(300))", []).unwrap();
        assert_eq!(count(&reader), (5 * ROWS + 1, (5 * ROWS + 1) * 300));
        let checked = writer.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get::<_, i64>(0)).unwrap();
        assert_eq!(checked, 0, "copied back whole");
        drop((writer, reader));
        let reopened = Connection::open(&path).unwrap();
        assert_eq!(count(&reopened), (5 * ROWS + 1, (5 * ROWS + 1) * 300));
        assert_eq!(reopened.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0)).unwrap(), "ok");
    }

    /// A write of a group that changes hundreds of pages in its savepoint (a settlement crediting many
    /// tickets) keeps the savepoint's journal in memory on a connection set up as the store's; as SQLite
    /// has it by default, the same write puts it in a temporary file, which the counter sees.
    #[test]
    fn a_savepoints_journal_stays_in_memory_on_the_stores_connections() {
        register().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let writer = Connection::open_with_flags_and_vfs(dir.path().join("temp.sqlite"), OpenFlags::default(), GATHERED).unwrap();
        writer.pragma_update(None, "journal_mode", "WAL").unwrap();
        writer.pragma_update(None, "synchronous", "FULL").unwrap();
        super::super::configure(&writer, 16).unwrap();
        writer.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, data BLOB NOT NULL)").unwrap();
        writer
            .execute("WITH RECURSIVE n(id) AS (SELECT 1 UNION ALL SELECT id + 1 FROM n WHERE id < 2000) INSERT INTO t SELECT id, randomblob(300) FROM n", [])
            .unwrap();

        let recorder = metrics_util::debugging::DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let temporary_files = || -> u64 {
            let counts = snapshotter.snapshot().into_hashmap();
            let counted = counts.iter().filter(|(key, _)| key.key().name() == "vegas_sqlite_temporary_files_total");
            counted.map(|(_, (.., value))| if let metrics_util::debugging::DebugValue::Counter(n) = value { *n } else { 0 }).sum()
        };
        let write_in_a_savepoint =
            || writer.execute_batch("BEGIN IMMEDIATE; SAVEPOINT write; UPDATE t SET data = randomblob(300); RELEASE write; COMMIT").unwrap();
        metrics::with_local_recorder(&recorder, || {
            write_in_a_savepoint();
            assert_eq!(temporary_files(), 0, "the journal of ~700 pages stayed in memory");
            writer.pragma_update(None, "temp_store", "DEFAULT").unwrap();
            write_in_a_savepoint();
            assert_eq!(temporary_files(), 1, "SQLite's default: in a file once past 64 KiB");
        });
        assert_eq!(writer.query_row("SELECT COUNT(*) FROM t", [], |r| r.get::<_, i64>(0)).unwrap(), 2000);
    }
}
