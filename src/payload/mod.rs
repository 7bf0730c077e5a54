//! The signed ticket payload: what the server hands a player and the browser checks before drawing.
//!
//! Format (version 1): a compact JWS (RFC 7515) signed with Ed25519 (`alg` `EdDSA`, RFC 8037), so that
//! any JOSE library can check it. The protected header is `{"alg":"EdDSA","kid":…,"typ":"vegas-ticket+jwt"}`;
//! `kid` is the RFC 7638 thumbprint of the public key, published in a JWKS. The claims are
//! [`TicketClaims`]: JWT's `jti` (ticket id), `sub` (owner) and `iat` (time of sale, Unix seconds),
//! then `v` (format version), `serial` (emission, block, index), `zones` (the twelve zones' symbols,
//! as [`Ticket`] serialises them), `lot_cents`, `salt` (the ticket's Merkle leaf salt, in hex, which
//! its inclusion proof needs; absent for blocks of scheme 1) and `qa` (true only for a QA deck's test
//! ticket, which no real-money game accepts).
//!
//! [`verify`] returns the ticket only if the signature is valid for a published key AND the evaluator,
//! reading the zones, finds exactly the signed lot: a signed ticket is never trusted on its word.

use crate::money::Cents;
use crate::rules::{InvalidTicket, Outcome, Ticket};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;

pub const FORMAT_VERSION: u32 = 2;
pub const JWS_TYPE: &str = "vegas-ticket+jwt";

/// Where a ticket sits: emission, block of the emission, index in the block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Serial {
    pub emission: u32,
    pub block: u32,
    pub index: u32,
}

/// Printed on the ticket, e.g. `E1-B3-0012345`.
impl fmt::Display for Serial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "E{}-B{}-{:07}", self.emission, self.block, self.index)
    }
}

/// Text that is not a serial as printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotASerial;

/// Reads a serial as a player copies it off a ticket: `E1-B3-0012345`, in either case, with or
/// without the index's leading zeros, spaces around it ignored.
impl std::str::FromStr for Serial {
    type Err = NotASerial;

    fn from_str(text: &str) -> Result<Serial, NotASerial> {
        let digits = |part: &str| {
            if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) { part.parse().ok() } else { None }
        };
        let tagged = |part: &str, tag: char| {
            part.strip_prefix(tag).or_else(|| part.strip_prefix(tag.to_ascii_lowercase())).and_then(digits)
        };
        let mut parts = text.trim().split('-');
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(emission), Some(block), Some(index), None) => Ok(Serial {
                emission: tagged(emission, 'E').ok_or(NotASerial)?,
                block: tagged(block, 'B').ok_or(NotASerial)?,
                index: digits(index).ok_or(NotASerial)?,
            }),
            _ => Err(NotASerial),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TicketClaims {
    pub v: u32,
    /// The ticket's id at the server.
    pub jti: String,
    /// The player who bought it.
    pub sub: String,
    /// Time of sale, Unix seconds.
    pub iat: i64,
    pub serial: Serial,
    pub zones: Ticket,
    pub lot_cents: Cents,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub salt: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub qa: bool,
}

#[derive(Debug, Serialize, Deserialize)]
struct Header {
    alg: String,
    kid: String,
    #[serde(default)]
    typ: Option<String>,
}

/// A public key as a JWK (RFC 8037: `kty` OKP, `crv` Ed25519).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(utoipa::ToSchema))]
pub struct Jwk {
    pub kty: String,
    pub crv: String,
    pub x: String,
    pub kid: String,
    #[serde(default)]
    pub alg: Option<String>,
    #[serde(rename = "use", default)]
    pub use_: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(utoipa::ToSchema))]
pub struct Jwks {
    pub keys: Vec<Jwk>,
}

impl Jwk {
    pub fn from_key(key: &VerifyingKey) -> Jwk {
        let x = B64.encode(key.as_bytes());
        Jwk {
            kid: thumbprint(&x),
            kty: "OKP".into(),
            crv: "Ed25519".into(),
            x,
            alg: Some("EdDSA".into()),
            use_: Some("sig".into()),
        }
    }

    /// The raw Ed25519 public key (RFC 8037 `x`).
    pub fn public_key(&self) -> Result<[u8; 32], PayloadError> {
        if self.kty != "OKP" || self.crv != "Ed25519" {
            return Err(PayloadError::UnsupportedKey(self.kid.clone()));
        }
        decode64(&self.x).and_then(|b| b.try_into().ok()).ok_or_else(|| PayloadError::UnsupportedKey(self.kid.clone()))
    }

    fn verifying_key(&self) -> Result<VerifyingKey, PayloadError> {
        VerifyingKey::from_bytes(&self.public_key()?).map_err(|_| PayloadError::UnsupportedKey(self.kid.clone()))
    }
}

/// Unpadded base64url (RFC 7515) decoded: by the base64 crate natively; in the browser by its own
/// `Uint8Array.fromBase64`, so that the game's download carries no decoder of its own.
#[cfg(not(target_arch = "wasm32"))]
fn decode64(text: &str) -> Option<Vec<u8>> {
    B64.decode(text).ok()
}

#[cfg(target_arch = "wasm32")]
fn decode64(text: &str) -> Option<Vec<u8>> {
    // Padding and whitespace are refused, as by the crate: `fromBase64` itself would skip them.
    if text.bytes().any(|b| !(b.is_ascii_alphanumeric() || b == b'-' || b == b'_')) {
        return None;
    }
    let options = js_sys::Base64Options::new();
    options.set_alphabet(js_sys::Base64Alphabet::Base64Url);
    js_sys::Uint8Array::from_base64_with_options(text, &options).ok().map(|bytes| bytes.to_vec())
}

