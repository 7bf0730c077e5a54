//! Reading records off rows, the same for both backends: each backend only says how one of its rows
//! gives a column as text, an integer or bytes ([`Columns`]).

use super::{BlockRecord, DuePlace, StoreError, TicketRecord, cents};
use crate::block::{Hash, LotCode, Scheme};
use crate::payload::Serial;
use crate::play::Mode;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// One row of a result, column by column.
pub trait Columns {
    fn text(&self, i: usize) -> Result<String, StoreError>;
    /// An integer column, whatever its width in the database.
    fn int(&self, i: usize) -> Result<i64, StoreError>;
    fn optional_int(&self, i: usize) -> Result<Option<i64>, StoreError>;
    fn bytes(&self, i: usize) -> Result<Vec<u8>, StoreError>;

    fn unsigned(&self, i: usize) -> Result<u32, StoreError> {
        let n = self.int(i)?;
        u32::try_from(n)
            .map_err(|_| StoreError::Backend(format!("column {i}: {n} where a number from 0 to 2³² is expected")))
    }

    fn hash(&self, i: usize) -> Result<Hash, StoreError> {
        self.bytes(i)?
            .try_into()
            .map_err(|_| StoreError::Backend(format!("column {i}: a stored hash or seed is not 32 bytes")))
    }

    fn json<T: serde::de::DeserializeOwned>(&self, i: usize) -> Result<T, StoreError> {
        serde_json::from_str(&self.text(i)?).map_err(|e| StoreError::Backend(format!("column {i}: {e}")))
    }
}

/// A ticket, from the columns of [`super::sql::TICKET_COLUMNS`].
pub fn ticket(r: &impl Columns) -> Result<TicketRecord, StoreError> {
    let mode = r.text(5)?;
    Ok(TicketRecord {
        id: r.text(0)?,
        owner: r.text(1)?,
        serial: Serial { emission: r.unsigned(2)?, block: r.unsigned(3)?, index: r.unsigned(4)? },
        mode: Mode::parse(&mode).ok_or_else(|| StoreError::Backend(format!("a ticket in mode {mode:?}")))?,
        lot: cents(r.int(6)?)?,
        revealed: r.json(7)?,
        sold_at: r.int(8)?,
        credited_at: r.optional_int(9)?,
        finished_at: r.optional_int(10)?,
        revealed_at: r.json(11)?,
    })
}

/// A block, from the columns of [`super::sql::BLOCK_QUERY`].
pub fn block(r: &impl Columns) -> Result<BlockRecord, StoreError> {
    Ok(BlockRecord {
        emission: r.unsigned(0)?,
        block: r.unsigned(1)?,
        size: r.unsigned(2)?,
        sold: r.unsigned(3)?,
        seed: r.hash(4)?,
        root: r.hash(5)?,
        design_hash: r.hash(6)?,
        closed_at: r.optional_int(7)?,
        scheme: Scheme::from_number(r.unsigned(8)?)
            .ok_or_else(|| StoreError::Backend("a block of an unknown scheme".into()))?,
        withdrawn_at: r.optional_int(9)?,
    })
}

/// A due ticket, from the columns of [`super::sql::DUE_TICKETS`].
pub fn due_place(r: &impl Columns) -> Result<DuePlace, StoreError> {
    Ok(DuePlace { ticket_id: r.text(0)?, sold_at: r.int(1)? })
}

/// Each block's lots (1.5 MB a block), read from the store once and then shared.
#[derive(Default)]
pub struct LotsCache(RwLock<HashMap<BlockKey, Arc<Vec<LotCode>>>>);

/// A block by emission and number.
type BlockKey = (u32, u32);

impl LotsCache {
    pub fn get(&self, emission: u32, block: u32) -> Option<Arc<Vec<LotCode>>> {
        self.0.read().unwrap_or_else(|p| p.into_inner()).get(&(emission, block)).cloned()
    }

    /// Keeps lots just read, and gives them back shared.
    pub fn keep(&self, emission: u32, block: u32, lots: Vec<LotCode>) -> Arc<Vec<LotCode>> {
        let lots = Arc::new(lots);
        self.0.write().unwrap_or_else(|p| p.into_inner()).insert((emission, block), lots.clone());
        lots
    }
}
