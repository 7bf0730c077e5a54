//! Players, guests and their sessions, and the purge of what no one will come back for.

use super::error::{Failure, why_not_registered};
use super::postings::Account;
use super::responsible::sql::{CREATE_SESSION, SESSION};
use super::responsible::units::{banned, deposit};
use super::responsible::{SessionRecord, session_from};
use super::rows::Columns;
use super::sql;
use super::tx::Tx;
use super::{Credentials, NewPlayer, PlayerRecord, PurgeReport, Store, StoreError};
use crate::server::names::PlayerName;

impl Store {
    /// Creates a player (unique name, if any) and its wallet, with its opening credit if any.
    pub async fn create_player(&self, player: NewPlayer, now: i64) -> Result<PlayerRecord, StoreError> {
        self.write((player, now), |tx, (player, now)| Box::pin(create_player(tx, player, *now))).await
    }

    pub async fn player(&self, id: &str) -> Result<PlayerRecord, StoreError> {
        self.read(id.to_owned(), |tx, id| {
            Box::pin(async move {
                let row = tx
                    .query_opt("SELECT name, guest FROM players WHERE id = $1", &[id.into()])
                    .await?
                    .ok_or(StoreError::NotFound("player"))?;
                Ok(PlayerRecord {
                    balance: tx.balance(id).await?,
                    id: id.clone(),
                    name: row.optional_text(0)?,
                    guest: row.int(1)? != 0,
                })
            })
        })
        .await
    }

    /// A guest becomes an account with this name (unique) and password, keeping its id and so its
    /// wallet and tickets. `NotAGuest` for a player already named.
    pub async fn register_guest(
        &self,
        player_id: &str,
        name: PlayerName,
        password_hash: String,
    ) -> Result<(), StoreError> {
        self.write((player_id.to_owned(), name, password_hash), |tx, (player, name, hash)| {
            Box::pin(async move {
                let updated = tx
                    .execute(
                        "UPDATE players SET name = $2, name_key = $3, password_hash = $4, guest = FALSE WHERE id = $1 \
                            AND guest",
                        &[player.into(), (&name.shown).into(), (&name.key).into(), hash.into()],
                    )
                    .await;
                match updated {
                    Ok(1) => Ok(()),
                    // Another player holds the name (its key is unique).
                    Err(Failure::Duplicate(_)) => Err(StoreError::NameTaken.into()),
                    Err(e) => Err(e),
                    Ok(_) => {
                        let guest = tx.query_opt("SELECT guest FROM players WHERE id = $1", &[player.into()]).await?;
                        Err(why_not_registered(guest.map(|r| r.int(0)).transpose()?.map(|g| g != 0)).into())
                    }
                }
            })
        })
        .await
    }

    /// The credentials of the player whose name has this key (`names::key_of`).
    pub async fn credentials(&self, name_key: &str) -> Result<Option<Credentials>, StoreError> {
        self.read(name_key.to_owned(), |tx, key| {
            Box::pin(async move {
                let row = tx
                    .query_opt(
                        "SELECT id, password_hash FROM players WHERE name_key = $1 AND password_hash IS NOT NULL",
                        &[key.into()],
                    )
                    .await?;
                Ok(row
                    .map(|r| Ok::<_, StoreError>(Credentials { player_id: r.text(0)?, password_hash: r.text(1)? }))
                    .transpose()?)
            })
        })
        .await
    }

    /// A session starting `now`: its reality check due after the player's interval.
    pub async fn create_session(
        &self,
        token_hash: &str,
        player_id: &str,
        now: i64,
        expires_at: i64,
    ) -> Result<(), StoreError> {
        let args = (token_hash.to_owned(), player_id.to_owned(), now, expires_at);
        self.write(args, |tx, (token, player, now, expires_at)| {
            Box::pin(async move {
                match tx
                    .execute(CREATE_SESSION, &[token.into(), player.into(), (*now).into(), (*expires_at).into()])
                    .await
                {
                    Ok(1) => Ok(()),
                    Ok(_) => Err(StoreError::NotFound("player").into()),
                    Err(Failure::Duplicate(_)) => Err(StoreError::AlreadyExists("session".into()).into()),
                    Err(e) => Err(e),
                }
            })
        })
        .await
    }

    /// An unexpired session.
    pub async fn session(&self, token_hash: &str, now: i64) -> Result<Option<SessionRecord>, StoreError> {
        self.read((token_hash.to_owned(), now), |tx, (token, now)| {
            Box::pin(async move {
                Ok(tx
                    .query_opt(SESSION, &[token.into(), (*now).into()])
                    .await?
                    .map(|r| session_from(&r))
                    .transpose()?)
            })
        })
        .await
    }

    pub async fn delete_session(&self, token_hash: &str) -> Result<(), StoreError> {
        self.write(token_hash.to_owned(), |tx, token| {
            Box::pin(async move {
                tx.execute("DELETE FROM sessions WHERE token_hash = $1", &[token.into()]).await?;
                Ok(())
            })
        })
        .await
    }

