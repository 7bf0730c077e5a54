//! The store's conformance suite: what every implementation of `Store` must do, under real concurrency
//! (tasks on a multi-threaded runtime, started together). One suite; each backend runs all of it.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use tokio::task::JoinSet;
use vegas::block::{Hash, LotCode, Scheme};
use vegas::money::Cents;
use vegas::play::{Mode, RevealError};
use vegas::rules::prize_table::TICKET_PRICE;
use vegas::rules::{Surface, Zone};
use vegas::server::names::{PlayerName, key_of};
use vegas::server::store::ledger::{self, LedgerReport};
use vegas::server::store::responsible::{ChangeKind, Flow, Span};
use vegas::server::store::sqlite::Opening;
use vegas::server::store::{Already, Credit, Funding, NewBlock, NewPlayer, Sale, SaleRequest, Store, StoreError};

mod support {
    pub mod stores;
}
use support::stores::{Backend, Books};

#[path = "scenarios/store_responsible.rs"]
mod responsible;
use responsible::*;
#[path = "scenarios/store_back_office.rs"]
mod back_office;
use back_office::*;

/// What a scenario is given: the store alone, or the backend with its books.
trait Given<'a> {
    fn given(backend: &'a Backend) -> Self;
}

impl Given<'_> for Arc<Store> {
    fn given(backend: &Backend) -> Self {
        backend.store.clone()
    }
}

impl<'a> Given<'a> for &'a Backend {
    fn given(backend: &'a Backend) -> Self {
        backend
    }
}

/// Runs each scenario against each backend.
macro_rules! conformance {
    ($($scenario:ident),* $(,)?) => {
        conformance!(@backend sqlite, doc = "Embedded: always run."; $($scenario),*);
        conformance!(@backend postgres, ignore = "needs PostgreSQL (VEGAS_TEST_DATABASE): `make test` runs \
            it"; $($scenario),*);
    };
    (@backend $backend:ident, $attribute:meta; $($scenario:ident),*) => {
        mod $backend {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                #[$attribute]
                async fn $scenario() {
                    let backend = super::Backend::$backend().await.unwrap();
                    super::$scenario(super::Given::given(&backend)).await
                }
            )*
        }
    };
}

conformance!(
    two_hundred_purchases_with_one_key_sell_one_ticket,
    a_player_who_can_afford_two_tickets_buys_two_of_a_hundred,
    complete_settle_and_reveals_racing_on_a_jouez_ticket,
    complete_settle_and_reveals_racing_on_an_auto_ticket,
    sales_racing_across_blocks_that_sell_out,
    a_ticket_belongs_to_its_buyer_only,
    names_are_unique_and_sessions_expire,
    guests_racing_for_one_name_one_becomes_an_account_and_keeps_its_money,
    a_crowd_buying_at_once_is_answered_sale_by_sale,
    operator_payouts_racing_never_overdraw_a_wallet,
    expired_sessions_and_stale_guests_are_purged,
    history_pages_from_a_ticket_and_keeps_when_each_zone_was_uncovered,
    a_block_keeps_its_tree_level_and_a_rebuilt_one_replaces_it,
    the_ledger_check_finds_tampered_books,
    the_ledger_check_attributes_every_stake_and_win,
    a_raise_waits_48_hours_and_applies_only_once_confirmed,
    an_unconfirmed_raise_lapses,
    a_raise_confirmed_twice_at_once_applies_once,
    lapses_racing_take_each_raise_once,
    sales_in_one_second_are_paged_in_sale_order,
    a_rolling_window_frees_a_stake_exactly_one_window_later,
    a_hundred_purchases_at_once_against_a_ten_euro_limit_sell_three,
    credits_racing_against_a_deposit_limit,
    an_exclusion_ends_sessions_refuses_play_and_nothing_lifts_it,
    a_due_reality_check_is_recorded_and_acknowledged,
    a_ban_file_import_closes_an_account_and_pays_its_balance_out,
    a_settlement_round_passes_tickets_that_fail,
    two_settlers_at_once_credit_each_wallet_the_sum_of_its_wins_once,
    a_suspended_player_can_neither_buy_nor_deposit_until_restored,
    a_withdrawal_waits_out_of_reach_then_is_paid_or_refused,
    withdrawals_decided_at_once_are_paid_once,
    an_adjustment_above_the_threshold_needs_a_second_member,
    a_withdrawn_block_sells_no_more_and_sales_go_on_from_the_next,
    staff_are_unique_and_their_sessions_expire,
    the_audit_log_is_append_only_and_a_rewritten_row_is_found,
    staff_close_an_account_for_good_and_pay_its_balance_out,
    a_random_week_keeps_every_daily_summary_balanced_and_the_blocks_equal_to_the_ledger,
);

const NOW: i64 = 1_800_000_000;

/// A small block of the given lots (the store does not care how large a block is).
async fn block(store: &Store, emission: u32, number: u32, lots: Vec<LotCode>) {
    let block = NewBlock {
        emission,
        block: number,
        seed: [number as u8; 32],
        root: [7; 32],
        design_hash: [9; 32],
        design_text: "design".into(),
        // Odd blocks of the old scheme, so that each backend is seen to keep a block's scheme.
        scheme: if number % 2 == 1 { Scheme::V1 } else { Scheme::V2 },
        lots,
        kept_level: tree_level(emission, number),
        now: NOW,
    };
    store.insert_block(block).await.unwrap();
    assert_eq!(
        store.block(emission, number).await.unwrap().scheme,
        if number % 2 == 1 { Scheme::V1 } else { Scheme::V2 }
    );
}

