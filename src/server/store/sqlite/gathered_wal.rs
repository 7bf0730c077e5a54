//! Opt-in (`--features sqlite-gathered-wal`): the writer's appends to the WAL reach the kernel when its
//! commit syncs the WAL, in writes of up to 64 KiB, instead of two small ones per page (a frame's header,
//! then its page) — a VFS of SQLite's own `unix` with only that changed. It is safe only where each commit
//! syncs the WAL before the WAL's index tells any reader of the new frames, that is with
//! `synchronous=FULL`, which [`open`] sets and [`check`] asserts. Every other call on the WAL (a read, its
//! size, a truncation) sees the gathered bytes written first; a crash loses only bytes no commit synced,
//! which SQLite never counted on. What it gains is in docs/benchmarks.md.

use super::StoreError;
use rusqlite::{Connection, OpenFlags, ffi};
use std::ffi::{CStr, c_int, c_void};
use std::sync::OnceLock;

/// The name the writer's connection opens the database with.
const NAME: &CStr = c"vegas-gathered-wal";
/// The most gathered before it is written out, commit or not.
const GATHER_AT_MOST: usize = 1 << 20;
/// The most the `unix` VFS writes in one call (it takes only the low 17 bits of a length).
const WRITE_AT_MOST: usize = 64 << 10;
/// `PRAGMA synchronous`'s value for FULL.
const FULL: i64 = 2;

/// The writer's connection to the store in `path`, through this VFS, with `synchronous=FULL`.
pub fn open(path: &std::path::Path) -> Result<Connection, StoreError> {
    register()?;
    let conn = Connection::open_with_flags_and_vfs(path, OpenFlags::default(), NAME)?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    check(&conn)?;
    Ok(conn)
}

/// Refuses a connection on which gathering would let readers see frames not yet written.
pub fn check(conn: &Connection) -> Result<(), StoreError> {
    let level: i64 = conn.pragma_query_value(None, "synchronous", |r| r.get(0))?;
    if level == FULL {
        Ok(())
    } else {
        Err(StoreError::Backend(format!(
            "the gathered WAL needs synchronous=FULL, and this connection has synchronous={level}"
        )))
    }
}

/// SQLite's file object for one open file: ours in front, the `unix` VFS's right after it.
#[repr(C)]
struct ShimFile {
    base: ffi::sqlite3_file,
    real: *mut ffi::sqlite3_file,
    /// The WAL's appends not yet written; null for every other file.
    gathered: *mut Gathered,
}

/// Bytes for the file from offset `at` on, in one piece.
#[derive(Default)]
struct Gathered {
    at: i64,
    bytes: Vec<u8>,
}

/// Registers the VFS once (not as the default); an error if SQLite has no `unix` VFS to build on.
fn register() -> Result<(), StoreError> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            // SAFETY: SQLite's registry functions, called once; the VFS registered is a copy of `unix`'s
            // that lives for the process (leaked on purpose), with only `xOpen` ours.
            unsafe {
                let real = ffi::sqlite3_vfs_find(c"unix".as_ptr());
                if real.is_null() {
                    return Err("SQLite has no unix VFS".into());
                }
                // Everything but opening a file is the `unix` VFS's own, which does not look at the VFS it
                // is called on beyond what is copied here.
                let mut ours = *real;
                ours.szOsFile = (std::mem::size_of::<ShimFile>() as c_int) + (*real).szOsFile;
                ours.zName = NAME.as_ptr();
                ours.pAppData = real.cast();
                ours.pNext = std::ptr::null_mut();
                ours.xOpen = Some(open_file);
                match ffi::sqlite3_vfs_register(Box::into_raw(Box::new(ours)), 0) {
                    ffi::SQLITE_OK => Ok(()),
                    rc => Err(format!("cannot register the gathered-WAL VFS: SQLite error {rc}")),
                }
            }
        })
        .clone()
        .map_err(StoreError::Backend)
}

unsafe extern "C" fn open_file(
    vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: SQLite hands a block of `szOsFile` bytes, ours first, then room for the `unix` file.
    unsafe {
        let real_vfs: *mut ffi::sqlite3_vfs = (*vfs).pAppData.cast();
        let shim: *mut ShimFile = file.cast();
        let real: *mut ffi::sqlite3_file = file.cast::<u8>().add(std::mem::size_of::<ShimFile>()).cast();
        (*shim).base.pMethods = std::ptr::null();
        let Some(real_open) = (*real_vfs).xOpen else { return ffi::SQLITE_CANTOPEN };
        let rc = real_open(real_vfs, name, real, flags, out_flags);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let gathered = if flags & ffi::SQLITE_OPEN_WAL != 0 {
            Box::into_raw(Box::new(Gathered::default()))
        } else {
            std::ptr::null_mut()
        };
        // The memory is SQLite's, not initialized: written, not assigned.
        std::ptr::write(&raw mut (*shim).real, real);
        std::ptr::write(&raw mut (*shim).gathered, gathered);
        (*shim).base.pMethods = &METHODS;
        rc
    }
}

