//! The bundled SQLite's build flag this engine is measured with, which `.cargo/config.toml` gives the
//! crate that compiles it (`LIBSQLITE3_FLAGS`): without `SQLITE_ENABLE_MEMORY_MANAGEMENT`, each
//! connection has its own page cache instead of one shared by all behind a global mutex, which the writer
//! took for every page beside the readers. A build made elsewhere without it sells about 10 % fewer
//! tickets a second under many players (`docs/benchmarks.md`), so the store refuses to open on one.

use crate::server::store::StoreError;
use std::ffi::CStr;

const UNIFIED_PAGE_CACHE: &CStr = c"ENABLE_MEMORY_MANAGEMENT";

/// Refuses a SQLite built with one page cache for all connections.
pub(super) fn check() -> Result<(), StoreError> {
    // SAFETY: a NUL-terminated literal, which the call only reads.
    let unified = unsafe { rusqlite::ffi::sqlite3_compileoption_used(UNIFIED_PAGE_CACHE.as_ptr()) } != 0;
    refusal(unified).map_or(Ok(()), |why| Err(StoreError::Backend(why)))
}

/// What the operator reads if SQLite was built with the unified page cache.
fn refusal(unified: bool) -> Option<String> {
    unified.then(|| {
        "this build's SQLite was compiled with SQLITE_ENABLE_MEMORY_MANAGEMENT (one page cache behind a global \
         mutex): build Vegas from its own directory, whose .cargo/config.toml sets LIBSQLITE3_FLAGS"
            .to_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::{check, refusal};

    #[test]
    fn this_build_has_a_page_cache_per_connection() {
        check().unwrap();
    }

    #[test]
    fn a_build_with_sqlites_unified_page_cache_is_named_and_refused() {
        let why = refusal(true).unwrap();
        assert!(why.contains("SQLITE_ENABLE_MEMORY_MANAGEMENT") && why.contains("LIBSQLITE3_FLAGS"), "{why}");
        assert_eq!(refusal(false), None);
    }
}
