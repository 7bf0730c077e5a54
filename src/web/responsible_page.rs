//! The « Jeu responsable » page (`responsible.html`, at `/jeu-responsable/`, the `responsible` feature):
//! the player's limits with what is left of each, pending raises to confirm, the reality-check interval,
//! breaks and self-exclusion behind a confirmation step, and 12 months of the record. Its own build:
//! none of it is in the game's first load. The server enforces all of it; the page only asks and shows.
//!
//! Real-money onboarding starts here too (`?inscription`, where the game's « Créer un compte » leads):
//! the registration asks the identity the law asks for, then the 7-day limits come first.

use super::api::{ApiFailure, Flow, Span};
use crate::api::{ErrorCode, LimitState, PendingRaise, ResponsibleEvent, Standing, WithdrawalInfo};
use crate::money::Cents;
use gloo_net::http::Request;
use serde::Serialize;
use web_sys::{HtmlInputElement, HtmlSelectElement};
use yew::prelude::*;

/// What the player reads of a refusal: the page's own refusals, then the game's.
fn message_fr(e: &ApiFailure) -> String {
    match e.code {
        Some(ErrorCode::UnderAge) => "Le jeu est interdit aux mineurs : il faut avoir 18 ans.".into(),
        Some(ErrorCode::Banned) => {
            "Inscription impossible : cette identité figure au fichier des interdits de jeu.".into()
        }
        Some(ErrorCode::AlreadyPaused) => "Une pause aussi longue, ou plus longue, est déjà en cours.".into(),
        Some(ErrorCode::RaiseNotYet) => {
            "Une hausse s'applique au plus tôt 48 h après la demande : confirmez-la plus tard.".into()
        }
        Some(ErrorCode::RaiseLapsed) => "Cette hausse a expiré faute de confirmation : demandez-la de nouveau.".into(),
        Some(ErrorCode::Overdraft) => "Ce montant dépasse votre solde disponible.".into(),
        Some(ErrorCode::InvalidIdentity) => "Indiquez vos prénom, nom et date de naissance (jour, mois, année).".into(),
        _ => e.message_fr(),
    }
}

fn date_fr(unix: i64) -> String {
    super::dates::french_time(unix, true)
}

pub fn start() {
    yew::Renderer::<ResponsiblePage>::new().render();
}

/// What the page shows, as last read from the server.
#[derive(Clone, PartialEq)]
struct Loaded {
    standing: Standing,
    history: Vec<ResponsibleEvent>,
    demo: bool,
    balance_cents: i64,
    /// Real money only: what the player asked to withdraw, and what became of it.
    withdrawals: Vec<WithdrawalInfo>,
}

#[derive(Clone, PartialEq)]
enum View {
    Loading,
    SignedOut,
    Ready(Box<Loaded>),
    /// A pause taken: the player is signed out.
    Paused(String),
}

async fn send<T: serde::de::DeserializeOwned>(request: Request) -> Result<T, ApiFailure> {
    super::api::read(request.send().await).await
}

fn get(url: &str) -> Request {
    let Ok(request) = Request::get(url).build() else { unreachable!("a GET request always builds") };
    request
}

fn json(method: &str, url: &str, body: &impl Serialize) -> Request {
    let builder = match method {
        "PUT" => Request::put(url),
        _ => Request::post(url),
    };
    let Ok(request) = builder
        .header("Content-Type", "application/json")
        .body(crate::json::to_string(body).expect("plain structs serialise"))
    else {
        unreachable!("a string body is always accepted")
    };
    request
}

async fn load() -> Result<View, ApiFailure> {
    let me: crate::api::Me = match super::api::me().await {
        Err(e) if e.status == 401 => return Ok(View::SignedOut),
        other => other?,
    };
    let standing = send(get("/api/responsible")).await?;
    let history = send(get("/api/responsible/history")).await?;
    let withdrawals = if me.demo { Vec::new() } else { send(get("/api/wallet/withdrawals")).await? };
    Ok(View::Ready(Box::new(Loaded { standing, history, demo: me.demo, balance_cents: me.balance_cents, withdrawals })))
}

#[derive(Serialize)]
struct LimitBody {
    flow: Flow,
    span: Span,
    amount_cents: Option<u64>,
}