/// A tree level of its own for each block (the store does not check it against the root).
fn tree_level(emission: u32, block: u32) -> Vec<Hash> {
    (0..=block as u8).map(|i| [emission as u8, block as u8, i].repeat(11)[..32].try_into().unwrap()).collect()
}

/// A block whose tickets win, in turn, nothing, 3 €, 5 € and 10 €.
fn mixed_lots(size: usize) -> Vec<LotCode> {
    (0..size).map(|i| [0, 9, 8, 7][i % 4]).collect()
}

async fn player(store: &Store, id: &str, euros: u64) -> String {
    let opening_credit =
        (euros > 0).then(|| Credit { funding: Funding::Demo, amount: Cents::euros(euros), reason: "test".into() });
    let new = NewPlayer { id: id.into(), name: None, password_hash: None, guest: true, identity: None, opening_credit };
    store.create_player(new, NOW).await.unwrap().id
}

fn sale(player: &str, key: &str, mode: Mode, ticket_id: &str) -> SaleRequest {
    SaleRequest {
        player_id: player.into(),
        idempotency_key: key.into(),
        mode,
        ticket_id: ticket_id.into(),
        now: NOW,
        limits_required: false,
    }
}

/// Sets the player's 7-day stake and deposit limits, as real money requires before any of either.
async fn weekly_limits(store: &Store, player: &str, euros: u64) {
    for flow in [Flow::Stake, Flow::Deposit] {
        assert_eq!(
            store.change_limit(player, flow, Span::Week, Some(Cents::euros(euros)), NOW - 1).await,
            Ok(ChangeKind::AtOnce)
        );
    }
}

async fn ledger_passes(store: &Store) -> LedgerReport {
    ledger::check(store.ledger_facts().await.unwrap())
        .unwrap_or_else(|problems| panic!("the ledger does not balance: {problems:#?}"))
}

async fn balance(store: &Store, player: &str) -> Cents {
    store.player(player).await.unwrap().balance
}

async fn two_hundred_purchases_with_one_key_sell_one_ticket(store: Arc<Store>) {
    block(&store, 1, 1, mixed_lots(400)).await;
    let p = player(&store, "p-one-key", 100).await;
    let mut racing = JoinSet::new();
    for i in 0..200 {
        let (store, p) = (store.clone(), p.clone());
        racing.spawn(async move { store.sell(sale(&p, "same-key", Mode::Auto, &format!("t-{i}"))).await });
    }
    let sales: Vec<_> = racing.join_all().await.into_iter().map(Result::unwrap).collect();
    let ids: HashSet<&str> = sales.iter().map(|s| s.ticket.id.as_str()).collect();
    assert_eq!(ids.len(), 1, "every purchase with the key answers the same ticket");
    assert_eq!(sales.iter().filter(|s| !s.replayed).count(), 1, "one sale, the others replays");
    assert!(sales.iter().all(|s| s.balance == Cents::euros(97)));
    assert_eq!(balance(&store, &p).await, Cents::euros(97), "one debit");
    let report = ledger_passes(&store).await;
    assert_eq!(report.blocks[0].sold, 1);
    let other_mode = store.sell(sale(&p, "same-key", Mode::Jouez, "t-other")).await;
    assert_eq!(other_mode, Err(StoreError::KeyReused));
}

async fn a_player_who_can_afford_two_tickets_buys_two_of_a_hundred(store: Arc<Store>) {
    block(&store, 1, 1, mixed_lots(400)).await;
    let p = player(&store, "p-two", 7).await;
    let mut racing = JoinSet::new();
    for i in 0..100 {
        let (store, p) = (store.clone(), p.clone());
        racing.spawn(async move { store.sell(sale(&p, &format!("k{i}"), Mode::Jouez, &format!("t-{i}"))).await });
    }
    // Meanwhile the balance is read again and again: it is never negative (a negative one is an error).
    let watcher = {
        let (store, p) = (store.clone(), p.clone());
        tokio::spawn(async move {
            for _ in 0..200 {
                store.player(&p).await.expect("a readable, non-negative balance");
            }
        })
    };
    let results = racing.join_all().await;
    watcher.await.unwrap();
    let sold = results.iter().filter(|r| r.is_ok()).count();
    let refused = results
        .iter()
        .filter(|r| matches!(r, Err(StoreError::InsufficientFunds { price, .. }) if *price == TICKET_PRICE))
        .count();
    assert_eq!((sold, refused), (2, 98), "{results:?}");
    assert_eq!(balance(&store, &p).await, Cents::euros(1));
    assert_eq!(ledger_passes(&store).await.blocks[0].sold, 2);
}

async fn operator_payouts_racing_never_overdraw_a_wallet(store: Arc<Store>) {
    let p = player(&store, "p-payouts", 0).await;
    let deposit = Credit { funding: Funding::Cash, amount: Cents::euros(10), reason: "bank transfer".into() };
    assert_eq!(
        store.credit(&p, deposit.clone(), NOW).await,
        Err(StoreError::LimitsRequired(Flow::Deposit)),
        "no real money before a 7-day deposit limit"
    );
    weekly_limits(&store, &p, 1_000).await;
    assert_eq!(store.credit(&p, deposit, NOW).await, Ok(Cents::euros(10)));
    let mut racing = JoinSet::new();
    for _ in 0..25 {
        let (store, p) = (store.clone(), p.clone());
        racing.spawn(async move { store.operator_debit(&p, Cents::euros(1), "payout", "cli:test", NOW).await });
    }
    let results = racing.join_all().await;
    let paid = results.iter().filter(|r| r.is_ok()).count();
    let refused = results
        .iter()
        .filter(|r| matches!(r, Err(StoreError::Overdraft { amount, .. }) if *amount == Cents::euros(1)))
        .count();
    assert_eq!((paid, refused), (10, 15), "{results:?}");
    assert_eq!(balance(&store, &p).await, Cents::ZERO);
    assert_eq!(
        store.operator_debit("p-nobody", Cents(1), "payout", "cli:test", NOW).await,
        Err(StoreError::NotFound("player"))
    );
    ledger_passes(&store).await;
}

