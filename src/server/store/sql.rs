//! SQL text both engines run as it is, shared by several units of work.

use crate::rules::prize_table::TICKET_PRICE;

/// The columns a [`super::TicketRecord`] is read from, in order (see [`super::rows::ticket`]).
pub const TICKET_COLUMNS: &str =
    "id, player_id, emission, block, idx, mode, lot_cents, revealed, sold_at, credited_at, finished_at, revealed_at";

/// A block with its sale counter, as [`super::rows::block`] reads it; a `WHERE` or `ORDER BY` follows.
pub const BLOCK_QUERY: &str = "SELECT b.emission, b.block, s.size, s.sold, b.seed, b.root, b.design_hash, \
    s.closed_at, b.scheme, w.at \
                               FROM blocks b JOIN block_sales s ON s.emission = b.emission AND s.block = b.block \
                               LEFT JOIN block_withdrawals w ON w.emission = b.emission AND w.block = b.block";

/// A stale guest (`p`), created before `$1`: no session left (a guest has no password, so it can
/// never come back), no ticket, and no real money ever moved.
macro_rules! stale_guest {
    () => {
        "p.guest AND p.created_at < $1 \
         AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.player_id = p.id) \
         AND NOT EXISTS (SELECT 1 FROM tickets t WHERE t.player_id = p.id) \
         AND NOT EXISTS (SELECT 1 FROM responsible_events e WHERE e.player_id = p.id) \
         AND NOT EXISTS (SELECT 1 FROM transfers x WHERE x.kind IN ('deposit', 'withdrawal') AND x.debit = 'wallet:' \
         || p.id) \
         AND NOT EXISTS (SELECT 1 FROM transfers x WHERE x.kind IN ('deposit', 'withdrawal') AND x.credit = 'wallet:' \
         || p.id)"
    };
}

/// Up to `$2` stale guests, oldest first.
pub const STALE_GUESTS: &str =
    concat!("SELECT p.id FROM players p WHERE ", stale_guest!(), " ORDER BY p.created_at LIMIT $2");

/// Whether guest `$2` is still stale, read again inside the unit of work that deletes it.
pub const STILL_STALE_GUEST: &str = concat!("SELECT 1 FROM players p WHERE ", stale_guest!(), " AND p.id = $2");

/// The demo money given to wallet `$1`: all a stale guest's wallet can hold.
pub const DEMO_GIVEN: &str =
    "SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) FROM transfers WHERE kind = 'demo' AND credit = $1";

/// When the oldest uncredited ticket was sold, and how many uncredited were sold at or before `$1`.
pub const UNSETTLED: &str = "SELECT (SELECT MIN(sold_at) FROM tickets WHERE credited_at IS NULL), (SELECT COUNT(*) \
    FROM tickets WHERE credited_at IS NULL AND sold_at <= $1)";

/// Due tickets (sold at or before `$1`), oldest first, after the place (`$2` sold at, `$3` id) where
/// the round has got to, up to `$4`: a ticket that failed is passed, not met again first.
/// The index `tickets_due` is in that order: a batch reads its own rows only.
pub const DUE_TICKETS: &str = "SELECT id, sold_at FROM tickets WHERE credited_at IS NULL AND sold_at <= $1 AND \
    (sold_at, id) > ($2, $3) ORDER BY sold_at, id LIMIT $4";

/// Credits minus debits of every account over its transfers, by account id.
pub const TRANSFER_SUMS: &str = "SELECT a.id, a.kind, CAST(COALESCE(c.total, 0) - COALESCE(d.total, 0) AS BIGINT) \
    FROM accounts a \
     LEFT JOIN (SELECT credit AS id, SUM(amount) AS total FROM transfers GROUP BY credit) c ON c.id = a.id \
     LEFT JOIN (SELECT debit AS id, SUM(amount) AS total FROM transfers GROUP BY debit) d ON d.id = a.id ORDER BY a.id";

pub const TRANSFER_COUNT: &str = "SELECT COUNT(*) FROM transfers";

pub const BLOCK_SALES: &str = "SELECT emission, block, sold FROM block_sales ORDER BY emission, block";

