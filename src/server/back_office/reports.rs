//! The operator's reports, on screen and as CSV from one table each: the daily summary of the players'
//! accounts, the blocks, and what is owed (liabilities). Each says its title, period, when it was made
//! and by which version, and « aucune activité » when it has no row.

use crate::money::format_signed_cents;
use crate::server::dates::{french as when, iso_day};
use crate::server::store::BlockRecord;
use crate::server::store::back_office::{DaySummary, Withdrawal};
use crate::server::store::ledger::BlockFacts;

/// A report: its table, and what says what it is.
pub struct Report {
    pub title: &'static str,
    pub period: String,
    pub generated_at: i64,
    pub columns: Vec<&'static str>,
    /// Amounts in cents are kept as numbers, shown as euros.
    pub rows: Vec<Vec<Cell>>,
    /// Lines under the table (totals, checks).
    pub notes: Vec<String>,
}

pub enum Cell {
    Text(String),
    Cents(i64),
    Count(u64),
}

impl Cell {
    /// As the screen shows it: `1 234,50 €`.
    pub fn shown(&self) -> String {
        match self {
            Cell::Text(t) => t.clone(),
            Cell::Cents(c) => format_signed_cents(*c),
            Cell::Count(n) => crate::money::group_thousands(*n),
        }
    }

    /// As a spreadsheet reads it (French: decimal comma, no grouping, no symbol).
    fn csv(&self) -> String {
        match self {
            Cell::Text(t) => t.clone(),
            Cell::Cents(c) => {
                format!("{}{},{:02}", if *c < 0 { "-" } else { "" }, c.unsigned_abs() / 100, c.unsigned_abs() % 100)
            }
            Cell::Count(n) => n.to_string(),
        }
    }
}

pub const VERSION: &str = concat!("vegas ", env!("CARGO_PKG_VERSION"));
pub const NO_ACTIVITY: &str = "aucune activité";

impl Report {
    /// The CSV file: its identification first (one `key;value` per line), a blank line, then the table
    /// (or « aucune activité »), then its notes. Semicolons, as French spreadsheets expect.
    pub fn csv(&self) -> Result<String, String> {
        let mut out = csv::WriterBuilder::new().delimiter(b';').flexible(true).from_writer(Vec::new());
        let fail = |e: csv::Error| e.to_string();
        for (key, value) in [
            ("rapport", self.title.to_owned()),
            ("période", self.period.clone()),
            ("généré le", when(self.generated_at)),
            ("version", VERSION.into()),
        ] {
            out.write_record([key, value.as_str()]).map_err(fail)?;
        }
        out.write_record([""]).map_err(fail)?;
        if self.rows.is_empty() {
            out.write_record([NO_ACTIVITY]).map_err(fail)?;
        } else {
            out.write_record(&self.columns).map_err(fail)?;
            for row in &self.rows {
                out.write_record(row.iter().map(Cell::csv)).map_err(fail)?;
            }
        }
        for note in &self.notes {
            out.write_record([note.as_str()]).map_err(fail)?;
        }
        String::from_utf8(out.into_inner().map_err(|e| e.to_string())?).map_err(|e| e.to_string())
    }
}

pub fn daily(day: &[DaySummary], start: i64, now: i64) -> Report {
    let rows = day
        .iter()
        .map(|d| {
            vec![
                Cell::Text(d.player_id.clone()),
                Cell::Text(d.name.clone().unwrap_or_else(|| "(invité)".into())),
                Cell::Cents(d.opening),
                Cell::Cents(d.deposits),
                Cell::Cents(d.demo),
                Cell::Cents(d.stakes),
                Cell::Cents(d.wins),
                Cell::Cents(d.withdrawals),
                Cell::Cents(d.adjustments),
                Cell::Cents(d.closing),
                Cell::Text(if d.balanced { "oui" } else { "NON" }.into()),
            ]
        })
        .collect();
    let unbalanced = day.iter().filter(|d| !d.balanced).count();
    let check = if unbalanced == 0 {
        "Chaque compte vérifie : ouverture + dépôts + démo − mises + gains − retraits ± ajustements = clôture."
            .to_owned()
    } else {
        format!("ATTENTION : {unbalanced} compte(s) ne vérifient pas l'équation : lancez vegas ledger check.")
    };
    Report {
        title: "Résumé journalier des comptes joueurs",
        period: format!("{} (00:00 à 24:00 UTC)", iso_day(start)),
        generated_at: now,
        columns: vec![
            "joueur",
            "nom",
            "ouverture",
            "dépôts",
            "démo",
            "mises",
            "gains",
            "retraits",
            "ajustements",
            "clôture",
            "équilibré",
        ],
        rows,
        notes: if day.is_empty() { Vec::new() } else { vec![check] },
    }
}

