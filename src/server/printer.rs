//! Prints a sold ticket's signed payload from what the store keeps: the ticket's serial, owner, lot and
//! time of sale, and its block's seed and design. Composition is seeded by (block seed, index) and
//! Ed25519 signatures are deterministic, so the same ticket prints the same payload every time: nothing
//! but the facts is stored, and any ticket can be reprinted for an audit.
//!
//! Each block's seed and design are read from the store once and kept.
//!
//! Signing takes about 20 µs, and a ticket is viewed many times (its sale, each reveal, its completion,
//! every history page the game reloads): the last [`PRINTED_KEPT`] payloads are kept and served again
//! while the key that signed them still signs.
//!
//! Keys: the store holds every signing key, so every instance signs with the same ones. The JWKS lists
//! them all. A new key (`vegas keys rotate`) is listed at once but signs only once it is
//! [`KEY_ACTIVATION`] old: by then every instance has re-read the keys ([`KEY_REFRESH`]) and lists it,
//! so a ticket it signs verifies against any instance's JWKS.

use super::error::ApiError;
use super::store::{SigningKeyRecord, Store, StoreError, TicketRecord};
use crate::api::InclusionProof;
use crate::block::{Entries, Entry, Hash, Prover, Scheme, Seed, compose_entry, hex, merkle, shuffled_lots};
use crate::composer::Design;
use crate::payload::{FORMAT_VERSION, Jwks, TicketClaims, TicketSigner};
use hashlink::LruCache;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

/// How often each instance re-reads the signing keys.
pub const KEY_REFRESH: Duration = Duration::from_secs(15);
/// How old a key must be before it signs: several refreshes, so that every instance lists it first.
pub const KEY_ACTIVATION: Duration = Duration::from_secs(60);

/// Payloads kept to be served again: about 1.3 KB each, so some 20 MB, the recent tickets of
/// thousands of players.
pub const PRINTED_KEPT: usize = 16_384;

/// A payload printed, with what it was printed from: served again only for the same facts, signed by
/// the key that signs now.
struct Printed {
    kid: String,
    owner: String,
    sold_at: i64,
    serial: crate::payload::Serial,
    lot: crate::money::Cents,
    payload: String,
}

impl Printed {
    fn of(&self, ticket: &TicketRecord, kid: &str) -> bool {
        self.kid == kid
            && self.owner == ticket.owner
            && self.sold_at == ticket.sold_at
            && self.serial == ticket.serial
            && self.lot == ticket.lot
    }
}

/// The key that signs, and every key that verifies.
struct Keyring {
    signer: Arc<TicketSigner>,
    jwks: Jwks,
}

impl Keyring {
    /// Signs with the newest key old enough to be listed everywhere, or, if none is yet, the oldest.
    fn of(keys: &[SigningKeyRecord], now: i64) -> Result<Keyring, StoreError> {
        let active = now - KEY_ACTIVATION.as_secs() as i64;
        let signing = keys
            .iter()
            .filter(|k| k.created_at <= active)
            .max_by_key(|k| (k.created_at, &k.kid))
            .or_else(|| keys.iter().min_by_key(|k| (k.created_at, &k.kid)))
            .ok_or_else(|| StoreError::Backend("the store holds no signing key".into()))?;
        let signers: Vec<TicketSigner> = keys.iter().map(|k| TicketSigner::from_secret(k.secret)).collect();
        Ok(Keyring {
            signer: Arc::new(TicketSigner::from_secret(signing.secret)),
            jwks: Jwks { keys: signers.iter().map(TicketSigner::jwk).collect() },
        })
    }
}

/// A new signing key for the store, from the operating system's randomness.
pub fn new_signing_key(now: i64) -> SigningKeyRecord {
    let secret = super::os_random::<32>();
    SigningKeyRecord { kid: TicketSigner::from_secret(secret).kid().to_owned(), secret, created_at: now }
}

struct Press {
    emission: u32,
    block: u32,
    seed: Seed,
    root: Hash,
    design: Arc<Design>,
    /// A QA deck's tickets, for its block (see `qa_deck`); `None` for every real block.
    deck: Option<Arc<Vec<Entry>>>,
    /// Read (or built) on the first proof asked of the block, then kept: about 12 MB (its level 3 and above).
    prover: tokio::sync::OnceCell<ReadyProver>,
}

