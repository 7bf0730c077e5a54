//! The audit log: every staff action and configuration change, appended in the unit of work that
//! makes it. Each row's hash covers its fields and the previous row's hash ([`entry_hash`]), so that
//! rewriting a row behind the database's back (its triggers refuse UPDATE and DELETE) breaks the chain
//! at that row ([`verify_chain`]).

use crate::server::store::error::Failure;
use crate::server::store::rows::Columns;
use crate::server::store::tx::{Row, Tx};
use crate::server::store::{Store, StoreError};
use sha2::{Digest, Sha256};

impl Store {
    /// Appends a note of a change made elsewhere (an emission made, a key added…).
    pub async fn record(&self, note: AuditNote, now: i64) -> Result<AuditEntry, StoreError> {
        self.write((note, now), |tx, (note, now)| Box::pin(append(tx, note, *now))).await
    }

    /// Up to `limit` rows after row `after`, in order.
    pub async fn audit_log(&self, after: i64, limit: u32) -> Result<Vec<AuditEntry>, StoreError> {
        self.read((after, limit), |tx, (after, limit)| {
            Box::pin(async move {
                let sql = format!("SELECT {AUDIT_COLUMNS} FROM audit_log WHERE seq > $1 ORDER BY seq LIMIT $2");
                let rows = tx.query(&sql, &[(*after).into(), (*limit).into()]).await?;
                Ok(rows.iter().map(audit_from).collect::<Result<_, _>>()?)
            })
        })
        .await
    }

    /// Walks the whole log in pages: the rows checked, or the first broken one.
    pub async fn verify_audit_log(&self) -> Result<Result<i64, ChainBreak>, StoreError> {
        const PAGE: u32 = 1_000;
        let mut last = None;
        loop {
            let after = last.as_ref().map_or(0, |(seq, _)| *seq);
            let page = self.audit_log(after, PAGE).await?;
            match verify_chain(last.clone(), &page) {
                Err(broken) => return Ok(Err(broken)),
                Ok(checked) => last = checked,
            }
            if page.len() < PAGE as usize {
                return Ok(Ok(last.map_or(0, |(seq, _)| seq)));
            }
        }
    }
}
/// What an action appends to the audit log: who did what to what, the state before and after (JSON),
/// and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditNote {
    pub actor: String,
    pub action: String,
    pub target: String,
    pub before: Option<serde_json::Value>,
    pub after: Option<serde_json::Value>,
    pub reason: Option<String>,
}

impl AuditNote {
    pub fn new(actor: &str, action: &str, target: impl Into<String>) -> AuditNote {
        AuditNote {
            actor: actor.to_owned(),
            action: action.to_owned(),
            target: target.into(),
            before: None,
            after: None,
            reason: None,
        }
    }

    pub fn change(mut self, before: Option<serde_json::Value>, after: Option<serde_json::Value>) -> AuditNote {
        (self.before, self.after) = (before, after);
        self
    }

    pub fn because(mut self, reason: &str) -> AuditNote {
        self.reason = Some(reason.to_owned());
        self
    }
}

/// A row of the audit log as stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AuditEntry {
    pub seq: i64,
    pub at: i64,
    pub actor: String,
    pub action: String,
    pub target: String,
    pub before: Option<String>,
    pub after: Option<String>,
    pub reason: Option<String>,
    pub prev_hash: String,
    pub hash: String,
}

/// The hash the first row chains to.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// A row's hash: SHA-256 over its fields and the previous row's hash, as a JSON array (one unambiguous
/// encoding of texts that may hold any character), in hex.
pub fn entry_hash(e: &AuditEntry) -> String {
    let fields =
        serde_json::json!([e.seq, e.at, e.actor, e.action, e.target, e.before, e.after, e.reason, e.prev_hash]);
    crate::block::hex(&Sha256::digest(fields.to_string().as_bytes()))
}

/// Where the chain breaks: the first row that does not follow from the ones before it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("audit log row {seq}: {why}")]
pub struct ChainBreak {
    pub seq: i64,
    pub why: String,
}

/// Walks the log in order from `previous` (the last row checked, or none from the start): numbers
/// follow one another, each row chains to the one before and its hash is its own. The last row
/// checked, to go on from.
pub fn verify_chain(
    previous: Option<(i64, String)>,
    entries: &[AuditEntry],
) -> Result<Option<(i64, String)>, ChainBreak> {
    let mut last = previous;
    for e in entries {
        let (seq, prev_hash) = last.clone().unwrap_or((0, GENESIS.to_owned()));
        let broken = |why: String| Err(ChainBreak { seq: e.seq, why });
        if e.seq != seq + 1 {
            return broken(format!("follows row {seq}: a row is missing or out of place"));
        }
        if e.prev_hash != prev_hash {
            return broken(format!("chains to {} but row {seq}'s hash is {prev_hash}", e.prev_hash));
        }
        let hash = entry_hash(e);
        if e.hash != hash {
            return broken(format!("its fields hash to {hash}, not to the {} it records: it was changed", e.hash));
        }
        last = Some((e.seq, e.hash.clone()));
    }
    Ok(last)
}