pub fn blocks(records: &[BlockRecord], facts: &[BlockFacts], unsold_shown: bool, now: i64) -> Report {
    let mut columns =
        vec!["bloc", "état", "vendus", "invendus", "mises", "gains payés", "gains dus", "lots engagés (vendus)"];
    if unsold_shown {
        columns.push("lots restant dans les invendus");
    }
    let rows = facts
        .iter()
        .map(|f| {
            let state =
                records.iter().find(|b| b.emission == f.emission && b.block == f.block).map_or("?", |b| state_of(b).0);
            let mut row = vec![
                Cell::Text(format!("E{}-B{}", f.emission, f.block)),
                Cell::Text(state.into()),
                Cell::Count(f.sold),
                Cell::Count(f.size.saturating_sub(f.sold)),
                Cell::Cents(f.stakes_balance),
                Cell::Cents(-f.prizes_balance),
                Cell::Cents(f.owed),
                Cell::Cents(f.committed),
            ];
            if unsold_shown {
                row.push(Cell::Cents(f.lots_total - f.committed));
            }
            row
        })
        .collect();
    Report {
        title: "Rapport des blocs",
        period: format!("depuis la première émission, au {}", when(now)),
        generated_at: now,
        columns,
        rows,
        notes: vec![
            "Gains payés + gains dus = lots engagés pour les billets vendus, comme le vérifie vegas ledger check."
                .into(),
        ],
    }
}

/// What the operator owes now: prizes won and not yet credited, withdrawals waiting, players' balances.
pub fn liabilities(facts: &[BlockFacts], pending: &[Withdrawal], balances: (i64, i64), now: i64) -> Report {
    let owed: i64 = facts.iter().map(|f| f.owed).sum();
    let waiting: i64 = pending.iter().map(|w| w.amount.0 as i64).sum();
    let rows: Vec<Vec<Cell>> = [
        ("gains dus (gagnés, pas encore crédités)", owed, facts.iter().filter(|f| f.owed > 0).count() as u64),
        ("retraits en attente", waiting, pending.len() as u64),
        ("soldes des comptes joueurs", balances.0, 0),
        ("soldes des invités (argent de démo, sans valeur)", balances.1, 0),
    ]
    .into_iter()
    .filter(|(_, amount, _)| *amount != 0)
    .map(|(what, amount, count)| vec![Cell::Text(what.into()), Cell::Cents(amount), Cell::Count(count)])
    .collect();
    Report {
        title: "Engagements en cours",
        period: format!("au {}", when(now)),
        generated_at: now,
        columns: vec!["engagement", "montant", "nombre (blocs ou retraits)"],
        rows,
        notes: Vec::new(),
    }
}

pub fn state_of(b: &BlockRecord) -> (&'static str, &'static str) {
    if b.withdrawn_at.is_some() {
        ("retiré de la vente", "withdrawn")
    } else if b.closed_at.is_some() {
        ("épuisé", "sold-out")
    } else {
        ("en vente", "on-sale")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(rows: Vec<Vec<Cell>>) -> Report {
        Report {
            title: "Essai",
            period: "2026-12-05".into(),
            generated_at: 1_796_472_000,
            columns: vec!["a", "montant"],
            rows,
            notes: vec!["note".into()],
        }
    }

    #[test]
    fn a_csv_says_what_it_is_then_its_table_or_no_activity() {
        let csv = report(vec![vec![Cell::Text("x;y".into()), Cell::Cents(-123_456)]]).csv().unwrap();
        assert_eq!(
            csv.lines().collect::<Vec<_>>(),
            [
                "rapport;Essai",
                "période;2026-12-05",
                "généré le;05/12/2026 12:00 UTC",
                &format!("version;{VERSION}"),
                "\"\"",
                "a;montant",
                "\"x;y\";-1234,56",
                "note"
            ]
        );
        let empty = report(Vec::new()).csv().unwrap();
        assert!(empty.contains("\naucune activité\n") && !empty.contains("a;montant"), "{empty}");
    }
}