#[derive(Serialize)]
struct LimitName {
    flow: Flow,
    span: Span,
}

#[derive(Serialize)]
struct Minutes {
    minutes: u32,
}

/// A break or an exclusion, as the API takes it.
#[derive(Serialize, Clone, Copy, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum PauseAsk {
    Break { days: u32 },
    Exclusion { months: Option<u32>, days: Option<u32> },
}

impl PauseAsk {
    fn text(self) -> String {
        match self {
            PauseAsk::Break { days: 1 } => "une pause de 24 heures".into(),
            PauseAsk::Break { days } => format!("une pause de {days} jours"),
            PauseAsk::Exclusion { months: Some(60), .. } => "une auto-exclusion de 5 ans".into(),
            PauseAsk::Exclusion { months: Some(12), .. } => "une auto-exclusion d'un an".into(),
            PauseAsk::Exclusion { months: Some(m), .. } => format!("une auto-exclusion de {m} mois"),
            PauseAsk::Exclusion { days, .. } => format!("une auto-exclusion de {} jours", days.unwrap_or(0)),
        }
    }
}

/// The pauses offered, as the select lists them.
const PAUSES: [(&str, PauseAsk); 6] = [
    ("break-1", PauseAsk::Break { days: 1 }),
    ("break-7", PauseAsk::Break { days: 7 }),
    ("break-30", PauseAsk::Break { days: 30 }),
    ("exclusion-6", PauseAsk::Exclusion { months: Some(6), days: None }),
    ("exclusion-12", PauseAsk::Exclusion { months: Some(12), days: None }),
    ("exclusion-60", PauseAsk::Exclusion { months: Some(60), days: None }),
];

fn input_value(node: &NodeRef) -> String {
    node.cast::<HtmlInputElement>().map(|i| i.value()).unwrap_or_default()
}

/// Euros as typed (« 20 », « 12,50 »), in cents; empty is none. `what` names the amount a refusal
/// speaks of (« Une limite »).
fn cents_typed(text: &str, what: &str) -> Result<Option<u64>, String> {
    let text = text.trim().replace(',', ".");
    if text.is_empty() {
        return Ok(None);
    }
    let euros: f64 = text.parse().map_err(|_| format!("« {text} » n'est pas un montant en euros"))?;
    if !(0.01..=100_000.0).contains(&euros) {
        return Err(format!("{what} va de 0,01 € à 100 000 €."));
    }
    Ok(Some((euros * 100.0).round() as u64))
}

#[function_component(ResponsiblePage)]
fn responsible_page() -> Html {
    let view = use_state(|| View::Loading);
    let notice = use_state(|| None::<(bool, String)>);
    let reload = {
        let (view, notice) = (view.clone(), notice.clone());
        Callback::from(move |_: ()| {
            let (view, notice) = (view.clone(), notice.clone());
            yew::platform::spawn_local(async move {
                match load().await {
                    Ok(loaded) => view.set(loaded),
                    Err(e) => notice.set(Some((false, message_fr(&e)))),
                }
            });
        })
    };
    {
        let reload = reload.clone();
        use_effect_with((), move |_| reload.emit(()));
    }
    // Runs a request, then says how it went and reads everything again; without one, says what is wrong.
    let act = {
        let (notice, reload) = (notice.clone(), reload.clone());
        Callback::from(move |(request, text): (Option<Request>, String)| {
            let Some(request) = request else { return notice.set(Some((false, text))) };
            let (notice, reload) = (notice.clone(), reload.clone());
            yew::platform::spawn_local(async move {
                match send::<serde::de::IgnoredAny>(request).await {
                    Ok(_) => notice.set(Some((true, text))),
                    Err(e) => notice.set(Some((false, message_fr(&e)))),
                }
                reload.emit(());
            });
        })
    };

    let body = match &*view {
        View::Loading => html! { <p class="rg-status" role="status">{ "Chargement…" }</p> },
        View::SignedOut => html! { <Registration on_done={reload.clone()} /> },
        View::Paused(text) => html! { <p class="rg-status" role="status" data-testid="rg-paused">{ text.clone() }</p> },
        View::Ready(loaded) => {
            let missing = loaded.standing.limits.iter().any(|l| l.span == Span::Week && l.limit_cents.is_none());
            html! { <>
                if missing && !loaded.demo {
                    <p class="rg-required" role="note" data-testid="rg-required">
                        { "Avant tout dépôt et tout achat, fixez vos limites de dépôt et de mise sur 7 jours. Vous \
                            pourrez les baisser à tout moment ; une hausse ne s'appliquera qu'après 48 heures, une \
                            fois confirmée." }
                    </p>
                }
                { limits_section(loaded, &act) }
                { pending_section(&loaded.standing.pending, &act) }
                { reality_section(loaded.standing.reality_minutes, &act) }
                if !loaded.demo { <WithdrawalSection balance_cents={loaded.balance_cents}
                    withdrawals={loaded.withdrawals.clone()} act={act.clone()} /> }
                <PauseSection paused={loaded.standing.paused} view={view.clone()} notice={notice.clone()} />
                { history_section(&loaded.history) }
            </> }
        }
    };
    html! {
        <div class="app rg-page">
            <header class="topbar">
                <h1 class="logo">{ "Vegas" }<small>{ "jeu responsable" }</small></h1>
                <a class="link" href="/" data-testid="back-to-game">{ "Retour au jeu" }</a>
            </header>
            <main>
                if let Some((ok, text)) = &*notice {
                    <p class={if *ok { "rg-notice" } else { "error" }} role={if *ok { "status" } else { "alert" }}
                        data-testid="rg-notice">{ text.clone() }</p>
                }
                { body }
            </main>
            <footer data-testid="responsible-gaming">{ crate::api::RESPONSIBLE_GAMING }</footer>
        </div>
    }
}

