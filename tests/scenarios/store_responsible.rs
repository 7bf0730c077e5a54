//! Responsible gaming, on both backends: limits enforced with the sale or the deposit they guard,
//! raises that wait, pauses nothing lifts, reality checks, the ban file, and the record of it all.

use super::*;
use vegas::server::store::Identity;
use vegas::server::store::responsible::{Actor, ChangeKind, Flow, LimitRefusal, Pause, PauseKind, Span};

const HOUR: i64 = 3600;
const DAY: i64 = 24 * HOUR;

fn at(player: &str, key: &str, now: i64) -> SaleRequest {
    SaleRequest { now, limits_required: true, ..sale(player, key, Mode::Auto, &format!("t-{player}-{key}")) }
}

fn cash(euros: u64) -> Credit {
    Credit { funding: Funding::Cash, amount: Cents::euros(euros), reason: "bank transfer".into() }
}

async fn kinds(store: &Store, player: &str) -> Vec<String> {
    store.responsible_events(player, 0).await.unwrap().into_iter().map(|e| e.kind).collect()
}

pub async fn a_raise_waits_48_hours_and_applies_only_once_confirmed(store: Arc<Store>) {
    block(&store, 1, 1, mixed_lots(100)).await;
    let p = player(&store, "p-raise", 0).await;
    weekly_limits(&store, &p, 30).await;
    assert_eq!(
        store.change_limit(&p, Flow::Stake, Span::Week, Some(Cents::euros(60)), NOW).await,
        Ok(ChangeKind::Raise)
    );
    let standing = store.standing(&p, NOW).await.unwrap();
    let week = standing.limits.iter().find(|l| l.flow == Flow::Stake && l.span == Span::Week).unwrap();
    assert_eq!(week.limit_cents, Some(3_000), "a raise changes nothing before it is confirmed");
    assert_eq!((standing.pending[0].amount_cents, standing.pending[0].confirmable_at), (Some(6_000), NOW + 48 * HOUR));
    assert_eq!(
        store.confirm_raise(&p, Flow::Stake, Span::Week, NOW + 48 * HOUR - 60).await,
        Err(StoreError::RaiseNotYet { confirmable_at: NOW + 48 * HOUR }),
        "at 47 h 59 min"
    );
    store.confirm_raise(&p, Flow::Stake, Span::Week, NOW + 48 * HOUR).await.unwrap();
    let standing = store.standing(&p, NOW + 48 * HOUR).await.unwrap();
    assert!(standing.pending.is_empty());
    assert!(
        standing.limits.iter().any(|l| l.flow == Flow::Stake && l.span == Span::Week && l.limit_cents == Some(6_000))
    );
    // Lowering is at once, and a removal waits like a raise.
    assert_eq!(
        store.change_limit(&p, Flow::Stake, Span::Week, Some(Cents::euros(9)), NOW + 49 * HOUR).await,
        Ok(ChangeKind::AtOnce)
    );
    assert_eq!(store.change_limit(&p, Flow::Deposit, Span::Week, None, NOW + 49 * HOUR).await, Ok(ChangeKind::Raise));
    assert_eq!(
        kinds(&store, &p).await,
        ["limit_set", "limit_set", "raise_asked", "raise_confirmed", "limit_lowered", "raise_asked"]
    );
    store.credit(&p, cash(20), NOW + 49 * HOUR).await.unwrap();
    let sold = (0..5).map(|i| store.sell(at(&p, &format!("k{i}"), NOW + 49 * HOUR)));
    let sold: Vec<_> = futures_in_order(sold).await;
    assert_eq!(sold.iter().filter(|s| s.is_ok()).count(), 3, "9 € a week once lowered: {sold:?}");
}

/// Awaits each in turn.
async fn futures_in_order<T>(futures: impl Iterator<Item = impl std::future::Future<Output = T>>) -> Vec<T> {
    let mut out = Vec::new();
    for f in futures {
        out.push(f.await);
    }
    out
}

