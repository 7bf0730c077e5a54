//! Staff, their roles and their sessions.

use super::Role;
use super::audit::{AuditNote, append};
use crate::server::store::error::Failure;
use crate::server::store::rows::Columns;
use crate::server::store::tx::{Row, Tx};
use crate::server::store::{Store, StoreError};

impl Store {
    pub async fn add_staff(&self, staff: NewStaff, actor: &str, now: i64) -> Result<StaffRecord, StoreError> {
        self.write((staff, actor.to_owned(), now), |tx, (staff, actor, now)| {
            Box::pin(add_staff(tx, staff, actor, *now))
        })
        .await
    }

    /// Gives a member another role; the same role again changes (and records) nothing.
    pub async fn set_role(
        &self,
        name: &str,
        role: Role,
        actor: &str,
        reason: &str,
        now: i64,
    ) -> Result<(), StoreError> {
        let args = (name.to_owned(), role, actor.to_owned(), reason.to_owned(), now);
        self.write(args, |tx, (name, role, actor, reason, now)| {
            Box::pin(set_role(tx, name, *role, actor, reason, *now))
        })
        .await
    }

    pub async fn staff_named(&self, name: &str) -> Result<Option<StaffRecord>, StoreError> {
        self.read(name.to_owned(), |tx, name| Box::pin(staff_named(tx, name))).await
    }

    /// Every member, by name.
    pub async fn staff_list(&self) -> Result<Vec<StaffRecord>, StoreError> {
        self.read((), |tx, ()| {
            Box::pin(async move {
                let rows = tx.query(&format!("SELECT {STAFF_COLUMNS} FROM staff ORDER BY name"), &[]).await?;
                Ok(rows.iter().map(staff_from).collect::<Result<_, _>>()?)
            })
        })
        .await
    }

    pub async fn create_staff_session(
        &self,
        token_hash: &str,
        staff_id: &str,
        now: i64,
        expires_at: i64,
    ) -> Result<(), StoreError> {
        self.write(
            (token_hash.to_owned(), staff_id.to_owned(), now, expires_at),
            |tx, (token, staff, now, expires_at)| {
                Box::pin(async move {
                    tx.execute(
                    "INSERT INTO staff_sessions (token_hash, staff_id, created_at, expires_at) VALUES ($1, $2, $3, $4)",
                    &[token.into(), staff.into(), (*now).into(), (*expires_at).into()],
                )
                .await?;
                    Ok(())
                })
            },
        )
        .await
    }

    /// The member an unexpired session belongs to.
    pub async fn staff_session(&self, token_hash: &str, now: i64) -> Result<Option<StaffRecord>, StoreError> {
        self.read((token_hash.to_owned(), now), |tx, (token, now)| {
            Box::pin(async move {
                let columns = STAFF_COLUMNS.split(", ").map(|c| format!("s.{c}")).collect::<Vec<_>>().join(", ");
                let sql = format!(
                    "SELECT {columns} FROM staff_sessions x JOIN staff s ON s.id = x.staff_id WHERE \
                    x.token_hash = $1 AND x.expires_at > $2"
                );
                let row = tx.query_opt(&sql, &[token.into(), (*now).into()]).await?;
                Ok(row.as_ref().map(staff_from).transpose()?)
            })
        })
        .await
    }

    pub async fn delete_staff_session(&self, token_hash: &str) -> Result<(), StoreError> {
        self.write(token_hash.to_owned(), |tx, token| {
            Box::pin(async move {
                tx.execute("DELETE FROM staff_sessions WHERE token_hash = $1", &[token.into()]).await?;
                Ok(())
            })
        })
        .await
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewStaff {
    pub id: String,
    pub name: String,
    pub role: Role,
    pub password_hash: String,
    /// The TOTP secret, base32 (RFC 4648, no padding).
    pub totp_secret: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaffRecord {
    pub id: String,
    pub name: String,
    pub role: Role,
    pub password_hash: String,
    pub totp_secret: String,
    pub created_at: i64,
}

impl StaffRecord {
    /// How the audit log names this member.
    pub fn actor(&self) -> String {
        format!("staff:{}", self.name)
    }
}

const STAFF_COLUMNS: &str = "id, name, role, password_hash, totp_secret, created_at";

fn staff_from(r: &Row) -> Result<StaffRecord, StoreError> {
    let role = r.text(2)?;
    Ok(StaffRecord {
        id: r.text(0)?,
        name: r.text(1)?,
        role: Role::parse(&role).ok_or_else(|| StoreError::Backend(format!("a staff member with role {role:?}")))?,
        password_hash: r.text(3)?,
        totp_secret: r.text(4)?,
        created_at: r.int(5)?,
    })
}

async fn add_staff(tx: &mut dyn Tx, staff: &NewStaff, actor: &str, now: i64) -> Result<StaffRecord, Failure> {
    let added = tx
        .execute(
            &format!("INSERT INTO staff ({STAFF_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING"),
            &[
                staff.id.as_str().into(),
                staff.name.as_str().into(),
                staff.role.as_str().into(),
                staff.password_hash.as_str().into(),
                staff.totp_secret.as_str().into(),
                now.into(),
            ],
        )
        .await?;
    if added == 0 {
        return Err(StoreError::NameTaken.into());
    }
    let note = AuditNote::new(actor, "staff_added", format!("staff:{}", staff.name))
        .change(None, Some(serde_json::json!({ "role": staff.role })));
    append(tx, &note, now).await?;
    Ok(StaffRecord {
        id: staff.id.clone(),
        name: staff.name.clone(),
        role: staff.role,
        password_hash: staff.password_hash.clone(),
        totp_secret: staff.totp_secret.clone(),
        created_at: now,
    })
}

async fn staff_named(tx: &mut dyn Tx, name: &str) -> Result<Option<StaffRecord>, Failure> {
    let row = tx.query_opt(&format!("SELECT {STAFF_COLUMNS} FROM staff WHERE name = $1"), &[name.into()]).await?;
    Ok(row.as_ref().map(staff_from).transpose()?)
}

/// Gives a member another role; the same role again changes (and records) nothing.
async fn set_role(tx: &mut dyn Tx, name: &str, role: Role, actor: &str, reason: &str, now: i64) -> Result<(), Failure> {
    let before = staff_named(tx, name).await?.ok_or(StoreError::NotFound("staff member"))?;
    let changed = tx
        .execute(
            "UPDATE staff SET role = $2 WHERE name = $1 AND role = $3",
            &[name.into(), role.as_str().into(), before.role.as_str().into()],
        )
        .await?;
    if before.role == role {
        return Ok(());
    }
    if changed == 0 {
        return Err(Failure::Conflict(format!("{name}'s role changed meanwhile")));
    }
    let note = AuditNote::new(actor, "staff_role_changed", format!("staff:{name}"))
        .change(Some(serde_json::json!({ "role": before.role })), Some(serde_json::json!({ "role": role })))
        .because(reason);
    append(tx, &note, now).await?;
    Ok(())
}
