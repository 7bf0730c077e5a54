//! The `vegas` binary: the ticket server and its administration commands (`cli`). The web app is a
//! binary of its own, built for wasm32 by Trunk (`src/bin/vegas-web.rs`); for wasm32 this one is empty.
#![cfg_attr(target_arch = "wasm32", no_main)]

#[cfg(not(target_arch = "wasm32"))]
mod cli;

/// The server allocates and frees small buffers on every request from several threads at once, where
/// mimalloc spends less than the system allocator.
#[cfg(not(target_arch = "wasm32"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    // The fail points `FAILPOINTS` sets (`make bench-soak-stalls`), for the whole run.
    #[cfg(feature = "failpoints")]
    let _fail_points = fail::FailScenario::setup();
    match cli::run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vegas: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
