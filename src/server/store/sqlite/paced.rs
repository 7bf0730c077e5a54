//! A VFS for the checkpointer's connection only: SQLite's own (`unix`) for everything, except that
//! as a checkpoint copies pages into the database it has the kernel write them out 64 KiB at a time,
//! waits for each (`sync_file_range`, as PostgreSQL's checkpointer does with
//! `checkpoint_flush_after`), and starts none while the store's writer commits ([`Committing`]).
//!
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

use rusqlite::ffi;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The name a connection opens the database with to be paced.
pub const VFS: &CStr = c"vegas-paced";
/// Written by a checkpoint between two flushes: pages copied back land all over the file, so a flush
/// of 64 KiB is up to 64 writes for the disk, which a commit that comes during it waits behind.
const FLUSH_EVERY: i64 = 64 << 10;
/// A breath after each flush, in which the commits' fsyncs find the disk's queue empty.
const BREATH: Duration = Duration::from_micros(250);
/// The longest a flush waits for commits to end: under a stream of back-to-back commits the
/// checkpoint still moves on.
const LONGEST_WAIT: Duration = Duration::from_millis(20);
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
struct PacedFile {
    base: ffi::sqlite3_file,
    real: *mut ffi::sqlite3_file,
    /// The database file's descriptor, of our own (`sync_file_range` acts on the file, whichever
    /// descriptor names it); -1 for the WAL and the others, which are not paced.
    database: c_int,
    unflushed: i64,
}

/// Registers the VFS once (not as the default); an error if SQLite has no `unix` VFS to build on.
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
            // Everything but opening a file is the `unix` VFS's own, which does not look at the VFS it
            // is called on beyond what is copied here.
            let mut paced = *real;
            paced.szOsFile = (std::mem::size_of::<PacedFile>() as c_int) + (*real).szOsFile;
            paced.zName = VFS.as_ptr();
            paced.pAppData = real.cast();
            paced.pNext = std::ptr::null_mut();
            paced.xOpen = Some(open);
            match ffi::sqlite3_vfs_register(Box::into_raw(Box::new(paced)), 0) {
                ffi::SQLITE_OK => Ok(()),
                rc => Err(format!("cannot register the paced VFS: SQLite error {rc}")),
            }
        })
        .clone()
}

unsafe extern "C" fn open(vfs: *mut ffi::sqlite3_vfs, name: ffi::sqlite3_filename, file: *mut ffi::sqlite3_file, flags: c_int, out_flags: *mut c_int) -> c_int {
    unsafe {
        let real_vfs: *mut ffi::sqlite3_vfs = (*vfs).pAppData.cast();
        let paced: *mut PacedFile = file.cast();
        let real: *mut ffi::sqlite3_file = file.cast::<u8>().add(std::mem::size_of::<PacedFile>()).cast();
        (*paced).base.pMethods = std::ptr::null();
        let Some(real_open) = (*real_vfs).xOpen else { return ffi::SQLITE_CANTOPEN };
        let rc = real_open(real_vfs, name, real, flags, out_flags);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let database =
            if flags & ffi::SQLITE_OPEN_MAIN_DB != 0 && !name.is_null() { libc::open(name as *const c_char, libc::O_RDONLY | libc::O_CLOEXEC) } else { -1 };
        (*paced).real = real;
        (*paced).database = database;
        (*paced).unflushed = 0;
        (*paced).base.pMethods = &METHODS;
        rc
    }
}

/// The `unix` file behind ours, and its methods.
unsafe fn real(file: *mut ffi::sqlite3_file) -> (*mut ffi::sqlite3_file, &'static ffi::sqlite3_io_methods) {
    unsafe {
        let real = (*file.cast::<PacedFile>()).real;
        (real, &*(*real).pMethods)
    }
}

/// Calls the `unix` file's method, or answers `SQLITE_IOERR` if it has none.
macro_rules! forward {
    ($name:ident = $method:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file $(, $arg: $ty)*) -> $ret {
            unsafe {
                let (real, methods) = real(file);
                match methods.$method {
                    Some(method) => method(real $(, $arg)*),
                    None => ffi::SQLITE_IOERR,
                }
            }
        }
    };
}

forward!(read = xRead(buffer: *mut c_void, amount: c_int, offset: i64) -> c_int);
forward!(truncate = xTruncate(size: i64) -> c_int);
/// The pass's fsyncs (of the WAL before it copies, of the database after), once no commit is under way.
unsafe extern "C" fn sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    unsafe {
        let (real, methods) = real(file);
        after_commits();
        match methods.xSync {
            Some(method) => method(real, flags),
            None => ffi::SQLITE_IOERR,
        }
    }
}
forward!(file_size = xFileSize(size: *mut i64) -> c_int);
forward!(lock = xLock(level: c_int) -> c_int);
forward!(unlock = xUnlock(level: c_int) -> c_int);
forward!(check_reserved_lock = xCheckReservedLock(out: *mut c_int) -> c_int);
forward!(file_control = xFileControl(op: c_int, arg: *mut c_void) -> c_int);
forward!(sector_size = xSectorSize() -> c_int);
forward!(device_characteristics = xDeviceCharacteristics() -> c_int);
forward!(shm_map = xShmMap(region: c_int, size: c_int, extend: c_int, out: *mut *mut c_void) -> c_int);
forward!(shm_lock = xShmLock(offset: c_int, n: c_int, flags: c_int) -> c_int);
forward!(shm_unmap = xShmUnmap(delete: c_int) -> c_int);
forward!(fetch = xFetch(offset: i64, amount: c_int, out: *mut *mut c_void) -> c_int);
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
        let paced = file.cast::<PacedFile>();
        if (*paced).database >= 0 {
            libc::close((*paced).database);
            (*paced).database = -1;
        }
        let (real, methods) = real(file);
        methods.xClose.map_or(ffi::SQLITE_OK, |close| close(real))
    }
}

unsafe extern "C" fn write(file: *mut ffi::sqlite3_file, data: *const c_void, amount: c_int, offset: i64) -> c_int {
    unsafe {
        let (real, methods) = real(file);
        let Some(write) = methods.xWrite else { return ffi::SQLITE_IOERR };
        let rc = write(real, data, amount, offset);
        let paced = file.cast::<PacedFile>();
        if rc == ffi::SQLITE_OK && (*paced).database >= 0 {
            WRITTEN.fetch_add(amount as u64, Ordering::Relaxed);
            (*paced).unflushed += i64::from(amount);
            if (*paced).unflushed >= FLUSH_EVERY {
                (*paced).unflushed = 0;
                FLUSHES.fetch_add(1, Ordering::Relaxed);
                after_commits();
                flush((*paced).database);
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
        let checkpointer = Connection::open_with_flags_and_vfs(&path, OpenFlags::default(), VFS).unwrap();
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
}
