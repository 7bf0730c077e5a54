//! SQLite's own page cache, with one needless scan of it removed.
//!
//! When a B-tree page splits, SQLite puts the new pages in ascending order by swapping them through a
//! page number no database uses (the lock page: with 1 KiB pages, 1 048 577). The default page cache
//! remembers the largest page number it has held; at the end of the transaction it is told to drop
//! the pages past the database's end, sees that number above it, and, the gap being wider than its
//! hash table, visits every page it holds. On the writer, whose 16 MiB cache holds ~15 000 pages, that
//! walk ran at nearly every commit of a sale: 15 % of the writer's CPU in `make bench-soak`
//! (`perf record --call-graph dwarf` on the writer: `pcache1TruncateUnsafe` under
//! `pager_end_transaction`), until the database outgrows the lock page's offset (1 GiB).
//!
//! So every connection's cache is SQLite's default one behind a thin layer that keeps the largest
//! page number itself, not counting the swap, and does not pass on a truncation that has nothing
//! above it to drop. Everything else goes straight to the default cache.

use rusqlite::ffi;
use std::ffi::{c_int, c_uint};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where SQLite's lock bytes start in the file; the page holding them is never used by a database.
const PENDING_BYTE: c_uint = 0x4000_0000;

/// SQLite's default page cache, as it was before this one was installed.
struct Default(ffi::sqlite3_pcache_methods2);

// SAFETY: the methods are plain functions and `pArg` is SQLite's own global, which SQLite's functions
// use under their own locks; the copy is only read.
unsafe impl Sync for Default {}
unsafe impl Send for Default {}

static DEFAULT: OnceLock<Option<Default>> = OnceLock::new();

/// Truncations not passed on that the default cache would have run for the swap's page number.
static WALKS_AVOIDED: AtomicU64 = AtomicU64::new(0);

/// One connection's cache: the default one inside, and what this layer knows about the page numbers.
struct Cache {
    inner: *mut ffi::sqlite3_pcache,
    /// At least every page number the cache holds, the swap's aside.
    highest: c_uint,
    /// The lock page's number for this page size, through which SQLite swaps pages.
    swap: c_uint,
    /// A page went through `swap` since the last truncation passed on (the default cache's own
    /// largest number is then `swap`).
    swapped: bool,
}

/// Installs the layer for every SQLite connection the process opens from now on. SQLite takes it only
/// before it has started (any connection opened or VFS registered starts it), so the server calls this
/// first thing, and the store again when it opens (for tests and tools); once started without it,
/// SQLite keeps its default cache, which is only slower. Returns whether the layer is in place.
pub fn install() -> bool {
    DEFAULT
        .get_or_init(|| {
            let mut default = std::mem::MaybeUninit::<ffi::sqlite3_pcache_methods2>::zeroed();
            // SAFETY: GETPCACHE2 writes the current methods (SQLite's default) into the struct given.
            let got = unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_GETPCACHE2, default.as_mut_ptr()) };
            if got != ffi::SQLITE_OK {
                tracing::debug!(code = got, "SQLite has started: its default page cache stays");
                return None;
            }
            // SAFETY: written by SQLite just above.
            let default = unsafe { default.assume_init() };
            let layered = ffi::sqlite3_pcache_methods2 {
                xCreate: Some(create),
                xCachesize: Some(cache_size),
                xPagecount: Some(page_count),
                xFetch: Some(fetch),
                xUnpin: Some(unpin),
                xRekey: Some(rekey),
                xTruncate: Some(truncate),
                xDestroy: Some(destroy),
                xShrink: Some(shrink),
                ..default
            };
            // Set before SQLite can call any of the functions below, which read it.
            let kept = Default(default);
            // SAFETY: PCACHE2 copies the struct given; its functions are defined below.
            let set = unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_PCACHE2, &layered as *const ffi::sqlite3_pcache_methods2) };
            if set != ffi::SQLITE_OK {
                tracing::debug!(code = set, "SQLite has started: its default page cache stays");
                return None;
            }
            Some(kept)
        })
        .is_some()
}

/// How many truncations the layer kept from walking a cache (`vegas_sqlite_cache_walks_avoided_total`).
pub fn walks_avoided() -> u64 {
    WALKS_AVOIDED.load(Ordering::Relaxed)
}