/// A request to run and what to say once it is done; or, with none, what is wrong.
type Act = Callback<(Option<Request>, String)>;

#[derive(Properties, PartialEq)]
struct RegistrationProps {
    on_done: Callback<()>,
}

/// A real-money account: a name and a password, and the identity the law asks for (18 or older; the
/// national ban file is checked). Once created, the page shows the limits to set first.
#[function_component(Registration)]
fn registration(props: &RegistrationProps) -> Html {
    let inputs: [NodeRef; 5] = [use_node_ref(), use_node_ref(), use_node_ref(), use_node_ref(), use_node_ref()];
    let error = use_state(|| None::<String>);
    let on_submit = {
        let (inputs, error, on_done) = (inputs.clone(), error.clone(), props.on_done.clone());
        Callback::from(move |e: SubmitEvent| {
            e.prevent_default();
            let [name, password, first_name, last_name, birth_date] = inputs.each_ref().map(input_value);
            let (error, on_done) = (error.clone(), on_done.clone());
            yew::platform::spawn_local(async move {
                let form = super::api::Registration {
                    name: &name,
                    password: &password,
                    first_name: &first_name,
                    last_name: &last_name,
                    birth_date: &birth_date,
                };
                match super::api::register(&form).await {
                    Ok(_) => on_done.emit(()),
                    Err(e) => error.set(Some(message_fr(&e))),
                }
            });
        })
    };
    let field = |i: usize, label: &str, kind: &str, auto: &str, test: &str| {
        html! { <label>{ label.to_owned() }<input ref={inputs[i].clone()} type={kind.to_owned()}
        autocomplete={auto.to_owned()} required=true data-testid={test.to_owned()} /></label> }
    };
    html! {
        <section class="rg-section" aria-labelledby="rg-register">
            <h2 id="rg-register">{ "Créer mon compte" }</h2>
            <p class="rg-help">{ "Jouer en argent réel est réservé aux personnes majeures. Votre identité est vérifiée \
                auprès du fichier des interdits de jeu. Vous fixerez ensuite vos limites de dépôt et de mise, avant \
                tout dépôt et tout achat. Déjà un compte ? \
                " }<a href="/">{ "Se connecter depuis le jeu" }</a>{ "." }</p>
            <form class="rg-register" onsubmit={on_submit} data-testid="rg-register">
                { field(0, "Nom de joueur", "text", "username", "register-name") }
                { field(1, "Mot de passe (8 caractères au moins)", "password", "new-password", "register-password") }
                { field(2, "Prénom", "text", "given-name", "register-first-name") }
                { field(3, "Nom de famille", "text", "family-name", "register-last-name") }
                { field(4, "Date de naissance", "date", "bday", "register-birth-date") }
                if let Some(message) = &*error { <p class="error" role="alert" data-testid="register-error">{
                    message.clone() }</p> }
                <button class="play jouez" type="submit" data-testid="register-submit">{ "Créer mon compte" }</button>
            </form>
        </section>
    }
}