async fn expired_sessions_and_stale_guests_are_purged(store: Arc<Store>) {
    block(&store, 1, 1, mixed_lots(10)).await;
    let gone = player(&store, "p-gone", 100).await;
    store
        .credit(&gone, Credit { funding: Funding::Demo, amount: Cents::euros(50), reason: "top-up".into() }, NOW)
        .await
        .unwrap();
    store.create_session("expired", &gone, NOW - 3600, NOW - 1).await.unwrap();
    let played = player(&store, "p-played", 10).await;
    store.sell(sale(&played, "k", Mode::Auto, "t-played")).await.unwrap();
    let returning = player(&store, "p-returning", 10).await;
    store.create_session("live", &returning, NOW - 3600, NOW + 3600).await.unwrap();
    let funded = player(&store, "p-funded", 0).await;
    weekly_limits(&store, &funded, 1_000).await;
    store
        .credit(&funded, Credit { funding: Funding::Cash, amount: Cents::euros(5), reason: "bank".into() }, NOW)
        .await
        .unwrap();
    store.operator_debit(&funded, Cents::euros(5), "payout", "cli:test", NOW).await.unwrap();
    let new = NewPlayer {
        id: "p-new".into(),
        name: None,
        password_hash: None,
        guest: true,
        identity: None,
        opening_credit: None,
    };
    store.create_player(new, NOW + 10).await.unwrap();

    let report = store.purge(NOW, NOW + 5, 100).await.unwrap();
    assert_eq!((report.sessions, report.guests), (1, 1), "{report:?}");
    assert_eq!(store.player(&gone).await, Err(StoreError::NotFound("player")));
    assert_eq!(store.session("expired", NOW - 10).await.unwrap().map(|s| s.player_id), None);
    for kept in [&played, &returning, &funded, "p-new"] {
        store.player(kept).await.unwrap_or_else(|e| panic!("{kept} kept: {e}"));
    }
    assert_eq!(store.session("live", NOW).await.unwrap().map(|s| s.player_id), Some(returning));
    ledger_passes(&store).await;
    assert_eq!(store.purge(NOW, NOW + 5, 100).await.unwrap(), Default::default(), "nothing left to purge");
}

/// Races reveals (every zone, several times, in a random order), completions and settlements on one
/// ticket, round after round until every zone is uncovered.
async fn race_on_one_ticket(store: Arc<Store>, mode: Mode) {
    block(&store, 1, 1, vec![7; 10]).await; // every ticket wins 10 €
    let p = player(&store, "p-race", 10).await;
    let ticket = store.sell(sale(&p, "k", mode, "t-race")).await.unwrap().ticket;
    let mut accepted = HashSet::new();
    for round in 0..30 {
        let mut racing = JoinSet::new();
        for zone in 0..12usize {
            for _ in 0..2 {
                let (store, p) = (store.clone(), p.clone());
                racing.spawn(async move {
                    (
                        "reveal",
                        Some(zone),
                        store.reveal(&p, "t-race", vec![zone], vec![], NOW + round).await.map(|_| ()),
                    )
                });
            }
        }
        for _ in 0..3 {
            let (completer, p) = (store.clone(), p.clone());
            racing.spawn(
                async move { ("complete", None, completer.complete(&p, "t-race", NOW + round).await.map(|_| ())) },
            );
            let store = store.clone();
            racing.spawn(async move {
                ("settle", None, store.settle_due(NOW + 3600, None, 16, NOW + round).await.map(|_| ()))
            });
        }
        for (what, zone, result) in racing.join_all().await {
            match (what, result) {
                ("reveal", Ok(())) => _ = accepted.insert(zone.unwrap()),
                ("reveal", Err(StoreError::Reveal(RevealError::FirstSurfaceUnfinished(_)))) if mode == Mode::Jouez => {}
                ("complete", Err(StoreError::ZonesLeft(_))) if mode == Mode::Jouez => {}
                ("reveal" | "complete", Err(StoreError::Finished)) => {}
                (_, Ok(())) => {}
                (what, Err(e)) => panic!("{what} failed: {e}"),
            }
        }
        if store.ticket(&p, "t-race").await.unwrap().finished_at.is_some() {
            break;
        }
    }
    let done = store.ticket(&p, "t-race").await.unwrap();
    assert!(done.finished_at.is_some() && done.credited_at.is_some(), "{done:?}");
    let mut zones = done.revealed.clone();
    zones.sort();
    assert_eq!(zones, (0..12).collect::<Vec<_>>(), "every zone once: {:?}", done.revealed);
    assert_eq!(done.revealed_at.len(), 12, "a time for each zone: {done:?}");
    assert!(done.revealed_at.is_sorted(), "times in the order uncovered: {:?}", done.revealed_at);
    assert!(accepted.iter().all(|z| done.revealed.contains(z)), "no accepted reveal lost");
    if mode == Mode::Jouez {
        let first = Zone::from_index(done.revealed[0]).unwrap().surface();
        let first_zones = first.zones().count();
        assert!(
            done.revealed[..first_zones].iter().all(|&z| Zone::from_index(z).unwrap().surface() == first),
            "« Jouez »: {first:?} uncovered entirely before any other surface: {:?}",
            done.revealed
        );
        assert!(Surface::ALL.contains(&first));
    }
    assert_eq!(balance(&store, &p).await, Cents::euros(10 - 3 + 10), "one credit of the 10 € win");
    assert_eq!(ticket.lot, Cents::euros(10));
    ledger_passes(&store).await;
}

