//! The back office's pages, in French. Every control a test or a member acts on has a `data-testid`.

use super::Power;
use super::staff::may;
use crate::api::{Flow, PauseKind, ResponsibleEvent, Span, Standing};
use crate::money::{Cents, format_signed_cents, group_thousands};
use crate::rules::prize_table::TICKET_PRICE;
use crate::server::store::back_office::{
    Adjustment, AdjustmentState, AuditEntry, ChainBreak, PlayerSummary, Role, SessionSummary, StaffRecord,
    StatementLine, TierCount, Withdrawal, WithdrawalState,
};
use crate::server::store::ledger::BlockFacts;
use crate::server::store::{Already, BlockRecord, StoreError, TicketRecord};
use axum::http::StatusCode;
use maud::{DOCTYPE, Markup, html};

pub use crate::server::dates::french as when;

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Admin => "administration",
        Role::Finance => "finance",
        Role::Support => "support",
        Role::Auditor => "audit",
    }
}

pub fn power_name(power: Power) -> &'static str {
    match power {
        Power::Read => "consulter",
        Power::Suspend => "suspendre ou rétablir un compte : rôle support",
        Power::MoveMoney => "mouvement d'argent : rôle finance",
        Power::ReadMoney => "retraits, ajustements et rapports : rôles finance et audit",
        Power::SeeUnsoldPrizes => "lots restant dans les billets invendus : rôles finance et audit",
        Power::ManageBlocks => "gestion des blocs : rôle administration",
        Power::ManageStaff => "gestion du personnel : rôle administration",
        Power::ReadAudit => "journal d'audit : rôles audit et administration",
    }
}

/// What a store refusal says to staff.
pub fn store_error(e: &StoreError) -> String {
    match e {
        StoreError::NotFound(what) => format!("Introuvable ({what})."),
        StoreError::Overdraft { balance, amount } => format!(
            "Solde insuffisant : le portefeuille contient {balance}, \
            {amount} ne peuvent en sortir."
        ),
        StoreError::FourEyes => {
            "Principe des quatre yeux : la personne qui a demandé cet ajustement ne peut pas le valider ; un autre \
                membre doit le faire."
                .into()
        }
        StoreError::AlreadyDone(Already::Suspended) => "Ce compte est déjà suspendu.".into(),
        StoreError::AlreadyDone(Already::NotSuspended) => "Ce compte n'est pas suspendu.".into(),
        StoreError::AlreadyDone(Already::Decided) => "Déjà décidé par un autre membre : rien n'a changé.".into(),
        StoreError::AlreadyDone(Already::Withdrawn) => "Ce bloc est déjà retiré de la vente.".into(),
        StoreError::AlreadyDone(Already::Closed) => "Ce compte est déjà fermé.".into(),
        StoreError::Invalid(why) => format!("Demande invalide : {why}."),
        StoreError::Backend(_) => "Le serveur a rencontré une erreur ; elle est consignée dans ses journaux.".into(),
        other => other.to_string(),
    }
}

fn done_message(code: &str) -> Option<&'static str> {
    Some(match code {
        "bloc-retire" => "Bloc retiré de la vente : les ventes continuent sur le bloc suivant.",
        "suspendu" => "Compte suspendu : le joueur ne peut plus miser ni déposer.",
        "retabli" => "Compte rétabli.",
        "ajustement-applique" => "Ajustement appliqué.",
        "ajustement-en-attente" => "Ajustement au-delà du seuil : il attend la validation d'un second membre.",
        "retrait-paye" => "Retrait payé.",
        "retrait-refuse" => "Retrait refusé : le montant est revenu au portefeuille du joueur.",
        "ajustement-approuve" => "Ajustement approuvé et appliqué.",
        "ajustement-rejete" => "Ajustement rejeté.",
        "ferme" => "Compte fermé : son solde a été versé, plus aucune mise ni aucun dépôt n'est possible.",
        "role-change" => "Rôle modifié : il s'applique dès la prochaine page du membre.",
        _ => return None,
    })
}

fn head(title: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            title { (title) " — Vegas, back office" }
            link rel="stylesheet" href="/style.css";
        }
    }
}

