//! The wallet in the top bar: the balance, and for demo money a top-up. A function rather than a
//! component, for the players' download (see `controls`).

use super::api;
use super::model::{Dispatch, Msg};
use crate::money::format_signed_cents;
use yew::prelude::*;

/// The balance (in cents; `None` until the server has said) and, for demo money, a top-up.
pub fn wallet(balance: Option<i64>, demo: bool, dispatch: &Dispatch) -> Html {
    let on_top_up = {
        let dispatch = dispatch.clone();
        Callback::from(move |_: MouseEvent| {
            let dispatch = dispatch.clone();
            yew::platform::spawn_local(async move {
                dispatch.dispatch(match api::demo_deposit(5_000).await {
                    Ok(me) => Msg::Balance(me.balance_cents),
                    Err(e) => Msg::Fail(e.message_fr()),
                });
            });
        })
    };
    html! {
        <div class="wallet">
            <span class="wallet-label">{ "Solde" }</span>
            <span class="balance" data-testid="balance">{ balance.map_or_else(|| "—".to_owned(), format_signed_cents)
                }</span>
            if demo {
                <button class="link" data-testid="top-up" onclick={on_top_up} title="Ajouter 50 € de \
                    démonstration">{ "+ 50 € démo" }</button>
            }
        </div>
    }
}