struct ReadyProver {
    prover: Prover,
    origin: TreeOrigin,
}

/// Where a block's tree came from when the printer first needed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeOrigin {
    /// Rebuilt in milliseconds from the level stored with the block, which led to its root.
    Stored,
    /// Built from every ticket of the block (seconds of work, at low priority), then stored.
    Built,
}

impl Press {
    /// The block's prover: from the tree level stored with the block when it leads to the committed
    /// root (milliseconds), else built from every ticket (seconds) and stored for the next start.
    async fn prover(&self, store: &Store) -> Result<&ReadyProver, ApiError> {
        self.prover
            .get_or_try_init(|| async {
                if let Some(prover) = self.stored_prover(store).await {
                    return Ok(ReadyProver { prover, origin: TreeOrigin::Stored });
                }
                let prover = self.built_prover().await?;
                if let Err(e) = store.save_block_tree(self.emission, self.block, prover.kept_level().to_vec()).await {
                    tracing::warn!(emission = self.emission, block = self.block, error = %e, "the block's tree could \
                        not be stored: the next start builds it again");
                }
                Ok(ReadyProver { prover, origin: TreeOrigin::Built })
            })
            .await
    }

    async fn stored_prover(&self, store: &Store) -> Option<Prover> {
        let (emission, block) = (self.emission, self.block);
        let kept_level = match store.block_tree(emission, block).await {
            Ok(kept_level) => kept_level?,
            Err(e) => {
                tracing::warn!(emission, block, error = %e, "the block's stored tree cannot be read: building it");
                return None;
            }
        };
        let (seed, deck) = (self.seed, self.deck.clone());
        let rebuilt = tokio::task::spawn_blocking(move || {
            Prover::from_kept_level(emission, block, &seed, entries(&seed, deck), kept_level)
        })
        .await;
        match rebuilt {
            Ok(Some(prover)) if prover.root() == self.root => Some(prover),
            _ => {
                tracing::warn!(
                    emission,
                    block,
                    "the block's stored tree does not lead to its committed root: building it again"
                );
                None
            }
        }
    }

    async fn built_prover(&self) -> Result<Prover, ApiError> {
        let (design, seed, emission, block, deck) =
            (self.design.clone(), self.seed, self.emission, self.block, self.deck.clone());
        let (done, made) = tokio::sync::oneshot::channel();
        in_background(move || _ = done.send(Prover::new(&design, emission, block, &seed, entries(&seed, deck))));
        match made.await {
            Ok(Ok(prover)) if prover.root() == self.root => Ok(prover),
            Ok(Ok(prover)) => Err(ApiError::Internal(format!(
                "block E{emission}-B{block} recomputes to root {}, not to its committed root {}",
                hex(&prover.root()),
                hex(&self.root)
            ))),
            Ok(Err(e)) => Err(ApiError::Internal(format!("block E{emission}-B{block} cannot be recomputed: {e}"))),
            Err(e) => Err(ApiError::Internal(format!("block E{emission}-B{block}: its tree was not built: {e}"))),
        }
    }
}

/// A block's tickets: its QA deck's, or the lots its seed shuffles.
fn entries(seed: &Seed, deck: Option<Arc<Vec<Entry>>>) -> Entries {
    match deck {
        Some(deck) => Entries::Deck(deck),
        None => Entries::Lots(shuffled_lots(seed)),
    }
}

/// Runs a block's tree build on threads of the lowest priority: it takes seconds of every core, and the
/// sales that come meanwhile must keep them (measured: built at normal priority just after a restart,
/// it held purchases up to a second). Without such threads, on rayon's own.
fn in_background(build: impl FnOnce() + Send + 'static) {
    static TREE_BUILDERS: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    let pool = TREE_BUILDERS.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("block-tree-{i}"))
            // Linux keeps a nice value per thread: this lowers the pool's own threads only. (SCHED_IDLE
            // measured worse: its threads starved and the tree took longer to be ready.)
            // SAFETY: setpriority takes plain integers and only changes the calling thread's nice value.
            .start_handler(|_| _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) })
            .build()
            .inspect_err(|e| tracing::warn!(error = %e, "no low-priority threads for block trees"))
            .ok()
    });
    match pool {
        Some(pool) => pool.spawn(build),
        None => rayon::spawn(build),
    }
}