fn layout(member: &StaffRecord, title: &str, done: Option<&str>, body: Markup) -> Markup {
    let role = member.role;
    let links: [(&str, &str, Power, &str); 7] = [
        ("/blocs", "Blocs", Power::Read, "nav-blocks"),
        ("/joueurs", "Joueurs", Power::Read, "nav-players"),
        ("/retraits", "Retraits", Power::ReadMoney, "nav-withdrawals"),
        ("/ajustements", "Ajustements", Power::ReadMoney, "nav-adjustments"),
        ("/rapports", "Rapports", Power::ReadMoney, "nav-reports"),
        ("/journal", "Journal d'audit", Power::ReadAudit, "nav-audit"),
        ("/personnel", "Personnel", Power::ManageStaff, "nav-staff"),
    ];
    html! {
        (DOCTYPE)
        html lang="fr" {
            (head(title))
            body {
                header.top {
                    span.brand { "Vegas" small { "back office" } }
                    nav aria-label="Sections" {
                        @for (href, label, power, id) in links {
                            @if may(role, power) { a href=(href) data-testid=(id) { (label) } }
                        }
                    }
                    span.who data-testid="staff-who" { (member.name) " · " (role_name(role)) }
                    form method="post" action="/deconnexion" { button.quiet type="submit" data-testid="sign-out" {
                        "Se déconnecter" } }
                }
                main {
                    h1 { (title) }
                    @if let Some(message) = done.and_then(done_message) { p.done role="status" data-testid="done" {
                        (message) } }
                    (body)
                }
            }
        }
    }
}

pub fn refusal(status: StatusCode, message: &str) -> Markup {
    html! {
        (DOCTYPE)
        html lang="fr" {
            (head("Refusé"))
            body { main.narrow {
                h1 { "Action refusée" }
                p.refused role="alert" data-testid="refusal" data-status=(status.as_u16()) { (message) }
                p { a href="/blocs" { "Retour au back office" } }
            } }
        }
    }
}

pub fn sign_in(error: Option<&str>) -> Markup {
    html! {
        (DOCTYPE)
        html lang="fr" {
            (head("Connexion"))
            body { main.narrow {
                h1 { "Vegas — back office" }
                p { "Réservé au personnel de l'opérateur. Chaque action est consignée au journal d'audit." }
                @if let Some(error) = error { p.refused role="alert" data-testid="sign-in-error" { (error) } }
                form.card method="post" action="/connexion" {
                    label { "Identifiant" input name="name" autocomplete="username" required
                        data-testid="sign-in-name"; }
                    label { "Mot de passe" input name="password" type="password" autocomplete="current-password"
                        required data-testid="sign-in-password"; }
                    label { "Code à usage unique (application d'authentification)"
                        input name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}"
                            maxlength="6" required data-testid="sign-in-code"; }
                    button type="submit" data-testid="sign-in-submit" { "Se connecter" }
                }
            } }
        }
    }
}

fn percent(part: i128, whole: i128) -> String {
    if whole == 0 { "—".into() } else { format!("{:.2} %", part as f64 * 100.0 / whole as f64).replace('.', ",") }
}

