//! The `vegas` command: one module per subcommand. The store's location and the log format are shared
//! by every subcommand (`Global`); each subcommand's own arguments live with what it does.

mod audit;
mod backup;
mod blocks;
mod emission;
mod exclusions;
mod keys;
mod ledger;
mod player;
mod serve;
mod staff;
mod verify;
mod wallet;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use vegas::server::Database;
use vegas::server::store::back_office::AuditNote;
use vegas::server::store::sqlite::Opening;
use vegas::server::store::{Store, StoreError};

#[derive(Parser)]
#[command(name = "vegas", about = "Vegas — the instant-lottery ticket server")]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

/// What every subcommand takes: where the store is, and how to log.
#[derive(clap::Args)]
struct Global {
    /// Where the embedded store (SQLite) lives, unless --database names a PostgreSQL one.
    #[arg(long, env = "VEGAS_DATA", default_value = "data", global = true)]
    data: PathBuf,
    /// A PostgreSQL store (postgres://user@host:port/database) shared by several instances.
    #[arg(long, env = "VEGAS_DATABASE", global = true)]
    database: Option<String>,
    /// PostgreSQL connections per instance.
    #[arg(long, env = "VEGAS_DB_CONNECTIONS", default_value_t = 32, global = true)]
    connections: usize,
    /// Logs as lines of text, or as one JSON object per line for a log shipper.
    #[arg(long, env = "VEGAS_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, global = true)]
    log_format: LogFormat,
}

impl Global {
    fn database(&self) -> Database {
        Database::choose(self.database.clone(), self.data.clone(), self.connections)
    }

    /// The store, for a command run beside a server that may be selling.
    async fn store(&self) -> Result<Store> {
        self.database().open(Opening::Beside).await.map_err(anyhow::Error::msg)
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the game and its API, and the back office on its own address.
    Serve(serve::Serve),
    /// Emissions of blocks.
    #[command(subcommand)]
    Emission(emission::Emission),
    /// Blocks: list them, audit one.
    #[command(subcommand)]
    Blocks(blocks::Blocks),
    /// The double-entry ledger.
    #[command(subcommand)]
    Ledger(ledger::Ledger),
    /// Real money in or out of a player's wallet, as ledger transfers against the operator's `cash`.
    #[command(subcommand)]
    Wallet(wallet::Wallet),
    /// Players, as the operator sees them.
    #[command(subcommand)]
    Player(player::Player),
    /// The national ban file (« fichier des interdits de jeu »).
    #[command(subcommand)]
    Exclusions(exclusions::Exclusions),
    /// Bring the store's schema to this version (`serve` does it too when it starts).
    Migrate,
    /// Copy the embedded store (SQLite) to a file, consistent as of one instant, while the server sells.
    Backup(backup::Backup),
    /// Check a closed block from its published document alone, as any player can.
    Verify(verify::Verify),
    /// The keys tickets are signed with.
    #[command(subcommand)]
    Keys(keys::Keys),
    /// The back office's staff: their accounts and roles.
    #[command(subcommand)]
    Staff(staff::Staff),
    /// The audit log of every staff action and configuration change.
    #[command(subcommand)]
    Audit(audit::Audit),
}

impl Command {
    /// Commands that only read, at length: audits and checks.
    fn audits(&self) -> bool {
        matches!(
            self,
            Command::Ledger(_)
                | Command::Blocks(blocks::Blocks::Audit { .. })
                | Command::Verify(_)
                | Command::Backup(_)
        )
    }
}

/// How much an audit yields the cores (nice 10: well behind the server, ahead of idle work).
const AUDIT_NICENESS: libc::c_int = 10;

pub fn run() -> Result<()> {
    let cli = Cli::parse();
    start_logs(cli.global.log_format);
    if cli.command.audits() {
        // A long read beside a live server (`ledger check` reads every ticket) yields the cores to the
        // server's sales. Linux keeps a nice value per thread: set before the runtime starts its
        // threads, it holds for all of them.
        // SAFETY: setpriority takes plain integers and only changes this thread's nice value.
        _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, AUDIT_NICENESS) };
    }
    let runtime = tokio::runtime::Runtime::new().context("starting the runtime")?;
    runtime.block_on(execute(cli))
}

async fn execute(cli: Cli) -> Result<()> {
    let global = &cli.global;
    match cli.command {
        Command::Serve(serve) => serve.run(global).await,
        Command::Emission(emission) => emission.run(global).await,
        Command::Blocks(blocks) => blocks.run(global).await,
        Command::Ledger(ledger) => ledger.run(global).await,
        Command::Wallet(wallet) => wallet.run(global).await,
        Command::Player(player) => player.run(global).await,
        Command::Exclusions(exclusions) => exclusions.run(global).await,
        Command::Migrate => {
            global.store().await?;
            println!("the store's schema is up to date");
            Ok(())
        }
        Command::Backup(backup) => backup.run(global),
        Command::Verify(verify) => verify.run(),
        Command::Keys(keys) => keys.run(global).await,
        Command::Staff(staff) => staff.run(global).await,
        Command::Audit(audit) => audit.run(global).await,
    }
}

/// Logs on stderr: stdout is the commands' output (a ledger report, a key list).
fn start_logs(format: LogFormat) {
    let filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,tower_http=info".into());
    let logs = tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter(filter);
    match format {
        // Colours only for a terminal: a log file or a log collector gets plain text.
        LogFormat::Text => logs.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).init(),
        // The request's span (its id, method and path) on every line, as fields a shipper indexes.
        LogFormat::Json => logs.json().with_current_span(true).with_span_list(false).init(),
    }
}

/// How the audit log names what the command line changed: `cli:` and the operating system's user.
fn cli_actor() -> String {
    let user = std::env::var("USER").or_else(|_| std::env::var("LOGNAME")).unwrap_or_else(|_| {
        // SAFETY: getuid takes nothing and cannot fail.
        format!("uid{}", unsafe { libc::getuid() })
    });
    format!("cli:{user}")
}

/// Records a change the command line made through the store's other calls, right after it.
async fn record(store: &Store, note: AuditNote, now: i64) -> Result<()> {
    store.record(note, now).await.context("the change is made, but recording it in the audit log failed")?;
    Ok(())
}

/// A player named by id, or else by name.
async fn player_id(store: &Store, player: &str) -> Result<String> {
    match store.player(player).await {
        Ok(found) => Ok(found.id),
        Err(StoreError::NotFound(_)) => match store.credentials(&vegas::server::names::key_of(player)).await? {
            Some(named) => Ok(named.player_id),
            None => bail!("no player has the id or the name {player:?}"),
        },
        Err(e) => Err(e.into()),
    }
}

/// A file's text, its path in the error.
fn read(path: &std::path::Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}
