//! What crosses the store's interface: the records it keeps and the requests it takes, plain data
//! with no database type in them.

use super::StoreError;
use crate::block::{Hash, LotCode, Scheme, Seed};
use crate::money::Cents;
use crate::payload::Serial;
use crate::play::Mode;
use crate::server::names::PlayerName;

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
    pub name: Option<PlayerName>,
    pub password_hash: Option<String>,
    pub guest: bool,
    /// The identity a real-money account declares (refused if the ban file lists it).
    pub identity: Option<Identity>,
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
    /// The place a batch starts after, as [`super::sql::DUE_TICKETS`] takes it: before every ticket for a
    /// new round.
    pub(super) fn start(after: Option<DuePlace>) -> (i64, String) {
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
    pub(super) fn count(&mut self, place: DuePlace, settled: Result<bool, StoreError>) {
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
        f.debug_struct("SigningKeyRecord")
            .field("kid", &self.kid)
            .field("created_at", &self.created_at)
            .finish_non_exhaustive()
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
pub(super) fn cents(amount: i64) -> Result<Cents, StoreError> {
    u64::try_from(amount)
        .map(Cents)
        .map_err(|_| StoreError::Backend(format!("a negative amount where none can be: {amount}")))
}

/// An amount as both databases keep it (a signed 64-bit integer).
pub(super) fn sql_amount(amount: Cents) -> Result<i64, StoreError> {
    i64::try_from(amount.0).map_err(|_| StoreError::Backend(format!("{amount} is beyond what the store holds")))
}

/// A tree level read back from its column: whole hashes end to end.
pub(super) fn hashes(bytes: &[u8]) -> Result<Vec<Hash>, StoreError> {
    match bytes.as_chunks::<32>() {
        (hashes, []) => Ok(hashes.to_vec()),
        (_, rest) => Err(StoreError::Backend(format!("a stored tree level ends with {} bytes of a hash", rest.len()))),
    }
}

/// Uncovered zones (or their times) as a ticket row keeps them: a JSON list, compared whole by the
/// compare-and-set.
pub(super) fn json_list<T: serde::Serialize>(list: &[T]) -> String {
    serde_json::to_string(list).expect("a list of numbers serialises")
}

impl TicketRecord {
    /// This ticket with `after` uncovered, the new zones at `now`. A ticket whose earlier times were
    /// not kept keeps none, rather than times out of step with its zones.
    pub(super) fn uncovered(&self, after: Vec<usize>, now: i64) -> TicketRecord {
        let mut revealed_at = self.revealed_at.clone();
        if revealed_at.len() == self.revealed.len() {
            revealed_at.resize(after.len(), now);
        }
        TicketRecord { revealed: after, revealed_at, ..self.clone() }
    }
}

/// The identity a real-money player declares, as the ban file is matched against it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub first_name: String,
    pub last_name: String,
    /// `YYYY-MM-DD`.
    pub birth_date: String,
}

impl Identity {
    /// The key a ban file's line and a player's identity match on: names without accents, case,
    /// spaces, hyphens or apostrophes, and the date of birth.
    pub fn key(&self) -> String {
        format!("{}|{}|{}", fold(&self.last_name), fold(&self.first_name), self.birth_date)
    }
}

fn fold(name: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    name.nfkd().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

#[cfg(test)]
mod tests {
    use super::Identity;

    #[test]
    fn identities_match_whatever_the_accents_case_and_hyphens() {
        let declared =
            Identity { first_name: "Jean-Émile".into(), last_name: "D'Arc".into(), birth_date: "1990-02-03".into() };
        let listed =
            Identity { first_name: "JEAN EMILE".into(), last_name: "darc".into(), birth_date: "1990-02-03".into() };
        assert_eq!(declared.key(), listed.key());
        assert_ne!(declared.key(), Identity { birth_date: "1990-02-04".into(), ..listed }.key());
    }
}