fn default() -> &'static ffi::sqlite3_pcache_methods2 {
    // Only reached through the layer's functions, which SQLite has only once `install` succeeded.
    &DEFAULT.get().and_then(Option::as_ref).expect("the page cache layer is installed").0
}

/// # Safety
/// `cache` is a pointer `create` returned and `destroy` has not yet freed.
unsafe fn cache<'a>(cache: *mut ffi::sqlite3_pcache) -> &'a mut Cache {
    // SAFETY: per the function's contract; SQLite calls a cache's methods from one connection at a time.
    unsafe { &mut *cache.cast::<Cache>() }
}

unsafe extern "C" fn create(page_size: c_int, extra: c_int, purgeable: c_int) -> *mut ffi::sqlite3_pcache {
    // SAFETY: SQLite's own arguments, passed on.
    let inner = unsafe { default().xCreate.expect("xCreate")(page_size, extra, purgeable) };
    if inner.is_null() {
        return inner;
    }
    let swap = PENDING_BYTE / c_uint::try_from(page_size).unwrap_or(1).max(1) + 1;
    Box::into_raw(Box::new(Cache { inner, highest: 0, swap, swapped: false })).cast()
}

unsafe extern "C" fn cache_size(c: *mut ffi::sqlite3_pcache, pages: c_int) {
    // SAFETY: `c` is one of ours (SQLite's contract), its inner cache the default one's.
    unsafe { default().xCachesize.expect("xCachesize")(cache(c).inner, pages) }
}

unsafe extern "C" fn page_count(c: *mut ffi::sqlite3_pcache) -> c_int {
    // SAFETY: as in `cache_size`.
    unsafe { default().xPagecount.expect("xPagecount")(cache(c).inner) }
}

unsafe extern "C" fn fetch(c: *mut ffi::sqlite3_pcache, key: c_uint, create: c_int) -> *mut ffi::sqlite3_pcache_page {
    // SAFETY: as in `cache_size`.
    let cache = unsafe { cache(c) };
    // SAFETY: as in `cache_size`.
    let page = unsafe { default().xFetch.expect("xFetch")(cache.inner, key, create) };
    if !page.is_null() {
        cache.highest = cache.highest.max(key);
    }
    page
}

unsafe extern "C" fn unpin(c: *mut ffi::sqlite3_pcache, page: *mut ffi::sqlite3_pcache_page, discard: c_int) {
    // SAFETY: as in `cache_size`; `page` is SQLite's, passed on.
    unsafe { default().xUnpin.expect("xUnpin")(cache(c).inner, page, discard) }
}

unsafe extern "C" fn rekey(c: *mut ffi::sqlite3_pcache, page: *mut ffi::sqlite3_pcache_page, old: c_uint, new: c_uint) {
    // SAFETY: as in `unpin`.
    let cache = unsafe { cache(c) };
    // SAFETY: as in `unpin`.
    unsafe { default().xRekey.expect("xRekey")(cache.inner, page, old, new) };
    if new == cache.swap {
        // The page leaves this number again within the same split (`balance_nonroot`), before any
        // truncation: it is not counted in `highest`.
        cache.swapped = true;
    } else {
        cache.highest = cache.highest.max(new);
    }
}

unsafe extern "C" fn truncate(c: *mut ffi::sqlite3_pcache, limit: c_uint) {
    // SAFETY: as in `cache_size`.
    let cache = unsafe { cache(c) };
    if limit > cache.highest {
        // Nothing at or above `limit`: the default cache would only have walked its pages to find that.
        if std::mem::take(&mut cache.swapped) && limit <= cache.swap {
            WALKS_AVOIDED.fetch_add(1, Ordering::Relaxed);
        }
        return;
    }
    // SAFETY: as in `cache_size`.
    unsafe { default().xTruncate.expect("xTruncate")(cache.inner, limit) };
    cache.highest = limit.saturating_sub(1);
    cache.swapped = false;
}

unsafe extern "C" fn destroy(c: *mut ffi::sqlite3_pcache) {
    // SAFETY: `c` came from `Box::into_raw` in `create` and SQLite destroys a cache once.
    let cache = unsafe { Box::from_raw(c.cast::<Cache>()) };
    // SAFETY: the default cache's own pointer, destroyed once.
    unsafe { default().xDestroy.expect("xDestroy")(cache.inner) }
}

