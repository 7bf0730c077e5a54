//! The web app's entry point, built for wasm32 by Trunk (`index.html` and the pages built apart).
#![cfg_attr(not(target_arch = "wasm32"), allow(unused))]

/// See `Cargo.toml`: talc instead of dlmalloc in the browser.
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

#[cfg(target_arch = "wasm32")]
fn main() {
    vegas::web::start();
}

/// Natively there is no web app to start: it runs in a browser.
#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("vegas-web is the web app: build it for wasm32 with Trunk (`make dist`)");
    std::process::exit(2);
}
