//! The « Vérifier » page (`verify.html`, at `/verifier/`, the `verify` feature): what any player can
//! check in their own browser, trusting nothing the server computes. It reads a block's published
//! document (`/api/blocks/{e}/{b}`); once the block is closed and its seed out, it recomputes a ticket
//! from the seed and draws it uncovered, then every ticket of the block, its prize table and its root
//! ([`crate::block::published`], the same code as `vegas verify`). A few seconds of work: done in
//! slices, with the progress shown, so the page stays responsive.
//!
//! While the block is still on sale, a ticket of the player's own (found in their history, in this
//! browser's session) is shown to be in the block's commitment: its signature checked, its leaf
//! recomputed from its symbols and folded with its inclusion proof up to the published root — the
//! check the game makes before drawing it ([`super::trust::open_ticket`]), told in words.
//!
//! `#e=1&b=1&t=42` or `#t=E1-B1-0000042` in the address fills the form and starts at once (each entry
//! of the game's history links its ticket so). The ticket field takes the serial as printed on the
//! ticket (`E1-B1-0000042`, which names its block too) or the bare index.

use super::api::{self, HISTORY_PAGE, TicketView};
use super::ticket::TicketCard;
use super::trust::{self, Evidence};
use crate::api::InclusionProof;
use crate::block::published::{ClosedBlock, PublishedBlock};
use crate::block::{AuditReport, hex};
use crate::payload::{Jwks, Serial};
use crate::play::{Game, Mode};
use crate::rules::Zone;
use std::cell::Cell;
use std::rc::Rc;
use web_sys::HtmlInputElement;
use yew::prelude::*;

/// Tickets recomputed between two breaths of the page.
const SLICE: usize = 25_000;

