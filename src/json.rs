//! JSON, by the parser at hand: serde_json natively; in the browser, the browser's own `JSON` through
//! serde-wasm-bindgen, so that the game's download carries no JSON parser or number formatter of its
//! own. The same serde types are read and written either way.

use serde::Serialize;
use serde::de::DeserializeOwned;

#[cfg(not(target_arch = "wasm32"))]
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

#[cfg(not(target_arch = "wasm32"))]
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> Result<String, String> {
    serde_json::to_string(value).map_err(|e| e.to_string())
}

#[cfg(target_arch = "wasm32")]
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    let value = js_sys::JSON::parse(text).map_err(|_| "not JSON".to_owned())?;
    serde_wasm_bindgen::from_value(value).map_err(|e| e.to_string())
}

#[cfg(target_arch = "wasm32")]
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> Result<String, String> {
    // Maps as objects and no BigInt: what JSON can hold.
    let value = value.serialize(&serde_wasm_bindgen::Serializer::json_compatible()).map_err(|e| e.to_string())?;
    js_sys::JSON::stringify(&value).map(String::from).map_err(|_| "not JSON".to_owned())
}

pub fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    from_str(std::str::from_utf8(bytes).map_err(|e| e.to_string())?)
}