pub struct Printer {
    keys: RwLock<Keyring>,
    presses: RwLock<HashMap<(u32, u32), Arc<Press>>>,
    designs: RwLock<HashMap<(Hash, Scheme), Arc<Design>>>,
    qa_deck: RwLock<Option<QaDeck>>,
    printed: Mutex<LruCache<String, Printed>>,
}

/// A QA deck and the block (emission, block) whose tickets it replaces.
type QaDeck = ((u32, u32), Arc<Vec<Entry>>);

impl Printer {
    /// Reads the store's signing keys, first adding one if it holds none: `first_key`, or a new one.
    pub async fn load(store: &Store, first_key: Option<SigningKeyRecord>, now: i64) -> Result<Printer, StoreError> {
        if store.signing_keys().await?.is_empty() {
            store.add_signing_key(first_key.unwrap_or_else(|| new_signing_key(now))).await?;
        }
        let keys = Keyring::of(&store.signing_keys().await?, now)?;
        Ok(Printer {
            keys: RwLock::new(keys),
            presses: RwLock::default(),
            designs: RwLock::default(),
            qa_deck: RwLock::default(),
            printed: Mutex::new(LruCache::new(PRINTED_KEPT)),
        })
    }

    /// Re-reads the signing keys (a rotation made by another instance or the CLI).
    pub async fn refresh_keys(&self, store: &Store, now: i64) -> Result<(), StoreError> {
        let keys = Keyring::of(&store.signing_keys().await?, now)?;
        *write(&self.keys) = keys;
        Ok(())
    }

    pub fn jwks(&self) -> Jwks {
        read(&self.keys).jwks.clone()
    }

    /// The symbols a sold ticket shows, as its block's seed and design compose them.
    pub async fn zones(&self, store: &Store, ticket: &TicketRecord) -> Result<crate::rules::Ticket, ApiError> {
        let press = self.press(store, ticket.serial.emission, ticket.serial.block).await?;
        Self::compose(&press, ticket)
    }

    fn compose(press: &Press, ticket: &TicketRecord) -> Result<crate::rules::Ticket, ApiError> {
        let entry = press
            .deck
            .as_ref()
            .and_then(|deck| deck.get(ticket.serial.index as usize).copied())
            .unwrap_or(Entry::Lot(ticket.lot));
        compose_entry(&press.design, &press.seed, ticket.serial.index, entry)
            .map_err(|e| ApiError::Internal(format!("block {}: its design cannot print its lot: {e}", ticket.serial)))
    }

    /// The signed payload of a sold ticket: the one printed before if it is kept, else printed now.
    pub async fn payload(&self, store: &Store, ticket: &TicketRecord) -> Result<String, ApiError> {
        let signer = read(&self.keys).signer.clone();
        if let Some(printed) = lock(&self.printed).get(&ticket.id).filter(|p| p.of(ticket, signer.kid())) {
            metrics::counter!("vegas_payloads_total", "printed" => "before").increment(1);
            return Ok(printed.payload.clone());
        }
        let press = self.press(store, ticket.serial.emission, ticket.serial.block).await?;
        let zones = Self::compose(&press, ticket)?;
        let claims = TicketClaims {
            v: FORMAT_VERSION,
            jti: ticket.id.clone(),
            sub: ticket.owner.clone(),
            iat: ticket.sold_at,
            serial: ticket.serial,
            zones,
            lot_cents: ticket.lot,
            salt: (press.design.scheme >= Scheme::V2).then(|| hex(&merkle::salt(&press.seed, ticket.serial.index))),
            qa: press.deck.is_some(),
        };
        let payload = signer.sign(&claims);
        metrics::counter!("vegas_payloads_total", "printed" => "now").increment(1);
        let printed = Printed {
            kid: signer.kid().to_owned(),
            owner: ticket.owner.clone(),
            sold_at: ticket.sold_at,
            serial: ticket.serial,
            lot: ticket.lot,
            payload: payload.clone(),
        };
        lock(&self.printed).insert(ticket.id.clone(), printed);
        Ok(payload)
    }

