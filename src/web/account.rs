//! The player's account, from the page: a guest creates one (keeping its balance and its tickets), an
//! account logs in and out. Logging in or out starts the page afresh with the new session.
//!
//! A hook and a view function rather than a component: each component type brings kilobytes of Yew's
//! generic code into the players' download.

use super::api;
use yew::prelude::*;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Form {
    Register,
    Login,
}

/// The account form's state, held by the page.
pub struct AccountForm {
    form: UseStateHandle<Option<Form>>,
    error: UseStateHandle<Option<String>>,
    busy: UseStateHandle<bool>,
    name_input: NodeRef,
    password_input: NodeRef,
}

#[hook]
pub fn use_account_form() -> AccountForm {
    AccountForm {
        form: use_state(|| None),
        error: use_state(|| None),
        busy: use_state(|| false),
        name_input: use_node_ref(),
        password_input: use_node_ref(),
    }
}

/// Signs out; whatever the answer, the page starts again: signed out (as a new guest, in demo mode).
pub fn log_out() {
    yew::platform::spawn_local(async {
        let _ = api::logout().await;
        super::local::note_signed_out();
        reload();
    })
}

fn reload() {
    if let Some(window) = web_sys::window() {
        let _ = window.location().reload();
    }
}

/// The account's name and « Se déconnecter », or for a guest the buttons and form to create one or log
/// in; `on_named` hears of a guest become an account. Signed out (real money has no guests), an account
/// is created on the « Jeu responsable » page, which asks the identity the law asks for and leads to the
/// limits before anything else.
pub fn account_bar(state: &AccountForm, name: Option<&str>, on_named: Callback<String>, signed_out: bool) -> Html {
    let AccountForm { form, error, busy, name_input, password_input } = state;
    if let Some(name) = name {
        let on_logout = Callback::from(|_: MouseEvent| log_out());
        return html! {
            <div class="account">
                <span class="player-name" data-testid="player-name">{ name }</span>
                <button class="link" data-testid="logout" onclick={on_logout}>{ "Se déconnecter" }</button>
            </div>
        };
    }

    let open = |which: Form| {
        let (form, error) = (form.clone(), error.clone());
        Callback::from(move |_: MouseEvent| {
            error.set(None);
            form.set(if *form == Some(which) { None } else { Some(which) });
        })
    };
    let close = {
        let form = form.clone();
        move || form.set(None)
    };
    let on_close = {
        let close = close.clone();
        Callback::from(move |_: MouseEvent| close())
    };
    let on_key = Callback::from(move |e: KeyboardEvent| {
        if e.key() == "Escape" {
            close();
        }
    });
    let on_submit = {
        let (form, error, busy) = (form.clone(), error.clone(), busy.clone());
        let (name_input, password_input) = (name_input.clone(), password_input.clone());
        Callback::from(move |e: SubmitEvent| {
            e.prevent_default();
            let Some(which) = *form else { return };
            let value =
                |input: &NodeRef| input.cast::<web_sys::HtmlInputElement>().map(|i| i.value()).unwrap_or_default();
            let (name, password) = (value(&name_input), value(&password_input));
            let (form, error, busy, on_named) = (form.clone(), error.clone(), busy.clone(), on_named.clone());
            busy.set(true);
            yew::platform::spawn_local(async move {
                let done = match which {
                    Form::Register => api::claim_account(&name, &password).await.map(|me| {
                        on_named.emit(me.name.unwrap_or(name));
                        form.set(None);
                    }),
                    Form::Login => api::login(&name, &password).await.map(|_| reload()),
                };
                busy.set(false);
                error.set(done.err().map(|e| e.message_fr()));
            });
        })
    };
    // Escape closes the form wherever the focus is in the account's corner (its buttons or the form).
    html! {
        <div class="account" onkeydown={on_key}>
            if signed_out {
                <a class="link" data-testid="open-register" href="/jeu-responsable/?inscription">{ "Créer un compte"
                    }</a>
            } else {
                <button class="link" data-testid="open-register" aria-expanded={(**form ==
                    Some(Form::Register)).to_string()} onclick={open(Form::Register)}>{ "Créer un compte" }</button>
            }
            <button class="link" data-testid="open-login" aria-expanded={(**form == Some(Form::Login)).to_string()}
                onclick={open(Form::Login)}>{ "Se connecter" }</button>
            if let Some(which) = **form {
                <form class="account-form" data-testid="account-form" onsubmit={on_submit}>
                    <button class="account-close" type="button" aria-label="Fermer" data-testid="account-close"
                        onclick={on_close}>{ "×" }</button>
                    <p class="account-title">{ if which == Form::Register { "Gardez votre solde et vos tickets sous un \
                        nom :" } else { "Retrouvez votre compte :" } }</p>
                    <label>{ "Nom" }<input ref={name_input.clone()} name="username" autocomplete="username"
                        required=true minlength="3" maxlength="32" data-testid="account-name" /></label>
                    <label>{ "Mot de passe" }
                        <input ref={password_input.clone()} type="password" required=true minlength="8"
                            data-testid="account-password"
                               autocomplete={if which == Form::Register { "new-password" } else { "current-password"
                                   }} />
                    </label>
                    if which == Form::Register { <p class="account-rules" data-testid="account-rules">{ "Nom de 3 à 32 \
                        caractères ; mot de passe de 8 caractères au moins." }</p> }
                    if let Some(message) = &**error { <p class="account-error" role="alert"
                        data-testid="account-error">{ message }</p> }
                    <button class="account-submit" type="submit" disabled={**busy} data-testid="account-submit">
                        { if which == Form::Register { "Créer mon compte" } else { "Se connecter" } }
                    </button>
                </form>
            }
        </div>
    }
}
