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
    /// A real-money registration's identity: first name, last name, date of birth.
    identity_inputs: [NodeRef; 3],
}

#[hook]
pub fn use_account_form() -> AccountForm {
    AccountForm {
        form: use_state(|| None),
        error: use_state(|| None),
        busy: use_state(|| false),
        name_input: use_node_ref(),
        password_input: use_node_ref(),
        identity_inputs: [use_node_ref(), use_node_ref(), use_node_ref()],
    }
}

fn go_to(url: Option<&str>) {
    if let Some(window) = web_sys::window() {
        let _ = match url {
            Some(url) => window.location().set_href(url),
            None => window.location().reload(),
        };
    }
}

fn reload() {
    go_to(None);
}

fn value(input: &NodeRef) -> String {
    input.cast::<web_sys::HtmlInputElement>().map(|i| i.value()).unwrap_or_default()
}

/// The account's name and « Se déconnecter », or for a guest the buttons and form to create one or log
/// in; `on_named` hears of a guest become an account. Signed out (real money, no guests), creating an
/// account asks the identity the law asks for, and leads to the limits before anything else.
pub fn account_bar(state: &AccountForm, name: Option<&str>, on_named: Callback<String>, signed_out: bool) -> Html {
    let AccountForm { form, error, busy, name_input, password_input, identity_inputs } = state;
    if let Some(name) = name {
        let on_logout = Callback::from(|_: MouseEvent| {
            yew::platform::spawn_local(async {
                // Whatever the answer, the page starts again: signed out, as a new guest.
                let _ = api::logout().await;
                reload();
            })
        });
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
    let on_submit = {
        let (form, error, busy) = (form.clone(), error.clone(), busy.clone());
        let (name_input, password_input, identity_inputs) = (name_input.clone(), password_input.clone(), identity_inputs.clone());
        Callback::from(move |e: SubmitEvent| {
            e.prevent_default();
            let Some(which) = *form else { return };
            let (name, password) = (value(&name_input), value(&password_input));
            let [first_name, last_name, birth_date] = identity_inputs.each_ref().map(value);
            let (form, error, busy, on_named) = (form.clone(), error.clone(), busy.clone(), on_named.clone());
            busy.set(true);
            yew::platform::spawn_local(async move {
                let registration = api::Registration { name: &name, password: &password, first_name: &first_name, last_name: &last_name, birth_date: &birth_date };
                let done = match which {
                    // The limits first: nothing is credited or sold before them.
                    Form::Register if signed_out => api::register(&registration).await.map(|_| go_to(Some("/jeu-responsable/?bienvenue"))),
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
    html! {
        <div class="account">
            <button class="link" data-testid="open-register" aria-expanded={(**form == Some(Form::Register)).to_string()} onclick={open(Form::Register)}>{ "Créer un compte" }</button>
            <button class="link" data-testid="open-login" aria-expanded={(**form == Some(Form::Login)).to_string()} onclick={open(Form::Login)}>{ "Se connecter" }</button>
            if let Some(which) = **form {
                <form class="account-form" data-testid="account-form" onsubmit={on_submit}>
                    <p class="account-title">{ match which {
                        Form::Register if signed_out => "Créez votre compte de joueur :",
                        Form::Register => "Gardez votre solde et vos tickets sous un nom :",
                        Form::Login => "Retrouvez votre compte :",
                    } }</p>
                    <label>{ "Nom" }<input ref={name_input.clone()} name="username" autocomplete="username" required=true minlength="3" maxlength="32" data-testid="account-name" /></label>
                    <label>{ "Mot de passe" }
                        <input ref={password_input.clone()} type="password" required=true minlength="8" data-testid="account-password"
                               autocomplete={if which == Form::Register { "new-password" } else { "current-password" }} />
                    </label>
                    if which == Form::Register && signed_out {
                        <label>{ "Prénom" }<input ref={identity_inputs[0].clone()} autocomplete="given-name" required=true maxlength="64" data-testid="account-first-name" /></label>
                        <label>{ "Nom de famille" }<input ref={identity_inputs[1].clone()} autocomplete="family-name" required=true maxlength="64" data-testid="account-last-name" /></label>
                        <label>{ "Date de naissance" }<input ref={identity_inputs[2].clone()} type="date" autocomplete="bday" required=true data-testid="account-birth-date" /></label>
                        <p class="account-note">{ "18 ans et plus. Votre identité est vérifiée auprès du fichier des interdits de jeu." }</p>
                    }
                    if let Some(message) = &**error { <p class="account-error" role="alert" data-testid="account-error">{ message }</p> }
                    <button class="account-submit" type="submit" disabled={**busy} data-testid="account-submit">
                        { if which == Form::Register { "Créer mon compte" } else { "Se connecter" } }
                    </button>
                </form>
            }
        </div>
    }
}
