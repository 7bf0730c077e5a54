//! The store: everything the server keeps, behind one narrow interface, [`Store`].
//!
//! Handlers speak HTTP and call these methods; domain types and [`StoreError`] cross the interface,
//! never a database type. Each method is one unit of work: it happens entirely or not at all, and is
//! acknowledged only once durable. Each statement inside is safe under concurrency on its own
//! (conditional updates, `UPDATE … RETURNING`, unique constraints, `INSERT … ON CONFLICT`), so an
//! implementation needs no lock of its own around them:
//!
//! - a sale debits the wallet with `balance >= price` in the same `UPDATE`, claims the next index with
//!   `sold < size` in the same `UPDATE`, and inserts the ticket under a unique (player, key) so that a
//!   retried Idempotency-Key replays the first sale;
//! - a reveal replaces the uncovered list only if it is still the one it read (compare-and-set);
//! - a win is credited by the `UPDATE` that sets `credited_at` where it was null, and a unique index
//!   allows one stake and one win transfer per ticket.
//!
//! Money moves as double-entry [`ledger`] transfers between accounts whose balances are stored and
//! updated with their transfers.
//!
//! Implementations: [`sqlite`] (embedded, one writer thread with group commit, a pool of readers) and
//! [`postgres`] (several server instances on one database).

pub mod back_office;
pub mod ledger;
mod plan;
pub mod postgres;
pub mod responsible;
mod rows;
mod sql;
pub mod sqlite;
pub mod tx;

use crate::block::{Hash, LotCode, Scheme, Seed};
use crate::money::Cents;
use crate::payload::Serial;
use crate::play::{Mode, RevealError};
use async_trait::async_trait;

