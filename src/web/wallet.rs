//! The wallet in the top bar: the balance, and for demo money a top-up.

use super::api;
use super::model::{Dispatch, Msg};
use crate::money::format_signed_cents;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct WalletProps {
    /// In cents; `None` until the server has said.
    pub balance: Option<i64>,
    pub demo: bool,
    pub dispatch: Dispatch,
}

#[function_component(Wallet)]
pub fn wallet(props: &WalletProps) -> Html {
    let on_top_up = {
        let dispatch = props.dispatch.clone();
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
            <span class="balance" data-testid="balance">{ props.balance.map_or_else(|| "—".to_owned(), format_signed_cents) }</span>
            if props.demo {
                <button class="link" data-testid="top-up" onclick={on_top_up} title="Ajouter 50 € de démonstration">{ "+ 50 € démo" }</button>
            }
        </div>
    }
}