pub fn blocks(
    member: &StaffRecord,
    records: &[BlockRecord],
    facts: &[BlockFacts],
    tiers: &[TierCount],
    reconciled: Result<(), usize>,
    done: Option<&str>,
) -> Markup {
    let unsold_shown = may(member.role, Power::SeeUnsoldPrizes);
    let price = i128::from(TICKET_PRICE.0 as i64);
    let body = html! {
        @match reconciled {
            Ok(()) => p.ok data-testid="ledger-status" { "Grand livre rapproché : chaque montant ci-dessous est celui \
                que vérifie " code { "vegas ledger check" } "." },
            Err(n) => p.refused data-testid="ledger-status" { "Le rapprochement du grand livre signale \
                " (n) " anomalie(s) : lancez " code { "vegas ledger check" } "." },
        }
        @if records.is_empty() { p { "Aucun bloc." } }
        @for b in records {
            @let f = facts.iter().find(|f| f.emission == b.emission && f.block == b.block);
            @let id = format!("E{}-B{}", b.emission, b.block);
            @let (state, state_id) = super::reports::state_of(b);
            section.card data-testid={ "block-" (id) } {
                h2 { "Bloc " (id) " " span.badge data-testid="block-state" data-state=(state_id) { (state) } }
                @if let Some(f) = f {
                    @let stakes = i128::from(f.stakes_balance);
                    @let paid = -i128::from(f.prizes_balance);
                    dl.figures {
                        dt { "Vendus" } dd data-testid="block-sold" { (group_thousands(f.sold)) }
                        dt { "Invendus" } dd data-testid="block-unsold" {
                            (group_thousands(f.size.saturating_sub(f.sold))) }
                        dt { "Mises encaissées" } dd data-testid="block-stakes" {
                            (format_signed_cents(f.stakes_balance)) }
                        dt { "Gains payés" } dd data-testid="block-paid" { (format_signed_cents(-f.prizes_balance)) }
                        dt { "Gains dus (gagnés, pas encore \
                            crédités)" } dd data-testid="block-owed" { (format_signed_cents(f.owed)) }
                        dt { "Taux de retour théorique" } dd data-testid="block-theoretical" {
                            (percent(i128::from(f.lots_total), price * i128::from(f.size))) }
                        dt { "Taux de retour réel à ce jour" } dd data-testid="block-actual" { (percent(paid +
                            i128::from(f.owed), stakes)) }
                        @if unsold_shown {
                            dt { "Lots restant dans les \
                                invendus" } dd data-testid="block-unsold-prizes" { (format_signed_cents(f.lots_total -
                                    f.committed)) }
                        }
                    }
                    @let won: Vec<&TierCount> = tiers.iter().filter(|t| t.emission == b.emission && t.block == b.block
                        && !t.lot.is_zero()).collect();
                    details {
                        summary { "Gains par rang" }
                        @if won.is_empty() { p { "Aucun billet gagnant vendu." } }
                        @else { table {
                            thead { tr { th { "Lot" } th { "Billets vendus" } th { "Dont crédités" } } }
                            tbody {
                                @for t in won {
                                    tr { td { (t.lot) } td { (t.sold) } td { (t.credited) } }
                                }
                            }
                        } }
                    }
                }
                @if b.withdrawn_at.is_none() && b.closed_at.is_none() && may(member.role, Power::ManageBlocks) {
                    form.inline method="post" action={ "/blocs/" (b.emission) "/" (b.block) "/retrait" } {
                        label { "Motif du retrait" input name="reason" required maxlength="500"
                            data-testid="withdraw-block-reason"; }
                        button.danger type="submit" data-testid="withdraw-block" { "Retirer définitivement de la \
                            vente" }
                    }
                }
            }
        }
    };
    layout(member, "Blocs et émissions", done, body)
}

pub fn players(member: &StaffRecord, query: &str, found: &[PlayerSummary]) -> Markup {
    let body = html! {
        form.inline method="get" action="/joueurs" role="search" {
            label { "Identifiant, nom d'utilisateur ou nom de \
                famille" input name="q" value=(query) data-testid="player-search"; }
            button type="submit" data-testid="player-search-submit" { "Rechercher" }
        }
        @if !query.trim().is_empty() && found.is_empty() { p data-testid="no-player" { "Aucun joueur trouvé." } }
        @if !found.is_empty() {
            table {
                thead { tr { th { "Joueur" } th { "Nom" } th { "Solde" } th { "État" } th { "Créé le" } } }
                tbody {
                    @for p in found {
                        tr data-testid="player-row" {
                            td { a href={ "/joueurs/" (p.id) } data-testid="player-link" {
                                (p.name.as_deref().unwrap_or("(invité)")) } br; small { (p.id) } }
                            td { (p.first_name.as_deref().unwrap_or("")) " " (p.last_name.as_deref().unwrap_or("")) }
                            td { (p.balance) }
                            td { (account_state(p, i64::MIN)) }
                            td { (when(p.created_at)) }
                        }
                    }
                }
            }
        }
    };
    layout(member, "Joueurs", None, body)
}

fn account_state(p: &PlayerSummary, now: i64) -> String {
    if p.closed_at.is_some() {
        "fermé".into()
    } else if p.suspended_at.is_some() {
        "suspendu".into()
    } else if p.paused_until > now && now != i64::MIN {
        format!("en pause jusqu'au {}", when(p.paused_until))
    } else if p.guest {
        "invité (démo)".into()
    } else {
        "actif".into()
    }
}