/// Why a store call did not do what it was asked. Every variant but [`StoreError::Backend`] is the
/// caller's to answer (a 4xx); `Backend` is a fault of ours, its text for the log only.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("{0} not found")]
    NotFound(&'static str),
    /// The database cannot be reached or cannot take writes now (a failover under way): the request
    /// may be sent again (a purchase with its Idempotency-Key is never made twice).
    #[error("the store is unavailable: {0}")]
    Unavailable(String),
    #[error("this name is already taken")]
    NameTaken,
    #[error("not enough money: the balance is {balance}, a ticket costs {price}")]
    InsufficientFunds { balance: Cents, price: Cents },
    #[error("not enough money: the balance is {balance}, {amount} cannot be taken from it")]
    Overdraft { balance: Cents, amount: Cents },
    #[error("every block of every emission is sold out: no ticket is on sale")]
    SoldOut,
    #[error("this Idempotency-Key already bought a ticket in another mode")]
    KeyReused,
    #[error(transparent)]
    Reveal(#[from] RevealError),
    #[error("uncover every zone first; still hidden: {0:?}")]
    ZonesLeft(Vec<usize>),
    #[error("this ticket's game is over: every zone is uncovered and its win credited")]
    Finished,
    #[error("{0} already exists")]
    AlreadyExists(String),
    #[error("this player already has an account")]
    NotAGuest,
    #[error("{0}")]
    LimitReached(responsible::LimitRefusal),
    #[error("the player's 7-day {} limit is not set: none before it is", .0.as_str())]
    LimitsRequired(responsible::Flow),
    #[error("play is paused ({}) until {}", .0.kind.as_str(), responsible::utc(.0.until))]
    Paused(responsible::Pause),
    #[error("play is already paused ({}) until {}, as long or longer", .0.kind.as_str(), responsible::utc(.0.until))]
    AlreadyPaused(responsible::Pause),
    #[error("this raise can be confirmed from {} on", responsible::utc(*.confirmable_at))]
    RaiseNotYet { confirmable_at: i64 },
    #[error("this raise lapsed at {}, unconfirmed", responsible::utc(*.lapsed_at))]
    RaiseLapsed { lapsed_at: i64 },
    #[error("no raise of this limit is pending")]
    NoRaisePending,
    #[error("already {0}")]
    AlreadyDone(&'static str),
    #[error("{0}")]
    Invalid(String),
    #[error("four eyes: whoever asked for an adjustment cannot approve or reject it; another staff member must")]
    FourEyes,
    #[error("the operator suspended this account: nothing can be staked or deposited until it is restored")]
    Suspended,
    #[error("this identity is in the national ban file (fichier des interdits de jeu)")]
    Banned,
    #[error("the store failed: {0}")]
    Backend(String),
}

/// Why a guest's registration changed nothing, from whether the player is (still) a guest: a guest
/// whose update was skipped asked for a name another player holds.
pub fn why_not_registered(guest: Option<bool>) -> StoreError {
    match guest {
        None => StoreError::NotFound("player"),
        Some(false) => StoreError::NotAGuest,
        Some(true) => StoreError::NameTaken,
    }
}

/// Where money comes from when it enters a wallet from outside the game.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Funding {
    /// Demo money: never real, drawn on the `demo` account.
    Demo,
    /// Real money paid in by the operator, drawn on the `cash` account.
    Cash,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credit {
    pub funding: Funding,
    pub amount: Cents,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPlayer {
    pub id: String,
    pub name: Option<crate::server::names::PlayerName>,
    pub password_hash: Option<String>,
    pub guest: bool,
    /// The identity a real-money account declares (refused if the ban file lists it).
    pub identity: Option<responsible::Identity>,
    /// Credited with the player's creation, in the same unit of work.
    pub opening_credit: Option<Credit>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlayerRecord {
    pub id: String,
    pub name: Option<String>,
    pub guest: bool,
    pub balance: Cents,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    pub player_id: String,
    pub password_hash: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaleRequest {
    pub player_id: String,
    pub idempotency_key: String,
    pub mode: Mode,
    /// The id the ticket takes if this is a new sale (a replay keeps the first sale's).
    pub ticket_id: String,
    pub now: i64,
    /// Real money: no sale before the player has set a 7-day stake limit.
    pub limits_required: bool,
}

/// A sold ticket as the store keeps it. The signed payload is not stored: it is printed from these
/// fields and the block's seed (see `server::printer`), the same every time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TicketRecord {
    pub id: String,
    pub owner: String,
    pub serial: Serial,
    pub mode: Mode,
    pub lot: Cents,
    /// Uncovered zones (0–11), in the order uncovered.
    pub revealed: Vec<usize>,
    /// When each of `revealed` was uncovered (unix seconds); empty for a ticket uncovered before the
    /// store kept the times.
    pub revealed_at: Vec<i64>,
    pub sold_at: i64,
    pub credited_at: Option<i64>,
    pub finished_at: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sale {
    pub ticket: TicketRecord,
    /// The wallet's balance once this sale is recorded.
    pub balance: Cents,
    /// The Idempotency-Key had bought this ticket already: nothing was debited now.
    pub replayed: bool,
}

/// The tickets not credited yet: when the oldest was sold, and how many were sold at or before a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Unsettled {
    pub oldest_sale: Option<i64>,
    pub due: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub ticket: TicketRecord,
    pub balance: Cents,
}

/// Where a round of settlement has got to among the due tickets, oldest first: the last one looked at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuePlace {
    pub sold_at: i64,
    pub ticket_id: String,
}

impl DuePlace {
    /// The place a batch starts after, as [`sql::DUE_TICKETS`] takes it: before every ticket for a
    /// new round.
    fn start(after: Option<DuePlace>) -> (i64, String) {
        after.map_or((i64::MIN, String::new()), |p| (p.sold_at, p.ticket_id))
    }
}

/// What one batch of settlement did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SettleReport {
    /// Due tickets looked at.
    pub examined: usize,
    /// Tickets this batch credited (their win may be 0 €).
    pub settled: usize,
    /// Tickets that could not be settled, with why; the others were settled all the same.
    pub failed: Vec<(String, String)>,
    /// The last ticket looked at: where the next batch of the round starts after.
    pub last: Option<DuePlace>,
}

impl SettleReport {
    /// Counts a due ticket looked at, and whether settling it credited it, found it credited, or failed.
    fn count(&mut self, place: DuePlace, settled: Result<bool, StoreError>) {
        self.examined += 1;
        match settled {
            Ok(credited) => self.settled += usize::from(credited),
            Err(e) => self.failed.push((place.ticket_id.clone(), e.to_string())),
        }
        self.last = Some(place);
    }
}

/// How a settlement round goes through what is due: batches that start small and double while each
/// comes back full (a backlog), up to `most`, with a `breath` between them that leaves the store to
/// other work (sales).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batches {
    pub first: usize,
    pub most: usize,
    pub breath: std::time::Duration,
}

/// Settles every ticket due by `sold_before` (`Store::settle_due`) from the oldest, in [`Batches`],
/// each batch going on after the last ticket the one before looked at: a ticket that fails is passed
/// and reported, never met first again, so failures cannot hold up the others. The report adds up the
/// round's batches.
pub async fn settle_round(store: &dyn Store, sold_before: i64, batches: Batches, now: impl Fn() -> i64) -> Result<SettleReport, StoreError> {
    let mut round = SettleReport::default();
    let mut batch = batches.first;
    loop {
        let report = store.settle_due(sold_before, round.last.clone(), batch, now()).await?;
        round.examined += report.examined;
        round.settled += report.settled;
        round.failed.extend(report.failed);
        if report.examined < batch {
            return Ok(round);
        }
        round.last = report.last;
        batch = (batch * 2).min(batches.most);
        tokio::time::sleep(batches.breath).await;
    }
}

/// What one round of purging removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PurgeReport {
    pub sessions: usize,
    pub guests: usize,
}