fn limit_row(limit: &LimitState, act: &Act) -> Html {
    let input = NodeRef::default();
    let (flow, span) = (limit.flow, limit.span);
    let id = format!("limit-{}-{}", flow_key(flow), span_key(span));
    let on_submit = {
        let (act, input) = (act.clone(), input.clone());
        Callback::from(move |e: SubmitEvent| {
            e.prevent_default();
            let body = cents_typed(&input_value(&input), "Une limite").map(|amount_cents| LimitBody {
                flow,
                span,
                amount_cents,
            });
            if let (Ok(_), Some(field)) = (&body, input.cast::<HtmlInputElement>()) {
                field.set_value("");
            }
            match body {
                Ok(body) => act.emit((
                    Some(json("PUT", "/api/responsible/limits", &body)),
                    format!("Limite de {} {} enregistrée.", flow_fr(flow), span_fr(span)),
                )),
                Err(e) => act.emit((None, e)),
            }
        })
    };
    let left = match (limit.limit_cents, limit.left_cents) {
        (Some(_), Some(left)) => format!("reste {}", Cents(left)),
        _ => "aucune limite".into(),
    };
    let frees = limit.next_frees_at.map(|at| format!(" · se libère dès le {}", date_fr(at))).unwrap_or_default();
    html! {
        <form class="rg-limit" onsubmit={on_submit} data-testid={id.clone()}>
            <label for={id.clone()}>{ span_fr(span) }</label>
            <span class="rg-now">{ limit.limit_cents.map_or_else(|| "—".to_owned(), |c| Cents(c).to_string()) }</span>
            <span class="rg-left">{ format!("utilisé {} · {left}{frees}", Cents(limit.used_cents)) }</span>
            <input id={id.clone()} ref={input} inputmode="decimal" placeholder="nouvelle limite en €"
                aria-label={format!("Nouvelle limite de {} {}", flow_fr(flow), span_fr(span))} />
            <button class="button" type="submit">{ "Enregistrer" }</button>
        </form>
    }
}

fn flow_fr(flow: Flow) -> &'static str {
    super::api::flow_fr(flow_key(flow))
}

fn span_fr(span: Span) -> &'static str {
    super::api::span_fr(span_key(span))
}

fn pause_fr(pause: crate::api::Pause) -> String {
    let kind = match pause.kind {
        crate::api::PauseKind::Break => "break",
        crate::api::PauseKind::Exclusion => "exclusion",
        crate::api::PauseKind::Closed => "closed",
    };
    super::api::pause_fr(kind, pause.until)
}

fn flow_key(flow: Flow) -> &'static str {
    match flow {
        Flow::Stake => "stake",
        Flow::Deposit => "deposit",
    }
}

fn span_key(span: Span) -> &'static str {
    match span {
        Span::Day => "day",
        Span::Week => "week",
        Span::Month => "month",
    }
}

fn limits_section(loaded: &Loaded, act: &Act) -> Html {
    let group = |flow: Flow, title: &str| {
        html! {
            <fieldset class="rg-group">
                <legend>{ title.to_owned() }</legend>
                { for loaded.standing.limits.iter().filter(|l| l.flow == flow).map(|l| limit_row(l, act)) }
            </fieldset>
        }
    };
    html! {
        <section class="rg-section" aria-labelledby="rg-limits">
            <h2 id="rg-limits">{ "Mes limites" }</h2>
            <p class="rg-help">{ "Sur des périodes glissantes : une mise comptée à 10 h libère sa part de la limite à \
                10 h, une période plus tard. La plus basse qui s'applique l'emporte. Laisser vide pour supprimer une \
                limite (sauf celles sur 7 jours, obligatoires)." }</p>
            { group(Flow::Deposit, "Dépôts") }
            { group(Flow::Stake, "Mises") }
        </section>
    }
}

