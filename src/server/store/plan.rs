//! What a reveal or a completion changes on a ticket, decided once for both backends; each backend
//! then writes it with its compare-and-set (`UPDATE tickets … WHERE revealed = <as read>`).

use super::{StoreError, TicketRecord};
use crate::play::{Mode, apply_reveal};
use crate::rules::Zone;

/// The ticket with `zones` uncovered, enforcing « Jouez » (`play::apply_reveal`); `None` if nothing new
/// is uncovered. A finished ticket is [`StoreError::Finished`].
///
/// Each new zone is stamped `now`, less its `seconds_ago` (same order as `zones`, missing ones 0): a
/// zone uncovered while the network was down is stamped when the player uncovered it, as the browser
/// counted, never before the sale or the zone uncovered before it, never after `now`.
pub fn reveal(
    ticket: &TicketRecord,
    zones: &[usize],
    seconds_ago: &[u32],
    now: i64,
) -> Result<Option<TicketRecord>, StoreError> {
    if ticket.finished_at.is_some() {
        return Err(StoreError::Finished);
    }
    let mut revealed = ticket.revealed.clone();
    apply_reveal(ticket.mode, &mut revealed, zones)?;
    if revealed == ticket.revealed {
        return Ok(None);
    }
    let mut after = ticket.uncovered(revealed, now);
    // A ticket sold before the server kept times has none to give its new zones either.
    if after.revealed_at.len() == after.revealed.len() {
        let mut earliest = ticket.revealed_at.last().map_or(ticket.sold_at, |&last| last.max(ticket.sold_at));
        for i in ticket.revealed.len()..after.revealed.len() {
            let ago = zones
                .iter()
                .position(|&z| z == after.revealed[i])
                .and_then(|j| seconds_ago.get(j))
                .map_or(0, |&s| i64::from(s));
            earliest = (now - ago).clamp(earliest.min(now), now);
            after.revealed_at[i] = earliest;
        }
    }
    Ok(Some(after))
}

/// The ticket with every zone uncovered, ready to be marked finished at `now`. « Jouez » needs every
/// zone uncovered already ([`StoreError::ZonesLeft`]); « Auto » uncovers what remains.
pub fn completion(ticket: &TicketRecord, now: i64) -> Result<TicketRecord, StoreError> {
    if ticket.finished_at.is_some() {
        return Err(StoreError::Finished);
    }
    let missing: Vec<usize> = (0..Zone::ALL.len()).filter(|z| !ticket.revealed.contains(z)).collect();
    if ticket.mode == Mode::Jouez && !missing.is_empty() {
        return Err(StoreError::ZonesLeft(missing));
    }
    let all = ticket.revealed.iter().copied().chain(missing).collect();
    Ok(ticket.uncovered(all, now))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::money::Cents;
    use crate::payload::Serial;

    fn ticket(mode: Mode, revealed: Vec<usize>) -> TicketRecord {
        TicketRecord {
            id: "t".into(),
            owner: "p".into(),
            serial: Serial { emission: 1, block: 1, index: 0 },
            mode,
            lot: Cents::ZERO,
            revealed_at: vec![10; revealed.len()],
            revealed,
            sold_at: 0,
            credited_at: None,
            finished_at: None,
        }
    }

    #[test]
    fn a_reveal_adds_new_zones_with_their_time_and_nothing_twice() {
        let t = ticket(Mode::Auto, vec![3]);
        let after = reveal(&t, &[3, 5], &[], 20).unwrap().unwrap();
        assert_eq!((after.revealed, after.revealed_at), (vec![3, 5], vec![10, 20]));
        assert_eq!(reveal(&t, &[3], &[], 20).unwrap(), None, "nothing new");
        let finished = TicketRecord { finished_at: Some(1), ..t };
        assert_eq!(reveal(&finished, &[5], &[], 20), Err(StoreError::Finished));
    }

    #[test]
    fn zones_sent_late_are_stamped_when_uncovered_never_before_the_sale_or_the_zone_before() {
        let t = ticket(Mode::Auto, vec![3]); // uncovered at 10, sold at 0
        let late = reveal(&t, &[3, 5, 7, 9], &[99, 60, 40, 45], 100).unwrap().unwrap();
        assert_eq!(late.revealed_at, [10, 40, 60, 60], "zone 3 kept its time; 9 not before 7");
        let early = reveal(&t, &[4], &[500], 100).unwrap().unwrap();
        assert_eq!(early.revealed_at, [10, 10], "not before the zone before it");
        let fresh = ticket(Mode::Auto, vec![]);
        assert_eq!(reveal(&fresh, &[4], &[500], 100).unwrap().unwrap().revealed_at, [0], "not before the sale");
        assert_eq!(
            reveal(&fresh, &[4, 6], &[30], 100).unwrap().unwrap().revealed_at,
            [70, 100],
            "a zone with no age: now"
        );
    }

    #[test]
    fn a_completion_uncovers_the_rest_for_auto_and_needs_everything_for_jouez() {
        let auto = completion(&ticket(Mode::Auto, vec![2]), 30).unwrap();
        assert_eq!(auto.revealed.len(), 12);
        assert_eq!((auto.revealed[0], auto.revealed_at[0], auto.revealed_at[11]), (2, 10, 30));
        assert_eq!(completion(&ticket(Mode::Jouez, vec![0]), 30), Err(StoreError::ZonesLeft((1..12).collect())));
        let all = completion(&ticket(Mode::Jouez, (0..12).collect()), 30).unwrap();
        assert_eq!(all.revealed, (0..12).collect::<Vec<_>>());
    }
}
