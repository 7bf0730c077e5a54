//! The back office's store, on both backends: staff, suspensions, withdrawals, adjustments under four
//! eyes, blocks withdrawn from sale, and the audit log that records every one of them and that nobody
//! can rewrite.

use super::*;
use vegas::server::store::back_office::{AdjustmentState, NewStaff, Role, WithdrawalState};

const THRESHOLD: Cents = Cents(100_000);

/// A real-money player with `euros` deposited (its 7-day limits set first, as real money requires).
async fn real_player(store: &Store, id: &str, euros: u64) -> String {
    let new = NewPlayer {
        id: id.into(),
        name: None,
        password_hash: None,
        guest: false,
        identity: None,
        opening_credit: None,
    };
    store.create_player(new, NOW - 10).await.unwrap();
    weekly_limits(store, id, 5_000).await;
    if euros > 0 {
        store
            .credit(
                id,
                Credit { funding: Funding::Cash, amount: Cents::euros(euros), reason: "bank transfer".into() },
                NOW - 1,
            )
            .await
            .unwrap();
    }
    id.to_owned()
}

fn staff(name: &str, role: Role) -> NewStaff {
    NewStaff {
        id: format!("s-{name}"),
        name: name.into(),
        role,
        password_hash: "hash".into(),
        totp_secret: "SECRET".into(),
    }
}

async fn actions(store: &Store) -> Vec<String> {
    store.audit_log(0, 1_000).await.unwrap().into_iter().map(|e| e.action).collect()
}

pub async fn a_suspended_player_can_neither_buy_nor_deposit_until_restored(store: Arc<Store>) {
    let office = &*store;
    block(&store, 1, 1, mixed_lots(100)).await;
    let p = real_player(&store, "p-suspended", 20).await;
    office.suspend(&p, true, "staff:sam", "fraude présumée", NOW).await.unwrap();
    assert_eq!(
        office.suspend(&p, true, "staff:sam", "encore", NOW).await,
        Err(StoreError::AlreadyDone(Already::Suspended))
    );
    let buy = |key: &str| SaleRequest {
        now: NOW + 1,
        limits_required: true,
        ..sale(&p, key, Mode::Auto, &format!("t-{key}"))
    };
    assert_eq!(store.sell(buy("k1")).await.map(|s| s.ticket.id), Err(StoreError::Suspended));
    let deposit = Credit { funding: Funding::Cash, amount: Cents::euros(5), reason: "bank transfer".into() };
    assert_eq!(store.credit(&p, deposit.clone(), NOW + 1).await, Err(StoreError::Suspended));
    assert_eq!(balance(&store, &p).await, Cents::euros(20), "nothing taken");
    office.suspend(&p, false, "staff:sam", "levée après vérification", NOW + 2).await.unwrap();
    assert!(store.sell(buy("k2")).await.is_ok());
    assert_eq!(office.suspend("nobody", true, "staff:sam", "?", NOW).await, Err(StoreError::NotFound("player")));
    assert_eq!(actions(&store).await, ["player_suspended", "player_restored"]);
    ledger_passes(&store).await;
}

