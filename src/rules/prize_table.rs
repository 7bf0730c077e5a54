//! The prize table of every block (art. 3) and the multi-surface rule.

use crate::money::Cents;

/// Tickets in one block (art. 2).
pub const BLOCK_SIZE: u32 = 1_500_000;

/// Price of one ticket (art. 2).
pub const TICKET_PRICE: Cents = Cents::euros(3);

/// One line of the prize table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tier {
    pub count: u32,
    pub lot: Cents,
    /// Art. 3: this lot may only be won by adding wins of at least two different surfaces.
    pub multi_surface: bool,
}

const fn tier(count: u32, euros: u64, multi_surface: bool) -> Tier {
    Tier { count, lot: Cents::euros(euros), multi_surface }
}

/// Art. 3, largest lot first, exactly as the regulation prints it.
pub const PRIZE_TABLE: [Tier; 9] = [
    tier(2, 40_000, true),
    tier(2, 10_000, true),
    tier(25, 1_000, false),
    tier(500, 200, true),
    tier(10_000, 50, true),
    tier(30_000, 30, true),
    tier(40_000, 10, true),
    tier(165_000, 5, false),
    tier(100_000, 3, false),
];

/// Winning tickets in a block: 345 529.
pub const WINNERS_PER_BLOCK: u32 = {
    let mut sum = 0;
    let mut i = 0;
    while i < PRIZE_TABLE.len() {
        sum += PRIZE_TABLE[i].count;
        i += 1;
    }
    sum
};

/// Tickets of a block that win nothing: 1 154 471.
pub const LOSERS_PER_BLOCK: u32 = BLOCK_SIZE - WINNERS_PER_BLOCK;

/// The tier a lot belongs to, `None` for a lot the table does not have (0 € included).
pub fn tier_of(lot: Cents) -> Option<&'static Tier> {
    PRIZE_TABLE.iter().find(|t| t.lot == lot)
}

/// Total paid out by a block: 3 150 000 €.
pub fn total_payout() -> Cents {
    PRIZE_TABLE.iter().map(|t| Cents(t.lot.0 * u64::from(t.count))).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_the_regulations() {
        assert_eq!(WINNERS_PER_BLOCK, 345_529);
        assert_eq!(LOSERS_PER_BLOCK, 1_154_471);
        assert_eq!(total_payout(), Cents::euros(3_150_000));
        // 70 % of sales, odds of a win 1 in 4.34.
        let sales = TICKET_PRICE.0 * u64::from(BLOCK_SIZE);
        assert_eq!(total_payout().0 * 100 / sales, 70);
        assert_eq!((f64::from(BLOCK_SIZE) / f64::from(WINNERS_PER_BLOCK) * 100.0).round(), 434.0);
        let multi: Vec<u64> = PRIZE_TABLE.iter().filter(|t| t.multi_surface).map(|t| t.lot.0 / 100).collect();
        assert_eq!(multi, [40_000, 10_000, 200, 50, 30, 10]);
    }
}