/// Everything a player's page shows.
pub struct PlayerPage {
    pub summary: PlayerSummary,
    pub standing: Standing,
    pub statement: Vec<StatementLine>,
    pub tickets: Vec<TicketRecord>,
    pub withdrawals: Vec<Withdrawal>,
    pub adjustments: Vec<Adjustment>,
    pub events: Vec<ResponsibleEvent>,
    pub sessions: Vec<SessionSummary>,
}

fn flow_name(flow: Flow) -> &'static str {
    match flow {
        Flow::Stake => "mises",
        Flow::Deposit => "dépôts",
    }
}

fn span_name(span: Span) -> &'static str {
    match span {
        Span::Day => "24 h",
        Span::Week => "7 jours",
        Span::Month => "30 jours",
    }
}

fn pause_name(kind: PauseKind) -> &'static str {
    match kind {
        PauseKind::Break => "pause",
        PauseKind::Exclusion => "auto-exclusion",
        PauseKind::Closed => "compte fermé",
    }
}

/// A transfer's kind, as staff read it.
fn kind_name(kind: &str) -> &str {
    match kind {
        "deposit" => "dépôt",
        "withdrawal" => "retrait",
        "demo" => "argent de démo",
        "stake" => "mise",
        "win" => "gain",
        "withdrawal_paid" => "retrait payé",
        "withdrawal_refused" => "retrait refusé (rendu)",
        "adjustment" => "ajustement",
        other => other,
    }
}

fn withdrawal_state(state: WithdrawalState) -> &'static str {
    match state {
        WithdrawalState::Pending => "en attente",
        WithdrawalState::Paid => "payé",
        WithdrawalState::Refused => "refusé",
    }
}

fn adjustment_state(state: AdjustmentState) -> &'static str {
    match state {
        AdjustmentState::Pending => "en attente d'un second membre",
        AdjustmentState::Applied => "appliqué",
        AdjustmentState::Rejected => "rejeté",
    }
}