fn pending_section(pending: &[PendingRaise], act: &Act) -> Html {
    if pending.is_empty() {
        return html! {};
    }
    let now = (js_sys::Date::now() / 1000.0) as i64;
    html! {
        <section class="rg-section" aria-labelledby="rg-pending">
            <h2 id="rg-pending">{ "Hausses en attente" }</h2>
            <ul class="rg-list">
                { for pending.iter().map(|p| {
                    let to = p.amount_cents.map_or_else(|| "aucune limite".to_owned(), |c| Cents(c).to_string());
                    let on_confirm = { let act = act.clone(); let (flow, span) = (p.flow, p.span);
                        Callback::from(move |_: MouseEvent| act.emit((Some(json("POST",
                            "/api/responsible/limits/confirm", &LimitName { flow, span })),
                                "Hausse confirmée.".into()))) };
                    html! {
                        <li data-testid="rg-pending">
                            { format!("Limite de {} {} : {to}, demandée le {} ; confirmable du {} au \
                                {}.", flow_fr(p.flow), span_fr(p.span), date_fr(p.asked_at),
                                    date_fr(p.confirmable_at), date_fr(p.lapses_at)) }
                            <button class="button" disabled={now < p.confirmable_at} onclick={on_confirm}
                                data-testid="rg-confirm">{ "Confirmer" }</button>
                        </li>
                    }
                }) }
            </ul>
        </section>
    }
}

fn reality_section(minutes: u32, act: &Act) -> Html {
    let on_change = {
        let act = act.clone();
        Callback::from(move |e: Event| {
            let Some(select) = e.target_dyn_into::<HtmlSelectElement>() else { return };
            let Ok(minutes) = select.value().parse() else { return };
            act.emit((
                Some(json("PUT", "/api/responsible/reality-check", &Minutes { minutes })),
                format!("Point sur la session toutes les {minutes} minutes."),
            ));
        })
    };
    html! {
        <section class="rg-section" aria-labelledby="rg-reality">
            <h2 id="rg-reality">{ "Point sur la session" }</h2>
            <label class="rg-inline">{ "Me rappeler mon temps de jeu et mes mises toutes les " }
                <select onchange={on_change} data-testid="rg-reality">
                    { for [15, 30, 60].map(|m| html! { <option value={m.to_string()} selected={m == minutes}>{
                        format!("{m} minutes") }</option> }) }
                </select>
            </label>
        </section>
    }
}

#[derive(Serialize)]
struct WithdrawalBody {
    amount_cents: u64,
}

#[derive(Properties, PartialEq)]
struct WithdrawalProps {
    balance_cents: i64,
    withdrawals: Vec<WithdrawalInfo>,
    act: Act,
}

fn withdrawal_fr(w: &WithdrawalInfo) -> String {
    let amount = Cents(w.amount_cents);
    let decided = w.decided_at.map(date_fr).unwrap_or_default();
    match w.state.as_str() {
        "paid" => format!("{amount} — payé le {decided}"),
        "refused" => format!(
            "{amount} — refusé le {decided} ({}) : le montant est revenu sur votre solde",
            w.reason.as_deref().unwrap_or("sans motif")
        ),
        _ => format!("{amount} — en attente depuis le {} (déjà retiré de votre solde)", date_fr(w.asked_at)),
    }
}