/// The `unix` file behind ours, and its methods.
unsafe fn real(file: *mut ffi::sqlite3_file) -> (*mut ffi::sqlite3_file, &'static ffi::sqlite3_io_methods) {
    // SAFETY: `file` is one of ours, opened by `open_file`, whose `real` is an open `unix` file.
    unsafe {
        let real = (*file.cast::<ShimFile>()).real;
        (real, &*(*real).pMethods)
    }
}

/// Writes out what was gathered for this file, if anything: before anything else is asked of it, so
/// that no call sees the file without those bytes.
unsafe fn write_gathered(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: as in `real`; `gathered` is ours, used only on the thread SQLite calls the file on.
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

/// Calls the `unix` file's method (`SQLITE_IOERR` if it has none); for a method that reads, measures,
/// syncs or cuts the file (`after_gathered`), once the gathered bytes are written.
macro_rules! forward {
    ($name:ident = $method:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty) => {
        forward!(@ $name = $method ( $($arg : $ty),* ) -> $ret, false);
    };
    (after_gathered $name:ident = $method:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty) => {
        forward!(@ $name = $method ( $($arg : $ty),* ) -> $ret, true);
    };
    (@ $name:ident = $method:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty, $after_gathered:literal) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file $(, $arg: $ty)*) -> $ret {
            // SAFETY: SQLite calls a method on a file `open_file` opened, with the arguments of `unix`'s.
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
forward!(after_gathered sync = xSync(flags: c_int) -> c_int);
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
    // SAFETY: as in `real`.
    unsafe {
        let (real, methods) = real(file);
        if let Some(barrier) = methods.xShmBarrier {
            barrier(real);
        }
    }
}

unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: as in `real`; the gathered bytes are freed once, here, and the pointer cleared.
    unsafe {
        let written = write_gathered(file);
        let shim = file.cast::<ShimFile>();
        if !(*shim).gathered.is_null() {
            drop(Box::from_raw((*shim).gathered));
            (*shim).gathered = std::ptr::null_mut();
        }
        let (real, methods) = real(file);
        let closed = methods.xClose.map_or(ffi::SQLITE_OK, |close| close(real));
        if written != ffi::SQLITE_OK { written } else { closed }
    }
}

unsafe extern "C" fn write(file: *mut ffi::sqlite3_file, data: *const c_void, amount: c_int, offset: i64) -> c_int {
    // SAFETY: as in `write_gathered`; `data` holds `amount` bytes for the length of the call.
    unsafe {
        if let Some(gathered) = (*file.cast::<ShimFile>()).gathered.as_mut() {
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
        match methods.xWrite {
            Some(write) => write(real, data, amount, offset),
            None => ffi::SQLITE_IOERR,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Gathering is refused on a connection whose commits do not sync the WAL.
    #[test]
    fn a_connection_without_full_sync_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open(&dir.path().join("normal.sqlite")).unwrap();
        conn.pragma_update(None, "synchronous", "NORMAL").unwrap();
        let refused = check(&conn).unwrap_err().to_string();
        assert!(refused.contains("synchronous=FULL"), "{refused}");
        conn.pragma_update(None, "synchronous", "FULL").unwrap();
        check(&conn).unwrap();
    }

    /// The writer's connection through this VFS: pages spilled in the middle of a transaction (gathered,
    /// then written when read back) read right; each commit is in the files once it returns, as a copy
    /// of them taken then (what a crash would leave) shows; a rollback leaves nothing.
    #[test]
    fn the_writer_reads_its_own_writes_and_every_commit_is_in_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gathered.sqlite");
        let writer = open(&path).unwrap();
        writer.pragma_update(None, "page_size", 1024).unwrap();
        writer.pragma_update(None, "journal_mode", "WAL").unwrap();
        writer.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        writer.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, data BLOB NOT NULL)", []).unwrap();
        let wal = dir.path().join("gathered.sqlite-wal");
        let wal_bytes = || std::fs::metadata(&wal).unwrap().len();
        let reader = Connection::open(&path).unwrap();
        let count = |conn: &Connection| {
            conn.query_row("SELECT COUNT(*), COALESCE(SUM(length(data)), 0) FROM t", [], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
            })
            .unwrap()
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
}