pub fn player(member: &StaffRecord, page: &PlayerPage, now: i64, done: Option<&str>) -> Markup {
    let p = &page.summary;
    let role = member.role;
    let body = html! {
        section.card {
            dl.figures {
                dt { "Identifiant" } dd data-testid="player-id" { (p.id) }
                dt { "Nom d'utilisateur" } dd { (p.name.as_deref().unwrap_or("(invité)")) }
                dt { "Identité" } dd { (p.first_name.as_deref().unwrap_or("")) " "
                    (p.last_name.as_deref().unwrap_or("")) }
                dt { "Solde" } dd data-testid="player-balance" { (p.balance) }
                dt { "État" } dd data-testid="player-state" { (account_state(p, now)) }
                dt { "Sessions ouvertes" } dd data-testid="player-sessions" {
                    @if page.sessions.is_empty() { "aucune" }
                    @for (i, s) in page.sessions.iter().enumerate() { @if i > 0 { br; } "depuis le "
                        (when(s.started_at)) ", jusqu'au " (when(s.expires_at)) }
                }
            }
        }
        @if may(role, Power::Suspend) && p.closed_at.is_none() {
            section.card {
                h2 { @if p.suspended_at.is_some() { "Rétablir le compte" } @else { "Suspendre le compte" } }
                form.inline method="post" action={ "/joueurs/" (p.id) "/suspension" } {
                    input type="hidden" name="action" value=(if p.suspended_at.is_some() { "retablir" } else {
                        "suspendre" });
                    label { "Motif (obligatoire)" input name="reason" required maxlength="500"
                        data-testid="suspension-reason"; }
                    @if p.suspended_at.is_some() {
                        button type="submit" data-testid="restore" { "Rétablir" }
                    } @else {
                        button.danger type="submit" data-testid="suspend" { "Suspendre" }
                    }
                }
            }
        }
        @if may(role, Power::MoveMoney) && !p.guest {
            section.card {
                h2 { "Crédit ou débit" }
                form.inline method="post" action={ "/joueurs/" (p.id) "/ajustement" } {
                    label { "Sens" select name="direction" data-testid="adjust-direction" { option value="credit" {
                        "crédit" } option value="debit" { "débit" } } }
                    label { "Montant (€)" input name="amount" inputmode="decimal" required
                        data-testid="adjust-amount"; }
                    label { "Motif (obligatoire)" input name="reason" required maxlength="500"
                        data-testid="adjust-reason"; }
                    button type="submit" data-testid="adjust" { "Enregistrer" }
                }
            }
        }
        @if may(role, Power::MoveMoney) && p.closed_at.is_none() && !p.guest {
            section.card {
                h2 { "Fermer le compte" }
                p { "Définitif : le solde (" (p.balance) ") est versé au joueur, plus aucune mise ni aucun dépôt n'est \
                    possible." }
                form.inline method="post" action={ "/joueurs/" (p.id) "/fermeture" } {
                    label { "Motif (obligatoire)" input name="reason" required maxlength="500"
                        data-testid="close-reason"; }
                    button.danger type="submit" data-testid="close-account" { "Fermer le compte" }
                }
            }
        }
        section.card {
            h2 { "Jeu responsable (lecture seule)" }
            @if let Some(pause) = page.standing.paused {
                p data-testid="player-pause" { (pause_name(pause.kind)) " jusqu'au " (when(pause.until))
                    " — le personnel ne peut ni l'écourter ni la lever." }
            }
            table {
                thead { tr { th { "Limite" } th { "Montant" } th { "Utilisé" } } }
                tbody {
                    @for l in &page.standing.limits {
                        tr { td { (flow_name(l.flow)) " sur " (span_name(l.span)) } td {
                            (l.limit_cents.map_or("aucune".into(), |c| Cents(c).to_string())) } td {
                                (Cents(l.used_cents)) } }
                    }
                }
            }
            @if !page.events.is_empty() {
                details { summary { "Historique (" (page.events.len()) ")" }
                    ul { @for e in &page.events { li { (when(e.at)) " — " (e.kind) " (" (e.actor) ")" } } }
                }
            }
        }
        section.card {
            h2 { "Retraits" }
            @if page.withdrawals.is_empty() { p { "Aucun." } }
            ul { @for w in &page.withdrawals { li data-testid="player-withdrawal" { (when(w.asked_at)) " — "
                (w.amount) " — " (withdrawal_state(w.state)) } } }
            h2 { "Ajustements" }
            @if page.adjustments.is_empty() { p { "Aucun." } }
            ul { @for a in &page.adjustments { li { (when(a.asked_at)) " — " (format_signed_cents(a.amount_cents))
                " — " (adjustment_state(a.state)) " — " (a.reason) " (" (a.asked_by) ")" } } }
        }
        section.card {
            h2 { "Mouvements du portefeuille" }
            table {
                thead { tr { th { "Date" } th { "Nature" } th { "Montant" } th { "Billet ou motif" } } }
                tbody { @for l in &page.statement {
                    tr data-testid="statement-line" { td { (when(l.at)) } td { (kind_name(&l.kind)) } td {
                        (format_signed_cents(l.amount_cents)) } td {
                            (l.ticket.as_deref().or(l.reason.as_deref()).unwrap_or("")) } }
                } }
            }
        }
        section.card {
            h2 { "Derniers billets" }
            table {
                thead { tr { th { "Billet" } th { "Vendu le" } th { "Mode" } th { "Lot" } th { "État" } } }
                tbody { @for t in &page.tickets {
                    tr { td { a href={ "/joueurs/" (p.id) "/billets/" (t.id) } data-testid="ticket-link" {
                        (t.serial.to_string()) } } td { (when(t.sold_at)) } td { (t.mode.as_str()) } td { (t.lot) }
                         td { @if t.finished_at.is_some() { "terminé" } @else if t.credited_at.is_some() { "réglé" }
                             @else { "en cours (" (t.revealed.len()) "/12)" } } }
                } }
            }
        }
    };
    layout(member, &format!("Joueur {}", p.name.as_deref().unwrap_or(&p.id)), done, body)
}