pub async fn an_unconfirmed_raise_lapses(store: Arc<Store>) {
    let p = player(&store, "p-lapse", 0).await;
    weekly_limits(&store, &p, 30).await;
    store.change_limit(&p, Flow::Deposit, Span::Week, Some(Cents::euros(100)), NOW).await.unwrap();
    let lapses_at = NOW + 48 * HOUR + 7 * DAY;
    assert_eq!(store.lapse_raises(lapses_at - 1).await, Ok(0));
    assert_eq!(
        store.confirm_raise(&p, Flow::Deposit, Span::Week, lapses_at).await,
        Err(StoreError::RaiseLapsed { lapsed_at: lapses_at })
    );
    assert!(store.standing(&p, lapses_at).await.unwrap().pending.is_empty(), "shown lapsed before the server's round");
    assert_eq!(store.lapse_raises(lapses_at + 30).await, Ok(1));
    assert_eq!(
        store.confirm_raise(&p, Flow::Deposit, Span::Week, lapses_at + 60).await,
        Err(StoreError::NoRaisePending)
    );
    let events = store.responsible_events(&p, 0).await.unwrap();
    let lapsed = events.last().unwrap();
    assert_eq!((lapsed.kind.as_str(), lapsed.at, lapsed.actor.as_str()), ("raise_lapsed", lapses_at, "server"));
    let week = store
        .standing(&p, lapses_at + 60)
        .await
        .unwrap()
        .limits
        .into_iter()
        .find(|l| l.flow == Flow::Deposit && l.span == Span::Week)
        .unwrap();
    assert_eq!(week.limit_cents, Some(3_000), "the limit stays as it was");
}

/// Two confirmations of one raise at once: the raise applies once, and the other hears that none is
/// pending (on both engines: the one `DELETE … RETURNING` that takes it away decides).
pub async fn a_raise_confirmed_twice_at_once_applies_once(store: Arc<Store>) {
    for round in 0..10 {
        let p = player(&store, &format!("p-twice-{round}"), 0).await;
        weekly_limits(&store, &p, 30).await;
        assert_eq!(
            store.change_limit(&p, Flow::Stake, Span::Week, Some(Cents::euros(60)), NOW).await,
            Ok(ChangeKind::Raise)
        );
        let confirm = || {
            let (store, p) = (store.clone(), p.clone());
            tokio::spawn(async move { store.confirm_raise(&p, Flow::Stake, Span::Week, NOW + 48 * HOUR).await })
        };
        let (a, b) = (confirm(), confirm());
        let mut outcomes = vec![a.await.unwrap(), b.await.unwrap()];
        outcomes.sort_by_key(|o| o.is_err());
        assert_eq!(outcomes, [Ok(()), Err(StoreError::NoRaisePending)], "round {round}");
        assert_eq!(kinds(&store, &p).await.iter().filter(|k| *k == "raise_confirmed").count(), 1);
    }
}

/// Two servers' rounds lapsing raises at once: each lapsed raise is taken away, and counted, once.
pub async fn lapses_racing_take_each_raise_once(store: Arc<Store>) {
    let raises = 12;
    for n in 0..raises {
        let p = player(&store, &format!("p-lapsing-{n}"), 0).await;
        weekly_limits(&store, &p, 30).await;
        store.change_limit(&p, Flow::Deposit, Span::Week, Some(Cents::euros(100)), NOW).await.unwrap();
    }
    let later = NOW + 48 * HOUR + 7 * DAY + 60;
    let rounds: Vec<_> = (0..4)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { store.lapse_raises(later).await })
        })
        .collect();
    let mut lapsed = 0;
    for round in rounds {
        lapsed += round.await.unwrap().unwrap();
    }
    assert_eq!(lapsed, raises, "each raise counted by the round that took it away");
    assert_eq!(store.lapse_raises(later).await, Ok(0));
}

pub async fn a_rolling_window_frees_a_stake_exactly_one_window_later(store: Arc<Store>) {
    block(&store, 1, 1, mixed_lots(100)).await;
    let p = player(&store, "p-window", 0).await;
    weekly_limits(&store, &p, 1_000).await;
    store.change_limit(&p, Flow::Stake, Span::Day, Some(Cents::euros(6)), NOW).await.unwrap();
    store.credit(&p, cash(100), NOW).await.unwrap();
    store.sell(at(&p, "a", NOW + 10 * HOUR)).await.unwrap();
    store.sell(at(&p, "b", NOW + 11 * HOUR)).await.unwrap();
    let refused = store.sell(at(&p, "c", NOW + 12 * HOUR)).await;
    let limit = LimitRefusal {
        flow: Flow::Stake,
        span: Span::Day,
        limit_cents: 600,
        left_cents: 0,
        frees_at: Some(NOW + 34 * HOUR),
    };
    assert_eq!(refused.map(|s| s.ticket.id), Err(StoreError::LimitReached(limit)));
    assert!(
        matches!(store.sell(at(&p, "c", NOW + 34 * HOUR - 1)).await, Err(StoreError::LimitReached(_))),
        "one second before"
    );
    store
        .sell(at(&p, "c", NOW + 34 * HOUR))
        .await
        .expect("the stake of 10:00 leaves the window at 10:00 the next day, to the second");
    assert!(matches!(store.sell(at(&p, "d", NOW + 35 * HOUR - 1)).await, Err(StoreError::LimitReached(_))));
    store.sell(at(&p, "d", NOW + 35 * HOUR)).await.unwrap();
    let day = store
        .standing(&p, NOW + 35 * HOUR)
        .await
        .unwrap()
        .limits
        .into_iter()
        .find(|l| l.flow == Flow::Stake && l.span == Span::Day)
        .unwrap();
    assert_eq!((day.used_cents, day.left_cents, day.next_frees_at), (600, Some(0), Some(NOW + 58 * HOUR)));
    ledger_passes(&store).await;
}