async fn complete_settle_and_reveals_racing_on_a_jouez_ticket(store: Arc<Store>) {
    race_on_one_ticket(store, Mode::Jouez).await;
}

async fn complete_settle_and_reveals_racing_on_an_auto_ticket(store: Arc<Store>) {
    race_on_one_ticket(store, Mode::Auto).await;
}

async fn sales_racing_across_blocks_that_sell_out(store: Arc<Store>) {
    block(&store, 1, 1, mixed_lots(30)).await;
    block(&store, 1, 2, mixed_lots(25)).await;
    let mut racing = JoinSet::new();
    for n in 0..10 {
        let store = store.clone();
        racing.spawn(async move {
            let p = player(&store, &format!("p-{n}"), 30).await;
            let mut results = Vec::new();
            for i in 0..8 {
                results.push(store.sell(sale(&p, &format!("k{i}"), Mode::Auto, &format!("t-{n}-{i}"))).await);
            }
            results
        });
    }
    let results: Vec<_> = racing.join_all().await.into_iter().flatten().collect();
    let serials: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).map(|s| s.ticket.serial).collect();
    let distinct: HashSet<_> = serials.iter().collect();
    assert_eq!((serials.len(), distinct.len()), (55, 55), "every ticket of both blocks sold once");
    assert_eq!(results.iter().filter(|r| r.as_ref().err() == Some(&StoreError::SoldOut)).count(), 25);
    let blocks = store.blocks().await.unwrap();
    assert!(blocks.iter().all(|b| b.sold == b.size && b.closed_at.is_some()), "{blocks:?}");
    let report = ledger_passes(&store).await;
    assert_eq!(report.blocks.iter().map(|b| b.stakes_balance).sum::<i64>(), 55 * 300);
}

/// Many players buying at once (a store may sell them together, as PostgreSQL's groups do): each sale
/// answers its own ticket and its wallet's balance just after it, a wallet that cannot pay for all its
/// purchases pays for those it can, and the same keys sent again replay without a debit.
async fn a_crowd_buying_at_once_is_answered_sale_by_sale(store: Arc<Store>) {
    block(&store, 1, 1, mixed_lots(200)).await;
    let mut players = Vec::new();
    for n in 0..40 {
        // Even players can pay for their 3 purchases (10 €), odd ones for 1 of them (5 €).
        let euros = if n % 2 == 0 { 10 } else { 5 };
        players.push((player(&store, &format!("p-{n}"), euros).await, euros));
    }
    let crowd = |wave: &'static str| {
        let mut racing = JoinSet::new();
        for (p, _) in &players {
            for i in 0..3 {
                let (store, p) = (store.clone(), p.clone());
                racing.spawn(async move {
                    (
                        (p.clone(), i),
                        store.sell(sale(&p, &format!("k{i}"), Mode::Auto, &format!("{wave}-{p}-{i}"))).await,
                    )
                });
            }
        }
        async { racing.join_all().await.into_iter().collect::<HashMap<_, _>>() }
    };
    let first = crowd("first").await;
    for (p, euros) in &players {
        let sales: Vec<&Sale> =
            first.iter().filter(|((q, _), _)| q == p).filter_map(|(_, r)| r.as_ref().ok()).collect();
        let refused =
            first.iter().filter(|((q, _), r)| q == p && matches!(r, Err(StoreError::InsufficientFunds { .. }))).count();
        let mut balances: Vec<u64> = sales.iter().map(|s| s.balance.0).collect();
        balances.sort_unstable();
        if *euros == 10 {
            assert_eq!(
                (balances, refused),
                (vec![100, 400, 700], 0),
                "{p}: each sale answers the balance just after it"
            );
        } else {
            assert_eq!((balances, refused), (vec![200], 2), "{p}");
        }
        assert!(sales.iter().all(|s| s.ticket.owner == *p && !s.replayed));
    }
    let serials: HashSet<_> = first.values().filter_map(|r| r.as_ref().ok()).map(|s| s.ticket.serial).collect();
    assert_eq!(serials.len(), 20 * 3 + 20);

    let again = crowd("again").await;
    assert_eq!(again.len(), first.len());
    for ((p, i), was) in &first {
        match (was, &again[&(p.clone(), *i)]) {
            (Ok(was), Ok(now)) => {
                assert!(now.replayed && now.ticket == was.ticket, "{p}: a key sent again replays its ticket")
            }
            (Err(StoreError::InsufficientFunds { .. }), Err(StoreError::InsufficientFunds { .. })) => {}
            other => panic!("{p}: {other:?}"),
        }
    }
    for (p, euros) in &players {
        assert_eq!(balance(&store, p).await, Cents(if *euros == 10 { 100 } else { 200 }));
    }
    let report = ledger_passes(&store).await;
    assert_eq!(report.blocks.iter().map(|b| b.stakes_balance).sum::<i64>(), 80 * 300);
}

