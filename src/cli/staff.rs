//! `vegas staff`: the back office's members and their roles.

use super::{Global, cli_actor};
use anyhow::{Result, anyhow, bail};
use vegas::server::Clock;
use vegas::server::back_office::staff;
use vegas::server::store::back_office::Role;

#[derive(clap::Subcommand)]
pub enum Staff {
    /// Add a member with a role. The password is read from VEGAS_STAFF_PASSWORD, or else from the first
    /// line of standard input; prints the TOTP secret and its otpauth:// address, once, for the
    /// member's authenticator app.
    Add {
        name: String,
        #[arg(long, value_parser = parse_role)]
        role: Role,
    },
    /// Give a member another role (effective at once, sessions included).
    Role {
        name: String,
        #[arg(long, value_parser = parse_role)]
        role: Role,
        #[arg(long)]
        reason: String,
    },
}

fn parse_role(text: &str) -> Result<Role, String> {
    Role::parse(text).ok_or_else(|| format!("{text:?}: a role is admin, finance, support or auditor"))
}

impl Staff {
    pub async fn run(self, global: &Global) -> Result<()> {
        let now = Clock::system().now();
        match self {
            Staff::Add { name, role } => {
                let password = match std::env::var("VEGAS_STAFF_PASSWORD") {
                    Ok(password) => password,
                    Err(_) => std::io::stdin().lines().next().transpose()?.unwrap_or_default(),
                };
                if password.chars().count() < 12 {
                    bail!("a staff password has 12 characters or more");
                }
                let hash =
                    vegas::server::passwords::Passwords::new(1).hash(password).await.map_err(|e| anyhow!("{e:?}"))?;
                let new = staff::new_staff(&name, role, hash).map_err(|e| anyhow!(e))?;
                let added = global.store().await?.add_staff(new, &cli_actor(), now).await?;
                println!("staff member {} ({}) added", added.name, added.role.as_str());
                println!("TOTP secret (give it to the member, once): {}", added.totp_secret);
                println!(
                    "authenticator address: {}",
                    staff::totp_url(&added.totp_secret, &added.name).map_err(|e| anyhow!(e))?
                );
            }
            Staff::Role { name, role, reason } => {
                global.store().await?.set_role(&name, role, &cli_actor(), &reason, now).await?;
                println!("{name} is now {}", role.as_str());
            }
        }
        Ok(())
    }
}