pub async fn a_withdrawal_waits_out_of_reach_then_is_paid_or_refused(store: Arc<Store>) {
    let office = &*store;
    block(&store, 1, 1, mixed_lots(100)).await;
    let p = real_player(&store, "p-withdraw", 10).await;
    let asked = office.ask_withdrawal(&p, Cents::euros(8), NOW).await.unwrap();
    assert_eq!((asked.state, asked.amount), (WithdrawalState::Pending, Cents::euros(8)));
    assert_eq!(balance(&store, &p).await, Cents::euros(2), "the amount leaves the wallet at once");
    assert_eq!(
        office.ask_withdrawal(&p, Cents::euros(3), NOW).await.map(|w| w.id),
        Err(StoreError::Overdraft { balance: Cents::euros(2), amount: Cents::euros(3) })
    );
    let sold = store.sell(SaleRequest { now: NOW, limits_required: true, ..sale(&p, "k", Mode::Auto, "t-k") }).await;
    assert!(matches!(sold, Err(StoreError::InsufficientFunds { .. })), "what is withdrawn cannot be staked: {sold:?}");
    ledger_passes(&store).await;

    let second = office.ask_withdrawal(&p, Cents::euros(2), NOW + 1).await.unwrap();
    assert_eq!(office.withdrawals(Some(WithdrawalState::Pending), None, 10).await.unwrap().len(), 2);
    let paid = office.decide_withdrawal(asked.id, true, "staff:fin", "virement émis", NOW + 2).await.unwrap();
    assert_eq!(paid.amount, Cents::euros(8));
    assert_eq!(
        office.decide_withdrawal(asked.id, false, "staff:fin", "trop tard", NOW + 3).await.map(|w| w.id),
        Err(StoreError::AlreadyDone(Already::Decided))
    );
    office.decide_withdrawal(second.id, false, "staff:fin", "RIB invalide", NOW + 3).await.unwrap();
    assert_eq!(balance(&store, &p).await, Cents::euros(2), "a refused withdrawal comes back to the wallet");
    let mine = office.withdrawals(None, Some(&p), 10).await.unwrap();
    assert_eq!(
        mine.iter().map(|w| (w.state, w.decided_by.clone())).collect::<Vec<_>>(),
        [(WithdrawalState::Paid, Some("staff:fin".into())), (WithdrawalState::Refused, Some("staff:fin".into()))]
    );
    assert_eq!(
        office.decide_withdrawal(999, true, "staff:fin", "?", NOW).await.map(|w| w.id),
        Err(StoreError::NotFound("withdrawal"))
    );
    assert_eq!(actions(&store).await, ["withdrawal_paid", "withdrawal_refused"]);
    ledger_passes(&store).await;
}

/// Finance members racing to pay the same withdrawals: each is paid once.
pub async fn withdrawals_decided_at_once_are_paid_once(store: Arc<Store>) {
    let p = real_player(&store, "p-race", 50).await;
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(store.ask_withdrawal(&p, Cents::euros(10), NOW).await.unwrap().id);
    }
    let mut racing = JoinSet::new();
    for id in ids.iter().copied() {
        for member in 0..4 {
            let store = store.clone();
            racing.spawn(async move {
                store.decide_withdrawal(id, member % 2 == 0, &format!("staff:f{member}"), "décision", NOW + 1).await
            });
        }
    }
    let outcomes = racing.join_all().await;
    assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 5, "{outcomes:?}");
    assert!(outcomes.iter().filter(|o| o.is_err()).all(|o| *o == Err(StoreError::AlreadyDone(Already::Decided))));
    let refused: u64 =
        store.withdrawals(Some(WithdrawalState::Refused), None, 10).await.unwrap().iter().map(|w| w.amount.0).sum();
    assert_eq!(balance(&store, &p).await, Cents(refused));
    assert_eq!(
        store.verify_audit_log().await.unwrap(),
        Ok(5),
        "five rows, one per decision, chained whatever the order"
    );
    ledger_passes(&store).await;
}

pub async fn an_adjustment_above_the_threshold_needs_a_second_member(store: Arc<Store>) {
    let office = &*store;
    let p = real_player(&store, "p-adjust", 0).await;
    let small = office.adjust(&p, 5_000, "geste commercial", "staff:ann", THRESHOLD, NOW).await.unwrap();
    assert_eq!(small.state, AdjustmentState::Applied);
    assert_eq!(balance(&store, &p).await, Cents::euros(50));
    let large =
        office.adjust(&p, 150_000, "erreur de paiement corrigée", "staff:ann", THRESHOLD, NOW + 1).await.unwrap();
    assert_eq!(large.state, AdjustmentState::Pending);
    assert_eq!(balance(&store, &p).await, Cents::euros(50), "nothing moves before a second member approves");
    assert_eq!(
        office.decide_adjustment(large.id, true, "staff:ann", NOW + 2).await.map(|a| a.id),
        Err(StoreError::FourEyes)
    );
    let approved = office.decide_adjustment(large.id, true, "staff:bob", NOW + 3).await.unwrap();
    assert_eq!((approved.state, approved.decided_by.as_deref()), (AdjustmentState::Applied, Some("staff:bob")));
    assert_eq!(balance(&store, &p).await, Cents::euros(1_550));
    assert_eq!(
        office.decide_adjustment(large.id, true, "staff:cat", NOW + 4).await.map(|a| a.id),
        Err(StoreError::AlreadyDone(Already::Decided))
    );

    let debit = office.adjust(&p, -2_000, "frais bancaires", "staff:ann", THRESHOLD, NOW + 5).await.unwrap();
    assert_eq!(debit.state, AdjustmentState::Applied);
    assert_eq!(balance(&store, &p).await, Cents::euros(1_530));
    let too_much = office.adjust(&p, -500_000, "solde", "staff:ann", THRESHOLD, NOW + 6).await.unwrap();
    assert_eq!(
        office.decide_adjustment(too_much.id, true, "staff:bob", NOW + 7).await.map(|a| a.id),
        Err(StoreError::Overdraft { balance: Cents::euros(1_530), amount: Cents::euros(5_000) })
    );
    office.decide_adjustment(too_much.id, false, "staff:bob", NOW + 8).await.unwrap();
    assert_eq!(office.adjustments(Some(AdjustmentState::Pending), None, 10).await.unwrap(), []);
    assert_eq!(
        office.adjust(&p, 0, "rien", "staff:ann", THRESHOLD, NOW).await.map(|a| a.id),
        Err(StoreError::Invalid("an adjustment of 0 €".into()))
    );
    let guest = player(&store, "p-guest", 10).await;
    assert!(matches!(
        office.adjust(&guest, 100, "démo", "staff:ann", THRESHOLD, NOW).await,
        Err(StoreError::Invalid(_))
    ));
    assert_eq!(
        actions(&store).await,
        [
            "adjustment_applied",
            "adjustment_asked",
            "adjustment_approved",
            "adjustment_applied",
            "adjustment_asked",
            "adjustment_rejected"
        ]
    );
    ledger_passes(&store).await;
}