async fn a_ticket_belongs_to_its_buyer_only(store: Arc<Store>) {
    block(&store, 1, 1, mixed_lots(10)).await;
    let (a, b) = (player(&store, "p-a", 10).await, player(&store, "p-b", 10).await);
    let t = store.sell(sale(&a, "k", Mode::Auto, "t-a")).await.unwrap().ticket;
    assert_eq!(store.ticket(&b, &t.id).await, Err(StoreError::NotFound("ticket")));
    assert_eq!(store.reveal(&b, &t.id, vec![0], vec![], NOW).await, Err(StoreError::NotFound("ticket")));
    assert_eq!(store.complete(&b, &t.id, NOW).await, Err(StoreError::NotFound("ticket")));
    assert!(store.history(&b, 10, None).await.unwrap().is_empty());
    assert_eq!(
        store.history(&b, 10, Some(&t.id)).await,
        Err(StoreError::NotFound("ticket")),
        "no paging from another's ticket"
    );
    assert_eq!(store.history(&a, 10, None).await.unwrap(), vec![t]);
    // The same key is another player's own key: it buys another ticket.
    assert!(!store.sell(sale(&b, "k", Mode::Auto, "t-b")).await.unwrap().replayed);
}

/// Sales within one second, whose ids sort the other way: the history still pages newest sale first,
/// on both engines (by the running total of stakes each ticket kept, not by its id).
async fn sales_in_one_second_are_paged_in_sale_order(store: Arc<Store>) {
    block(&store, 1, 1, mixed_lots(20)).await;
    let p = player(&store, "p-second", 60).await;
    let ids: Vec<String> = (0..7).map(|i| format!("t-{}", char::from(b'z' - i))).collect();
    for (i, id) in ids.iter().enumerate() {
        store.sell(sale(&p, &format!("k{i}"), Mode::Auto, id)).await.unwrap();
    }
    let mut seen = Vec::new();
    let mut before: Option<String> = None;
    while let Some(last) = {
        let page = store.history(&p, 3, before.as_deref()).await.unwrap();
        seen.extend(page.iter().map(|t| t.id.clone()));
        page.last().map(|t| t.id.clone())
    } {
        before = Some(last);
    }
    let newest_first: Vec<String> = ids.into_iter().rev().collect();
    assert_eq!(seen, newest_first);
}

async fn history_pages_from_a_ticket_and_keeps_when_each_zone_was_uncovered(store: Arc<Store>) {
    block(&store, 1, 1, mixed_lots(10)).await;
    let p = player(&store, "p-pages", 30).await;
    // Five tickets sold in the same second: the pages still follow the order of sale.
    for i in 0..5 {
        store.sell(sale(&p, &format!("k{i}"), Mode::Jouez, &format!("t{i}"))).await.unwrap();
    }
    let mut pages = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let page: Vec<String> =
            store.history(&p, 2, before.as_deref()).await.unwrap().into_iter().map(|t| t.id).collect();
        if page.is_empty() {
            break;
        }
        before = page.last().cloned();
        pages.push(page);
    }
    assert_eq!(pages, [vec!["t4", "t3"], vec!["t2", "t1"], vec!["t0"]]);
    // A sale while paging does not shift the next page.
    store.sell(sale(&p, "k5", Mode::Jouez, "t5")).await.unwrap();
    assert_eq!(
        store.history(&p, 2, Some("t3")).await.unwrap().iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
        ["t2", "t1"]
    );

    store.reveal(&p, "t0", vec![4], vec![], NOW + 5).await.unwrap();
    let t = store.reveal(&p, "t0", vec![3, 4, 2], vec![], NOW + 7).await.unwrap();
    assert_eq!(
        (t.revealed, t.revealed_at),
        (vec![4, 3, 2], vec![NOW + 5, NOW + 7, NOW + 7]),
        "a zone sent again keeps its time"
    );
    // The rest of the roulette first (« Jouez »), then the other surfaces.
    for z in [5, 0, 1, 6, 7, 8, 9, 10, 11] {
        store.reveal(&p, "t0", vec![z], vec![], NOW + 20 + z as i64).await.unwrap();
    }
    let done = store.complete(&p, "t0", NOW + 40).await.unwrap().ticket;
    assert_eq!(done.revealed_at.len(), 12);
    assert_eq!(done.revealed_at[..5], [NOW + 5, NOW + 7, NOW + 7, NOW + 25, NOW + 20]);
    assert_eq!(store.history(&p, 1, Some("t1")).await.unwrap()[0], done, "history shows the times too");
    // « Auto »: the completion uncovers what is left, all at its time.
    store.sell(sale(&p, "k-auto", Mode::Auto, "t-auto")).await.unwrap();
    store.reveal(&p, "t-auto", vec![11], vec![], NOW + 60).await.unwrap();
    let auto = store.complete(&p, "t-auto", NOW + 61).await.unwrap().ticket;
    assert_eq!(auto.revealed_at, [vec![NOW + 60], vec![NOW + 61; 11]].concat());
    // Zones uncovered while the game could not reach the server: stamped when the player uncovered them.
    store.sell(sale(&p, "k-late", Mode::Jouez, "t-late")).await.unwrap();
    let late = store.reveal(&p, "t-late", vec![0, 1], vec![50, 20], NOW + 100).await.unwrap();
    assert_eq!(late.revealed_at, [NOW + 50, NOW + 80]);
}

async fn names_are_unique_and_sessions_expire(store: Arc<Store>) {
    let typed = ["lucie", "Lucie", "ＬＵＣＩＥ", "lucіe"];
    let named = |id: &str, name: &str| NewPlayer {
        id: id.into(),
        name: Some(PlayerName { shown: name.into(), key: key_of(name) }),
        password_hash: Some("h".into()),
        guest: false,
        identity: None,
        opening_credit: None,
    };
    let mut racing = JoinSet::new();
    for i in 0..20 {
        let store = store.clone();
        let player = named(&format!("p-{i}"), typed[i % typed.len()]);
        racing.spawn(async move { store.create_player(player, NOW).await });
    }
    let results = racing.join_all().await;
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1, "one name, however typed");
    assert!(results.iter().filter(|r| r.is_err()).all(|r| r.as_ref().err() == Some(&StoreError::NameTaken)));
    let winner = store.credentials(&key_of("LUCIE")).await.unwrap().unwrap().player_id;
    assert_eq!(balance(&store, &winner).await, Cents::ZERO);
    store.create_session("h1", &winner, NOW - 3600, NOW + 10).await.unwrap();
    assert_eq!(store.session("h1", NOW).await.unwrap().map(|s| s.player_id), Some(winner.clone()));
    assert_eq!(store.session("h1", NOW + 10).await.unwrap().map(|s| s.player_id), None, "expired");
    store.delete_session("h1").await.unwrap();
    assert_eq!(store.session("h1", NOW).await.unwrap().map(|s| s.player_id), None);
}