/// Withdrawing money (real money only): the amount leaves the balance at once and waits for the
/// operator, who pays it or refuses it (then it comes back).
#[function_component(WithdrawalSection)]
fn withdrawal_section(props: &WithdrawalProps) -> Html {
    let input = use_node_ref();
    let on_submit = {
        let (input, act) = (input.clone(), props.act.clone());
        Callback::from(move |e: SubmitEvent| {
            e.prevent_default();
            match cents_typed(&input_value(&input), "Un retrait") {
                Ok(Some(amount_cents)) => {
                    if let Some(field) = input.cast::<HtmlInputElement>() {
                        field.set_value("");
                    }
                    let text =
                        format!("Retrait de {} demandé : il sera versé après vérification.", Cents(amount_cents));
                    act.emit((Some(json("POST", "/api/wallet/withdrawals", &WithdrawalBody { amount_cents })), text));
                }
                Ok(None) => act.emit((None, "Indiquez le montant à retirer.".into())),
                Err(why) => act.emit((None, why)),
            }
        })
    };
    html! {
        <section class="rg-section" aria-labelledby="rg-withdraw">
            <h2 id="rg-withdraw">{ "Retirer de l'argent" }</h2>
            <p>{ "Solde disponible : " }<strong data-testid="rg-balance">{
                crate::money::format_signed_cents(props.balance_cents) }</strong></p>
            <form class="rg-withdraw" onsubmit={on_submit}>
                <label for="rg-withdraw-amount">{ "Montant (€)" }</label>
                <input id="rg-withdraw-amount" ref={input} inputmode="decimal" placeholder="par exemple 20"
                    data-testid="rg-withdraw-amount" />
                <button class="button" type="submit" data-testid="rg-withdraw">{ "Demander le retrait" }</button>
            </form>
            if !props.withdrawals.is_empty() {
                <ul class="rg-withdrawals">
                    { for props.withdrawals.iter().rev().map(|w| html! { <li data-testid="rg-withdrawal"
                        data-state={w.state.clone()}>{ withdrawal_fr(w) }</li> }) }
                </ul>
            }
        </section>
    }
}

#[derive(Properties, PartialEq)]
struct PauseProps {
    paused: Option<crate::api::Pause>,
    view: UseStateHandle<View>,
    notice: UseStateHandle<Option<(bool, String)>>,
}

/// Breaks and self-exclusion: chosen, then confirmed, for nothing lifts them early.
#[function_component(PauseSection)]
fn pause_section(props: &PauseProps) -> Html {
    let asked = use_state(|| None::<PauseAsk>);
    let (choice, days) = (use_node_ref(), use_node_ref());
    if let Some(pause) = props.paused {
        return html! {
            <section class="rg-section" aria-labelledby="rg-pause">
                <h2 id="rg-pause">{ "Pause et auto-exclusion" }</h2>
                <p data-testid="rg-paused">{ pause_fr(pause) }</p>
            </section>
        };
    }
    let on_choose = {
        let (asked, choice, days, notice) = (asked.clone(), choice.clone(), days.clone(), props.notice.clone());
        Callback::from(move |e: SubmitEvent| {
            e.prevent_default();
            let picked = choice.cast::<HtmlSelectElement>().map(|s| s.value()).unwrap_or_default();
            let ask = match PAUSES.iter().find(|(key, _)| *key == picked) {
                Some((_, ask)) => Some(*ask),
                None => input_value(&days)
                    .trim()
                    .parse()
                    .ok()
                    .filter(|d| (1..=365).contains(d))
                    .map(|d| PauseAsk::Exclusion { months: None, days: Some(d) }),
            };
            match ask {
                Some(ask) => asked.set(Some(ask)),
                None => notice.set(Some((false, "Une auto-exclusion sur mesure dure de 1 à 365 jours.".into()))),
            }
        })
    };
    let on_confirm = {
        let (asked, view, notice) = (asked.clone(), props.view.clone(), props.notice.clone());
        Callback::from(move |_: MouseEvent| {
            let Some(ask) = *asked else { return };
            let (view, notice) = (view.clone(), notice.clone());
            yew::platform::spawn_local(async move {
                match send::<crate::api::Pause>(json("POST", "/api/responsible/pause", &ask)).await {
                    Ok(pause) => view.set(View::Paused(format!("{} Vous êtes déconnecté.", pause_fr(pause)))),
                    Err(e) => notice.set(Some((false, message_fr(&e)))),
                }
            });
        })
    };
    let on_cancel = {
        let asked = asked.clone();
        Callback::from(move |_: MouseEvent| asked.set(None))
    };
    html! {
        <section class="rg-section" aria-labelledby="rg-pause">
            <h2 id="rg-pause">{ "Pause et auto-exclusion" }</h2>
            <p class="rg-help">{ "Immédiate : vous êtes déconnecté partout, aucun achat ni dépôt n'est possible \
                jusqu'à la fin, et rien ne peut la lever avant — ni vous, ni nous. Un ticket déjà acheté peut être \
                terminé et son gain est payé." }</p>
            if let Some(ask) = *asked {
                <div class="rg-confirm" role="alertdialog" aria-labelledby="rg-confirm-title"
                    data-testid="rg-confirm-pause">
                    <p id="rg-confirm-title">{ format!("Confirmez-vous {} ? Elle commence maintenant et ne pourra pas \
                        être levée avant son terme.", ask.text()) }</p>
                    <button class="play retry" onclick={on_confirm} data-testid="rg-pause-confirm">{
                        "Oui, je confirme" }</button>
                    <button class="button" onclick={on_cancel}>{ "Annuler" }</button>
                </div>
            } else {
                <form class="rg-pause" onsubmit={on_choose}>
                    <label>{ "Durée " }
                        <select ref={choice} data-testid="rg-pause-choice">
                            <option value="break-1" selected=true>{ "Pause de 24 heures" }</option>
                            <option value="break-7">{ "Pause de 7 jours" }</option>
                            <option value="break-30">{ "Pause de 30 jours" }</option>
                            <option value="exclusion-6">{ "Auto-exclusion de 6 mois" }</option>
                            <option value="exclusion-12">{ "Auto-exclusion d'un an" }</option>
                            <option value="exclusion-60">{ "Auto-exclusion de 5 ans" }</option>
                            <option value="exclusion-days">{ "Auto-exclusion sur mesure (jours)" }</option>
                        </select>
                    </label>
                    <label>{ "Jours (sur mesure) " }<input ref={days} type="number" min="1" max="365"
                        data-testid="rg-pause-days" /></label>
                    <button class="button" type="submit" data-testid="rg-pause-ask">{ "Continuer" }</button>
                </form>
            }
        </section>
    }
}

