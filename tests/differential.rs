//! The differential test: one seeded random sequence of store operations (registrations, credits,
//! limits and their raises, lapses, pauses, purchases, reveals, completions, settlement, withdrawals
//! asked, paid and refused, adjustments under four eyes, suspensions, debits, sessions and reality
//! checks, the ban file, purges), with a clock that moves forward and, at times, back, run on SQLite
//! and on PostgreSQL. Every answer (value or error) and the final state (balances, tickets, the
//! responsible-gaming record, withdrawals, adjustments, statements, the audit log less its times and
//! hashes, the ledger) must be equal: the units of work are written once, so the engines may differ
//! only in how they run them.
//!
//! Ignored by a plain `cargo test` (it needs PostgreSQL); `make test` runs it.
#![cfg(not(target_arch = "wasm32"))]

mod support {
    pub mod stores;
}

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use support::stores::Backend;
use vegas::block::Scheme;
use vegas::money::Cents;
use vegas::play::Mode;
use vegas::server::names::PlayerName;
use vegas::server::store::Identity;
use vegas::server::store::back_office::{Adjustment, AuditEntry, Withdrawal};
use vegas::server::store::ledger;
use vegas::server::store::responsible::{Actor, Flow, Pause, PauseKind, Span};
use vegas::server::store::{Credit, Funding, NewBlock, NewPlayer, SaleRequest, Store};

const SEED: u64 = 0x5eed_0047;
const OPERATIONS: usize = 800;
const START: i64 = 1_800_000_000;
const THRESHOLD: Cents = Cents(5_000);

/// One operation of the sequence, drawn before either engine runs it.
#[derive(Debug, Clone)]
enum Op {
    NewPlayer {
        player: usize,
        real: bool,
        identity: bool,
    },
    Credit {
        player: usize,
        cash: bool,
        cents: u64,
    },
    Limit {
        player: usize,
        flow: Flow,
        span: Span,
        cents: Option<u64>,
    },
    Confirm {
        player: usize,
        flow: Flow,
        span: Span,
    },
    Lapse,
    Pause {
        player: usize,
        minutes: i64,
        exclusion: bool,
    },
    Sell {
        player: usize,
        key: usize,
        auto: bool,
        ticket: usize,
    },
    Reveal {
        player: usize,
        ticket: usize,
        zones: Vec<usize>,
        ago: Vec<u32>,
    },
    Complete {
        player: usize,
        ticket: usize,
    },
    Settle {
        due_after: i64,
        limit: usize,
    },
    AskWithdrawal {
        player: usize,
        cents: u64,
    },
    DecideWithdrawal {
        nth: usize,
        pay: bool,
    },
    Adjust {
        player: usize,
        cents: i64,
        actor: usize,
    },
    DecideAdjustment {
        nth: usize,
        approve: bool,
        actor: usize,
    },
    Suspend {
        player: usize,
        suspended: bool,
    },
    Debit {
        player: usize,
        cents: u64,
    },
    Register {
        player: usize,
        name: usize,
    },
    Session {
        player: usize,
        token: usize,
    },
    RealityInterval {
        player: usize,
        minutes: u32,
    },
    RealityCheck {
        token: usize,
        acknowledge: bool,
    },
    Bans {
        players: Vec<usize>,
    },
    Purge,
    Read {
        player: usize,
    },
    /// The clock moves on by this many seconds (or back, if negative).
    Time(i64),
}

const PLAYERS: usize = 12;
const FLOWS: [Flow; 2] = [Flow::Stake, Flow::Deposit];