    /// Prints the tickets of block (`emission`, `block`) from a QA deck, as test tickets.
    pub fn print_qa_deck(&self, emission: u32, block: u32, deck: Arc<Vec<Entry>>) {
        *write(&self.qa_deck) = Some(((emission, block), deck));
    }

    /// A sold ticket's inclusion proof in its block's committed tree.
    pub async fn proof(&self, store: &Store, ticket: &TicketRecord) -> Result<InclusionProof, ApiError> {
        let press = self.press(store, ticket.serial.emission, ticket.serial.block).await?;
        let prover = &press.prover(store).await?.prover;
        let path = prover
            .proof(&press.design, ticket.serial.index)
            .map_err(|e| ApiError::Internal(format!("ticket {}: {e}", ticket.serial)))?;
        Ok(InclusionProof {
            index: ticket.serial.index,
            leaf_count: prover.leaf_count() as u32,
            path: path.iter().map(|h| hex(h)).collect(),
        })
    }

    /// Readies the tree of the block on sale ahead of its first proof, so that no buyer waits for it;
    /// says which block and where its tree came from (`None`: no block on sale).
    pub async fn prepare_proofs(&self, store: &Store) -> Result<Option<(u32, u32, TreeOrigin)>, ApiError> {
        let on_sale = store.blocks().await?.into_iter().find(|b| !b.ended() && b.sold < b.size);
        let Some(block) = on_sale else { return Ok(None) };
        let origin = self.press(store, block.emission, block.block).await?.prover(store).await?.origin;
        Ok(Some((block.emission, block.block, origin)))
    }

    async fn press(&self, store: &Store, emission: u32, block: u32) -> Result<Arc<Press>, ApiError> {
        if let Some(press) = read(&self.presses).get(&(emission, block)) {
            return Ok(press.clone());
        }
        let record = store.block(emission, block).await?;
        let design = self.design(store, &record.design_hash, record.scheme).await?;
        let deck =
            read(&self.qa_deck).as_ref().filter(|(at, _)| *at == (emission, block)).map(|(_, deck)| deck.clone());
        let press = Arc::new(Press {
            emission,
            block,
            seed: record.seed,
            root: record.root,
            design,
            deck,
            prover: tokio::sync::OnceCell::new(),
        });
        write(&self.presses).insert((emission, block), press.clone());
        Ok(press)
    }

    async fn design(&self, store: &Store, hash: &Hash, scheme: Scheme) -> Result<Arc<Design>, ApiError> {
        if let Some(design) = read(&self.designs).get(&(*hash, scheme)) {
            return Ok(design.clone());
        }
        let design = Design::from_toml_for(&store.design_text(hash).await?, scheme)
            .map_err(|e| ApiError::Internal(format!("a stored design no longer validates: {e}")))?;
        let design = Arc::new(design);
        write(&self.designs).insert((*hash, scheme), design.clone());
        Ok(design)
    }
}