fn event_fr(e: &ResponsibleEvent) -> String {
    let flow = e.detail.get("flow").and_then(|f| f.as_str()).map(super::api::flow_fr);
    let span = e.detail.get("span").and_then(|s| s.as_str()).map(super::api::span_fr);
    let amount = e
        .detail
        .get("limit_cents")
        .and_then(|a| a.as_u64())
        .map_or_else(|| "aucune".to_owned(), |c| Cents(c).to_string());
    let limit = format!("{} {}", flow.unwrap_or(""), span.unwrap_or(""));
    let until = e.detail.get("until").and_then(|u| u.as_i64()).map(date_fr).unwrap_or_default();
    match e.kind.as_str() {
        "limit_set" => format!("Limite de {limit} fixée à {amount}"),
        "limit_lowered" => format!("Limite de {limit} baissée à {amount}"),
        "raise_asked" => format!("Hausse de la limite de {limit} à {amount} demandée"),
        "raise_confirmed" => format!("Hausse de la limite de {limit} à {amount} confirmée"),
        "raise_lapsed" => format!("Hausse de la limite de {limit} expirée sans confirmation"),
        "raise_cancelled" => format!("Hausse de la limite de {limit} annulée"),
        "break" => format!("Pause jusqu'au {until}"),
        "exclusion" => format!("Auto-exclusion jusqu'au {until}"),
        "closed" | "ban_file_match" => "Compte fermé (fichier des interdits de jeu)".into(),
        "reality_check_shown" => "Point sur la session affiché".into(),
        "reality_check_acknowledged" => "Point sur la session : « Continuer »".into(),
        "reality_interval_set" => format!(
            "Point sur la session toutes les {} minutes",
            e.detail.get("minutes").and_then(|m| m.as_u64()).unwrap_or(60)
        ),
        other => other.to_owned(),
    }
}

fn history_section(history: &[ResponsibleEvent]) -> Html {
    html! {
        <section class="rg-section" aria-labelledby="rg-history">
            <h2 id="rg-history">{ "Historique des 12 derniers mois" }</h2>
            if history.is_empty() {
                <p class="rg-help">{ "Aucun changement pour l'instant." }</p>
            } else {
                <table class="rg-history" data-testid="rg-history">
                    <thead><tr><th scope="col">{ "Date" }</th><th scope="col">{ "Changement" }</th></tr></thead>
                    <tbody>
                        { for history.iter().rev().map(|e| html! { <tr><td>{ date_fr(e.at) }</td><td>{ event_fr(e)
                            }</td></tr> }) }
                    </tbody>
                </table>
            }
        </section>
    }
}
