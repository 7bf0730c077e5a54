//! QA decks: a demo server started with `--qa-deck FILE` sells first, in the file's order, the tickets
//! it lists, so that a headless test reaches the outcome it needs. Each line of the file is one ticket:
//! a lot in euros (`40000`, `0`), or the name of a pattern of the shipped design
//! (`static/design.toml`, e.g. `40 000 € — full + 3+4 + roulette`); blank lines and `#` comments are
//! skipped.
//!
//! The deck is sold from a block of its own, emission 0, made at start like any block: composed by the
//! real composer from a fresh seed, committed (its root stored before any sale), signed as usual and
//! reconciled by `vegas ledger check`. Its tickets carry `"qa": true` in their claims, and a game
//! connected to a real-money server refuses them. A real-money server refuses to start with a deck.

use super::store::NewBlock;
use super::{AppState, os_random};
use crate::block::{Entries, Entry, Prover, lot_code};
use crate::composer::Design;
use crate::composer::design::DEFAULT_DESIGN_TOML;
use crate::money::Cents;
use std::sync::Arc;

/// The emission QA decks are sold from: below every real one, so a deck sells first.
pub const QA_EMISSION: u32 = 0;

/// Reads a deck against the design its tickets are printed with.
pub fn parse(text: &str, design: &Design) -> Result<Vec<Entry>, String> {
    let mut entries = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let entry = match line.parse::<Cents>() {
            Ok(lot) if lot_code(lot).is_some() => Entry::Lot(lot),
            Ok(lot) => return Err(format!("line {}: {lot} is not a lot of the prize table (nor 0)", number + 1)),
            Err(_) => match design.patterns().iter().position(|p| p.name == line) {
                Some(i) => Entry::Pattern(i),
                None => {
                    return Err(format!(
                        "line {}: « {line} » is neither a lot in euros nor the name of a pattern of the design",
                        number + 1
                    ));
                }
            },
        };
        entries.push(entry);
    }
    if entries.is_empty() {
        return Err("the deck lists no ticket".into());
    }
    Ok(entries)
}

/// Makes the deck's block, stores it with its commitment, and has the printer print its tickets.
pub async fn install(state: &AppState, text: &str) -> Result<(), String> {
    let design = Arc::new(Design::from_toml(DEFAULT_DESIGN_TOML).map_err(|e| e.to_string())?);
    let entries = Arc::new(parse(text, &design)?);
    let blocks = state.store.blocks().await.map_err(|e| e.to_string())?;
    let earlier = blocks.iter().filter(|b| b.emission == QA_EMISSION);
    if let Some(unsold) = earlier.clone().find(|b| b.sold < b.size) {
        return Err(format!(
            "this data directory still holds an unsold QA deck (E{}-B{}, {} of {} sold): start a QA server on a fresh \
                data directory",
            unsold.emission, unsold.block, unsold.sold, unsold.size
        ));
    }
    let number = earlier.map(|b| b.block).max().unwrap_or(0) + 1;
    let seed = os_random::<32>();
    let (making, deck) = (design.clone(), Entries::Deck(entries.clone()));
    let prover = tokio::task::spawn_blocking(move || Prover::new(&making, QA_EMISSION, number, &seed, deck))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let lots = entries
        .iter()
        .map(|e| lot_code(e.lot(&design)).ok_or("a deck entry outside the prize table"))
        .collect::<Result<_, _>>()?;
    let block = NewBlock {
        emission: QA_EMISSION,
        block: number,
        seed,
        root: prover.root(),
        design_hash: design.hash,
        design_text: DEFAULT_DESIGN_TOML.to_owned(),
        scheme: design.scheme,
        lots,
        kept_level: prover.kept_level().to_vec(),
        now: state.config.clock.now(),
    };
    state.store.insert_block(block).await.map_err(|e| e.to_string())?;
    state.printer.print_qa_deck(QA_EMISSION, number, entries);
    tracing::warn!(block = %format!("E{QA_EMISSION}-B{number}"), "QA deck: its test tickets sell first");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deck_lists_lots_and_pattern_names_and_says_which_line_is_wrong() {
        let design = Design::default_design();
        let jackpot = design.patterns().iter().position(|p| p.name == "40 000 € — quatre surfaces").unwrap();
        let deck = parse("# first the jackpot\n40 000 € — quatre surfaces\n\n0\n  12.50  \n5", &design);
        assert_eq!(deck.unwrap_err(), "line 5: 12,50\u{a0}€ is not a lot of the prize table (nor 0)");
        let deck = parse("40 000 € — quatre surfaces\n0\n5\n", &design).unwrap();
        assert_eq!(deck, [Entry::Pattern(jackpot), Entry::Lot(Cents::ZERO), Entry::Lot(Cents::euros(5))]);
        assert!(parse("le gros lot", &design).unwrap_err().starts_with("line 1: « le gros lot » is neither"));
        assert_eq!(parse("# nothing\n", &design).unwrap_err(), "the deck lists no ticket");
    }
}