    /// Deletes expired sessions, and up to `limit` stale guests (see `sql::STALE_GUESTS`), each in a
    /// unit of work that checks again that it is stale: each one's demo money goes back to `demo` and
    /// its wallet and demo transfers go with it, the exact inverse of its creation and top-ups, so the
    /// books still balance.
    pub async fn purge(&self, now: i64, stale_before: i64, limit: usize) -> Result<PurgeReport, StoreError> {
        let sessions = self
            .write(now, |tx, now| {
                Box::pin(
                    async move { tx.execute("DELETE FROM sessions WHERE expires_at <= $1", &[(*now).into()]).await },
                )
            })
            .await?;
        let limit = i64::try_from(limit).map_err(|e| StoreError::Backend(e.to_string()))?;
        let stale: Vec<String> = self
            .read((stale_before, limit), |tx, (before, limit)| {
                Box::pin(async move {
                    let rows = tx.query(sql::STALE_GUESTS, &[(*before).into(), (*limit).into()]).await?;
                    Ok(rows.iter().map(|r| r.text(0)).collect::<Result<_, _>>()?)
                })
            })
            .await?;
        let mut guests = 0;
        for id in stale {
            match self
                .write((id.clone(), stale_before), |tx, (id, before)| Box::pin(purge_guest(tx, id, *before)))
                .await
            {
                Ok(true) => guests += 1,
                Ok(false) => {}
                Err(e) => tracing::warn!(guest = %id, error = %e, "a stale guest was kept"),
            }
        }
        Ok(PurgeReport { sessions: usize::try_from(sessions).map_err(|e| StoreError::Backend(e.to_string()))?, guests })
    }
}

async fn create_player(tx: &mut dyn Tx, player: &NewPlayer, now: i64) -> Result<PlayerRecord, Failure> {
    let identity_key = player.identity.as_ref().map(|i| i.key());
    if let Some(key) = &identity_key
        && banned(tx, key).await?
    {
        return Err(StoreError::Banned.into());
    }
    let identity = player.identity.as_ref();
    let inserted = tx
        .execute(
            "INSERT INTO players (id, name, name_key, password_hash, guest, created_at, first_name, last_name, \
                birth_date, identity_key) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING",
            &[
                player.id.as_str().into(),
                player.name.as_ref().map(|n| n.shown.as_str()).into(),
                player.name.as_ref().map(|n| n.key.as_str()).into(),
                player.password_hash.as_deref().into(),
                player.guest.into(),
                now.into(),
                identity.map(|i| i.first_name.as_str()).into(),
                identity.map(|i| i.last_name.as_str()).into(),
                identity.map(|i| i.birth_date.as_str()).into(),
                identity_key.into(),
            ],
        )
        .await?;
    if inserted == 0 {
        let error = if player.name.is_some() {
            StoreError::NameTaken
        } else {
            StoreError::AlreadyExists(format!("player {}", player.id))
        };
        return Err(error.into());
    }
    tx.open_account(&Account::Wallet(&player.id)).await?;
    if let Some(credit) = &player.opening_credit {
        deposit(tx, &player.id, credit, now).await?;
    }
    Ok(PlayerRecord {
        balance: tx.balance(&player.id).await?,
        id: player.id.clone(),
        name: player.name.as_ref().map(|n| n.shown.clone()),
        guest: player.guest,
    })
}

/// Purges one stale guest if it still is one; whether it did.
async fn purge_guest(tx: &mut dyn Tx, id: &str, stale_before: i64) -> Result<bool, Failure> {
    let wallet = Account::Wallet(id).id();
    // Every sale, credit and debit of this guest changes its wallet's row: while this unit holds it,
    // none can land. Another unit holding it (an instance purging the guest) is left to it.
    if !tx.hold_wallet(&wallet).await? {
        return Ok(false);
    }
    // Read again under that hold: money moved or a ticket bought since the list was made keeps it.
    if tx.query_opt(sql::STILL_STALE_GUEST, &[stale_before.into(), id.into()]).await?.is_none() {
        return Ok(false);
    }
    let given = tx.query_one(sql::DEMO_GIVEN, &[wallet.as_str().into()]).await?.int(0)?;
    // Only what demo money gave the wallet is in it (no ticket, no real money): else it is kept.
    let layout = tx.layout();
    let holds_its_demo_money =
        format!("SELECT 1 FROM {} WHERE {} AND balance = $2", layout.wallet_table, layout.wallet_key);
    if tx.query_opt(&holds_its_demo_money, &[wallet.as_str().into(), given.into()]).await?.is_none() {
        return Ok(false);
    }
    tx.execute("DELETE FROM transfers WHERE kind = 'demo' AND credit = $1", &[wallet.as_str().into()]).await?;
    tx.shift(&Account::Demo, given, id).await?;
    tx.execute(&format!("DELETE FROM {} WHERE {}", layout.wallet_table, layout.wallet_key), &[wallet.as_str().into()])
        .await?;
    // PostgreSQL's account row apart from its balance (SQLite's is the same row, gone already).
    tx.execute("DELETE FROM accounts WHERE id = $1", &[wallet.as_str().into()]).await?;
    Ok(tx.execute("DELETE FROM players WHERE id = $1", &[id.into()]).await? == 1)
}
