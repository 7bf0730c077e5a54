//! Who staff are to the server: their second factor (TOTP, RFC 6238), their sessions, and what each
//! role may do.

use crate::server::store::back_office::{NewStaff, Role};
use totp_rs::{Algorithm, Secret, TOTP};

/// 30-second steps of six digits, one step of clock drift either way: what authenticator apps expect.
fn totp(secret_base32: &str, account: &str) -> Result<TOTP, String> {
    let secret = Secret::Encoded(secret_base32.to_owned())
        .to_bytes()
        .map_err(|e| format!("a TOTP secret that is not base32: {e:?}"))?;
    TOTP::new(Algorithm::SHA1, 6, 1, 30, secret, Some("Vegas back office".into()), account.to_owned())
        .map_err(|e| format!("a TOTP secret refused: {e}"))
}

/// A new TOTP secret: 160 bits from the operating system (RFC 4226 recommends 160), in base32.
pub fn new_totp_secret() -> String {
    Secret::Raw(crate::server::os_random::<20>().to_vec()).to_encoded().to_string()
}

/// The `otpauth://` address an authenticator app reads (as typed or as a QR code) to make the codes.
pub fn totp_url(secret_base32: &str, name: &str) -> Result<String, String> {
    Ok(totp(secret_base32, name)?.get_url())
}

/// Whether `code` is the member's code at `now` (or one step either side).
pub fn code_matches(secret_base32: &str, code: &str, now: i64) -> bool {
    let code = code.trim();
    code.len() == 6 && totp(secret_base32, "staff").is_ok_and(|t| t.check(code, u64::try_from(now).unwrap_or(0)))
}

/// The code at `now`: for tests, and for an operator checking a member's app is set up.
pub fn code_at(secret_base32: &str, now: i64) -> Result<String, String> {
    Ok(totp(secret_base32, "staff")?.generate(u64::try_from(now).unwrap_or(0)))
}

/// A staff member to add, with a new id and TOTP secret.
pub fn new_staff(name: &str, role: Role, password_hash: String) -> Result<NewStaff, String> {
    let name = name.trim();
    if name.is_empty() || name.len() > 64 || !name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) {
        return Err(format!("{name:?}: a staff name is 1 to 64 letters, digits, '.', '_' or '-'"));
    }
    Ok(NewStaff {
        id: format!("st-{}", crate::server::auth::random_hex::<12>()),
        name: name.to_owned(),
        role,
        password_hash,
        totp_secret: new_totp_secret(),
    })
}

/// What a route may do; each route asks for one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Power {
    /// Blocks, players and their pages.
    Read,
    /// Suspend and restore a player.
    Suspend,
    /// Adjust a wallet, approve another's adjustment, pay or refuse a withdrawal.
    MoveMoney,
    /// Withdrawals, adjustments and reports: the money's side, read.
    ReadMoney,
    /// What the prizes still in unsold tickets are worth.
    SeeUnsoldPrizes,
    /// Withdraw a block from sale.
    ManageBlocks,
    /// List staff, change a member's role.
    ManageStaff,
    /// The audit log.
    ReadAudit,
}

impl Power {
    pub const ALL: [Power; 7] = [
        Power::Read,
        Power::Suspend,
        Power::MoveMoney,
        Power::ReadMoney,
        Power::SeeUnsoldPrizes,
        Power::ManageBlocks,
        Power::ReadAudit,
    ];
}

/// The roles' powers: support reads players and suspends them but moves no money; finance moves money;
/// the auditor reads everything and changes nothing; the admin manages staff and blocks.
pub fn may(role: Role, power: Power) -> bool {
    match power {
        Power::Read => true,
        Power::Suspend => role == Role::Support,
        Power::MoveMoney => role == Role::Finance,
        Power::ReadMoney | Power::SeeUnsoldPrizes => matches!(role, Role::Finance | Role::Auditor),
        Power::ManageBlocks | Power::ManageStaff => role == Role::Admin,
        Power::ReadAudit => matches!(role, Role::Auditor | Role::Admin),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_matches_in_its_step_and_the_next_only() {
        let secret = new_totp_secret();
        let now = 1_800_000_000;
        let code = code_at(&secret, now).unwrap();
        assert!(code_matches(&secret, &code, now) && code_matches(&secret, &format!(" {code} "), now + 30));
        assert!(!code_matches(&secret, &code, now + 90), "two steps later");
        let wrong = format!("{:06}", (code.parse::<u32>().unwrap() + 1) % 1_000_000);
        assert!(
            !code_matches(&secret, &wrong, now)
                && !code_matches(&secret, "12345", now)
                && !code_matches(&secret, "", now)
        );
        assert!(totp_url(&secret, "ann").unwrap().starts_with("otpauth://totp/"));
    }

    #[test]
    fn only_finance_moves_money_and_the_auditor_changes_nothing() {
        let changes = [Power::Suspend, Power::MoveMoney, Power::ManageBlocks, Power::ManageStaff];
        assert!(changes.iter().all(|p| !may(Role::Auditor, *p)));
        assert_eq!(Role::ALL.iter().filter(|r| may(**r, Power::MoveMoney)).collect::<Vec<_>>(), [&Role::Finance]);
        assert!(!may(Role::Support, Power::ReadMoney) && may(Role::Support, Power::Suspend));
        assert!(may(Role::Admin, Power::ManageBlocks) && !may(Role::Admin, Power::MoveMoney));
        assert!(Role::ALL.iter().all(|r| may(*r, Power::Read)));
    }

    #[test]
    fn staff_names_are_plain() {
        assert!(new_staff("ann.b", Role::Support, "h".into()).is_ok());
        assert!(
            new_staff("", Role::Support, "h".into()).is_err() && new_staff("a b", Role::Support, "h".into()).is_err()
        );
    }
}