/// What the withdrawals still pending add up to.
pub const PENDING_WITHDRAWALS: &str =
    "SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) FROM withdrawals WHERE state = 'pending'";

/// A block's tickets (`$1`, `$2`) with an index from `$3` to before `$4`: index, lot, and whether the lot
/// is still owed.
pub const BLOCK_TICKETS: &str = "SELECT idx, lot_cents, CASE WHEN credited_at IS NULL THEN 1 ELSE 0 END FROM tickets \
    WHERE emission = $1 AND block = $2 AND idx >= $3 AND idx < $4";

/// The ledger check's counts of what is wrong, in the order of [`super::ledger::Counts`]; none takes a
/// parameter.
pub fn ledger_counts() -> [String; 5] {
    let price = TICKET_PRICE.0;
    [
        // Tickets without exactly one stake of the ticket price.
        format!(
            "SELECT COUNT(*) FROM tickets t \
             WHERE (SELECT COUNT(*) FROM transfers s WHERE s.ticket_id = t.id AND s.kind = 'stake' AND s.amount = \
             {price}) <> 1 \
                OR EXISTS (SELECT 1 FROM transfers s WHERE s.ticket_id = t.id AND s.kind = 'stake' AND s.amount <> \
                {price})"
        ),
        // Tickets whose win transfer is missing (credited, lot > 0), unexpected, or of another amount.
        "SELECT COUNT(*) FROM tickets t LEFT JOIN transfers w ON w.ticket_id = t.id AND w.kind = 'win' \
         WHERE (t.credited_at IS NOT NULL AND t.lot_cents > 0) <> (w.id IS NOT NULL) OR w.amount <> t.lot_cents"
            .into(),
        // Stakes not taken from the ticket's owner's wallet into its own block's stakes.
        "SELECT COUNT(*) FROM transfers x JOIN tickets t ON t.id = x.ticket_id WHERE x.kind = 'stake' \
         AND (x.debit <> 'wallet:' || t.player_id OR x.credit <> 'block:' || t.emission || ':' || t.block || ':stakes')"
            .into(),
        // Wins not paid from the ticket's own block's prizes into its owner's wallet.
        "SELECT COUNT(*) FROM transfers x JOIN tickets t ON t.id = x.ticket_id WHERE x.kind = 'win' \
         AND (x.credit <> 'wallet:' || t.player_id OR x.debit <> 'block:' || t.emission || ':' || t.block || ':prizes')"
            .into(),
        // Transfers that name an account or a ticket that does not exist, or accounts their kind never
        // moves money between (a deposit is cash → wallet, a stake wallet → stakes…).
        "SELECT COUNT(*) FROM transfers x \
         LEFT JOIN accounts d ON d.id = x.debit LEFT JOIN accounts c ON c.id = x.credit LEFT JOIN tickets t ON t.id = \
         x.ticket_id \
         WHERE d.id IS NULL OR c.id IS NULL OR (x.ticket_id IS NOT NULL AND t.id IS NULL) \
            OR NOT ((x.kind = 'deposit' AND d.kind = 'cash' AND c.kind = 'wallet') \
                 OR (x.kind = 'withdrawal' AND d.kind = 'wallet' AND c.kind IN ('cash', 'withdrawals')) \
                 OR (x.kind = 'withdrawal_paid' AND d.kind = 'withdrawals' AND c.kind = 'cash') \
                 OR (x.kind = 'withdrawal_refused' AND d.kind = 'withdrawals' AND c.kind = 'wallet') \
                 OR (x.kind = 'adjustment' AND ((d.kind = 'cash' AND c.kind = 'wallet') OR (d.kind = 'wallet' AND \
                 c.kind = 'cash'))) \
                 OR (x.kind = 'demo' AND d.kind = 'demo' AND c.kind = 'wallet') \
                 OR (x.kind = 'stake' AND d.kind = 'wallet' AND c.kind = 'stakes') \
                 OR (x.kind = 'win' AND d.kind = 'prizes' AND c.kind = 'wallet'))"
            .into(),
    ]
}