#[derive(Debug, Clone, PartialEq)]
enum Status {
    Idle,
    Reading,
    /// The block is still on sale: nothing to recompute yet; what was found of the player's own ticket
    /// asked for, if one was.
    Open {
        root: String,
        own: String,
    },
    Progress {
        done: usize,
        of: usize,
    },
    Verified(Rc<AuditReport>),
    Failed(String),
    /// The ticket field holds neither a printed serial nor a number: nothing was asked of the server.
    Unreadable(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Request {
    emission: u32,
    block: u32,
    ticket: Option<u32>,
}

impl Request {
    /// From `#e=1&b=1&t=42`, or `#t=E1-B1-0000042` (a printed serial names its block).
    fn from_hash() -> Option<Request> {
        let hash = web_sys::window()?.location().hash().ok()?;
        let field = |name: &str| {
            hash.trim_start_matches('#')
                .split('&')
                .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
                .map(str::to_owned)
        };
        if let Some(serial) = field("t").and_then(|t| t.parse::<Serial>().ok()) {
            return Some(Request { emission: serial.emission, block: serial.block, ticket: Some(serial.index) });
        }
        let number = |name: &str| field(name)?.parse().ok();
        Some(Request { emission: number("e")?, block: number("b")?, ticket: number("t") })
    }
}

pub fn start() {
    yew::Renderer::<VerifyPage>::new().render();
}

#[function_component(VerifyPage)]
fn verify_page() -> Html {
    let asked = use_memo((), |_| Request::from_hash());
    let status = use_state(|| Status::Idle);
    let ticket = use_state(|| None::<Rc<Game>>);
    let (emission, block, index) = (use_node_ref(), use_node_ref(), use_node_ref());
    // What the player typed in the ticket field, kept over the page's renders (a typo stays there to
    // be corrected).
    let typed = use_state(|| {
        asked
            .and_then(|a| a.ticket.map(|t| Serial { emission: a.emission, block: a.block, index: t }.to_string()))
            .unwrap_or_default()
    });
    let on_type = {
        let typed = typed.clone();
        Callback::from(move |e: InputEvent| typed.set(e.target_unchecked_into::<HtmlInputElement>().value()))
    };

    let run = {
        let (status, ticket) = (status.clone(), ticket.clone());
        Callback::from(move |request: Request| {
            let (status, ticket) = (status.clone(), ticket.clone());
            ticket.set(None);
            status.set(Status::Reading);
            yew::platform::spawn_local(async move {
                if let Err(e) = verify(request, &status, &ticket).await {
                    status.set(Status::Failed(e));
                }
            });
        })
    };
    {
        let run = run.clone();
        use_effect_with(*asked, move |asked| {
            if let Some(request) = asked {
                run.emit(*request);
            }
        });
    }
    let on_submit = {
        let (emission, block, index, status) = (emission.clone(), block.clone(), index.clone(), status.clone());
        Callback::from(move |e: SubmitEvent| {
            e.prevent_default();
            let value = |input: &NodeRef| input.cast::<HtmlInputElement>().map(|i| i.value()).unwrap_or_default();
            let (Ok(emission_asked), Ok(block_asked)) = (value(&emission).trim().parse(), value(&block).trim().parse())
            else {
                return;
            };
            let typed = value(&index).trim().to_owned();
            let request = if typed.is_empty() {
                Request { emission: emission_asked, block: block_asked, ticket: None }
            } else if let Ok(serial) = typed.parse::<Serial>() {
                // The printed serial names its block too: the form shows the one verified.
                for (input, number) in [(&emission, serial.emission), (&block, serial.block)] {
                    if let Some(input) = input.cast::<HtmlInputElement>() {
                        input.set_value(&number.to_string());
                    }
                }
                Request { emission: serial.emission, block: serial.block, ticket: Some(serial.index) }
            } else if let Ok(index) = typed.parse() {
                Request { emission: emission_asked, block: block_asked, ticket: Some(index) }
            } else {
                return status.set(Status::Unreadable(typed));
            };
            run.emit(request);
        })
    };
    let asked = asked.unwrap_or(Request { emission: 1, block: 1, ticket: None });
    let busy = matches!(*status, Status::Reading | Status::Progress { .. });

    html! {
        <div class="app verify-page">
            <header class="topbar">
                <h1 class="logo">{ "Vegas" }<small>{ "vérifier un bloc" }</small></h1>
                <a class="link" href="/">{ "Retour au jeu" }</a>
            </header>
            <section class="verify-intro">
                <p>{ "Avant sa première vente, chaque bloc de 1 500 000 tickets publie son engagement : une empreinte \
                    (racine de Merkle) de tous ses tickets. Le jeu vérifie chaque ticket acheté contre elle avant de \
                        l'afficher." }</p>
                <p>{ "Une fois le bloc vendu, sa graine est publiée : cette page recalcule alors, dans votre \
                    navigateur, n'importe quel ticket, puis le bloc entier, sa table des gains et son empreinte." }</p>
            </section>
            <form class="verify-form" onsubmit={on_submit} data-testid="verify-form">
                <label>{ "Émission" }<input ref={emission} type="number" min="0" required=true
                    value={asked.emission.to_string()} data-testid="verify-emission" /></label>
                <label>{ "Bloc" }<input ref={block} type="number" min="1" required=true
                    value={asked.block.to_string()} data-testid="verify-block" /></label>
                <label>{ "Ticket (facultatif) : son numéro \
                    imprimé" }<input ref={index} type="text" autocomplete="off" spellcheck="false"
                        placeholder="E1-B1-0000005" value={(*typed).clone()} oninput={on_type}
                            data-testid="verify-ticket" /></label>
                <button class="play jouez" type="submit" disabled={busy} data-testid="verify-run">{ "Vérifier"
                    }</button>
            </form>
            <p class="verify-status" role="status" aria-live="polite" data-testid="verify-status">{
                status_line(&status) }</p>
            if let Status::Verified(report) = &*status { { prize_lines(report) } }
            if let Some(game) = &*ticket {
                <TicketCard game={(**game).clone()} on_reveal={Callback::noop()} on_choose={Callback::noop()} />
            }
            <footer data-testid="responsible-gaming">{ crate::api::RESPONSIBLE_GAMING }</footer>
        </div>
    }
}

fn status_line(status: &Status) -> Html {
    let text = match status {
        Status::Idle => String::new(),
        Status::Reading => "Lecture du bloc publié…".into(),
        Status::Open { root, own } => format!(
            "{own}Ce bloc est encore en vente : sa graine sera publiée à sa clôture. Son empreinte publiée : {root}."
        ),
        Status::Progress { done, of } => {
            format!(
                "Recalcul du bloc depuis sa graine : {} % ({} tickets sur {})…",
                done * 100 / of.max(&1),
                group(*done),
                group(*of)
            )
        }
        Status::Verified(report) => format!(
            "Bloc vérifié : {} tickets recalculés depuis la graine, table des gains conforme au règlement, empreinte \
                identique à l'engagement ({}).",
            group(report.tickets as usize),
            hex(&report.root)
        ),
        Status::Failed(why) => format!("Échec de la vérification : {why}"),
        // The example is kept on one line: cut at a hyphen, it would not read as one number.
        Status::Unreadable(typed) => {
            return html! {
                <>
                    { format!("« {typed} » n'est pas un numéro de ticket : saisissez celui imprimé sur le ticket (par \
                        exemple ") }
                    <span class="serial-example">{ "E1-B1-0000005" }</span>
                    { "), ou son rang dans le bloc." }
                </>
            };
        }
    };
    html! { text }
}

fn group(n: usize) -> String {
    crate::money::group_thousands(n as u64)
}

fn prize_lines(report: &AuditReport) -> Html {
    html! {
        <table class="verify-prizes" data-testid="verify-prizes">
            <thead><tr><th>{ "Gain" }</th><th>{ "Tickets" }</th></tr></thead>
            <tbody>
                { for report.counts.iter().rev().map(|(lot, count)| html! { <tr><td>{ lot.to_string() }</td><td>{
                    group(*count as usize) }</td></tr> }) }
            </tbody>
        </table>
    }
}

async fn verify(
    request: Request,
    status: &UseStateHandle<Status>,
    ticket: &UseStateHandle<Option<Rc<Game>>>,
) -> Result<(), String> {
    let url = format!("/api/blocks/{}/{}", request.emission, request.block);
    let answer =
        gloo_net::http::Request::get(&url).send().await.map_err(|e| format!("le serveur ne répond pas ({e})"))?;
    if answer.status() == 404 {
        return Err(format!("aucun bloc E{}-B{}", request.emission, request.block));
    }
    let text = answer.text().await.map_err(|e| e.to_string())?;
    let published: PublishedBlock =
        crate::json::from_str(&text).map_err(|e| format!("le document du bloc est illisible ({e})"))?;
    if published.seed.is_none() {
        let own = match request.ticket {
            Some(index) => {
                own_ticket_included(
                    Serial { emission: request.emission, block: request.block, index },
                    &published.root,
                    ticket,
                )
                .await
            }
            None => String::new(),
        };
        status.set(Status::Open { root: published.root, own });
        return Ok(());
    }
    let closed = ClosedBlock::read(&published).map_err(|e| e.to_string())?;
    if let Some(index) = request.ticket {
        let recomputed = closed.ticket(index).map_err(|e| e.to_string())?;
        let outcome = recomputed.ticket.evaluate().map_err(|e| e.to_string())?;
        ticket.set(Some(Rc::new(Game {
            ticket_id: String::new(),
            serial: recomputed.serial.to_string(),
            mode: Mode::Auto,
            ticket: recomputed.ticket,
            outcome,
            revealed: Zone::ALL.to_vec(),
            chosen: None,
            completed: true,
        })));
    }
    let audit = closed.audit_in_steps().map_err(|e| e.to_string())?;
    let of = audit.tickets();
    let mut leaves = Vec::with_capacity(of);
    while leaves.len() < of {
        status.set(Status::Progress { done: leaves.len(), of });
        // A breath: the page paints the progress and stays responsive.
        gloo_timers::future::TimeoutFuture::new(0).await;
        let next = (leaves.len() + SLICE).min(of);
        leaves.extend(audit.leaves(leaves.len()..next).map_err(|e| e.to_string())?);
    }
    let report = audit.conclude(leaves).map_err(|e| e.to_string())?;
    status.set(Status::Verified(Rc::new(report)));
    Ok(())
}

/// What the check of a player's own ticket fetches: the keys, and its inclusion proof, against the root
/// this page read from the block's published document.
struct PublishedRoot {
    root: String,
    siblings: Cell<usize>,
}

impl Evidence for PublishedRoot {
    async fn fresh_keys(&self) -> Option<Jwks> {
        api::jwks().await.ok()
    }

    async fn commitment(
        &self,
        ticket_id: &str,
        _emission: u32,
        _block: u32,
    ) -> Result<(InclusionProof, String), String> {
        let proof = api::proof(ticket_id).await.map_err(|e| e.message_fr())?;
        self.siblings.set(proof.path.len());
        Ok((proof, self.root.clone()))
    }
}

/// The player's ticket of this serial, looked for in their history (newest first, a page at a time);
/// none if it is not theirs, or no one is signed in.
async fn own_ticket(serial: &str) -> Option<TicketView> {
    let mut before: Option<String> = None;
    loop {
        let page = api::history(before.as_deref()).await.ok()?;
        if let Some(found) = page.iter().find(|t| t.serial == serial) {
            return Some(found.clone());
        }
        // A page holds HISTORY_PAGE tickets, and the first of the next page when there is one.
        page.get(HISTORY_PAGE)?;
        before = Some(page[HISTORY_PAGE - 1].id.clone());
    }
}

/// Whether the player's own ticket `serial` is in the commitment `root` of its block still on sale, in
/// words; a finished ticket is drawn too (an unfinished one is not: it would be uncovered here).
async fn own_ticket_included(serial: Serial, root: &str, ticket: &UseStateHandle<Option<Rc<Game>>>) -> String {
    let serial = serial.to_string();
    let Some(view) = own_ticket(&serial).await else {
        return format!(
            "Le ticket {serial} n'est pas parmi les vôtres dans ce navigateur : ouvrez le jeu avec le compte qui l'a \
                acheté, puis revenez ici pour vérifier sa place dans le bloc. "
        );
    };
    let evidence = PublishedRoot { root: root.to_owned(), siblings: Cell::new(0) };
    let checked = match api::jwks().await {
        Ok(jwks) => trust::open_ticket(&view, &jwks, false, &evidence).await,
        Err(e) => Err(e.message_fr()),
    };
    match checked {
        Ok(game) => {
            let lot = if game.completed { format!(" (gain : {})", game.outcome.lot) } else { String::new() };
            if game.completed {
                ticket.set(Some(Rc::new(game)));
            }
            format!(
                "Votre ticket {serial}{lot} fait bien partie de ce bloc. Votre navigateur a vérifié sa signature, \
                    recalculé son empreinte à partir de ses symboles et de son gain, puis l'a combinée une à une aux \
                    {} empreintes voisines fournies par le serveur : il retrouve exactement l'empreinte que le bloc a \
                    publiée avant sa première vente. Ce ticket était donc fixé avant votre achat, et personne n'a pu \
                    le changer depuis. ",
                evidence.siblings.get()
            )
        }
        Err(why) => format!("Votre ticket {serial} ne correspond pas à l'engagement publié du bloc : {why} "),
    }
}