/// The sequence for `seed`: players are made first, then any operation on any of them (on one not
/// made yet, each engine answers its own "not found").
fn sequence(seed: u64) -> Vec<Op> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut ops = Vec::new();
    for player in 0..PLAYERS {
        let real = player % 3 != 0;
        ops.push(Op::NewPlayer { player, real, identity: real && player % 2 == 0 });
        if real && player % 4 != 3 {
            for flow in FLOWS {
                ops.push(Op::Limit { player, flow, span: Span::Week, cents: Some(20_000) });
            }
        }
    }
    // Who bought each sale: reveals and completions mostly name the buyer, at times another player.
    let (mut keys, mut sales, mut buyers) = (0, 0, Vec::new());
    // The limits changed so far: a confirmation mostly names one of them (a raise may be pending).
    let mut changed: Vec<(usize, Flow, Span)> = Vec::new();
    while ops.len() < OPERATIONS {
        let player = rng.random_range(0..PLAYERS + 1);
        let span = [Span::Day, Span::Week, Span::Month][rng.random_range(0..3)];
        let flow = FLOWS[rng.random_range(0..2)];
        let op = match rng.random_range(0..100) {
            0..=7 => Op::Credit { player, cash: rng.random_bool(0.7), cents: rng.random_range(1..6_000) },
            8..=12 => {
                changed.push((player, flow, span));
                Op::Limit { player, flow, span, cents: rng.random_bool(0.85).then(|| rng.random_range(300..30_000)) }
            }
            13..=15 => match changed.get(rng.random_range(0..changed.len().max(1) + 2)) {
                Some(&(player, flow, span)) => Op::Confirm { player, flow, span },
                None => Op::Confirm { player, flow, span },
            },
            16 => Op::Lapse,
            17 => Op::Pause { player, minutes: rng.random_range(1..180), exclusion: rng.random_bool(0.2) },
            18..=37 => {
                // A key used again now and then: a replay (or a reuse in another mode).
                let key = if keys > 0 && rng.random_bool(0.1) { rng.random_range(0..keys) } else { keys };
                keys = keys.max(key + 1);
                sales += 1;
                buyers.push(player);
                Op::Sell { player, key, auto: rng.random_bool(0.5), ticket: sales - 1 }
            }
            38..=47 => {
                let zones: Vec<usize> = (0..rng.random_range(1..5)).map(|_| rng.random_range(0..13)).collect();
                let ago = zones.iter().map(|_| rng.random_range(0..120)).collect();
                let ticket = rng.random_range(0..sales.max(1));
                Op::Reveal { player: owner_or(&buyers, ticket, player, &mut rng), ticket, zones, ago }
            }
            48..=54 => {
                let ticket = rng.random_range(0..sales.max(1));
                Op::Complete { player: owner_or(&buyers, ticket, player, &mut rng), ticket }
            }
            55..=58 => Op::Settle { due_after: rng.random_range(0..3_600), limit: rng.random_range(1..20) },
            59..=62 => Op::AskWithdrawal { player, cents: rng.random_range(0..3_000) },
            63..=65 => Op::DecideWithdrawal { nth: rng.random_range(0..8), pay: rng.random_bool(0.6) },
            66..=67 => Op::Adjust { player, cents: rng.random_range(-4_000..9_000), actor: rng.random_range(0..3) },
            68..=71 => Op::DecideAdjustment {
                nth: rng.random_range(0..12),
                approve: rng.random_bool(0.6),
                actor: rng.random_range(0..3),
            },
            72 => Op::Suspend { player, suspended: rng.random_bool(0.5) },
            73..=74 => Op::Debit { player, cents: rng.random_range(1..4_000) },
            75..=76 => Op::Register { player, name: rng.random_range(0..6) },
            77..=79 => Op::Session { player, token: rng.random_range(0..20) },
            80 => Op::RealityInterval { player, minutes: [15, 30, 60][rng.random_range(0..3)] },
            81..=83 => Op::RealityCheck { token: rng.random_range(0..20), acknowledge: rng.random_bool(0.5) },
            84 => Op::Bans { players: (0..rng.random_range(0..2)).map(|_| rng.random_range(0..PLAYERS)).collect() },
            85 => Op::Purge,
            86..=89 => Op::Read { player },
            // Mostly forward, by up to a day (raises come due, windows slide, tickets fall due), and
            // now and then back by up to an hour, as a clock set back would.
            _ if rng.random_bool(0.85) => Op::Time(rng.random_range(0..86_400)),
            _ => Op::Time(-rng.random_range(1..3_600)),
        };
        ops.push(op);
    }
    assert!(sales > 100, "the sequence sells {sales} tickets");
    ops
}

/// The buyer of `ticket` nine times in ten; else `other`, whom the store must refuse.
fn owner_or(buyers: &[usize], ticket: usize, other: usize, rng: &mut ChaCha8Rng) -> usize {
    buyers.get(ticket).copied().filter(|_| rng.random_bool(0.9)).unwrap_or(other)
}

fn player_id(n: usize) -> String {
    format!("p-{n}")
}

fn ticket_id(sale: usize) -> String {
    format!("t-{sale}")
}

fn staff(n: usize) -> String {
    format!("staff:member-{n}")
}

/// The identity of a real-money player who declares one (the ban file matches it).
fn identity(player: usize) -> Identity {
    Identity { first_name: format!("Prénom{player}"), last_name: "Dupont".into(), birth_date: "1980-01-02".into() }
}