pub async fn a_withdrawn_block_sells_no_more_and_sales_go_on_from_the_next(store: Arc<Store>) {
    let office = &*store;
    block(&store, 1, 1, mixed_lots(10)).await;
    block(&store, 1, 2, mixed_lots(10)).await;
    let p = player(&store, "p-blocks", 30).await;
    let first = store.sell(sale(&p, "k1", Mode::Auto, "t-1")).await.unwrap();
    assert_eq!(first.ticket.serial.block, 1);
    office.withdraw_block(1, 1, "staff:adm", "défaut d'impression", NOW).await.unwrap();
    assert_eq!(
        office.withdraw_block(1, 1, "staff:adm", "encore", NOW).await,
        Err(StoreError::AlreadyDone(Already::Withdrawn))
    );
    assert_eq!(office.withdraw_block(9, 9, "staff:adm", "?", NOW).await, Err(StoreError::NotFound("block")));
    let next = store.sell(sale(&p, "k2", Mode::Auto, "t-2")).await.unwrap();
    assert_eq!((next.ticket.serial.block, next.ticket.serial.index), (2, 0), "sales go on from the next block");
    let b = store.block(1, 1).await.unwrap();
    assert!(b.ended() && b.withdrawn_at == Some(NOW) && b.closed_at.is_none() && b.sold == 1);
    office.withdraw_block(1, 2, "staff:adm", "fin de l'émission", NOW).await.unwrap();
    assert_eq!(store.sell(sale(&p, "k3", Mode::Auto, "t-3")).await.map(|s| s.ticket.id), Err(StoreError::SoldOut));
    // A ticket bought before is still played and paid.
    store.complete(&p, "t-1", NOW + 1).await.unwrap();
    ledger_passes(&store).await;
}