const AUDIT_COLUMNS: &str = "seq, at, actor, action, target, before, after, reason, prev_hash, hash";

fn audit_from(r: &Row) -> Result<AuditEntry, StoreError> {
    Ok(AuditEntry {
        seq: r.int(0)?,
        at: r.int(1)?,
        actor: r.text(2)?,
        action: r.text(3)?,
        target: r.text(4)?,
        before: r.optional_text(5)?,
        after: r.optional_text(6)?,
        reason: r.optional_text(7)?,
        prev_hash: r.text(8)?,
        hash: r.text(9)?,
    })
}

/// Appends `note` after the last row. Two units of work that read the same last row both try its
/// successor's number: the second finds it taken and is run again.
pub(crate) async fn append(tx: &mut dyn Tx, note: &AuditNote, now: i64) -> Result<AuditEntry, Failure> {
    let last = tx.query_opt("SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1", &[]).await?;
    let (seq, prev_hash) = match last {
        Some(r) => (r.int(0)? + 1, r.text(1)?),
        None => (1, GENESIS.to_owned()),
    };
    let json = |v: &Option<serde_json::Value>| v.as_ref().map(serde_json::Value::to_string);
    let mut entry = AuditEntry {
        seq,
        at: now,
        actor: note.actor.clone(),
        action: note.action.clone(),
        target: note.target.clone(),
        before: json(&note.before),
        after: json(&note.after),
        reason: note.reason.clone(),
        prev_hash,
        hash: String::new(),
    };
    entry.hash = entry_hash(&entry);
    let e = &entry;
    let params = [
        e.seq.into(),
        e.at.into(),
        e.actor.as_str().into(),
        e.action.as_str().into(),
        e.target.as_str().into(),
        e.before.clone().into(),
        e.after.clone().into(),
        e.reason.clone().into(),
        e.prev_hash.as_str().into(),
        e.hash.as_str().into(),
    ];
    let inserted = tx
        .execute(
            &format!(
                "INSERT INTO audit_log ({AUDIT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON \
            CONFLICT (seq) DO NOTHING"
            ),
            &params,
        )
        .await?;
    if inserted == 0 {
        return Err(Failure::Conflict(format!("audit log row {seq} was appended meanwhile")));
    }
    Ok(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(n: i64) -> Vec<AuditEntry> {
        let mut entries: Vec<AuditEntry> = Vec::new();
        for seq in 1..=n {
            let prev_hash = entries.last().map_or(GENESIS.to_owned(), |e| e.hash.clone());
            let mut e = AuditEntry {
                seq,
                at: 1_000 + seq,
                actor: "cli:root".into(),
                action: "staff_added".into(),
                target: format!("staff:s{seq}"),
                before: None,
                after: Some(r#"{"role":"finance"}"#.into()),
                reason: (seq % 2 == 0).then(|| "embauche".into()),
                prev_hash,
                hash: String::new(),
            };
            e.hash = entry_hash(&e);
            entries.push(e);
        }
        entries
    }

    #[test]
    fn a_chain_verifies_whole_and_in_pages() {
        let entries = chain(5);
        assert_eq!(verify_chain(None, &entries).unwrap(), Some((5, entries[4].hash.clone())));
        let first = verify_chain(None, &entries[..2]).unwrap();
        assert_eq!(verify_chain(first, &entries[2..]).unwrap().unwrap().0, 5);
        assert_eq!(verify_chain(None, &[]).unwrap(), None);
    }

    #[test]
    fn the_first_changed_missing_or_rechained_row_is_named() {
        let mut changed = chain(5);
        changed[2].reason = Some("autre chose".into());
        assert_eq!(verify_chain(None, &changed).unwrap_err().seq, 3);

        // Rewriting a row with its own hash made again breaks the next one's link.
        let mut rehashed = chain(5);
        rehashed[2].actor = "staff:mallory".into();
        rehashed[2].hash = entry_hash(&rehashed[2]);
        let broken = verify_chain(None, &rehashed).unwrap_err();
        assert_eq!(broken.seq, 4, "{broken}");

        let mut missing = chain(5);
        missing.remove(1);
        assert_eq!(verify_chain(None, &missing).unwrap_err().seq, 3);
    }
}