pub async fn a_hundred_purchases_at_once_against_a_ten_euro_limit_sell_three(store: Arc<Store>) {
    block(&store, 1, 1, mixed_lots(400)).await;
    let p = player(&store, "p-limit", 0).await;
    weekly_limits(&store, &p, 10).await;
    store.credit(&p, cash(10), NOW).await.unwrap();
    store.credit(&p, cash(20), NOW).await.expect_err("10 € a week of deposits");
    let mut racing = JoinSet::new();
    for i in 0..100 {
        let (store, p) = (store.clone(), p.clone());
        racing.spawn(async move { store.sell(at(&p, &format!("k{i}"), NOW + 60)).await });
    }
    let results = racing.join_all().await;
    let sold = results.iter().filter(|r| r.is_ok()).count();
    let limited = results
        .iter()
        .filter(|r| matches!(r, Err(StoreError::LimitReached(l)) if l.left_cents == 100 && l.span == Span::Week))
        .count();
    assert_eq!((sold, limited), (3, 97), "{results:?}");
    assert_eq!(balance(&store, &p).await, Cents::euros(1));
    ledger_passes(&store).await;
}

pub async fn credits_racing_against_a_deposit_limit(store: Arc<Store>) {
    let p = player(&store, "p-deposits", 0).await;
    weekly_limits(&store, &p, 50).await;
    let mut racing = JoinSet::new();
    for _ in 0..20 {
        let (store, p) = (store.clone(), p.clone());
        racing.spawn(async move { store.credit(&p, cash(10), NOW).await });
    }
    let results = racing.join_all().await;
    let credited = results.iter().filter(|r| r.is_ok()).count();
    let limited = results
        .iter()
        .filter(|r| {
            matches!(r, Err(StoreError::LimitReached(l)) if l.flow == Flow::Deposit &&
            l.frees_at == Some(NOW + 7 * DAY))
        })
        .count();
    assert_eq!((credited, limited), (5, 15), "{results:?}");
    assert_eq!(balance(&store, &p).await, Cents::euros(50));
    ledger_passes(&store).await;
}

pub async fn an_exclusion_ends_sessions_refuses_play_and_nothing_lifts_it(store: Arc<Store>) {
    block(&store, 1, 1, mixed_lots(100)).await;
    let p = player(&store, "p-excluded", 0).await;
    weekly_limits(&store, &p, 1_000).await;
    store.credit(&p, cash(30), NOW).await.unwrap();
    let bought = store.sell(at(&p, "before", NOW)).await.unwrap().ticket;
    store.create_session("s1", &p, NOW, NOW + DAY).await.unwrap();
    let until = NOW + 365 * DAY;
    store.pause(&p, Pause { kind: PauseKind::Exclusion, until }, Actor::Player, NOW + 60).await.unwrap();
    assert_eq!(store.session("s1", NOW + 61).await.unwrap(), None, "every session ends at once");
    let paused = StoreError::Paused(Pause { kind: PauseKind::Exclusion, until });
    assert_eq!(store.sell(at(&p, "after", NOW + 120)).await.map(|s| s.ticket.id), Err(paused.clone()));
    assert_eq!(store.credit(&p, cash(5), NOW + 120).await, Err(paused.clone()));
    // Nothing shortens it: a shorter break, a shorter exclusion, limits changed.
    for shorter in
        [Pause { kind: PauseKind::Break, until: NOW + DAY }, Pause { kind: PauseKind::Exclusion, until: until - 1 }]
    {
        for actor in [Actor::Player, Actor::Operator] {
            assert!(matches!(store.pause(&p, shorter, actor, NOW + 180).await, Err(StoreError::AlreadyPaused(_))));
        }
    }
    store.change_limit(&p, Flow::Stake, Span::Week, Some(Cents::euros(10)), NOW + 200).await.unwrap();
    assert_eq!(store.sell(at(&p, "after", until - 1)).await.map(|s| s.ticket.id), Err(paused));
    // A ticket bought before is finished, its win paid.
    let completed = store.complete(&p, &bought.id, NOW + 300).await.unwrap();
    assert_eq!(completed.balance, Cents::euros(27) + bought.lot);
    store.sell(at(&p, "after", until)).await.expect("it ends at its second");
    ledger_passes(&store).await;
}