// The maps only ever gain entries that are never changed, and the payloads kept are each whole: one
// poisoned by a panic is still sound.
fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_key_signs_only_once_every_instance_lists_it() {
        let (old, new) = (new_signing_key(1_000), new_signing_key(5_000));
        let kid = |ring: &Keyring| ring.signer.kid().to_owned();
        let both = [old.clone(), new.clone()];
        let before = Keyring::of(&both, 5_000 + KEY_ACTIVATION.as_secs() as i64 - 1).unwrap();
        assert_eq!(kid(&before), old.kid, "the new key is listed but does not sign yet");
        assert_eq!(before.jwks.keys.len(), 2);
        let after = Keyring::of(&both, 5_000 + KEY_ACTIVATION.as_secs() as i64).unwrap();
        assert_eq!(kid(&after), new.kid);
        let first = Keyring::of(std::slice::from_ref(&new), 5_000).unwrap();
        assert_eq!(kid(&first), new.kid, "a first key signs at once");
        assert!(Keyring::of(&[], 0).is_err());
    }

    /// A payload is signed once and served again, but printed anew for other facts under the same id
    /// or once another key signs.
    #[test]
    fn a_payload_is_signed_once_and_printed_anew_for_other_facts_or_another_key() {
        use crate::server::store::{Store, sqlite::Opening};
        let recorder = metrics_util::debugging::DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        // (signed now, served as printed before), since the last call: a snapshot takes the counts.
        let printed = || {
            let counts = snapshotter.snapshot().into_hashmap();
            let count = |when: &str| {
                let signed = counts.iter().filter(|(key, _)| {
                    key.key().name() == "vegas_payloads_total" && key.key().labels().any(|l| l.value() == when)
                });
                signed
                    .map(|(_, (.., value))| match value {
                        metrics_util::debugging::DebugValue::Counter(n) => *n,
                        other => panic!("a counter, not {other:?}"),
                    })
                    .sum::<u64>()
            };
            (count("now"), count("before"))
        };
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let dir = tempfile::tempdir().unwrap();
        metrics::with_local_recorder(&recorder, || {
            runtime.block_on(async {
                let store = Store::sqlite(&dir.path().join("vegas.sqlite3"), Opening::Server).unwrap();
                crate::server::blocks::create_emission(&store, crate::composer::design::DEFAULT_DESIGN_TOML, 1, 1_000)
                    .await
                    .unwrap();
                let seed = store.block(1, 1).await.unwrap().seed;
                let serial = crate::payload::Serial { emission: 1, block: 1, index: 7 };
                let ticket = TicketRecord {
                    id: "t-0001".into(),
                    owner: "p-1".into(),
                    serial,
                    mode: crate::play::Mode::Jouez,
                    lot: crate::block::lot_of(shuffled_lots(&seed)[7]),
                    revealed: vec![0, 1],
                    revealed_at: vec![1_010, 1_011],
                    sold_at: 1_005,
                    credited_at: None,
                    finished_at: None,
                };
                let printer = Printer::load(&store, None, 1_000).await.unwrap();
                let first = printer.payload(&store, &ticket).await.unwrap();
                let played = TicketRecord { revealed: vec![0, 1, 2], finished_at: Some(1_020), ..ticket.clone() };
                assert_eq!(printer.payload(&store, &played).await.unwrap(), first, "what the player did is not signed");
                assert_eq!(printed(), (1, 1));

                let another_owner = TicketRecord { owner: "p-2".into(), ..ticket.clone() };
                assert_ne!(printer.payload(&store, &another_owner).await.unwrap(), first);
                assert_eq!(printed(), (1, 0));

                store.add_signing_key(new_signing_key(2_000)).await.unwrap();
                printer.refresh_keys(&store, 2_000 + KEY_ACTIVATION.as_secs() as i64).await.unwrap();
                let resigned = printer.payload(&store, &ticket).await.unwrap();
                let header = |payload: &str| payload.split('.').next().unwrap().to_owned();
                assert_ne!(header(&resigned), header(&first), "the new key's kid");
                assert_eq!(printer.payload(&store, &ticket).await.unwrap(), resigned);
                assert_eq!(printed(), (1, 1));
            })
        });
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_block_tree_is_read_from_the_store_and_one_that_misleads_is_rebuilt_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::server::store::Store::sqlite(
            &dir.path().join("vegas.sqlite3"),
            crate::server::store::sqlite::Opening::Server,
        )
        .unwrap();
        crate::server::blocks::create_emission(&store, crate::composer::design::DEFAULT_DESIGN_TOML, 1, 1_800_000_000)
            .await
            .unwrap();
        let kept = store.block_tree(1, 1).await.unwrap().expect("a made block is stored with its tree level");
        let readied = async || Printer::load(&store, None, 0).await.unwrap().prepare_proofs(&store).await.unwrap();
        assert_eq!(readied().await, Some((1, 1, TreeOrigin::Stored)));

        let mut altered = kept.clone();
        altered[1234][0] ^= 1;
        store.save_block_tree(1, 1, altered).await.unwrap();
        assert_eq!(readied().await, Some((1, 1, TreeOrigin::Built)), "an altered node leads elsewhere than the root");
        assert_eq!(store.block_tree(1, 1).await.unwrap().as_ref(), Some(&kept), "the rebuilt level replaces it");
        assert_eq!(readied().await, Some((1, 1, TreeOrigin::Stored)));

        store.save_block_tree(1, 1, kept[1..].to_vec()).await.unwrap();
        assert_eq!(readied().await, Some((1, 1, TreeOrigin::Built)), "a level one node short");
        assert_eq!(store.block_tree(1, 1).await.unwrap().as_ref(), Some(&kept));
    }
}
