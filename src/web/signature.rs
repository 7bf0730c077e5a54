//! Ed25519 signatures checked by the browser's own WebCrypto, so that the game's download carries no
//! curve arithmetic or SHA-512 of its own. (The designers' preview signs its specimens with a
//! throw-away key, and checks them with [`crate::payload::verify`].)

use crate::payload::{PayloadError, SignedPayload};
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

/// Whether the payload's signature is its key's, by WebCrypto's Ed25519 (RFC 8032).
pub async fn check(signed: &SignedPayload<'_>) -> Result<(), PayloadError> {
    let public_key = signed.key.public_key()?;
    let unusable = |_| PayloadError::UnsupportedKey(signed.key.kid.clone());
    let subtle = web_sys::window().and_then(|w| w.crypto().ok()).ok_or(PayloadError::Signature)?.subtle();
    let usages = js_sys::Array::of1(&"verify".into());
    let raw = js_sys::Uint8Array::from(&public_key[..]);
    let key = JsFuture::from(subtle.import_key_with_str("raw", &raw, "Ed25519", false, &usages).map_err(unusable)?)
        .await
        .map_err(unusable)?;
    let checked = subtle
        .verify_with_str_and_u8_array_and_u8_array(
            "Ed25519",
            &key.unchecked_into(),
            &signed.signature,
            signed.signing_input.as_bytes(),
        )
        .map_err(|_| PayloadError::Signature)?;
    match JsFuture::from(checked).await.map(|valid| valid.as_bool()) {
        Ok(Some(true)) => Ok(()),
        _ => Err(PayloadError::Signature),
    }
}
