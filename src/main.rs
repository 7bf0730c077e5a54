//! The `vegas` binary: the ticket server and its administration commands natively; the web game when
//! built for wasm32 (by Trunk).

#[cfg(not(target_arch = "wasm32"))]
mod cli {
    use clap::{Parser, Subcommand};
    use std::net::SocketAddr;
    use std::path::PathBuf;
    use std::time::Duration;
    use vegas::composer::design::DEFAULT_DESIGN_TOML;
    use vegas::money::Cents;
    use vegas::server::back_office::staff;
    use vegas::server::connections::ClientCap;
    use vegas::server::store::back_office::{AuditNote, BackOffice, Role};
    use vegas::server::store::ledger;
    use vegas::server::store::sqlite::Opening;
    use vegas::server::store::{Credit, Funding, Store, StoreError};
    use vegas::server::{AppState, Clock, Config, Database, blocks, limits, operator, printer, qa_deck};

    #[derive(Parser)]
    #[command(name = "vegas", about = "Vegas — the instant-lottery ticket server")]
    struct Cli {
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
        #[command(subcommand)]
        command: Command,
    }

    #[derive(Clone, Copy, clap::ValueEnum)]
    enum LogFormat {
        Text,
        Json,
    }

    /// Logs on stderr: stdout is the commands' output (a ledger report, a key list).
    fn start_logs(format: LogFormat) {
        let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,tower_http=info".into());
        let logs = tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter(filter);
        match format {
            // Colours only for a terminal: a log file or a log collector gets plain text.
            LogFormat::Text => logs.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).init(),
            // The request's span (its id, method and path) on every line, as fields a shipper indexes.
            LogFormat::Json => logs.json().with_current_span(true).with_span_list(false).init(),
        }
    }

    #[derive(Subcommand)]
    enum Command {
        /// Serve the game and its API.
        Serve {
            #[arg(long, env = "VEGAS_ADDR", default_value = "127.0.0.1:8080")]
            addr: SocketAddr,
            /// The back office (staff only), on its own address: loopback by default, never the
            /// players' address. Reach it through an SSH tunnel or a VPN, not the open Internet.
            #[arg(long, env = "VEGAS_ADMIN_ADDR", default_value = "127.0.0.1:8081")]
            admin_addr: SocketAddr,
            /// A staff credit or debit larger than this (in euros) waits for a second member's approval.
            #[arg(long, env = "VEGAS_ADJUSTMENT_THRESHOLD", default_value = "1000")]
            adjustment_threshold: Cents,
            /// The built web app (Trunk's output).
            #[arg(long, env = "VEGAS_DIST", default_value = "dist")]
            dist: PathBuf,
            /// Demo money: guests and new players get 100 €, and top up at will. Off by default: a real-money
            /// server never mints money (`vegas wallet credit` funds a player). `make run` turns it on.
            #[arg(long, env = "VEGAS_DEMO")]
            demo: bool,
            /// Seconds after its sale when the server settles an unfinished ticket.
            #[arg(long, env = "VEGAS_SETTLE_AFTER", default_value_t = 600)]
            settle_after: u64,
            /// Send the session cookie over HTTPS only. By default on, unless the server listens on
            /// loopback (a local run over plain HTTP); behind a TLS proxy on loopback, set it to true.
            #[arg(long, env = "VEGAS_SECURE_COOKIE")]
            secure_cookie: Option<bool>,
            /// Behind a reverse proxy that sets X-Forwarded-For: rate limits count its clients' addresses.
            /// Never set it when clients reach the server directly (they could pick their address).
            #[arg(long, env = "VEGAS_BEHIND_PROXY")]
            behind_proxy: bool,
            /// Guest creations, registrations and logins each client IP may make at once…
            #[arg(long, env = "VEGAS_AUTH_BURST", default_value_t = limits::Rate::PER_IP.burst)]
            auth_burst: u32,
            /// …and then per minute.
            #[arg(long, env = "VEGAS_AUTH_PER_MINUTE", default_value_t = limits::Rate::PER_IP.per_minute)]
            auth_per_minute: u32,
            /// Password hashes computed at once (19 MiB each); one per core by default.
            #[arg(long, env = "VEGAS_PASSWORD_HASHES")]
            password_hashes: Option<usize>,
            /// Client connections held at once (each is a file descriptor).
            #[arg(long, env = "VEGAS_MAX_CONNECTIONS", default_value_t = 4096)]
            max_connections: usize,
            /// Connections one client address may hold at once (behind --behind-proxy: requests in
            /// flight per forwarded address); past it, a new one is closed at once.
            #[arg(long, env = "VEGAS_MAX_CONNECTIONS_PER_CLIENT", default_value_t = ClientCap::DEFAULT.held)]
            max_connections_per_client: u32,
            /// New connections one client address may open a second (after a burst of twice as many).
            #[arg(long, env = "VEGAS_NEW_CONNECTIONS_PER_SECOND", default_value_t = ClientCap::DEFAULT.per_second)]
            new_connections_per_second: u32,
            /// TEST ONLY, never in service: the server's clock runs this many times faster than real time
            /// (reality checks, limits' windows, breaks, sessions, settlement), for end-to-end tests.
            #[arg(long, env = "VEGAS_TEST_ONLY_CLOCK_SPEED", value_parser = clap::value_parser!(i64).range(1..=100_000))]
            test_only_clock_speed: Option<i64>,
            /// QA: sell first the test tickets this file lists, in its order (one lot in euros or one
            /// design pattern name per line; see README, « QA decks »). Only with --demo.
            #[arg(long, env = "VEGAS_QA_DECK")]
            qa_deck: Option<PathBuf>,
        },
        /// Emissions of blocks.
        Emission {
            #[command(subcommand)]
            command: EmissionCommand,
        },
        /// Blocks: list them, audit one.
        Blocks {
            #[command(subcommand)]
            command: BlocksCommand,
        },
        /// The double-entry ledger.
        Ledger {
            #[command(subcommand)]
            command: LedgerCommand,
        },
        /// Real money in or out of a player's wallet, as ledger transfers against the operator's `cash`.
        Wallet {
            #[command(subcommand)]
            command: WalletCommand,
        },
        /// Players, as the operator sees them.
        Player {
            #[command(subcommand)]
            command: PlayerCommand,
        },
        /// The national ban file (« fichier des interdits de jeu »).
        Exclusions {
            #[command(subcommand)]
            command: ExclusionsCommand,
        },
        /// Bring the store's schema to this version (`serve` does it too when it starts).
        Migrate,
        /// Copy the embedded store (SQLite) to DEST, consistent as of one instant, while the server sells.
        /// Restore: stop the server, put the copy in an empty data directory as `vegas.sqlite3` (mode
        /// 600, the directory 700), run `vegas ledger check` on it, start the server there.
        /// PostgreSQL is backed up by its own tools: see README, « Backups ».
        Backup {
            /// The copy's file; it must not exist.
            dest: PathBuf,
        },
        /// Check a closed block from its published document alone, as any player can: every ticket
        /// recomputed from the seed, the prize table and the committed root. No store is read.
        Verify {
            /// The block's document (`GET /api/blocks/{emission}/{block}`): a file, or - for standard
            /// input, e.g. `curl -s https://…/api/blocks/1/1 | vegas verify -`.
            document: PathBuf,
            /// Also print this ticket (its index in the block) as the seed composes it.
            #[arg(long)]
            ticket: Option<u32>,
        },
        /// The keys tickets are signed with.
        Keys {
            #[command(subcommand)]
            command: KeysCommand,
        },
        /// The back office's staff: their accounts and roles.
        Staff {
            #[command(subcommand)]
            command: StaffCommand,
        },
        /// The audit log of every staff action and configuration change.
        Audit {
            #[command(subcommand)]
            command: AuditCommand,
        },
    }

    #[derive(Subcommand)]
    enum StaffCommand {
        /// Add a member with a role. The password is read from VEGAS_STAFF_PASSWORD, or else from the
        /// first line of standard input; prints the TOTP secret and its otpauth:// address, once, for
        /// the member's authenticator app.
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

    #[derive(Subcommand)]
    enum AuditCommand {
        /// Walk the whole chain: each row's hash over its fields and the one before. Names the first
        /// row that does not follow, and exits non-zero.
        Verify,
        /// The log's rows, oldest first.
        Show {
            /// The first row shown.
            #[arg(long, default_value_t = 1)]
            from: i64,
            #[arg(long, default_value_t = 100)]
            limit: u32,
        },
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
    async fn record(store: &dyn Store, note: AuditNote, now: i64) -> Result<(), String> {
        BackOffice(store).record(note, now).await.map(|_| ()).map_err(|e| format!("the change is made, but recording it in the audit log failed: {e}"))
    }

    #[derive(Subcommand)]
    enum KeysCommand {
        /// Add a new signing key. Every instance lists it within 15 s and signs with it after 60 s;
        /// tickets signed with the previous keys still verify.
        Rotate,
        /// Every key, oldest first.
        List,
    }

    #[derive(Subcommand)]
    enum WalletCommand {
        /// Pay money into a player's wallet (a deposit the operator received).
        Credit(WalletMove),
        /// Take money out of a player's wallet (a withdrawal the operator pays out); never below zero.
        Debit(WalletMove),
    }

    #[derive(clap::Args)]
    struct WalletMove {
        /// The player's id (`p-…`) or name.
        #[arg(long)]
        player: String,
        /// In euros: 20, 12.50.
        #[arg(long)]
        amount: Cents,
        /// Why, kept with the transfer in the ledger.
        #[arg(long)]
        reason: String,
    }

    #[derive(Subcommand)]
    enum PlayerCommand {
        /// A player's balance, limits and what is left of each, pending raises, breaks and exclusions,
        /// and the whole record of them. Read-only: nothing here lifts a break or an exclusion.
        Show {
            /// The player's id (`p-…`) or name.
            player: String,
        },
    }

    #[derive(Subcommand)]
    enum ExclusionsCommand {
        /// Replace the ban file with FILE (CSV with a header: nom;prenom;date_naissance — see README);
        /// every open account it lists is closed, its balance paid out to `cash`, its sessions ended,
        /// and a registration it lists is refused. Prints what it matched.
        Import { file: PathBuf },
    }

    #[derive(Subcommand)]
    enum LedgerCommand {
        /// Recompute every balance from its transfers, check they sum to zero, and reconcile each block's
        /// stakes and prizes with its tickets and its committed lots. Exits non-zero on any discrepancy.
        Check,
    }

    #[derive(Subcommand)]
    enum EmissionCommand {
        /// Make a new emission of N blocks of 1 500 000 tickets.
        Create {
            #[arg(long, default_value_t = 1)]
            blocks: u32,
            /// A design file (TOML); the shipped static/design.toml by default.
            #[arg(long)]
            design: Option<PathBuf>,
        },
    }

    #[derive(Subcommand)]
    enum BlocksCommand {
        /// Every block with its sold count and commitment.
        List,
        /// Recompute a block from its seed and check it.
        Audit {
            #[arg(long)]
            emission: u32,
            #[arg(long)]
            block: u32,
        },
    }

    pub fn run() -> Result<(), String> {
        let cli = Cli::parse();
        start_logs(cli.log_format);
        if cli.command.audits() {
            // A long read beside a live server (`ledger check` reads every ticket) yields the cores to
            // the server's sales. Linux keeps a nice value per thread: set before the runtime starts its
            // threads, it holds for all of them.
            // SAFETY: setpriority takes plain integers and only changes this thread's nice value.
            _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, AUDIT_NICENESS) };
        }
        let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
        runtime.block_on(execute(cli))
    }

    /// How much an audit yields the cores (nice 10: well behind the server, ahead of idle work).
    const AUDIT_NICENESS: libc::c_int = 10;

    impl Command {
        /// Commands that only read, at length: audits and checks.
        fn audits(&self) -> bool {
            matches!(
                self,
                Command::Ledger { command: LedgerCommand::Check }
                    | Command::Blocks { command: BlocksCommand::Audit { .. } }
                    | Command::Verify { .. }
                    | Command::Backup { .. }
            )
        }
    }

    async fn execute(cli: Cli) -> Result<(), String> {
        let database = Database::choose(cli.database, cli.data, cli.connections);
        let clock = Clock::system();
        match cli.command {
            Command::Serve {
                addr,
                admin_addr,
                adjustment_threshold,
                dist,
                demo,
                settle_after,
                secure_cookie,
                behind_proxy,
                auth_burst,
                auth_per_minute,
                password_hashes,
                max_connections,
                max_connections_per_client,
                new_connections_per_second,
                test_only_clock_speed,
                qa_deck,
            } => {
                let qa_deck = match qa_deck {
                    Some(_) if !demo => return Err("--qa-deck sells test tickets: it needs --demo, and is never allowed with real money".into()),
                    Some(path) => Some(std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?),
                    None => None,
                };
                let embedded = matches!(database, Database::Sqlite(_));
                let defaults = Config::new(database, dist);
                let config = Config {
                    demo,
                    settle_after: Duration::from_secs(settle_after),
                    secure_cookie: secure_cookie.unwrap_or(!addr.ip().is_loopback()),
                    behind_proxy,
                    auth_rate: limits::Rate { burst: auth_burst, per_minute: auth_per_minute },
                    password_hashes: password_hashes.unwrap_or(defaults.password_hashes),
                    max_connections,
                    client_cap: ClientCap { held: max_connections_per_client, per_second: new_connections_per_second },
                    clock: test_only_clock_speed.map_or(defaults.clock.clone(), Clock::faster_for_tests),
                    adjustment_threshold,
                    ..defaults
                };
                if let Some(speed) = test_only_clock_speed {
                    tracing::warn!(speed, "TEST ONLY: the clock runs {speed} times faster than real time; never serve players so");
                }
                let state = AppState::open(config).await?;
                // A first local launch must be playable at once. Several instances sharing a database
                // never make emissions by themselves: the operator does (`vegas emission create`).
                if demo && embedded && state.store.blocks().await.map_err(|e| e.to_string())?.is_empty() {
                    tracing::info!("no block yet: making a first emission of one block");
                    blocks::create_emission(&*state.store, DEFAULT_DESIGN_TOML, 1, state.config.clock.now()).await?;
                }
                if let Some(deck) = qa_deck {
                    qa_deck::install(&state, &deck).await.map_err(|e| format!("--qa-deck: {e}"))?;
                }
                if admin_addr.ip() == addr.ip() && admin_addr.port() == addr.port() {
                    return Err("--admin-addr must differ from --addr: the back office is never served to players".into());
                }
                vegas::server::serve(state, addr, admin_addr).await
            }
            Command::Emission { command: EmissionCommand::Create { blocks: n, design } } => {
                let text = match design {
                    Some(path) => std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?,
                    None => DEFAULT_DESIGN_TOML.to_owned(),
                };
                let store = database.open(Opening::Beside).await?;
                let emission = blocks::create_emission(&*store, &text, n, clock.now()).await?;
                println!("emission {emission}: {n} block(s) of 1 500 000 tickets made");
                let after = serde_json::json!({ "blocks": n, "design_sha256": vegas::block::hex(&<sha2::Sha256 as sha2::Digest>::digest(text.as_bytes())) });
                record(&*store, AuditNote::new(&cli_actor(), "emission_made", format!("emission:{emission}")).change(None, Some(after)), clock.now()).await
            }
            Command::Blocks { command: BlocksCommand::List } => {
                println!("{:>8} {:>5} {:>9} {:>9}  root", "emission", "block", "sold", "state");
                for b in database.open(Opening::Beside).await?.blocks().await.map_err(|e| e.to_string())? {
                    let state = if b.withdrawn_at.is_some() {
                        "withdrawn"
                    } else if b.closed_at.is_some() {
                        "closed"
                    } else {
                        "open"
                    };
                    println!("{:>8} {:>5} {:>9} {:>9}  {}", b.emission, b.block, b.sold, state, vegas::block::hex(&b.root));
                }
                Ok(())
            }
            Command::Blocks { command: BlocksCommand::Audit { emission, block } } => {
                let report = blocks::audit_stored(&*database.open(Opening::Beside).await?, emission, block).await?;
                println!("block E{emission}-B{block}: {} tickets, audit passed", report.tickets);
                for (lot, count) in report.counts.iter().rev() {
                    println!("  {count:>9} × {lot}");
                }
                println!("  total paid out: {}", report.total_payout);
                println!("  root: {}", vegas::block::hex(&report.root));
                Ok(())
            }
            Command::Ledger { command: LedgerCommand::Check } => {
                let facts = database.open(Opening::Beside).await?.ledger_facts().await.map_err(|e| e.to_string())?;
                match ledger::check(facts) {
                    Ok(report) => {
                        print!("{report}");
                        Ok(())
                    }
                    Err(problems) => Err(format!("ledger check failed:\n  {}", problems.join("\n  "))),
                }
            }
            Command::Wallet { command } => {
                let store = database.open(Opening::Beside).await?;
                let (WalletCommand::Credit(request) | WalletCommand::Debit(request)) = &command;
                if request.amount.is_zero() || request.reason.trim().is_empty() {
                    return Err("give an amount above zero and a reason".into());
                }
                let player = player_id(&*store, &request.player).await?;
                let office = BackOffice(&*store);
                let balance = match &command {
                    WalletCommand::Credit(m) => {
                        let credit = Credit { funding: Funding::Cash, amount: m.amount, reason: m.reason.clone() };
                        office.operator_credit(&player, credit, &cli_actor(), clock.now()).await
                    }
                    WalletCommand::Debit(m) => office.operator_debit(&player, m.amount, &m.reason, &cli_actor(), clock.now()).await,
                }
                .map_err(|e| e.to_string())?;
                println!("{player}: balance {balance}");
                Ok(())
            }
            Command::Player { command: PlayerCommand::Show { player } } => {
                let store = database.open(Opening::Beside).await?;
                let id = player_id(&*store, &player).await?;
                print!("{}", operator::player_page(&*store, &id, clock.now()).await.map_err(|e| e.to_string())?);
                Ok(())
            }
            Command::Exclusions { command: ExclusionsCommand::Import { file } } => {
                let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
                let identities = operator::read_ban_file(&text).map_err(|e| format!("{}: {e}", file.display()))?;
                let store = database.open(Opening::Beside).await?;
                let keys = identities.iter().map(|i| i.key()).collect();
                let closed = store.import_bans(keys, clock.now()).await.map_err(|e| e.to_string())?;
                println!("{} identities imported; {} open account(s) matched and closed", identities.len(), closed.len());
                for (player, paid) in &closed {
                    println!("  {player}: closed, {paid} paid out");
                }
                let after = serde_json::json!({ "identities": identities.len(), "closed": closed.iter().map(|(p, paid)| (p, paid.0)).collect::<Vec<_>>() });
                record(&*store, AuditNote::new(&cli_actor(), "ban_file_imported", "ban_file").change(None, Some(after)), clock.now()).await
            }
            Command::Verify { document, ticket } => verify(&document, ticket),
            Command::Staff { command: StaffCommand::Add { name, role } } => {
                let password = match std::env::var("VEGAS_STAFF_PASSWORD") {
                    Ok(password) => password,
                    Err(_) => std::io::stdin().lines().next().transpose().map_err(|e| e.to_string())?.unwrap_or_default(),
                };
                if password.chars().count() < 12 {
                    return Err("a staff password has 12 characters or more".into());
                }
                let hash = vegas::server::passwords::Passwords::new(1).hash(password).await.map_err(|e| format!("{e:?}"))?;
                let new = staff::new_staff(&name, role, hash)?;
                let store = database.open(Opening::Beside).await?;
                let added = BackOffice(&*store).add_staff(new, &cli_actor(), clock.now()).await.map_err(|e| e.to_string())?;
                println!("staff member {} ({}) added", added.name, added.role.as_str());
                println!("TOTP secret (give it to the member, once): {}", added.totp_secret);
                println!("authenticator address: {}", staff::totp_url(&added.totp_secret, &added.name)?);
                Ok(())
            }
            Command::Staff { command: StaffCommand::Role { name, role, reason } } => {
                let store = database.open(Opening::Beside).await?;
                BackOffice(&*store).set_role(&name, role, &cli_actor(), &reason, clock.now()).await.map_err(|e| e.to_string())?;
                println!("{name} is now {}", role.as_str());
                Ok(())
            }
            Command::Audit { command: AuditCommand::Verify } => {
                let store = database.open(Opening::Beside).await?;
                match BackOffice(&*store).verify_audit_log().await.map_err(|e| e.to_string())? {
                    Ok(rows) => {
                        println!("audit log verified: {rows} rows, each chained to the one before");
                        Ok(())
                    }
                    Err(broken) => Err(format!("audit log broken: {broken}")),
                }
            }
            Command::Audit { command: AuditCommand::Show { from, limit } } => {
                let store = database.open(Opening::Beside).await?;
                for e in BackOffice(&*store).audit_log(from.max(1) - 1, limit).await.map_err(|e| e.to_string())? {
                    let change = format!("{} → {}", e.before.as_deref().unwrap_or("-"), e.after.as_deref().unwrap_or("-"));
                    println!(
                        "{:>6} {} {} {} {} {} {}",
                        e.seq,
                        vegas::server::store::responsible::utc(e.at),
                        e.actor,
                        e.action,
                        e.target,
                        change,
                        e.reason.unwrap_or_default()
                    );
                }
                Ok(())
            }
            Command::Backup { dest } => {
                let Database::Sqlite(data) = &database else {
                    return Err("vegas backup copies the embedded store; back PostgreSQL up with pg_basebackup and WAL archiving (README, « Backups »)".into());
                };
                let started = std::time::Instant::now();
                let copy = vegas::server::store::sqlite::backup(&data.join(vegas::server::store::sqlite::FILE_NAME), &dest).map_err(|e| e.to_string())?;
                println!("{}: {} bytes, {} tickets, copied in {:.1} s", dest.display(), copy.bytes, copy.tickets, started.elapsed().as_secs_f64());
                Ok(())
            }
            Command::Migrate => {
                database.open(Opening::Beside).await?;
                println!("the store's schema is up to date");
                Ok(())
            }
            Command::Keys { command } => {
                let store = database.open(Opening::Beside).await?;
                if let KeysCommand::Rotate = command {
                    let key = printer::new_signing_key(clock.now());
                    println!(
                        "added signing key {}: listed by every instance within {} s, signing after {} s",
                        key.kid,
                        printer::KEY_REFRESH.as_secs(),
                        printer::KEY_ACTIVATION.as_secs()
                    );
                    let kid = key.kid.clone();
                    store.add_signing_key(key).await.map_err(|e| e.to_string())?;
                    record(&*store, AuditNote::new(&cli_actor(), "signing_key_added", format!("key:{kid}")), clock.now()).await?;
                }
                for key in store.signing_keys().await.map_err(|e| e.to_string())? {
                    println!("{}  created {}", key.kid, key.created_at);
                }
                Ok(())
            }
        }
    }

    fn verify(document: &std::path::Path, ticket: Option<u32>) -> Result<(), String> {
        use vegas::block::hex;
        use vegas::block::published::{ClosedBlock, PublishedBlock};
        let text = if document.as_os_str() == "-" {
            std::io::read_to_string(std::io::stdin()).map_err(|e| format!("standard input: {e}"))?
        } else {
            std::fs::read_to_string(document).map_err(|e| format!("{}: {e}", document.display()))?
        };
        let published: PublishedBlock = vegas::json::from_str(&text).map_err(|e| format!("not a block's document: {e}"))?;
        let block = ClosedBlock::read(&published).map_err(|e| e.to_string())?;
        if let Some(index) = ticket {
            let t = block.ticket(index).map_err(|e| e.to_string())?;
            println!("ticket {}: lot {}", t.serial, t.lot);
            println!("  zones: {}", vegas::json::to_string(&t.ticket).map_err(|e| e.to_string())?);
            if let Some(salt) = t.salt {
                println!("  salt: {}", hex(&salt));
            }
            println!("  leaf: {}", hex(&t.leaf));
        }
        let report = block.audit().map_err(|e| format!("block E{}-B{}: {e}", published.emission, published.block))?;
        println!(
            "block E{}-B{} (scheme {}): {} tickets recomputed from the seed, verified",
            published.emission, published.block, published.scheme, report.tickets
        );
        for (lot, count) in report.counts.iter().rev() {
            println!("  {count:>9} × {lot}");
        }
        println!("  total paid out: {}", report.total_payout);
        println!("  root: {} (the committed root)", hex(&report.root));
        Ok(())
    }

    /// A player named by id, or else by name.
    async fn player_id(store: &dyn Store, player: &str) -> Result<String, String> {
        match store.player(player).await {
            Ok(found) => Ok(found.id),
            Err(StoreError::NotFound(_)) => match store.credentials(&vegas::server::names::key_of(player)).await.map_err(|e| e.to_string())? {
                Some(named) => Ok(named.player_id),
                None => Err(format!("no player has the id or the name {player:?}")),
            },
            Err(e) => Err(e.to_string()),
        }
    }
}

/// The server allocates and frees small buffers on every request from several threads at once, where
/// mimalloc spends less than the system allocator.
#[cfg(not(target_arch = "wasm32"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// See `Cargo.toml`: talc instead of dlmalloc in the browser.
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    // The fail points `FAILPOINTS` sets (`make bench-soak-stalls`), for the whole run.
    #[cfg(feature = "failpoints")]
    let _fail_points = fail::FailScenario::setup();
    match cli::run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vegas: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(target_arch = "wasm32")]
fn main() {
    vegas::web::start();
}