pub fn withdrawals(member: &StaffRecord, pending: &[Withdrawal], done: Option<&str>) -> Markup {
    let act = may(member.role, Power::MoveMoney);
    let body = html! {
        @if pending.is_empty() { p data-testid="no-withdrawal" { "Aucun retrait en attente." } }
        @for w in pending {
            section.card data-testid="withdrawal" data-player=(w.player_id) {
                p { strong { (w.amount) } " demandés le " (when(w.asked_at)) " par " a href={ "/joueurs/"
                    (w.player_id) } { (w.player_id) } }
                @if act {
                    form.inline method="post" action={ "/retraits/" (w.id) } {
                        label { "Motif ou référence du \
                            virement" input name="reason" required maxlength="500" data-testid="withdrawal-reason"; }
                        button type="submit" name="decision" value="payer" data-testid="pay-withdrawal" { "Payer" }
                        button.danger type="submit" name="decision" value="refuser" data-testid="refuse-withdrawal" {
                            "Refuser" }
                    }
                }
            }
        }
    };
    layout(member, "Retraits en attente", done, body)
}

pub fn adjustments(member: &StaffRecord, pending: &[Adjustment], threshold: Cents, done: Option<&str>) -> Markup {
    let act = may(member.role, Power::MoveMoney);
    let body = html! {
        p { "Au-delà de " (threshold) ", un crédit ou un débit n'est appliqué qu'une fois validé par un second \
            membre." }
        @if pending.is_empty() { p data-testid="no-adjustment" { "Aucun ajustement en attente." } }
        @for a in pending {
            section.card data-testid="adjustment" {
                p { strong { (format_signed_cents(a.amount_cents)) } " pour " a href={ "/joueurs/" (a.player_id) } {
                    (a.player_id) }
                    " — " (a.reason) " — demandé par " (a.asked_by) " le " (when(a.asked_at)) }
                @if act && a.asked_by != member.actor() {
                    form.inline method="post" action={ "/ajustements/" (a.id) } {
                        button type="submit" name="decision" value="approuver" data-testid="approve-adjustment" {
                            "Approuver" }
                        button.danger type="submit" name="decision" value="rejeter" data-testid="reject-adjustment" {
                            "Rejeter" }
                    }
                }
            }
        }
    };
    layout(member, "Ajustements en attente", done, body)
}

pub fn audit_log(member: &StaffRecord, rows: &[AuditEntry], verified: &Result<i64, ChainBreak>) -> Markup {
    let body = html! {
        @match verified {
            Ok(n) => p.ok data-testid="audit-status" { "Chaîne intacte : " (n) " entrées vérifiées." },
            Err(broken) => p.refused data-testid="audit-status" { "Chaîne rompue à l'entrée " (broken.seq) " : "
                (broken.why) },
        }
        @if rows.is_empty() { p { "Aucune activité." } }
        @if !rows.is_empty() {
            table {
                thead { tr { th { "N°" } th { "Date" } th { "Auteur" } th { "Action" } th { "Cible" } th { "Avant" }
                    th { "Après" } th { "Motif" } } }
                tbody { @for e in rows {
                    tr data-testid="audit-row" { td { (e.seq) } td { (when(e.at)) } td { (e.actor) } td { (e.action) }
                        td { (e.target) }
                        td { code { (e.before.as_deref().unwrap_or("")) } } td { code {
                            (e.after.as_deref().unwrap_or("")) } } td { (e.reason.as_deref().unwrap_or("")) } }
                } }
            }
        }
    };
    layout(member, "Journal d'audit", None, body)
}

pub fn staff(member: &StaffRecord, staff: &[StaffRecord], done: Option<&str>) -> Markup {
    let body = html! {
        p { "Un membre s'ajoute en ligne de commande \
            (" code { "vegas staff add NOM --role RÔLE" } ") : son secret TOTP ne s'affiche qu'une fois, à lui seul." }
        table {
            thead { tr { th { "Membre" } th { "Rôle" } th { "Depuis le" } th { "Changer de rôle" } } }
            tbody { @for s in staff {
                tr data-testid="staff-row" {
                    td { (s.name) } td { (role_name(s.role)) } td { (when(s.created_at)) }
                    td { @if s.id != member.id {
                        form.inline method="post" action={ "/personnel/" (s.name) "/role" } {
                            label { "Rôle" select name="role" { @for r in Role::ALL { option value=(r.as_str())
                                selected[r == s.role] { (role_name(r)) } } } }
                            label { "Motif" input name="reason" required maxlength="500"; }
                            button type="submit" { "Changer" }
                        }
                    } }
                }
            } }
        }
    };
    layout(member, "Personnel", done, body)
}

