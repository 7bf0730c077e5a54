//! The `vegas` binary: the ticket server natively, the web game in the browser (wasm32).

#[cfg(not(target_arch = "wasm32"))]
fn main() {}

#[cfg(target_arch = "wasm32")]
fn main() {}