unsafe extern "C" fn shrink(c: *mut ffi::sqlite3_pcache) {
    // SAFETY: as in `cache_size`.
    unsafe { default().xShrink.expect("xShrink")(cache(c).inner) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use rusqlite::Connection;
    use std::collections::BTreeMap;

    fn database(dir: &tempfile::TempDir, cache_pages: i64) -> Connection {
        assert!(install(), "the layer is installed before any test starts SQLite");
        let conn = Connection::open(dir.path().join("cache.sqlite3")).unwrap();
        conn.pragma_update(None, "page_size", 1024).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.pragma_update(None, "cache_size", cache_pages).unwrap();
        // Random keys, as the per-player indexes have: pages split in the middle of the tree.
        conn.execute_batch("CREATE TABLE t (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID").unwrap();
        conn
    }

    fn rows(conn: &Connection) -> BTreeMap<Vec<u8>, Vec<u8>> {
        let mut rows = conn.prepare("SELECT k, v FROM t").unwrap();
        rows.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
    }

    /// The swap SQLite makes in a split is seen, and the commit's truncation that would have walked
    /// the whole cache for it is not passed on.
    #[test]
    fn a_commit_after_splits_does_not_walk_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let conn = database(&dir, 16_000);
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let avoided = walks_avoided();
        for _ in 0..20 {
            conn.execute_batch("BEGIN").unwrap();
            for _ in 0..200 {
                conn.execute("INSERT INTO t (k, v) VALUES (?1, zeroblob(60))", [rng.random::<[u8; 16]>()]).unwrap();
            }
            conn.execute_batch("COMMIT").unwrap();
        }
        assert!(walks_avoided() > avoided, "20 commits of 200 random keys swap pages in their splits");
        assert_eq!(conn.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0)).unwrap(), "ok");
        assert_eq!(rows(&conn).len(), 4_000);
    }

    /// Through the layer, the database reads back exactly what was committed, against a model of the
    /// table: growth rolled back (pages past the end dropped), savepoints rolled back, deletes that
    /// free pages for later splits, with a cache that holds everything and one so small that its pages
    /// are recycled.
    #[test]
    fn rolled_back_growth_and_savepoints_leave_exactly_what_was_committed() {
        for cache_pages in [16_000, 20] {
            let dir = tempfile::tempdir().unwrap();
            let conn = database(&dir, cache_pages);
            let mut rng = ChaCha8Rng::seed_from_u64(cache_pages as u64);
            let mut committed: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
            for _ in 0..60 {
                let mut pending = committed.clone();
                conn.execute_batch("BEGIN").unwrap();
                for _ in 0..rng.random_range(1..6) {
                    let mut within = pending.clone();
                    conn.execute_batch("SAVEPOINT s").unwrap();
                    for _ in 0..rng.random_range(1..80) {
                        if rng.random_bool(0.25) && !within.is_empty() {
                            let k: Vec<u8> = within.keys().nth(rng.random_range(0..within.len())).unwrap().clone();
                            conn.execute("DELETE FROM t WHERE k = ?1", [&k]).unwrap();
                            within.remove(&k);
                        } else {
                            let (k, v) = (rng.random::<[u8; 16]>().to_vec(), vec![rng.random::<u8>(); rng.random_range(1..300)]);
                            conn.execute("INSERT INTO t (k, v) VALUES (?1, ?2)", (&k, &v)).unwrap();
                            within.insert(k, v);
                        }
                    }
                    if rng.random_bool(0.3) {
                        conn.execute_batch("ROLLBACK TO s; RELEASE s").unwrap();
                    } else {
                        conn.execute_batch("RELEASE s").unwrap();
                        pending = within;
                    }
                }
                if rng.random_bool(0.3) {
                    conn.execute_batch("ROLLBACK").unwrap();
                } else {
                    conn.execute_batch("COMMIT").unwrap();
                    committed = pending;
                }
                assert_eq!(rows(&conn), committed, "cache of {cache_pages} pages");
            }
            assert_eq!(conn.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0)).unwrap(), "ok");
            drop(conn);
            let reopened = Connection::open(dir.path().join("cache.sqlite3")).unwrap();
            assert_eq!(rows(&reopened), committed, "read back from the file, cache of {cache_pages} pages");
        }
    }
}