pub fn reports_index(member: &StaffRecord, yesterday: &str) -> Markup {
    let body = html! {
        section.card {
            h2 { "Résumé journalier des comptes joueurs" }
            p { "Pour chaque compte : ouverture + dépôts + démo − mises + gains − retraits ± ajustements = clôture \
                (UTC)." }
            form.inline method="get" action="/rapports/journalier" {
                label { "Jour" input type="date" name="jour" value=(yesterday) required data-testid="report-day"; }
                button type="submit" data-testid="report-daily" { "Afficher" }
                button.quiet type="submit" name="format" value="csv" data-testid="report-daily-csv" {
                    "Télécharger (CSV)" }
            }
        }
        section.card {
            h2 { "Blocs" }
            p { a href="/rapports/blocs" data-testid="report-blocks" { "Afficher" } " · " a
                href="/rapports/blocs?format=csv" data-testid="report-blocks-csv" { "Télécharger (CSV)" } }
        }
        section.card {
            h2 { "Engagements en cours" }
            p { "Gains dus, retraits en attente, soldes des joueurs." }
            p { a href="/rapports/engagements" data-testid="report-liabilities" { "Afficher" } " · " a
                href="/rapports/engagements?format=csv" data-testid="report-liabilities-csv" { "Télécharger (CSV)" } }
        }
    };
    layout(member, "Rapports", None, body)
}

pub fn report(member: &StaffRecord, report: &super::reports::Report, name: &str, day: Option<&str>) -> Markup {
    let csv = match day {
        Some(day) => format!("/rapports/{name}?jour={day}&format=csv"),
        None => format!("/rapports/{name}?format=csv"),
    };
    let body = html! {
        dl.figures data-testid="report-meta" {
            dt { "Période" } dd { (report.period) }
            dt { "Généré le" } dd { (when(report.generated_at)) }
            dt { "Version" } dd { (super::reports::VERSION) }
        }
        p { a href=(csv) data-testid="report-csv" { "Télécharger (CSV)" } " · " a href="/rapports" { "Autres rapports"
            } }
        @if report.rows.is_empty() {
            p data-testid="report-empty" { "Aucune activité." }
        } @else {
            table data-testid="report-table" {
                thead { tr { @for c in &report.columns { th { (c) } } } }
                tbody { @for row in &report.rows { tr { @for cell in row { td { (cell.shown()) } } } } }
            }
        }
        @for note in &report.notes { @if note.starts_with("ATTENTION") { p.refused { (note) } } @else { p.ok { (note)
            } } }
    };
    layout(member, report.title, None, body)
}

/// A ticket as the game recalls it, zone by zone.
pub fn ticket(member: &StaffRecord, t: &TicketRecord, zones: &crate::rules::Ticket) -> Markup {
    let uncovered = |z: crate::rules::Zone| {
        t.revealed.iter().position(|&i| i == z.index()).map(|at| t.revealed_at.get(at).copied())
    };
    let body = html! {
        section.card {
            dl.figures {
                dt { "Joueur" } dd { a href={ "/joueurs/" (t.owner) } { (t.owner) } }
                dt { "Vendu le" } dd { (when(t.sold_at)) }
                dt { "Mode" } dd { (if t.mode == crate::play::Mode::Auto { "Auto" } else { "Jouez" }) }
                dt { "Lot" } dd data-testid="ticket-lot" { (t.lot) }
                dt { "Gain crédité le" } dd { (t.credited_at.map_or("pas encore".into(), when)) }
                dt { "Partie terminée le" } dd { (t.finished_at.map_or("en cours".into(), when)) }
            }
        }
        @for surface in crate::rules::Surface::ALL {
            section.card {
                h2 { (surface.name_fr()) }
                table {
                    thead { tr { th { "Zone" } th { "Symboles" } th { "Grattée" } } }
                    tbody { @for z in crate::rules::Zone::ALL.into_iter().filter(|z| z.surface() == surface) {
                        tr data-testid="ticket-zone" { td { (z.label_fr()) } td { (zones.zone_fr(z)) }
                            td { @match uncovered(z) { Some(Some(at)) => (when(at)), Some(None) => "oui", None =>
                                "non" } } }
                    } }
                }
            }
        }
    };
    layout(member, &format!("Billet {}", t.serial), None, body)
}