pub async fn a_due_reality_check_is_recorded_and_acknowledged(store: Arc<Store>) {
    let p = player(&store, "p-reality", 0).await;
    store.create_session("s", &p, NOW, NOW + DAY).await.unwrap();
    assert_eq!(
        store.session("s", NOW).await.unwrap().unwrap().reality_due_at,
        NOW + HOUR,
        "every 60 minutes by default"
    );
    store.reality_check_shown("s", NOW + HOUR - 1).await.unwrap();
    assert!(kinds(&store, &p).await.is_empty(), "not due yet: nothing shown");
    store.reality_check_shown("s", NOW + HOUR).await.unwrap();
    store.reality_check_shown("s", NOW + HOUR + 5).await.unwrap();
    store.acknowledge_reality_check("s", NOW + HOUR + 30).await.unwrap();
    assert_eq!(store.session("s", NOW + HOUR + 30).await.unwrap().unwrap().reality_due_at, NOW + 2 * HOUR + 30);
    store.set_reality_interval(&p, 15, NOW + HOUR + 60).await.unwrap();
    assert_eq!(
        store.session("s", NOW + HOUR + 60).await.unwrap().unwrap().reality_due_at,
        NOW + HOUR + 60 + 15 * 60,
        "a shorter interval at once"
    );
    assert_eq!(
        kinds(&store, &p).await,
        ["reality_check_shown", "reality_check_acknowledged", "reality_interval_set"],
        "shown once per due time"
    );
}

pub async fn a_ban_file_import_closes_an_account_and_pays_its_balance_out(store: Arc<Store>) {
    block(&store, 1, 1, mixed_lots(100)).await;
    let identity =
        Identity { first_name: "Anne".into(), last_name: "Interdite".into(), birth_date: "1980-05-06".into() };
    let new = NewPlayer {
        id: "p-banned".into(),
        name: None,
        password_hash: None,
        guest: false,
        identity: Some(identity.clone()),
        opening_credit: None,
    };
    let p = store.create_player(new.clone(), NOW).await.unwrap().id;
    let other = player(&store, "p-other", 0).await;
    weekly_limits(&store, &p, 1_000).await;
    store.credit(&p, cash(40), NOW).await.unwrap();
    store.sell(at(&p, "k", NOW)).await.unwrap();
    store.create_session("s", &p, NOW, NOW + DAY).await.unwrap();
    let listed = Identity { first_name: "ANNE".into(), last_name: "interdite".into(), birth_date: "1980-05-06".into() };
    let closed = store.import_bans(vec![listed.key(), "someone|else|1970-01-01".into()], NOW + 60).await.unwrap();
    assert_eq!(closed, vec![(p.clone(), Cents::euros(37))]);
    assert_eq!(balance(&store, &p).await, Cents::ZERO);
    assert_eq!(store.session("s", NOW + 61).await.unwrap(), None);
    assert!(matches!(
        store.sell(at(&p, "k2", NOW + 120)).await,
        Err(StoreError::Paused(Pause { kind: PauseKind::Closed, .. }))
    ));
    assert_eq!(store.import_bans(vec![listed.key()], NOW + 120).await.unwrap(), vec![], "closed once");
    let again = NewPlayer { id: "p-banned-again".into(), ..new };
    assert_eq!(store.create_player(again, NOW + 180).await, Err(StoreError::Banned));
    assert!(kinds(&store, &p).await.ends_with(&["closed".to_owned(), "ban_file_match".to_owned()]));
    assert!(kinds(&store, &other).await.is_empty());
    let report = ledger_passes(&store).await;
    assert_eq!(report.blocks[0].sold, 1);
}