pub async fn staff_are_unique_and_their_sessions_expire(store: Arc<Store>) {
    let office = &*store;
    let ann = office.add_staff(staff("ann", Role::Finance), "cli:root", NOW).await.unwrap();
    assert_eq!(office.add_staff(staff("ann", Role::Support), "cli:root", NOW).await, Err(StoreError::NameTaken));
    assert_eq!(office.staff_named("ann").await.unwrap(), Some(ann.clone()));
    assert_eq!(office.staff_named("nobody").await.unwrap(), None);
    office.create_staff_session("token-hash", &ann.id, NOW, NOW + 60).await.unwrap();
    assert_eq!(office.staff_session("token-hash", NOW + 59).await.unwrap().map(|s| s.name), Some("ann".into()));
    assert_eq!(office.staff_session("token-hash", NOW + 60).await.unwrap(), None, "expired");
    office.set_role("ann", Role::Auditor, "staff:adm", "changement de poste", NOW + 1).await.unwrap();
    assert_eq!(
        office.staff_session("token-hash", NOW + 2).await.unwrap().map(|s| s.role),
        Some(Role::Auditor),
        "a role change holds at once"
    );
    office.delete_staff_session("token-hash").await.unwrap();
    assert_eq!(office.staff_session("token-hash", NOW + 2).await.unwrap(), None);
    let log = office.audit_log(0, 10).await.unwrap();
    assert_eq!(
        log.iter().map(|e| (e.actor.as_str(), e.action.as_str(), e.target.as_str())).collect::<Vec<_>>(),
        [("cli:root", "staff_added", "staff:ann"), ("staff:adm", "staff_role_changed", "staff:ann")]
    );
    assert_eq!(log[1].before.as_deref(), Some(r#"{"role":"finance"}"#));
    assert_eq!(log[1].reason.as_deref(), Some("changement de poste"));
}

/// The log verifies; the database refuses to change or delete a row; a row changed with its trigger
/// dropped (as someone with the database's keys could) is named by `verify`.
pub async fn the_audit_log_is_append_only_and_a_rewritten_row_is_found(backend: &Backend) {
    let store = &*backend.store;
    let office = store;
    for name in ["ann", "bob", "cat", "dan"] {
        office.add_staff(staff(name, Role::Support), "cli:root", NOW).await.unwrap();
    }
    assert_eq!(office.verify_audit_log().await.unwrap(), Ok(4));
    for statement in ["UPDATE audit_log SET actor = 'cli:mallory' WHERE seq = 2", "DELETE FROM audit_log WHERE seq = 4"]
    {
        assert!(backend.try_tamper(statement).await.is_err(), "{statement} was let through");
    }
    let (drop, restore) = match backend.books {
        Books::Sqlite(_) => ("DROP TRIGGER audit_log_append_only_update", ""),
        Books::Postgres(_) => (
            "ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only",
            "; ALTER TABLE audit_log ENABLE TRIGGER audit_log_append_only",
        ),
    };
    backend.tamper(&format!("{drop}; UPDATE audit_log SET actor = 'cli:mallory' WHERE seq = 3{restore}")).await;
    let broken = office.verify_audit_log().await.unwrap().unwrap_err();
    assert_eq!(broken.seq, 3, "{broken}");
}

pub async fn staff_close_an_account_for_good_and_pay_its_balance_out(store: Arc<Store>) {
    let office = &*store;
    block(&store, 1, 1, mixed_lots(100)).await;
    let p = real_player(&store, "p-close", 37).await;
    let pending = office.ask_withdrawal(&p, Cents::euros(7), NOW).await.unwrap();
    assert_eq!(office.close_account(&p, "staff:fin", "demande du joueur", NOW + 1).await, Ok(Cents::euros(30)));
    assert_eq!(balance(&store, &p).await, Cents::ZERO);
    assert_eq!(
        office.close_account(&p, "staff:fin", "encore", NOW + 2).await,
        Err(StoreError::AlreadyDone(Already::Closed))
    );
    let sold =
        store.sell(SaleRequest { now: NOW + 3, limits_required: true, ..sale(&p, "k", Mode::Auto, "t-k") }).await;
    assert!(
        matches!(
            sold,
            Err(StoreError::Paused(vegas::server::store::responsible::Pause {
                kind: vegas::server::store::responsible::PauseKind::Closed,
                ..
            }))
        ),
        "{sold:?}"
    );
    assert!(store.standing(&p, NOW + 3).await.unwrap().paused.is_some());
    // A withdrawal asked before is still paid.
    office.decide_withdrawal(pending.id, true, "staff:fin", "virement", NOW + 4).await.unwrap();
    assert_eq!(actions(&store).await, ["account_closed", "withdrawal_paid"]);
    assert!(store.responsible_events(&p, 0).await.unwrap().iter().any(|e| e.kind == "closed_by_operator"));
    assert_eq!(office.close_account("nobody", "staff:fin", "?", NOW).await, Err(StoreError::NotFound("player")));
    ledger_passes(&store).await;
}

/// Random activity over five days (a seeded generator: each run the same, each seed another week):
/// every account's daily summary balances, each day opens where the one before closed, the last day
/// closes on the balance, and the blocks' figures are what the sales and wins add up to.
pub async fn a_random_week_keeps_every_daily_summary_balanced_and_the_blocks_equal_to_the_ledger(store: Arc<Store>) {
    use rand::{Rng, SeedableRng};
    const DAY: i64 = 86_400;
    let office = &*store;
    block(&store, 1, 1, mixed_lots(400)).await;
    block(&store, 1, 2, mixed_lots(400)).await;
    let start = NOW - NOW % DAY + DAY;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2026);
    let mut players = Vec::new();
    for i in 0..6 {
        players.push(real_player(&store, &format!("p-week-{i}"), 0).await);
    }
    let (mut sold, mut open, mut pending) = (Vec::new(), Vec::new(), Vec::new());
    // What the week moved, by category, as the test made it: [deposits, withdrawals, adjustments].
    let mut made = [0i64; 3];
    for day in 0..5 {
        let mut times: Vec<i64> = (0..60).map(|_| start + day * DAY + rng.random_range(0..DAY)).collect();
        times.sort_unstable();
        for now in times {
            let p = &players[rng.random_range(0..players.len())];
            match rng.random_range(0..7) {
                0 => {
                    let credit = Credit {
                        funding: Funding::Cash,
                        amount: Cents(rng.random_range(500..5_000)),
                        reason: "virement".into(),
                    };
                    made[0] += credit.amount.0 as i64;
                    office.operator_credit(p, credit, "cli:test", now).await.unwrap();
                }
                1 | 2 => {
                    let id = format!("t-{now}-{p}");
                    let sale = SaleRequest { now, limits_required: true, ..sale(p, &id, Mode::Auto, &id) };
                    if let Ok(s) = store.sell(sale).await {
                        sold.push((s.ticket.serial.block, s.ticket.lot));
                        open.push((p.clone(), s.ticket.id));
                    }
                }
                3 if !open.is_empty() => {
                    let (owner, ticket) = open.swap_remove(rng.random_range(0..open.len()));
                    store.complete(&owner, &ticket, now).await.unwrap();
                }
                4 => {
                    let amount = Cents(rng.random_range(100..3_000));
                    if let Ok(w) = office.ask_withdrawal(p, amount, now).await {
                        made[1] += amount.0 as i64;
                        pending.push((w.id, amount));
                    }
                }
                5 if !pending.is_empty() => {
                    let (id, amount) = pending.swap_remove(rng.random_range(0..pending.len()));
                    let pay = rng.random_bool(0.7);
                    made[1] -= if pay { 0 } else { amount.0 as i64 };
                    office.decide_withdrawal(id, pay, "staff:fin", "décision", now).await.unwrap();
                }
                _ => {
                    let amount = rng.random_range(-1_000..2_000i64);
                    if amount != 0 && office.adjust(p, amount, "correction", "staff:fin", THRESHOLD, now).await.is_ok()
                    {
                        made[2] += amount;
                    }
                }
            }
        }
    }
    let mut last_closing: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
    let mut staked = 0;
    let mut summed = [0i64; 3];
    for day in 0..5 {
        let summary = office.day_summary(start + day * DAY).await.unwrap();
        assert!(!summary.is_empty());
        for row in &summary {
            assert!(row.balanced, "day {day}: {row:?}");
            assert_eq!(
                last_closing.get(&row.player_id).copied().unwrap_or(0),
                row.opening,
                "day {day} opens where the day before closed: {row:?}"
            );
            last_closing.insert(row.player_id.clone(), row.closing);
            staked += row.stakes;
            summed = [summed[0] + row.deposits, summed[1] + row.withdrawals, summed[2] + row.adjustments];
        }
    }
    for p in &players {
        assert_eq!(last_closing[p], balance(&store, p).await.0 as i64, "{p}: the last day closes on the balance");
    }
    assert_eq!(staked, 300 * sold.len() as i64, "the summaries' stakes are the tickets sold");
    assert_eq!(summed, made, "each move in its column: deposits, withdrawals (less those refused), adjustments");
    let report = ledger_passes(&store).await;
    for b in &report.blocks {
        let of_block: Vec<&(u32, Cents)> = sold.iter().filter(|(n, _)| *n == b.block).collect();
        assert_eq!((b.sold, b.stakes_balance), (of_block.len() as u64, 300 * of_block.len() as i64));
        assert_eq!(
            -b.prizes_balance + b.owed,
            of_block.iter().map(|(_, lot)| lot.0 as i64).sum::<i64>(),
            "paid + owed = the lots sold"
        );
    }
    assert!(
        sold.len() > 20 && office.withdrawals(None, None, 1_000).await.unwrap().len() > 5,
        "a week with something in it"
    );
}