/// A block as the store keeps it. `seed` is secret while the block is open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockRecord {
    pub emission: u32,
    pub block: u32,
    pub size: u32,
    pub sold: u32,
    pub seed: Seed,
    pub root: Hash,
    pub design_hash: Hash,
    pub closed_at: Option<i64>,
    pub scheme: Scheme,
    /// When staff withdrew it from sale, for good (`back_office::withdraw_block`).
    pub withdrawn_at: Option<i64>,
}

impl BlockRecord {
    /// Whether no more of its tickets can be sold: sold out or withdrawn. Its seed is published then.
    pub fn ended(&self) -> bool {
        self.closed_at.is_some() || self.withdrawn_at.is_some()
    }
}

/// A made block, stored with its commitment before any sale.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewBlock {
    pub emission: u32,
    pub block: u32,
    pub seed: Seed,
    pub root: Hash,
    pub design_hash: Hash,
    pub design_text: String,
    pub scheme: Scheme,
    pub lots: Vec<LotCode>,
    /// Its tree's kept level ([`crate::block::Block::kept_level`]).
    pub kept_level: Vec<Hash>,
    pub now: i64,
}

/// A key tickets are signed with (Ed25519), with its RFC 7638 key id.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningKeyRecord {
    pub kid: String,
    pub secret: [u8; 32],
    pub created_at: i64,
}

impl std::fmt::Debug for SigningKeyRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKeyRecord").field("kid", &self.kid).field("created_at", &self.created_at).finish_non_exhaustive()
    }
}

impl TicketRecord {
    /// The ticket a sale records: `index` of a block, with the lot the block committed for it.
    pub fn sold(request: &SaleRequest, serial: Serial, lot: Cents) -> TicketRecord {
        TicketRecord {
            id: request.ticket_id.clone(),
            owner: request.player_id.clone(),
            serial,
            mode: request.mode,
            lot,
            revealed: Vec::new(),
            revealed_at: Vec::new(),
            sold_at: request.now,
            credited_at: None,
            finished_at: None,
        }
    }
}

// What both implementations store alike.

/// An amount read back from a column that never holds a negative one.
fn cents(amount: i64) -> Result<Cents, StoreError> {
    u64::try_from(amount).map(Cents).map_err(|_| StoreError::Backend(format!("a negative amount where none can be: {amount}")))
}

/// An amount as both databases keep it (a signed 64-bit integer).
fn sql_amount(amount: Cents) -> Result<i64, StoreError> {
    i64::try_from(amount.0).map_err(|_| StoreError::Backend(format!("{amount} is beyond what the store holds")))
}

/// A tree level read back from its column: whole hashes end to end.
fn hashes(bytes: &[u8]) -> Result<Vec<Hash>, StoreError> {
    match bytes.as_chunks::<32>() {
        (hashes, []) => Ok(hashes.to_vec()),
        (_, rest) => Err(StoreError::Backend(format!("a stored tree level ends with {} bytes of a hash", rest.len()))),
    }
}

/// Uncovered zones (or their times) as a ticket row keeps them: a JSON list, compared whole by the
/// compare-and-set.
fn json_list<T: serde::Serialize>(list: &[T]) -> String {
    serde_json::to_string(list).expect("a list of numbers serialises")
}

impl TicketRecord {
    /// This ticket with `after` uncovered, the new zones at `now`. A ticket whose earlier times were
    /// not kept keeps none, rather than times out of step with its zones.
    fn uncovered(&self, after: Vec<usize>, now: i64) -> TicketRecord {
        let mut revealed_at = self.revealed_at.clone();
        if revealed_at.len() == self.revealed.len() {
            revealed_at.resize(after.len(), now);
        }
        TicketRecord { revealed: after, revealed_at, ..self.clone() }
    }
}

