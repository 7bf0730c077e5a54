//! What the operator's commands read and print about responsible gaming: a player's page
//! (`vegas player show`) and the national ban file (`vegas exclusions import`).

use super::dates::{self, utc};
use super::store::Identity;
use super::store::{Store, StoreError};
use crate::money::Cents;
use std::fmt::Write;

/// The national ban file (« fichier des interdits de jeu ») as the operator receives it: CSV, comma or
/// semicolon separated, a header naming its columns. Accepted names: `nom` or `last_name`, `prenom`,
/// `prénom` or `first_name`, `date_naissance`, `date_de_naissance` or `birth_date` (any case); other
/// columns are ignored. Dates are `YYYY-MM-DD` or `DD/MM/YYYY`. Returns the identities, or every line
/// that could not be read.
pub fn read_ban_file(text: &str) -> Result<Vec<Identity>, String> {
    let separator = if text.lines().next().is_some_and(|header| header.contains(';')) { b';' } else { b',' };
    let mut reader =
        csv::ReaderBuilder::new().delimiter(separator).trim(csv::Trim::All).flexible(true).from_reader(text.as_bytes());
    let headers: Vec<String> =
        reader.headers().map_err(|e| format!("the header: {e}"))?.iter().map(|h| h.to_lowercase()).collect();
    let column = |names: &[&str]| headers.iter().position(|h| names.contains(&h.as_str()));
    let (Some(last), Some(first), Some(born)) = (
        column(&["nom", "last_name"]),
        column(&["prenom", "prénom", "first_name"]),
        column(&["date_naissance", "date_de_naissance", "birth_date"]),
    ) else {
        return Err(format!(
            "the header must name the last name, first name and date of birth columns (e.g. \
                nom;prenom;date_naissance), not {headers:?}"
        ));
    };
    let (mut identities, mut problems) = (Vec::new(), Vec::new());
    for (n, record) in reader.records().enumerate() {
        let line = n + 2;
        let identity = record.map_err(|e| e.to_string()).and_then(|r| {
            let field =
                |i: usize| r.get(i).filter(|f| !f.is_empty()).ok_or_else(|| format!("column {} is empty", i + 1));
            Ok(Identity {
                last_name: field(last)?.to_owned(),
                first_name: field(first)?.to_owned(),
                birth_date: iso_date(field(born)?)?,
            })
        });
        match identity {
            Ok(identity) => identities.push(identity),
            Err(e) => problems.push(format!("line {line}: {e}")),
        }
    }
    if problems.is_empty() { Ok(identities) } else { Err(problems.join("\n")) }
}

/// A date of birth as `YYYY-MM-DD`, from that or `DD/MM/YYYY`.
fn iso_date(text: &str) -> Result<String, String> {
    let date = dates::parse_iso_day(text)
        .or_else(|| dates::parse_french_day(text))
        .ok_or_else(|| format!("{text:?} is not a date (YYYY-MM-DD or DD/MM/YYYY)"))?;
    Ok(dates::iso_day(date.midnight().assume_utc().unix_timestamp()))
}

/// A player's responsible-gaming page for the operator: balance, limits with what is left, pending
/// raises, any pause, the reality-check interval, and the whole record.
pub async fn player_page(store: &Store, player_id: &str, now: i64) -> Result<String, StoreError> {
    let player = store.player(player_id).await?;
    let standing = store.standing(player_id, now).await?;
    let mut page = String::new();
    let name = player.name.as_deref().unwrap_or("(guest)");
    let _ = writeln!(page, "{} {name}: balance {}", player.id, player.balance);
    let _ = writeln!(page, "limits (left in the window now):");
    for l in &standing.limits {
        let limit = l.limit_cents.map_or_else(|| "none".to_owned(), |c| Cents(c).to_string());
        let left = l.left_cents.map_or_else(String::new, |c| format!(", {} left", Cents(c)));
        let frees = l.next_frees_at.map_or_else(String::new, |at| format!(", more frees at {}", utc(at)));
        let _ = writeln!(
            page,
            "  {:<7} {:<5} {limit:>12}  used {}{left}{frees}",
            l.flow.as_str(),
            l.span.as_str(),
            Cents(l.used_cents)
        );
    }
    for p in &standing.pending {
        let to = p.amount_cents.map_or_else(|| "none".to_owned(), |c| Cents(c).to_string());
        let _ = writeln!(
            page,
            "pending: {} {} to {to}, confirmable from {} until {}",
            p.flow.as_str(),
            p.span.as_str(),
            utc(p.confirmable_at),
            utc(p.lapses_at)
        );
    }
    match standing.paused {
        Some(pause) => _ = writeln!(page, "paused: {} until {}", pause.kind.as_str(), utc(pause.until)),
        None => _ = writeln!(page, "paused: no"),
    }
    let _ = writeln!(page, "reality check every {} minutes", standing.reality_minutes);
    let _ = writeln!(page, "record:");
    for e in store.responsible_events(player_id, 0).await? {
        let _ = writeln!(page, "  {}  {:<8} {:<28} {}", utc(e.at), e.actor, e.kind, e.detail);
    }
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ban_file_is_read_by_its_header_in_either_separator_and_date_format() {
        let french = "Nom;Prénom;Date_Naissance;Motif\nMartin;Jean-Luc;03/02/1971;x\n D'Arc ; Jeanne ; 1990-12-31 ;\n";
        let read = read_ban_file(french).unwrap();
        assert_eq!(read.len(), 2);
        assert_eq!(
            (read[0].last_name.as_str(), read[0].first_name.as_str(), read[0].birth_date.as_str()),
            ("Martin", "Jean-Luc", "1971-02-03")
        );
        assert_eq!(read[1].birth_date, "1990-12-31");
        let english = read_ban_file("first_name,last_name,birth_date\nAnne,Interdite,1980-05-06\n").unwrap();
        assert_eq!(english[0].last_name, "Interdite");
    }

    #[test]
    fn a_ban_file_that_cannot_be_read_says_where() {
        assert!(read_ban_file("name,born\nx,y\n").unwrap_err().contains("header"));
        let problems = read_ban_file(
            "nom,prenom,date_naissance\nMartin,Jean,1971-02-03\nDupont,,1971-02-03\nDurand,Paul,31/31/1999\n",
        )
        .unwrap_err();
        assert!(
            problems.contains("line 3") && problems.contains("line 4") && !problems.contains("line 2"),
            "{problems}"
        );
    }
}
