//! Blocks with their commitments and trees, the designs they were made from, their withdrawal from
//! sale, and the keys and secrets every instance shares.

use super::back_office::{AuditNote, append};
use super::error::{Already, Failure};
use super::postings::Account;
use super::rows::{self, Columns};
use super::sql::BLOCK_QUERY;
use super::tx::Tx;
use super::{BlockRecord, NewBlock, SigningKeyRecord, Store, StoreError, hashes};
use crate::block::Hash;

impl Store {
    /// Stores a made block with its design, commitment and tree level; a block is never replaced.
    pub async fn insert_block(&self, block: NewBlock) -> Result<(), StoreError> {
        self.write(block, |tx, block| Box::pin(insert_block(tx, block))).await
    }

    /// The kept level of a block's tree, if stored. Unchecked: the printer checks it against the root.
    pub async fn block_tree(&self, emission: u32, block: u32) -> Result<Option<Vec<Hash>>, StoreError> {
        self.read((emission, block), |tx, (emission, block)| {
            Box::pin(async move {
                let row = tx
                    .query_opt(
                        "SELECT kept_level FROM block_trees WHERE emission = $1 AND block = $2",
                        &[(*emission).into(), (*block).into()],
                    )
                    .await?;
                Ok(row.map(|r| hashes(&r.bytes(0)?)).transpose()?)
            })
        })
        .await
    }

    /// Stores the kept level of a block's tree, replacing one that failed its check.
    pub async fn save_block_tree(&self, emission: u32, block: u32, kept_level: Vec<Hash>) -> Result<(), StoreError> {
        self.write((emission, block, kept_level), |tx, (emission, block, level)| {
            Box::pin(save_block_tree(tx, *emission, *block, level))
        })
        .await
    }

    pub async fn next_emission(&self) -> Result<u32, StoreError> {
        self.read((), |tx, ()| {
            Box::pin(async move {
                Ok(tx.query_one("SELECT COALESCE(MAX(emission), 0) + 1 FROM blocks", &[]).await?.unsigned(0)?)
            })
        })
        .await
    }

    pub async fn blocks(&self) -> Result<Vec<BlockRecord>, StoreError> {
        self.snapshot((), |tx, ()| {
            Box::pin(async move {
                let rows = tx.query(&format!("{BLOCK_QUERY} ORDER BY b.emission, b.block"), &[]).await?;
                Ok(rows.iter().map(rows::block).collect::<Result<_, _>>()?)
            })
        })
        .await
    }

    pub async fn block(&self, emission: u32, block: u32) -> Result<BlockRecord, StoreError> {
        self.read((emission, block), |tx, (emission, block)| {
            Box::pin(async move {
                let row = tx
                    .query_opt(
                        &format!("{BLOCK_QUERY} WHERE b.emission = $1 AND b.block = $2"),
                        &[(*emission).into(), (*block).into()],
                    )
                    .await?;
                Ok(rows::block(&row.ok_or(StoreError::NotFound("block"))?)?)
            })
        })
        .await
    }

    pub async fn design_text(&self, hash: &Hash) -> Result<String, StoreError> {
        self.read(*hash, |tx, hash| {
            Box::pin(async move {
                let row = tx.query_opt("SELECT text FROM designs WHERE hash = $1", &[hash.as_slice().into()]).await?;
                Ok(row.ok_or(StoreError::NotFound("design"))?.text(0)?)
            })
        })
        .await
    }

    /// Every signing key, oldest first.
    pub async fn signing_keys(&self) -> Result<Vec<SigningKeyRecord>, StoreError> {
        self.read((), |tx, ()| {
            Box::pin(async move {
                let rows =
                    tx.query("SELECT kid, secret, created_at FROM signing_keys ORDER BY created_at, kid", &[]).await?;
                let key = |r: &super::tx::Row| {
                    Ok::<_, StoreError>(SigningKeyRecord { kid: r.text(0)?, secret: r.hash(1)?, created_at: r.int(2)? })
                };
                Ok(rows.iter().map(key).collect::<Result<_, _>>()?)
            })
        })
        .await
    }

    /// Adds a signing key (a key already there is left as it is).
    pub async fn add_signing_key(&self, key: SigningKeyRecord) -> Result<(), StoreError> {
        self.write(key, |tx, key| {
            Box::pin(async move {
                tx.execute(
                    "INSERT INTO signing_keys (kid, secret, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                    &[key.kid.as_str().into(), key.secret.as_slice().into(), key.created_at.into()],
                )
                .await?;
                Ok(())
            })
        })
        .await
    }