/// Everything the server persists. See the module documentation for the concurrency contract.
#[async_trait]
pub trait Store: Send + Sync {
    /// Creates a player (unique name, if any) and its wallet, with its opening credit if any.
    async fn create_player(&self, player: NewPlayer, now: i64) -> Result<PlayerRecord, StoreError>;
    async fn player(&self, id: &str) -> Result<PlayerRecord, StoreError>;
    /// A guest becomes an account with this name (unique) and password, keeping its id and so its
    /// wallet and tickets. `NotAGuest` for a player already named.
    async fn register_guest(&self, player_id: &str, name: crate::server::names::PlayerName, password_hash: String) -> Result<(), StoreError>;
    /// The credentials of the player whose name has this key (`names::key_of`).
    async fn credentials(&self, name_key: &str) -> Result<Option<Credentials>, StoreError>;

    /// A session starting `now`: its reality check due after the player's interval.
    async fn create_session(&self, token_hash: &str, player_id: &str, now: i64, expires_at: i64) -> Result<(), StoreError>;
    /// An unexpired session.
    async fn session(&self, token_hash: &str, now: i64) -> Result<Option<responsible::SessionRecord>, StoreError>;
    async fn delete_session(&self, token_hash: &str) -> Result<(), StoreError>;

    /// Money into a wallet from outside the game; returns the new balance.
    async fn credit(&self, player_id: &str, credit: Credit, now: i64) -> Result<Cents, StoreError>;

    /// One purchase: replays the Idempotency-Key, or debits 3 €, takes the next unsold ticket of the
    /// lowest open block (closing it when it sells out) and records the ticket.
    async fn sell(&self, request: SaleRequest) -> Result<Sale, StoreError>;
    /// Adds uncovered zones to a ticket of this player, enforcing « Jouez » (`play::apply_reveal`),
    /// each stamped `now` less its `seconds_ago` ([`plan::reveal`]); a finished ticket is
    /// [`StoreError::Finished`].
    async fn reveal(&self, player_id: &str, ticket_id: &str, zones: Vec<usize>, seconds_ago: Vec<u32>, now: i64) -> Result<TicketRecord, StoreError>;
    /// Ends a game and credits its win once. « Jouez » needs every zone uncovered; « Auto » uncovers
    /// what remains. Completing a finished ticket again is [`StoreError::Finished`] and changes nothing.
    async fn complete(&self, player_id: &str, ticket_id: &str, now: i64) -> Result<Completion, StoreError>;
    /// Credits up to `limit` tickets sold at or before `sold_before` and not yet credited, oldest first,
    /// starting after `after` (where the round has got to, so that a ticket that failed is passed and
    /// never holds up the others), each on its own (one failure does not stop the others).
    async fn settle_due(&self, sold_before: i64, after: Option<DuePlace>, limit: usize, now: i64) -> Result<SettleReport, StoreError>;
    /// Deletes expired sessions, and up to `limit` stale guests (see `sql::STALE_GUESTS`), each in a
    /// unit of work that checks again that it is stale: each one's demo money goes back to `demo` and
    /// its wallet and demo transfers go with it, the exact inverse of its creation and top-ups, so the
    /// books still balance.
    async fn purge(&self, now: i64, stale_before: i64, limit: usize) -> Result<PurgeReport, StoreError>;
    /// When the oldest ticket still to credit was sold, if any.
    async fn unsettled(&self, due_before: i64) -> Result<Unsettled, StoreError>;
    /// Sets the gauges of what this backend holds (the WAL's size, the pool's connections) for `/metrics`.
    fn record_gauges(&self);

    /// A ticket of this player; another player's is "not found", never "forbidden".
    async fn ticket(&self, player_id: &str, ticket_id: &str) -> Result<TicketRecord, StoreError>;
    /// The player's last tickets, newest first; with `before`, those sold before that ticket of theirs
    /// (the next page: a cursor that new sales do not shift).
    async fn history(&self, player_id: &str, limit: u32, before: Option<&str>) -> Result<Vec<TicketRecord>, StoreError>;

    /// Stores a made block with its design, commitment and tree level; a block is never replaced.
    async fn insert_block(&self, block: NewBlock) -> Result<(), StoreError>;
    /// The kept level of a block's tree, if stored. Unchecked: the printer checks it against the root.
    async fn block_tree(&self, emission: u32, block: u32) -> Result<Option<Vec<Hash>>, StoreError>;
    /// Stores the kept level of a block's tree, replacing one that failed its check.
    async fn save_block_tree(&self, emission: u32, block: u32, kept_level: Vec<Hash>) -> Result<(), StoreError>;
    async fn next_emission(&self) -> Result<u32, StoreError>;
    async fn blocks(&self) -> Result<Vec<BlockRecord>, StoreError>;
    async fn block(&self, emission: u32, block: u32) -> Result<BlockRecord, StoreError>;
    async fn design_text(&self, hash: &Hash) -> Result<String, StoreError>;