/// A run of the sequence on one engine: what it answered, in order, with the ids each engine gave its
/// withdrawals and adjustments replaced by their order of appearance.
struct Run<'a> {
    store: &'a Store,
    now: i64,
    answers: Vec<String>,
    withdrawals: Vec<i64>,
    adjustments: Vec<i64>,
}

impl Run<'_> {
    fn withdrawal_number(&mut self, id: i64) -> usize {
        number(&mut self.withdrawals, id)
    }

    fn adjustment_number(&mut self, id: i64) -> usize {
        number(&mut self.adjustments, id)
    }

    fn withdrawal(&mut self, w: &Withdrawal) -> String {
        let n = self.withdrawal_number(w.id);
        format!("{:?}", Withdrawal { id: n as i64, ..w.clone() })
    }

    fn adjustment(&mut self, a: &Adjustment) -> String {
        let n = self.adjustment_number(a.id);
        format!("{:?}", Adjustment { id: n as i64, ..a.clone() })
    }

    /// The `nth` withdrawal (or adjustment) this engine made, or an id none has.
    fn nth(ids: &[i64], nth: usize) -> i64 {
        ids.get(nth).copied().unwrap_or(1_000_000 + nth as i64)
    }

    async fn apply(&mut self, op: &Op) -> String {
        let (store, now) = (self.store, self.now);
        match op.clone() {
            Op::NewPlayer { player, real, identity: declared } => {
                let opening_credit =
                    (!real)
                        .then(|| Credit { funding: Funding::Demo, amount: Cents::euros(50), reason: "démo".into() });
                let identity = declared.then(|| identity(player));
                let new = NewPlayer {
                    id: player_id(player),
                    name: None,
                    password_hash: None,
                    guest: !real,
                    identity,
                    opening_credit,
                };
                format!("{:?}", store.create_player(new, now).await)
            }
            Op::Credit { player, cash, cents } => {
                let funding = if cash { Funding::Cash } else { Funding::Demo };
                format!(
                    "{:?}",
                    store
                        .credit(
                            &player_id(player),
                            Credit { funding, amount: Cents(cents), reason: "virement".into() },
                            now
                        )
                        .await
                )
            }
            Op::Limit { player, flow, span, cents } => {
                format!("{:?}", store.change_limit(&player_id(player), flow, span, cents.map(Cents), now).await)
            }
            Op::Confirm { player, flow, span } => {
                format!("{:?}", store.confirm_raise(&player_id(player), flow, span, now).await)
            }
            Op::Lapse => format!("{:?}", store.lapse_raises(now).await),
            Op::Pause { player, minutes, exclusion } => {
                let kind = if exclusion { PauseKind::Exclusion } else { PauseKind::Break };
                format!(
                    "{:?}",
                    store
                        .pause(&player_id(player), Pause { kind, until: now + minutes * 60 }, Actor::Player, now)
                        .await
                )
            }
            Op::Sell { player, key, auto, ticket } => {
                let request = SaleRequest {
                    player_id: player_id(player),
                    idempotency_key: format!("k-{key}"),
                    mode: if auto { Mode::Auto } else { Mode::Jouez },
                    ticket_id: ticket_id(ticket),
                    now,
                    limits_required: player % 3 != 0,
                };
                format!("{:?}", store.sell(request).await)
            }
            Op::Reveal { player, ticket, zones, ago } => {
                format!("{:?}", store.reveal(&player_id(player), &ticket_id(ticket), zones, ago, now).await)
            }
            Op::Complete { player, ticket } => {
                format!("{:?}", store.complete(&player_id(player), &ticket_id(ticket), now).await)
            }
            Op::Settle { due_after, limit } => {
                format!("{:?}", store.settle_due(now - due_after, None, limit, now).await)
            }
            Op::AskWithdrawal { player, cents } => {
                match store.ask_withdrawal(&player_id(player), Cents(cents), now).await {
                    Ok(w) => format!("Ok({})", self.withdrawal(&w)),
                    Err(e) => format!("Err({e:?})"),
                }
            }
            Op::DecideWithdrawal { nth, pay } => {
                let id = Self::nth(&self.withdrawals, nth);
                match store.decide_withdrawal(id, pay, &staff(0), "décision", now).await {
                    Ok(w) => format!("Ok({})", self.withdrawal(&w)),
                    Err(e) => format!("Err({e:?})"),
                }
            }
            Op::Adjust { player, cents, actor } => {
                match store.adjust(&player_id(player), cents, "correction", &staff(actor), THRESHOLD, now).await {
                    Ok(a) => format!("Ok({})", self.adjustment(&a)),
                    Err(e) => format!("Err({e:?})"),
                }
            }
            Op::DecideAdjustment { nth, approve, actor } => {
                let id = Self::nth(&self.adjustments, nth);
                match store.decide_adjustment(id, approve, &staff(actor), now).await {
                    Ok(a) => format!("Ok({})", self.adjustment(&a)),
                    Err(e) => format!("Err({e:?})"),
                }
            }
            Op::Suspend { player, suspended } => {
                format!("{:?}", store.suspend(&player_id(player), suspended, &staff(1), "contrôle", now).await)
            }
            Op::Debit { player, cents } => format!(
                "{:?}",
                store.operator_debit(&player_id(player), Cents(cents), "remboursement", "cli:test", now).await
            ),
            Op::Register { player, name } => {
                let name = PlayerName::parse(&format!("Joueur{name}")).unwrap();
                format!("{:?}", store.register_guest(&player_id(player), name, "hash".into()).await)
            }
            Op::Session { player, token } => {
                format!("{:?}", store.create_session(&format!("s-{token}"), &player_id(player), now, now + 3_600).await)
            }
            Op::RealityInterval { player, minutes } => {
                format!("{:?}", store.set_reality_interval(&player_id(player), minutes, now).await)
            }
            Op::RealityCheck { token, acknowledge } => {
                let token = format!("s-{token}");
                let done = if acknowledge {
                    store.acknowledge_reality_check(&token, now).await
                } else {
                    store.reality_check_shown(&token, now).await
                };
                format!("{done:?} {:?}", store.session(&token, now).await)
            }
            Op::Bans { players } => {
                format!("{:?}", store.import_bans(players.iter().map(|&p| identity(p).key()).collect(), now).await)
            }
            Op::Purge => format!("{:?}", store.purge(now, now - 3_600, 10).await),
            Op::Read { player } => {
                let p = player_id(player);
                let history = store.history(&p, 3, None).await;
                let next = match history.as_ref().ok().and_then(|page| page.last()) {
                    Some(last) => format!("{:?}", store.history(&p, 3, Some(&last.id)).await),
                    None => String::new(),
                };
                format!(
                    "{:?} {:?} {history:?} {next} {:?} {:?}",
                    store.player(&p).await,
                    store.standing(&p, now).await,
                    store.play_since(&p, now - 86_400).await,
                    store.unsettled(now).await
                )
            }
            Op::Time(seconds) => {
                self.now += seconds;
                format!("now {}", self.now)
            }
        }
    }

    /// Everything the store holds, as it can be compared across engines.
    async fn state(&mut self) -> BTreeMap<String, String> {
        let (store, now) = (self.store, self.now);
        let mut state = BTreeMap::new();
        for player in 0..PLAYERS {
            let p = player_id(player);
            let statement: Vec<String> = store
                .statement(&p, 10_000)
                .await
                .unwrap()
                .into_iter()
                .map(|l| format!("{} {} {} {:?} {:?}", l.at, l.kind, l.amount_cents, l.ticket, l.reason))
                .collect();
            let line = format!(
                "{:?}\n{:?}\n{:?}\n{:?}\n{statement:?}\n{:?}",
                store.player(&p).await,
                store.standing(&p, now).await,
                store.responsible_events(&p, 0).await,
                store.history(&p, 10_000, None).await,
                store.sessions(&p, now).await
            );
            state.insert(p, line);
        }
        let withdrawals = store.withdrawals(None, None, 10_000).await.unwrap();
        state.insert(
            "withdrawals".into(),
            withdrawals.iter().map(|w| self.withdrawal(w)).collect::<Vec<_>>().join("\n"),
        );
        let adjustments = store.adjustments(None, None, 10_000).await.unwrap();
        state.insert(
            "adjustments".into(),
            adjustments.iter().map(|a| self.adjustment(a)).collect::<Vec<_>>().join("\n"),
        );
        let audit = store.audit_log(0, 10_000).await.unwrap();
        state.insert("audit log".into(), audit.iter().map(|e| self.audit_entry(e)).collect::<Vec<_>>().join("\n"));
        assert_eq!(store.verify_audit_log().await.unwrap(), Ok(audit.len() as i64));
        let report = ledger::check(store.ledger_facts().await.unwrap())
            .unwrap_or_else(|problems| panic!("the ledger does not balance: {problems:#?}"));
        state.insert("ledger".into(), format!("{report:?}"));
        state.insert("blocks".into(), format!("{:?}", store.blocks().await));
        state.insert("tiers".into(), format!("{:?}", store.tier_counts().await));
        state.insert("totals".into(), format!("{:?}", store.balance_totals().await));
        state.insert("day".into(), format!("{:?}", store.day_summary(now - now.rem_euclid(86_400)).await));
        state
    }

    /// An audit row less its time and hashes, the ids it names as their order of appearance.
    fn audit_entry(&mut self, e: &AuditEntry) -> String {
        let mut target = e.target.clone();
        if let Some(id) = target.strip_prefix("withdrawal:").and_then(|id| id.parse().ok()) {
            target = format!("withdrawal:#{}", self.withdrawal_number(id));
        }
        let after = e.after.as_deref().map(|after| {
            let mut value: serde_json::Value = serde_json::from_str(after).unwrap();
            if let Some(id) = value.get("adjustment").and_then(serde_json::Value::as_i64) {
                value["adjustment"] = self.adjustment_number(id).into();
            }
            value.to_string()
        });
        format!("{} {} {} {} {:?} {:?} {:?}", e.seq, e.actor, e.action, target, e.before, after, e.reason)
    }
}

