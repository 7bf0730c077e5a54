//! `GET /regles`: « Règles du jeu » and « Gains et probabilités », how to play each surface and what a
//! block pays, read from the rules' own tables so that the page cannot say other than the game does.
//! Made by the server, so that none of it adds to what every player downloads; the game links to it.

use super::AppState;
use crate::api::RESPONSIBLE_GAMING;
use crate::money::{Cents, group_thousands};
use crate::rules::craps::WINNING_THROWS;
use crate::rules::jackpot::ReelsWin;
use crate::rules::poker::PokerHand;
use crate::rules::prize_table::TICKET_PRICE;
use crate::rules::prize_table::{BLOCK_SIZE, PRIZE_TABLE, WINNERS_PER_BLOCK, total_payout};
use axum::extract::State;

/// `numerator / denominator` rounded to two decimals, French style (« 4,34 »), by integer arithmetic;
/// a whole number without its decimals (« 750 000 »).
fn ratio_fr(numerator: u64, denominator: u64) -> String {
    let hundredths = (numerator * 100 + denominator / 2) / denominator;
    match hundredths % 100 {
        0 => group_thousands(hundredths / 100),
        decimals => format!("{},{decimals:02}", group_thousands(hundredths / 100)),
    }
}

/// One line per winning combination: its name and what it pays.
fn win_list<T: Copy>(wins: &[T], name: impl Fn(T) -> String, win: impl Fn(T) -> Cents) -> String {
    let rows: String =
        wins.iter().map(|&w| format!("<li><span>{}</span><strong>{}</strong></li>", name(w), win(w).short())).collect();
    format!("<ul class=\"pays\">{rows}</ul>")
}

/// The page's content: our own text and the rules' tables (nothing anyone typed).
fn rules_html(settle_after: std::time::Duration) -> String {
    let block = u64::from(BLOCK_SIZE);
    let odds: String = PRIZE_TABLE
        .iter()
        .map(|tier| {
            let count = u64::from(tier.count);
            format!(
                "<tr><td>{}</td><td>{}</td><td>1 sur {}</td></tr>",
                tier.lot.short(),
                group_thousands(count),
                ratio_fr(block, count)
            )
        })
        .collect();
    let payout_percent = total_payout().0 * 100 / (TICKET_PRICE.0 * block);
    format!(
        "<h2 id=\"rules-title\">Règles du jeu</h2>\
         <p>Un ticket coûte {price} et porte quatre surfaces indépendantes. « Jouez » : choisissez la surface par \
         laquelle \
         commencer, grattez-la entière, puis les autres. « Auto » : tout se découvre seul. Les gains de plusieurs \
         surfaces \
         s'additionnent en un seul lot.</p>\
         <h3>Poker</h3><p>Grattez les cinq cartes et la carte bonus. La carte bonus s'ajoute aux cinq autres : la main \
         se lit sur les six cartes ensemble (une paire peut réunir une des cinq cartes et la carte bonus). Seules les \
         valeurs comptent, pas les couleurs.</p>{poker}\
         <h3>Roulette</h3><p>Grattez la roulette puis les trois mises : une mise qui porte le numéro de la roulette \
         gagne \
         la somme inscrite sous elle.</p>\
         <h3>Craps</h3><p>Grattez les quatre lancers de deux dés ; chaque lancer gagnant paie, et les gains \
         s'additionnent.</p>{craps}\
         <h3>Jackpot</h3><p>Grattez les trois rouleaux et le bonus : le bonus paie la somme qu'il montre, les rouleaux \
         :</p>{jackpot}\
         <h2>Gains et probabilités</h2><p>Par bloc de {tickets} tickets :</p>\
         <table class=\"odds\" data-testid=\"odds\"><thead><tr><th scope=\"col\">Lot</th><th scope=\"col\">Nombre</th>\
         <th scope=\"col\">Chances</th></tr></thead><tbody>{odds}</tbody></table>\
         <p data-testid=\"overall-odds\">Un ticket sur {overall} gagne ; {payout_percent} % des mises sont \
             redistribués.</p>\
         <h2>Ticket non terminé</h2><p data-testid=\"unfinished\">Un ticket acheté reste à vous : si vous fermez la \
             page \
         ou perdez la connexion, il vous attend dans l'historique, où vous pouvez le reprendre et le finir. Un ticket \
         laissé inachevé est réglé automatiquement {settled} après l'achat : son gain éventuel est crédité à votre \
         solde, aucun gain n'est jamais perdu.</p>\
         <p class=\"notice\">{notice}</p>",
        price = TICKET_PRICE.short(),
        poker = win_list(&PokerHand::WINNING, |h| capitalised(h.name_fr()), PokerHand::win),
        craps = win_list(&WINNING_THROWS, |(t, _)| format!("{} + {}", t.0, t.1), |(_, euros)| Cents::euros(euros)),
        jackpot = win_list(&ReelsWin::WINNING, |w| capitalised(w.name_fr()), ReelsWin::win),
        tickets = group_thousands(block),
        overall = ratio_fr(block, u64::from(WINNERS_PER_BLOCK)),
        notice = RESPONSIBLE_GAMING,
        settled = delay_fr(settle_after),
    )
}