async fn guests_racing_for_one_name_one_becomes_an_account_and_keeps_its_money(store: Arc<Store>) {
    let name = |shown: &str| PlayerName { shown: shown.into(), key: key_of(shown) };
    let mut guests = Vec::new();
    for i in 0..10 {
        guests.push(player(&store, &format!("g-{i}"), 20 + i).await);
    }
    let mut racing = JoinSet::new();
    for (i, guest) in guests.iter().enumerate() {
        let (store, guest, name) = (store.clone(), guest.clone(), name(["Lucie", "lucie", "LUCIE"][i % 3]));
        racing.spawn(async move { (guest.clone(), store.register_guest(&guest, name, "h".into()).await) });
    }
    let results = racing.join_all().await;
    let winners: Vec<&String> = results.iter().filter(|(_, r)| r.is_ok()).map(|(g, _)| g).collect();
    assert_eq!(winners.len(), 1, "one name, however typed: {results:?}");
    assert!(results.iter().filter(|(_, r)| r.is_err()).all(|(_, r)| r.as_ref().err() == Some(&StoreError::NameTaken)));
    let winner = winners[0].clone();
    let named = store.player(&winner).await.unwrap();
    assert_eq!((named.name.as_deref().map(str::to_lowercase), named.guest), (Some("lucie".into()), false));
    let euros = 20 + winner.trim_start_matches("g-").parse::<u64>().unwrap();
    assert_eq!(named.balance, Cents::euros(euros), "the guest's money stays");
    assert_eq!(store.credentials(&key_of("lucie")).await.unwrap().unwrap().player_id, winner);
    assert_eq!(store.register_guest(&winner, name("Other"), "h".into()).await, Err(StoreError::NotAGuest));
    assert_eq!(store.register_guest("p-nobody", name("Nobody"), "h".into()).await, Err(StoreError::NotFound("player")));
    let loser = guests.iter().find(|g| **g != winner).unwrap();
    store.register_guest(loser, name("Marc"), "h".into()).await.unwrap();
    ledger_passes(&store).await;
}

/// A data directory written by the server before versioned migrations is migrated when opened: its
/// single-entry ledger becomes balanced transfers, every balance and key is kept.
#[tokio::test]
async fn a_store_from_before_migrations_is_migrated_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vegas.sqlite3");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(include_str!("../src/server/store/sqlite/migrations/V1__first_schema.sql")).unwrap();
        conn.execute_batch(
            "INSERT INTO designs VALUES (x'09', 'design');
             INSERT INTO blocks (emission, block, seed, root, design_hash, lots, sold, created_at) VALUES (1, 1, \
                 x'01', x'02', x'09', x'0009080700', 3, 1);
             INSERT INTO players VALUES ('p-1', NULL, NULL, 1, 1);
             INSERT INTO tickets (id, player_id, emission, block, idx, mode, payload, lot_cents, revealed, sold_at, \
                 credited_at, finished_at) VALUES
                 ('t-0', 'p-1', 1, 1, 0, 'auto', 'a.b.c', 0, '[0,1,2,3,4,5,6,7,8,9,10,11]', 2, 3, 3),
                 ('t-1', 'p-1', 1, 1, 1, 'jouez', 'a.b.c', 300, '[6]', 4, 9, NULL),
                 ('t-2', 'p-1', 1, 1, 2, 'jouez', 'a.b.c', 500, '[]', 5, NULL, NULL);
             INSERT INTO ledger (player_id, kind, amount_cents, ticket_id, created_at) VALUES
                 ('p-1', 'deposit', 10000, NULL, 1), ('p-1', 'stake', -300, 't-0', 2), ('p-1', 'stake', -300, 't-1', 4),
                 ('p-1', 'stake', -300, 't-2', 5), ('p-1', 'win', 300, 't-1', 9);
             INSERT INTO idempotency VALUES ('p-1', 'k0', 't-0'), ('p-1', 'k1', 't-1'), ('p-1', 'k2', 't-2');",
        )
        .unwrap();
    }
    let store = Store::sqlite(&path, Opening::Server).unwrap();
    assert_eq!(balance(&store, "p-1").await, Cents(10_000 - 900 + 300));
    let report = ledger_passes(&store).await;
    let b = &report.blocks[0];
    assert_eq!((b.sold, b.stakes_balance, b.prizes_balance, b.owed, b.committed), (3, 900, -300, 500, 800));
    let replay = store.sell(sale("p-1", "k1", Mode::Jouez, "t-new")).await.unwrap();
    assert!(replay.replayed && replay.ticket.id == "t-1" && replay.ticket.revealed == [6]);
    let next = store.sell(sale("p-1", "k3", Mode::Auto, "t-3")).await.unwrap();
    assert_eq!((next.ticket.serial.index, next.ticket.lot), (3, Cents::euros(10)), "sales go on where they were");
    assert_eq!(store.complete("p-1", "t-2", NOW).await, Err(StoreError::ZonesLeft((0..12).collect())));
    drop(store);
    // Opening again applies nothing twice.
    let store = Store::sqlite(&path, Opening::Server).unwrap();
    ledger_passes(&store).await;
}