/// `id`'s place among the ids seen so far (a new id takes the next).
fn number(ids: &mut Vec<i64>, id: i64) -> usize {
    ids.iter().position(|&seen| seen == id).unwrap_or_else(|| {
        ids.push(id);
        ids.len() - 1
    })
}

/// Two blocks of 150 tickets whose lots are, in turn, nothing, 3 €, 5 € and 10 €.
async fn blocks(store: &Store) {
    for block in 1..=2 {
        let new = NewBlock {
            emission: 1,
            block,
            seed: [block as u8; 32],
            root: [7; 32],
            design_hash: [9; 32],
            design_text: "design".into(),
            scheme: Scheme::V2,
            lots: (0..150).map(|i| [0, 9, 8, 7][i % 4]).collect(),
            kept_level: vec![[block as u8; 32]],
            now: START,
        };
        store.insert_block(new).await.unwrap();
    }
}

/// Runs the sequence on one engine: its answers, and its state at the end.
async fn run(store: &Store, ops: &[Op]) -> (Vec<String>, BTreeMap<String, String>) {
    blocks(store).await;
    let mut run = Run { store, now: START, answers: Vec::new(), withdrawals: Vec::new(), adjustments: Vec::new() };
    for op in ops {
        let answer = run.apply(op).await;
        run.answers.push(answer);
    }
    let state = run.state().await;
    (run.answers, state)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL (VEGAS_TEST_DATABASE): `make test` runs it"]
async fn one_random_sequence_answers_alike_on_sqlite_and_postgresql() {
    let ops = sequence(SEED);
    let (sqlite, postgres) = (Backend::sqlite().await.unwrap(), Backend::postgres().await.unwrap());
    let (sqlite_answers, sqlite_state) = run(&sqlite.store, &ops).await;
    let (postgres_answers, postgres_state) = run(&postgres.store, &ops).await;
    for (n, ((op, a), b)) in ops.iter().zip(&sqlite_answers).zip(&postgres_answers).enumerate() {
        assert_eq!(a, b, "operation {n}, {op:?}: SQLite answered the first, PostgreSQL the second");
    }
    for (what, a) in &sqlite_state {
        assert_eq!(Some(a), postgres_state.get(what), "{what} at the end: SQLite's, then PostgreSQL's");
    }
    // The sequence is worth comparing: it did each kind of thing, and not only refusals.
    let succeeded = |kind: &str| {
        ops.iter()
            .zip(&sqlite_answers)
            .filter(|(op, a)| format!("{op:?}").starts_with(kind) && a.starts_with("Ok"))
            .count()
    };
    for kind in [
        "Sell",
        "Reveal",
        "Complete",
        "Credit",
        "Limit",
        "Confirm",
        "AskWithdrawal",
        "DecideWithdrawal",
        "Adjust",
        "DecideAdjustment",
        "Suspend",
        "Debit",
    ] {
        assert!(succeeded(kind) > 0, "no {kind} succeeded in the sequence");
    }
    println!("{} operations answered alike on both engines; {} sales made", ops.len(), succeeded("Sell"));
}
