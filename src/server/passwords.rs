//! Password hashing, bounded. Each argon2id hash holds [`MEMORY_KIB`] of memory for tens of
//! milliseconds of CPU: unbounded, a few hundred concurrent logins exhaust the machine. So at most
//! `concurrent` hashes run at once (one per core by default); a request that cannot start one within
//! [`QUEUE_WAIT`] is answered 503 with Retry-After, holding nothing.
//!
//! A login for an unknown name checks the password against a hash of the same cost, so that its answer
//! takes as long as a known name's and names cannot be enumerated by timing.

use super::error::ApiError;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;

/// OWASP's recommended argon2id cost (19 MiB, 2 passes, 1 lane): about 40 ms of one core here.
pub const MEMORY_KIB: u32 = 19 * 1024;
const PASSES: u32 = 2;
/// How long a request waits for a free hashing slot before it is told to come back.
pub const QUEUE_WAIT: Duration = Duration::from_secs(1);

pub struct Passwords {
    slots: Semaphore,
    /// Requests waiting for a slot now (`/metrics`).
    waiting: AtomicUsize,
    /// Checked against when the name is unknown.
    decoy_hash: String,
}

fn argon2() -> Argon2<'static> {
    Argon2::new(
        Algorithm::Argon2id,
        Version::V0x13,
        Params::new(MEMORY_KIB, PASSES, 1, None).expect("valid argon2 parameters"),
    )
}

fn salt() -> SaltString {
    use base64::Engine;
    let encoded = base64::engine::general_purpose::STANDARD_NO_PAD.encode(super::os_random::<16>());
    SaltString::from_b64(&encoded).expect("16 bytes in base64 are a valid salt")
}

fn hash_now(password: &[u8]) -> Result<String, ApiError> {
    argon2()
        .hash_password(password, &salt())
        .map(|h| h.to_string())
        .map_err(|e| ApiError::Internal(format!("hashing a password: {e}")))
}

impl Passwords {
    pub fn new(concurrent: usize) -> Passwords {
        let decoy_hash = hash_now(&super::os_random::<16>()).expect("argon2 hashes random bytes");
        Passwords { slots: Semaphore::new(concurrent.max(1)), waiting: AtomicUsize::new(0), decoy_hash }
    }

    /// The PHC string (`$argon2id$…`) to store for a new password.
    pub async fn hash(&self, password: String) -> Result<String, ApiError> {
        self.run(move || hash_now(password.as_bytes())).await?
    }

    /// Whether `password` matches `stored`; with no stored hash (an unknown name), as long to say no.
    pub async fn verify(&self, password: String, stored: Option<String>) -> Result<bool, ApiError> {
        let known = stored.is_some();
        let stored = stored.unwrap_or_else(|| self.decoy_hash.clone());
        let matches = self
            .run(move || {
                PasswordHash::new(&stored).is_ok_and(|h| argon2().verify_password(password.as_bytes(), &h).is_ok())
            })
            .await?;
        Ok(known && matches)
    }

    /// Requests waiting for a hashing slot now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    async fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> Result<T, ApiError> {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let slot = tokio::time::timeout(QUEUE_WAIT, self.slots.acquire()).await;
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        let slot = slot.map_err(|_| ApiError::Busy)?.map_err(|_| ApiError::Busy)?;
        let result = tokio::task::spawn_blocking(work)
            .await
            .map_err(|e| ApiError::Internal(format!("a password hash stopped: {e}")));
        drop(slot);
        result
    }
}