/// What `ledger check` says of the books as they are now.
async fn ledger_problems(store: &Store) -> String {
    ledger::check(store.ledger_facts().await.unwrap()).err().unwrap_or_default().join("\n")
}

/// `ledger check` is only worth something if it fails when the books are wrong.
async fn the_ledger_check_finds_tampered_books(backend: &Backend) {
    let store = &*backend.store;
    block(store, 1, 1, mixed_lots(20)).await;
    let p = player(store, "p-1", 20).await;
    for i in 0..4 {
        let t = store.sell(sale(&p, &format!("k{i}"), Mode::Auto, &format!("t-{i}"))).await.unwrap().ticket;
        store.complete(&p, &t.id, NOW).await.unwrap();
    }
    ledger_passes(store).await;
    backend.tamper(&backend.shift_balance("wallet:p-1", 100)).await;
    assert!(ledger_problems(store).await.contains("account wallet:p-1: stored balance"));
    backend
        .tamper(&format!(
            "{}; UPDATE tickets SET lot_cents = 4000000 WHERE id = 't-0'",
            backend.shift_balance("wallet:p-1", -100)
        ))
        .await;
    assert!(ledger_problems(store).await.contains("another lot than the block committed"));
    backend
        .tamper(
            "UPDATE tickets SET lot_cents = 0 WHERE id = 't-0'; DELETE FROM transfers WHERE kind = 'win' AND \
        ticket_id = 't-1'",
        )
        .await;
    let found = ledger_problems(store).await;
    assert!(found.contains("win transfer is missing") && found.contains("stored balance"), "{found}");
}

/// Balances that still add up are not enough: each stake and win must have moved between the ticket's
/// owner and the ticket's block, and every transfer between accounts that exist.
async fn the_ledger_check_attributes_every_stake_and_win(backend: &Backend) {
    let store = &*backend.store;
    // Tickets win nothing, 3 €, 5 €, 10 € in turn.
    block(store, 1, 1, mixed_lots(8)).await;
    block(store, 1, 2, mixed_lots(8)).await;
    let (p, q) = (player(store, "p", 30).await, player(store, "q", 30).await);
    for (i, buyer) in [&p, &q, &p, &q].into_iter().enumerate() {
        let t = store.sell(sale(buyer, &format!("k{i}"), Mode::Auto, &format!("t-{i}"))).await.unwrap().ticket;
        store.complete(buyer, &t.id, NOW).await.unwrap();
    }
    ledger_passes(store).await;
    // Each wrong attribution is made with balances that still match their transfers, then undone.
    let cases = [
        (
            "a stake from the wrong wallet",
            format!(
                "UPDATE transfers SET debit = 'wallet:q' WHERE kind = 'stake' AND ticket_id = 't-0'; {}; \
                {}",
                backend.shift_balance("wallet:p", 300),
                backend.shift_balance("wallet:q", -300)
            ),
            format!(
                "UPDATE transfers SET debit = 'wallet:p' WHERE kind = 'stake' AND ticket_id = 't-0'; {}; \
                {}",
                backend.shift_balance("wallet:p", -300),
                backend.shift_balance("wallet:q", 300)
            ),
            "1 stakes not taken from the ticket owner's wallet into its block's stakes",
        ),
        (
            "a win to the wrong wallet",
            // t-2 is p's 5 € ticket.
            format!(
                "UPDATE transfers SET credit = 'wallet:q' WHERE kind = 'win' AND ticket_id = 't-2'; {}; \
                {}",
                backend.shift_balance("wallet:p", -500),
                backend.shift_balance("wallet:q", 500)
            ),
            format!(
                "UPDATE transfers SET credit = 'wallet:p' WHERE kind = 'win' AND ticket_id = 't-2'; {}; \
                {}",
                backend.shift_balance("wallet:p", 500),
                backend.shift_balance("wallet:q", -500)
            ),
            "1 wins not paid from the ticket's block's prizes into its owner's wallet",
        ),
        (
            "a stake into another block's stakes",
            format!(
                "UPDATE transfers SET credit = 'block:1:2:stakes' WHERE kind = 'stake' AND ticket_id = 't-1'; {}; {}",
                backend.shift_balance("block:1:1:stakes", -300),
                backend.shift_balance("block:1:2:stakes", 300)
            ),
            format!(
                "UPDATE transfers SET credit = 'block:1:1:stakes' WHERE kind = 'stake' AND ticket_id = 't-1'; {}; {}",
                backend.shift_balance("block:1:1:stakes", 300),
                backend.shift_balance("block:1:2:stakes", -300)
            ),
            "1 stakes not taken from the ticket owner's wallet into its block's stakes",
        ),
        (
            "transfers through an account that does not exist, netting to zero",
            "INSERT INTO transfers (kind, debit, credit, amount, created_at) VALUES ('deposit', 'cash', \
                'wallet:ghost', 100, 0), ('withdrawal', 'wallet:ghost', 'cash', 100, 0)"
                .into(),
            "DELETE FROM transfers WHERE debit = 'wallet:ghost' OR credit = 'wallet:ghost'".into(),
            "2 transfers naming a missing account or ticket",
        ),
        (
            "demo money paid into the prizes",
            "INSERT INTO transfers (kind, debit, credit, amount, created_at) VALUES ('demo', 'demo', \
                'block:1:1:prizes', 100, 0), ('demo', 'block:1:1:prizes', 'demo', 100, 0)"
                .into(),
            "DELETE FROM transfers WHERE kind = 'demo' AND (debit = 'block:1:1:prizes' OR credit = \
                'block:1:1:prizes')"
                .into(),
            "2 transfers naming a missing account or ticket, or accounts their kind does not move money between",
        ),
    ];
    for (what, tamper, undo, expected) in cases {
        backend.tamper(&tamper).await;
        let found = ledger_problems(store).await;
        assert!(found.contains(expected), "{what}: {found}");
        assert!(
            !found.contains("stored balance") && !found.contains("sum to"),
            "{what} is found by attribution alone: {found}"
        );
        backend.tamper(&undo).await;
        ledger_passes(store).await;
    }
}