/// RFC 7638 thumbprint: SHA-256 of the required members in lexicographic order, base64url.
fn thumbprint(x: &str) -> String {
    let canonical = format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}"#);
    B64.encode(Sha256::digest(canonical.as_bytes()))
}

/// The server's signing key and its key id.
pub struct TicketSigner {
    key: SigningKey,
    kid: String,
}

impl TicketSigner {
    pub fn from_secret(secret: [u8; 32]) -> TicketSigner {
        let key = SigningKey::from_bytes(&secret);
        let kid = Jwk::from_key(&key.verifying_key()).kid;
        TicketSigner { key, kid }
    }

    pub fn kid(&self) -> &str {
        &self.kid
    }

    pub fn jwk(&self) -> Jwk {
        Jwk::from_key(&self.key.verifying_key())
    }

    pub fn jwks(&self) -> Jwks {
        Jwks { keys: vec![self.jwk()] }
    }

    /// Signs the claims as a compact JWS.
    pub fn sign(&self, claims: &TicketClaims) -> String {
        let header = Header { alg: "EdDSA".into(), kid: self.kid.clone(), typ: Some(JWS_TYPE.into()) };
        let input = format!("{}.{}", b64_json(&header), b64_json(claims));
        let signature = self.key.sign(input.as_bytes());
        format!("{input}.{}", B64.encode(signature.to_bytes()))
    }
}

/// One JWS part; serialising these plain structs cannot fail.
fn b64_json<T: Serialize>(value: &T) -> String {
    B64.encode(crate::json::to_string(value).expect("plain structs serialise"))
}

/// A payload that passed every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedTicket {
    pub claims: TicketClaims,
    pub outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PayloadError {
    #[error("the payload is not a compact JWS: {0}")]
    Malformed(&'static str),
    #[error("the payload's algorithm « {0} » is not EdDSA")]
    Algorithm(String),
    #[error("no published key has the id « {0} »")]
    UnknownKey(String),
    #[error("the key « {0} » is not a usable Ed25519 key")]
    UnsupportedKey(String),
    #[error("the signature does not match the payload")]
    Signature,
    #[error("the ticket claims are not readable: {0}")]
    Claims(String),
    #[error("ticket format version {0} is not supported (this build reads version {FORMAT_VERSION})")]
    Version(u32),
    #[error("the ticket is not valid: {0}")]
    InvalidTicket(#[from] InvalidTicket),
    #[error("the ticket is signed for a lot of {signed} but its symbols read {read}")]
    LotMismatch { signed: Cents, read: Cents },
    #[error(
        "the ticket is not in its block as committed before the sale: its inclusion proof does not lead to the \
            published root"
    )]
    NotCommitted,
}

/// Checks a payload against the published keys, then re-reads its lot with the evaluator.
pub fn verify(token: &str, jwks: &Jwks) -> Result<VerifiedTicket, PayloadError> {
    let signed = SignedPayload::read(token, jwks)?;
    signed
        .key
        .verifying_key()?
        .verify_strict(signed.signing_input.as_bytes(), &Signature::from_bytes(&signed.signature))
        .map_err(|_| PayloadError::Signature)?;
    signed.open()
}

/// A payload taken apart, its key found: what a signature check needs, and the claims to open once it
/// has passed. [`verify`] checks the signature here; the game has the browser check it (WebCrypto).
pub struct SignedPayload<'a> {
    pub key: &'a Jwk,
    /// The JWS signing input: the header and claims as sent, in base64url.
    pub signing_input: &'a str,
    pub signature: [u8; 64],
    claims64: &'a str,
}

impl<'a> SignedPayload<'a> {
    pub fn read(token: &'a str, jwks: &'a Jwks) -> Result<SignedPayload<'a>, PayloadError> {
        let mut parts = token.split('.');
        let (Some(header64), Some(claims64), Some(sig64), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(PayloadError::Malformed("expected three dot-separated parts"));
        };
        let header: Header = decode64(header64)
            .and_then(|h| crate::json::from_slice(&h).ok())
            .ok_or(PayloadError::Malformed("unreadable protected header"))?;
        if header.alg != "EdDSA" {
            return Err(PayloadError::Algorithm(header.alg));
        }
        let key = jwks.keys.iter().find(|k| k.kid == header.kid).ok_or(PayloadError::UnknownKey(header.kid))?;
        let signature: [u8; 64] = decode64(sig64)
            .and_then(|s| s.try_into().ok())
            .ok_or(PayloadError::Malformed("the signature is not 64 bytes of base64url"))?;
        let signing_input = &token[..header64.len() + 1 + claims64.len()];
        Ok(SignedPayload { key, signing_input, signature, claims64 })
    }

    /// The claims, once the signature has passed: their version, their symbols, and the lot they read.
    pub fn open(&self) -> Result<VerifiedTicket, PayloadError> {
        let claims_json = decode64(self.claims64).ok_or(PayloadError::Malformed("claims are not base64url"))?;
        // Read the version first so that a future format is reported as such, not as garbage.
        #[derive(Deserialize)]
        struct Versioned {
            v: u32,
        }
        let version: Versioned = crate::json::from_slice(&claims_json).map_err(PayloadError::Claims)?;
        if version.v != FORMAT_VERSION {
            return Err(PayloadError::Version(version.v));
        }
        let claims: TicketClaims = crate::json::from_slice(&claims_json).map_err(PayloadError::Claims)?;
        let outcome = claims.zones.evaluate()?;
        if outcome.lot != claims.lot_cents {
            return Err(PayloadError::LotMismatch { signed: claims.lot_cents, read: outcome.lot });
        }
        Ok(VerifiedTicket { claims, outcome })
    }
}

#[cfg(test)]
mod tests;