    /// What `vegas ledger check` verifies, read in one consistent snapshot.
    async fn ledger_facts(&self) -> Result<ledger::LedgerFacts, StoreError>;

    // Responsible gaming (see [`responsible`]): every change is recorded with its time and actor.

    /// The player's limits and what is left of each, pending raises, any pause, the reality-check interval.
    async fn standing(&self, player_id: &str, now: i64) -> Result<responsible::Standing, StoreError>;
    /// Sets one limit (`None`: none): a first or lower one at once, cancelling a pending raise of it; a
    /// higher one or none is asked, to be confirmed from 48 h on. Returns how it applies.
    async fn change_limit(
        &self,
        player_id: &str,
        flow: responsible::Flow,
        span: responsible::Span,
        wanted: Option<Cents>,
        now: i64,
    ) -> Result<responsible::ChangeKind, StoreError>;
    /// Applies a pending raise the player confirms, from 48 h after it was asked until it lapses.
    async fn confirm_raise(&self, player_id: &str, flow: responsible::Flow, span: responsible::Span, now: i64) -> Result<(), StoreError>;
    /// Takes away (and records) the raises that lapsed unconfirmed by `now`; how many.
    async fn lapse_raises(&self, now: i64) -> Result<usize, StoreError>;
    /// A break, self-exclusion or closure until `pause.until`, at once: every session of the player ends,
    /// and nothing can be staked or deposited before then. Nothing shortens it: a pause that ends
    /// sooner than the one in force is [`StoreError::AlreadyPaused`].
    async fn pause(&self, player_id: &str, pause: responsible::Pause, actor: responsible::Actor, now: i64) -> Result<(), StoreError>;
    /// The player's record from `since` on, oldest first.
    async fn responsible_events(&self, player_id: &str, since: i64) -> Result<Vec<responsible::ResponsibleEvent>, StoreError>;
    /// The minutes between the player's reality checks; the current sessions' next one comes that long
    /// after `now` at the latest.
    async fn set_reality_interval(&self, player_id: &str, minutes: u32, now: i64) -> Result<(), StoreError>;
    /// The session's reality check is due: recorded as shown (once per due time).
    async fn reality_check_shown(&self, token_hash: &str, now: i64) -> Result<(), StoreError>;
    /// The player acknowledged it: the next one is due an interval from `now`.
    async fn acknowledge_reality_check(&self, token_hash: &str, now: i64) -> Result<(), StoreError>;
    /// What the player bought since `since` and won on it.
    async fn play_since(&self, player_id: &str, since: i64) -> Result<responsible::PlaySummary, StoreError>;
    /// Replaces the national ban file with these identity keys ([`responsible::Identity::key`]); every
    /// account they match is closed: paused for good, its sessions ended, its balance paid out to
    /// `cash` as a withdrawal. Returns the accounts closed, with what each was paid.
    async fn import_bans(&self, keys: Vec<String>, now: i64) -> Result<Vec<(String, Cents)>, StoreError>;

    /// A back-office unit of work ([`back_office::run`]); typed by [`back_office::BackOffice`].
    async fn back_office(&self, op: back_office::Op, now: i64) -> Result<back_office::Done, StoreError>;

    /// Every signing key, oldest first.
    async fn signing_keys(&self) -> Result<Vec<SigningKeyRecord>, StoreError>;
    /// Adds a signing key (a key already there is left as it is).
    async fn add_signing_key(&self, key: SigningKeyRecord) -> Result<(), StoreError>;
}

#[cfg(test)]
mod tests {
    /// The versions and names of a folder of migrations, in order.
    fn migrations(backend: &str) -> Vec<String> {
        let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/server/store").join(backend).join("migrations");
        let mut names: Vec<String> = std::fs::read_dir(&folder).unwrap().map(|entry| entry.unwrap().file_name().into_string().unwrap()).collect();
        names.sort_by_key(|name| name.trim_start_matches('V').split('_').next().unwrap().parse::<u32>().unwrap());
        names
    }

    /// Both backends are one schema in two dialects: a version added to one is added to the other, under
    /// the same name, and versions follow one another from 1.
    #[test]
    fn both_backends_list_the_same_migrations() {
        let (sqlite, postgres) = (migrations("sqlite"), migrations("postgres"));
        assert_eq!(sqlite, postgres);
        for (n, name) in sqlite.iter().enumerate() {
            assert!(name.starts_with(&format!("V{}__", n + 1)) && name.ends_with(".sql"), "{name} is not version {}", n + 1);
        }
    }
}