/// Two settlers (two instances) racing through the same due tickets, several wins of a wallet in
/// each batch: every ticket is credited once, and each wallet gets exactly the sum of its wins.
async fn two_settlers_at_once_credit_each_wallet_the_sum_of_its_wins_once(store: Arc<Store>) {
    block(&store, 1, 1, mixed_lots(90)).await;
    let players =
        [player(&store, "p-a", 100).await, player(&store, "p-b", 100).await, player(&store, "p-c", 100).await];
    let mut wins: HashMap<&str, Vec<Cents>> = HashMap::new();
    for i in 0..90 {
        let p = &players[i % 3];
        let sold = store
            .sell(SaleRequest { now: NOW + i as i64, ..sale(p, &format!("k{i}"), Mode::Auto, &format!("t-{i:03}")) })
            .await
            .unwrap();
        wins.entry(p).or_default().push(sold.ticket.lot);
    }
    assert!(
        wins.values().all(|lots| lots.iter().filter(|lot| !lot.is_zero()).count() > 10),
        "several wins a wallet: {wins:?}"
    );
    const BATCHES: vegas::server::store::Batches =
        vegas::server::store::Batches { first: 8, most: 32, breath: std::time::Duration::ZERO };
    let settler = |store: Arc<Store>| async move {
        vegas::server::store::settle_round(&store, NOW + 100, BATCHES, || NOW + 1000).await.unwrap()
    };
    let (one, two) = tokio::join!(tokio::spawn(settler(store.clone())), tokio::spawn(settler(store.clone())));
    let (one, two) = (one.unwrap(), two.unwrap());
    assert_eq!(one.settled + two.settled, 90, "each ticket settled once: {one:?} {two:?}");
    assert!(one.failed.is_empty() && two.failed.is_empty());
    for p in &players {
        let won: Cents = wins[p.as_str()].iter().copied().sum();
        assert_eq!(balance(&store, p).await, Cents::euros(100 - 30 * 3) + won, "{p}");
    }
    ledger_passes(&store).await;
    let again = vegas::server::store::settle_round(&store, NOW + 100, BATCHES, || NOW + 2000).await.unwrap();
    assert_eq!((again.examined, again.settled), (0, 0), "nothing left due");
}

/// Tickets that cannot be settled do not hold up the others, however many and however old.
async fn a_settlement_round_passes_tickets_that_fail(backend: &Backend) {
    let store = &*backend.store;
    // The 20 oldest tickets all win 3 € from a block whose prizes account is gone: each fails.
    block(store, 1, 1, vec![9; 20]).await;
    block(store, 1, 2, mixed_lots(80)).await;
    let p = player(store, "p", 300).await;
    for i in 0..100 {
        store
            .sell(SaleRequest { now: NOW + i, ..sale(&p, &format!("k{i}"), Mode::Jouez, &format!("t-{i:03}")) })
            .await
            .unwrap();
    }
    backend.tamper(&backend.drop_balance("block:1:1:prizes")).await;
    // Batches of 4, then 8, then 16 while due tickets remain: the failing ones fill the first batches.
    const BATCHES: vegas::server::store::Batches =
        vegas::server::store::Batches { first: 4, most: 16, breath: std::time::Duration::ZERO };
    for round in 0..2 {
        let report = vegas::server::store::settle_round(store, NOW + 100, BATCHES, || NOW + 1000).await.unwrap();
        assert_eq!((report.examined, report.failed.len()), (100 - 80 * round, 20), "round {round}: {report:?}");
        assert_eq!(report.settled, if round == 0 { 80 } else { 0 }, "round {round}");
        let failed: HashSet<&str> = report.failed.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(
            failed,
            (0..20).map(|i| format!("t-{i:03}")).collect::<HashSet<_>>().iter().map(String::as_str).collect()
        );
    }
    for i in 20..100 {
        assert!(store.ticket(&p, &format!("t-{i:03}")).await.unwrap().credited_at.is_some(), "t-{i:03} is settled");
    }
}

async fn a_block_keeps_its_tree_level_and_a_rebuilt_one_replaces_it(store: Arc<Store>) {
    block(&store, 1, 1, mixed_lots(8)).await;
    block(&store, 1, 2, mixed_lots(8)).await;
    assert_eq!(store.block_tree(1, 1).await.unwrap(), Some(tree_level(1, 1)));
    assert_eq!(store.block_tree(1, 2).await.unwrap(), Some(tree_level(1, 2)));
    assert_eq!(store.block_tree(1, 3).await.unwrap(), None, "no such block");
    // A level that failed its check is replaced by the rebuilt one; other blocks keep theirs.
    store.save_block_tree(1, 1, tree_level(9, 9)).await.unwrap();
    assert_eq!(store.block_tree(1, 1).await.unwrap(), Some(tree_level(9, 9)));
    assert_eq!(store.block_tree(1, 2).await.unwrap(), Some(tree_level(1, 2)));
    assert!(store.save_block_tree(1, 3, tree_level(1, 3)).await.is_err(), "a tree for a block that is not stored");
}