/// `GET /regles`: the page, standalone (its own small style), opened beside the game.
#[utoipa::path(get, path = "/regles", tag = "public", security(()),
    responses((status = 200, description = "The rules and the odds, as a \
        page", body = String, content_type = "text/html")))]
pub async fn page(state: State<AppState>) -> axum::response::Html<String> {
    axum::response::Html(format!(
        "<!doctype html><html lang=\"fr\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" \
            content=\"width=device-width, initial-scale=1\">\
         <title>Vegas — règles et gains</title><style>{STYLE}</style></head><body><main class=\"rules\" \
             data-testid=\"rules\">\
         <a class=\"back\" href=\"/\" data-testid=\"back-to-game\">← Retour au jeu</a>{}</main></body></html>",
        rules_html(state.config.settle_after)
    ))
}

const STYLE: &str = "body{margin:0;background:#0b3d24;color:#f4ecd8;font:16px/1.45 system-ui,sans-serif}\
    .rules{max-width:680px;margin:0 auto;padding:20px}a{color:#e8c25a}\
    h2{font-family:Georgia,serif;color:#e8c25a;letter-spacing:.1em;text-transform:uppercase;font-size:1.2rem;\
    margin:22px 0 8px}\
    h3{margin:14px 0 4px;font-size:1rem;color:#e8c25a}p{margin:4px 0}\
    .pays{list-style:none;margin:4px \
    0;padding:0;display:grid;grid-template-columns:repeat(auto-fill,minmax(180px,1fr));gap:2px 16px}\
    .pays li{display:flex;justify-content:space-between;border-bottom:1px dotted rgba(232,194,90,.35)}\
    .odds{border-collapse:collapse;width:100%;margin:6px 0;font-variant-numeric:tabular-nums}\
    .odds th,.odds td{padding:3px 8px;text-align:right;border-bottom:1px solid rgba(232,194,90,.25)}.odds \
    th{color:#e8c25a}\
    .notice{margin-top:14px;font-size:.85rem}";

/// « 10 minutes », « 1 minute », « 30 secondes »: how long an unfinished ticket waits to be settled.
fn delay_fr(delay: std::time::Duration) -> String {
    let plural = |n: u64, unit: &str| format!("{n} {unit}{}", if n > 1 { "s" } else { "" });
    match delay.as_secs() {
        s if s >= 60 && s % 60 == 0 => plural(s / 60, "minute"),
        s => plural(s, "seconde"),
    }
}

/// The rules' names start with an ASCII letter (« une paire », « trois 7 »).
fn capitalised(text: &str) -> String {
    let mut text = text.to_owned();
    text[..1].make_ascii_uppercase();
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn odds_carry_decimals_only_when_they_are_not_whole() {
        assert_eq!(ratio_fr(1_500_000, 2), "750\u{202f}000");
        assert_eq!(ratio_fr(1_500_000, 345_615), "4,34");
        assert_eq!(ratio_fr(10, 4), "2,50");
        let page = rules_html(Duration::from_secs(600));
        assert!(page.contains("1 sur 750\u{202f}000</td>"), "{page}");
        assert!(!page.contains(",00</td>"), "a whole ratio printed with decimals: {page}");
    }

    #[test]
    fn the_page_says_how_the_bonus_card_counts_and_what_becomes_of_an_unfinished_ticket() {
        let page = rules_html(Duration::from_secs(600));
        assert!(page.contains("la main se lit sur les six cartes ensemble"), "{page}");
        assert!(page.contains("réglé automatiquement 10 minutes après l'achat"), "{page}");
        assert_eq!(delay_fr(Duration::from_secs(60)), "1 minute");
        assert_eq!(delay_fr(Duration::from_secs(90)), "90 secondes");
        assert_eq!(delay_fr(Duration::from_secs(1)), "1 seconde");
    }
}