    /// Withdraws a block from sale for good: no ticket of it is sold again, and sales go on from the
    /// next. Recorded in the audit log.
    pub async fn withdraw_block(
        &self,
        emission: u32,
        block: u32,
        actor: &str,
        reason: &str,
        now: i64,
    ) -> Result<(), StoreError> {
        let args = (emission, block, actor.to_owned(), reason.to_owned(), now);
        self.write(args, |tx, (emission, block, actor, reason, now)| {
            Box::pin(withdraw_block(tx, *emission, *block, actor, reason, *now))
        })
        .await
    }

    /// The 32-byte secret named `name`, made (from the operating system's randomness) if none is
    /// stored. Instances starting together agree on the first one written.
    pub async fn server_secret(&self, name: &str, now: i64) -> Result<[u8; 32], StoreError> {
        let fresh = crate::block::hex(&crate::server::os_random::<32>());
        let hex = self
            .write((name.to_owned(), fresh, now), |tx, (name, fresh, now)| {
                Box::pin(async move {
                    let params = [name.into(), fresh.into(), (*now).into()];
                    tx.execute(
                        "INSERT INTO server_secrets (name, secret, created_at) VALUES ($1, $2, $3) ON CONFLICT \
                        DO NOTHING",
                        &params,
                    )
                    .await?;
                    let row = tx.query_opt("SELECT secret FROM server_secrets WHERE name = $1", &[name.into()]).await?;
                    Ok(row.ok_or_else(|| StoreError::Backend(format!("the secret {name} is not there")))?.text(0)?)
                })
            })
            .await?;
        crate::block::from_hex(&hex)
            .ok_or_else(|| StoreError::Backend(format!("the secret {name} is not 32 bytes in hex")))
    }
}

async fn insert_block(tx: &mut dyn Tx, block: &NewBlock) -> Result<(), Failure> {
    tx.execute(
        "INSERT INTO designs (hash, text) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        &[block.design_hash.as_slice().into(), block.design_text.as_str().into()],
    )
    .await?;
    let inserted = tx
        .execute(
            "INSERT INTO blocks (emission, block, seed, root, design_hash, lots, created_at, scheme) VALUES ($1, $2, \
                $3, $4, $5, $6, $7, $8) \
             ON CONFLICT DO NOTHING",
            &[
                block.emission.into(),
                block.block.into(),
                block.seed.as_slice().into(),
                block.root.as_slice().into(),
                block.design_hash.as_slice().into(),
                block.lots.as_slice().into(),
                block.now.into(),
                block.scheme.number().into(),
            ],
        )
        .await?;
    if inserted == 0 {
        return Err(StoreError::AlreadyExists(format!("block E{}-B{}", block.emission, block.block)).into());
    }
    let size = u32::try_from(block.lots.len()).map_err(|e| StoreError::Backend(e.to_string()))?;
    tx.open_sales(block.emission, block.block, size, block.now).await?;
    save_block_tree(tx, block.emission, block.block, &block.kept_level).await?;
    tx.open_account(&Account::Stakes { emission: block.emission, block: block.block }).await?;
    tx.open_account(&Account::Prizes { emission: block.emission, block: block.block }).await?;
    Ok(())
}

async fn save_block_tree(tx: &mut dyn Tx, emission: u32, block: u32, kept_level: &[Hash]) -> Result<(), Failure> {
    tx.execute(
        "INSERT INTO block_trees (emission, block, kept_level) VALUES ($1, $2, $3) \
         ON CONFLICT (emission, block) DO UPDATE SET kept_level = excluded.kept_level",
        &[emission.into(), block.into(), kept_level.as_flattened().into()],
    )
    .await?;
    Ok(())
}

async fn withdraw_block(
    tx: &mut dyn Tx,
    emission: u32,
    block: u32,
    actor: &str,
    reason: &str,
    now: i64,
) -> Result<(), Failure> {
    let exists = tx
        .query_opt("SELECT 1 FROM blocks WHERE emission = $1 AND block = $2", &[emission.into(), block.into()])
        .await?
        .is_some();
    if !exists {
        return Err(StoreError::NotFound("block").into());
    }
    let added = tx
        .execute(
            "INSERT INTO block_withdrawals (emission, block, at, reason) VALUES ($1, $2, $3, $4) ON CONFLICT DO \
                NOTHING",
            &[emission.into(), block.into(), now.into(), reason.into()],
        )
        .await?;
    if added == 0 {
        return Err(StoreError::AlreadyDone(Already::Withdrawn).into());
    }
    let note = AuditNote::new(actor, "block_withdrawn", format!("block:E{emission}-B{block}"))
        .change(Some(serde_json::json!({ "on_sale": true })), Some(serde_json::json!({ "on_sale": false })))
        .because(reason);
    append(tx, &note, now).await?;
    Ok(())
}
