//! The web app's components in a real browser (headless Chromium, through wasm-bindgen-test):
//! a scratch zone's coverage and reveal by pointer and keyboard, the verification that refuses a
//! ticket before anything is drawn, and the preview drawing every specimen with no server.
//!
//! `CHROMEDRIVER=/usr/bin/chromedriver cargo test --target wasm32-unknown-unknown --test web`
#![cfg(target_arch = "wasm32")]

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use rand::SeedableRng;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;
use vegas::api::InclusionProof;
use vegas::api::{TicketState, TicketView};
use vegas::block::{hex, merkle};
use vegas::composer::{Design, compose};
use vegas::gallery::gallery;
use vegas::money::Cents;
use vegas::payload::Jwks;
use vegas::payload::{FORMAT_VERSION, Serial, TicketClaims, TicketSigner};
use vegas::play::Mode;
use vegas::rules::Zone;
use vegas::web::scratch_zone::{Props, ScratchZone};
use vegas::web::trust::{Evidence, open_ticket};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;
use web_sys::{
    CanvasRenderingContext2d, Element, HtmlCanvasElement, KeyboardEvent, KeyboardEventInit, PointerEvent,
    PointerEventInit,
};
use yew::platform::time::sleep;
use yew::prelude::*;

wasm_bindgen_test_configure!(run_in_browser);

fn document() -> web_sys::Document {
    web_sys::window().unwrap().document().unwrap()
}

/// A fresh element of `width` CSS pixels to render into, with the game's own stylesheet on the page.
fn mount_point(width: u32) -> Element {
    let doc = document();
    if doc.get_element_by_id("vegas-css").is_none() {
        let style = doc.create_element("style").unwrap();
        style.set_id("vegas-css");
        style.set_text_content(Some(include_str!("../static/vegas.css")));
        doc.head().unwrap().append_child(&style).unwrap();
    }
    let root = doc.create_element("div").unwrap();
    root.set_attribute("style", &format!("width: {width}px")).unwrap();
    doc.body().unwrap().append_child(&root).unwrap();
    root
}

/// Renders one scratch zone (a craps throw, 60 px high) and records what it reports.
async fn scratch_zone(scratchable: bool) -> (HtmlCanvasElement, Rc<RefCell<Vec<Zone>>>) {
    let root = mount_point(240);
    let reported = Rc::new(RefCell::new(Vec::new()));
    let props = Props {
        zone: Zone::CrapsThrow2,
        // No ticket: nothing kept over a reload.
        ticket_id: AttrValue::default(),
        scratchable,
        revealed: false,
        alt: "2 + 5".into(),
        on_reveal: {
            let reported = reported.clone();
            Callback::from(move |z| reported.borrow_mut().push(z))
        },
        class: classes!("throw-zone"),
        children: html! { <span>{ "2 + 5" }</span> },
    };
    yew::Renderer::<ScratchZone>::with_root_and_props(root.clone(), props).render();
    sleep(Duration::ZERO).await;
    let canvas = root.query_selector("canvas").unwrap().unwrap().dyn_into::<HtmlCanvasElement>().unwrap();
    (canvas, reported)
}

fn pointer(canvas: &HtmlCanvasElement, kind: &str, x: f64, y: f64) {
    let rect = canvas.get_bounding_client_rect();
    let init = PointerEventInit::new();
    init.set_pointer_id(1);
    init.set_pointer_type("mouse");
    init.set_bubbles(true);
    init.set_buttons(if kind == "pointerup" { 0 } else { 1 });
    init.set_client_x((rect.left() + x) as i32);
    init.set_client_y((rect.top() + y) as i32);
    canvas.dispatch_event(&PointerEvent::new_with_event_init_dict(kind, &init).unwrap()).unwrap();
}

fn drag(canvas: &HtmlCanvasElement, points: &[(f64, f64)]) {
    let (first, rest) = points.split_first().unwrap();
    pointer(canvas, "pointerdown", first.0, first.1);
    for &(x, y) in rest {
        pointer(canvas, "pointermove", x, y);
    }
    let last = points.last().unwrap();
    pointer(canvas, "pointerup", last.0, last.1);
}

/// The foil's opacity at a point of the zone (CSS pixels): 255 covered, 0 scratched away.
fn foil_alpha(canvas: &HtmlCanvasElement, x: f64, y: f64) -> u8 {
    let ctx: CanvasRenderingContext2d = canvas.get_context("2d").unwrap().unwrap().dyn_into().unwrap();
    let scale = f64::from(canvas.width()) / f64::from(canvas.offset_width());
    ctx.get_image_data(x * scale, y * scale, 1.0, 1.0).unwrap().data()[3]
}

/// Waits until `ready` holds or five seconds have passed, for what the browser does after a layout or
/// a render: a busy machine may delay it by far more than a frame. The caller asserts afterwards.
async fn until(ready: impl Fn() -> bool) {
    for _ in 0..100 {
        if ready() {
            return;
        }
        sleep(Duration::from_millis(50)).await;
    }
}

#[wasm_bindgen_test]
async fn the_foil_is_painted_at_the_device_pixel_ratio_over_the_whole_zone() {
    let (canvas, _) = scratch_zone(true).await;
    let dpr = web_sys::window().unwrap().device_pixel_ratio();
    assert_eq!((canvas.offset_width(), canvas.offset_height()), (240, 60));
    assert_eq!(f64::from(canvas.width()), (240.0 * dpr).round());
    assert_eq!(canvas.get_attribute("tabindex").as_deref(), Some("0"));
    for (x, y) in [(2.0, 2.0), (120.0, 30.0), (237.0, 57.0)] {
        assert_eq!(foil_alpha(&canvas, x, y), 255, "covered at ({x}, {y})");
    }
}

#[wasm_bindgen_test]
async fn a_stroke_clears_where_it_passes_and_coverage_past_the_threshold_reveals_once() {
    let (canvas, reported) = scratch_zone(true).await;
    drag(&canvas, &[(10.0, 30.0), (60.0, 30.0)]);
    sleep(Duration::ZERO).await;
    assert_eq!(foil_alpha(&canvas, 35.0, 30.0), 0, "scratched away entirely under the stroke");
    assert_eq!(foil_alpha(&canvas, 35.0, 5.0), 255, "covered above the brush");
    assert_eq!(foil_alpha(&canvas, 200.0, 30.0), 255, "still covered away from it");
    assert!(reported.borrow().is_empty(), "one short stroke does not uncover the zone");

    // Back and forth over the whole zone, as a player would.
    let zig_zag: Vec<(f64, f64)> = (0..=6)
        .flat_map(|row| {
            let y = f64::from(row) * 10.0;
            [(2.0, y), (238.0, y)]
        })
        .collect();
    drag(&canvas, &zig_zag);
    drag(&canvas, &zig_zag);
    sleep(Duration::ZERO).await;
    assert_eq!(*reported.borrow(), [Zone::CrapsThrow2], "reported once, however long the player goes on");
}

#[wasm_bindgen_test]
async fn a_resized_zone_is_painted_anew_and_keeps_what_was_scratched() {
    let (canvas, _) = scratch_zone(true).await;
    drag(&canvas, &[(20.0, 30.0), (40.0, 30.0)]);
    let root = canvas.parent_element().unwrap().parent_element().unwrap();
    root.set_attribute("style", "width: 480px").unwrap();
    let dpr = web_sys::window().unwrap().device_pixel_ratio();
    let resized_width = (480.0 * dpr).round();
    // The resize observer fires after a layout, which a busy machine may delay by far more than a frame.
    until(|| f64::from(canvas.width()) == resized_width).await;
    assert_eq!(f64::from(canvas.width()), resized_width, "the backing store follows the new size");
    assert_eq!(foil_alpha(&canvas, 60.0, 30.0), 0, "the stroke, scaled to the new width");
    assert_eq!(foil_alpha(&canvas, 300.0, 30.0), 255);
}

#[wasm_bindgen_test]
async fn a_zone_not_yet_playable_ignores_the_pointer_and_the_keyboard() {
    let (canvas, reported) = scratch_zone(false).await;
    drag(&canvas, &[(2.0, 30.0), (238.0, 30.0), (2.0, 50.0), (238.0, 10.0)]);
    let init = KeyboardEventInit::new();
    init.set_key("Enter");
    init.set_bubbles(true);
    canvas.dispatch_event(&KeyboardEvent::new_with_keyboard_event_init_dict("keydown", &init).unwrap()).unwrap();
    sleep(Duration::ZERO).await;
    assert_eq!(foil_alpha(&canvas, 120.0, 30.0), 255);
    assert!(reported.borrow().is_empty());
    assert_eq!(canvas.get_attribute("aria-disabled").as_deref(), Some("true"));
}

#[wasm_bindgen_test]
async fn enter_or_space_uncovers_a_playable_zone_and_other_keys_do_not() {
    let (canvas, reported) = scratch_zone(true).await;
    let press = |key: &str| {
        let init = KeyboardEventInit::new();
        init.set_key(key);
        init.set_bubbles(true);
        canvas.dispatch_event(&KeyboardEvent::new_with_keyboard_event_init_dict("keydown", &init).unwrap()).unwrap();
    };
    press("a");
    press("Tab");
    sleep(Duration::ZERO).await;
    assert!(reported.borrow().is_empty());
    press(" ");
    press("Enter");
    sleep(Duration::ZERO).await;
    assert_eq!(*reported.borrow(), [Zone::CrapsThrow2]);
}

fn signed_view(signer: &TicketSigner, claims: &TicketClaims) -> TicketView {
    TicketView {
        id: claims.jti.clone(),
        serial: claims.serial.to_string(),
        mode: Mode::Jouez,
        payload: signer.sign(claims),
        revealed: vec![],
        revealed_at: vec![],
        first_surface: None,
        state: TicketState::Playing,
        win_cents: None,
        sold_at: claims.iat,
    }
}

fn claims_for(lot: Cents) -> TicketClaims {
    let zones = compose(&Design::default_design(), lot, &mut rand_chacha::ChaCha20Rng::seed_from_u64(5)).unwrap();
    TicketClaims {
        v: FORMAT_VERSION,
        jti: "t-web".into(),
        sub: "p-web".into(),
        iat: 1_764_700_000,
        serial: Serial { emission: 1, block: 1, index: 42 },
        zones,
        lot_cents: lot,
        salt: Some(hex(&merkle::salt(&[9; 32], 42))),
        qa: false,
    }
}

/// What the server would give for a ticket: its proof in a block of 1 000 tickets where it sits at
/// index 42, and that block's root.
struct Committed {
    proof: InclusionProof,
    root: String,
}

impl Evidence for Committed {
    async fn fresh_keys(&self) -> Option<Jwks> {
        None
    }

    async fn commitment(&self, _: &str, _: u32, _: u32) -> Result<(InclusionProof, String), String> {
        Ok((self.proof.clone(), self.root.clone()))
    }
}

fn committed(claims: &TicketClaims) -> Committed {
    let salt = vegas::block::from_hex(claims.salt.as_deref().unwrap()).unwrap();
    let mut leaves: Vec<[u8; 32]> = (0..1_000u32).map(|i| merkle::salt(&[1; 32], i)).collect();
    leaves[42] = merkle::leaf(&mut Vec::new(), Some(&salt), claims.serial, &claims.zones, claims.lot_cents);
    let root = hex(&merkle::root(leaves.clone()));
    let path: Vec<String> = merkle::proof(leaves, 42).iter().map(|h| hex(h)).collect();
    Committed { proof: InclusionProof { index: 42, leaf_count: 1_000, path }, root }
}

#[wasm_bindgen_test]
async fn the_browser_opens_a_genuine_ticket_and_refuses_a_tampered_or_foreign_one() {
    let signer = TicketSigner::from_secret([3; 32]);
    let claims = claims_for(Cents::euros(50));
    let view = signed_view(&signer, &claims);
    let evidence = committed(&claims);
    let game = open_ticket(&view, &signer.jwks(), true, &evidence).await.expect("a genuine ticket opens");
    assert_eq!(game.outcome.lot, Cents::euros(50));
    assert!(game.needs_choice(), "« Jouez » starts with the choice of a surface");

    // The lot changed in transit, signature kept.
    let [header, body, signature]: [&str; 3] = view.payload.split('.').collect::<Vec<_>>().try_into().unwrap();
    let mut json: serde_json::Value = serde_json::from_slice(&B64.decode(body).unwrap()).unwrap();
    json["lot_cents"] = 4_000_000.into();
    let tampered =
        TicketView { payload: format!("{header}.{}.{signature}", B64.encode(json.to_string())), ..view.clone() };
    let refusal = open_ticket(&tampered, &signer.jwks(), true, &evidence).await.unwrap_err();
    assert!(refusal.starts_with("Ticket refusé"), "{refusal}");
    assert!(refusal.contains("signature"), "{refusal}");

    // The signature itself altered: WebCrypto refuses it.
    let mut forged = B64.decode(signature).unwrap();
    forged[10] ^= 1;
    let forged = TicketView { payload: format!("{header}.{body}.{}", B64.encode(forged)), ..view.clone() };
    let refusal = open_ticket(&forged, &signer.jwks(), true, &evidence).await.unwrap_err();
    assert!(refusal.contains("signature does not match"), "{refusal}");

    // Signed by a key the server does not publish.
    let foreign = signed_view(&TicketSigner::from_secret([4; 32]), &claims);
    assert!(open_ticket(&foreign, &signer.jwks(), true, &evidence).await.unwrap_err().contains("no published key"));

    // Correctly signed, but its symbols do not read its lot: refused all the same.
    let lying = TicketClaims { lot_cents: Cents::euros(40_000), ..claims.clone() };
    let refusal = open_ticket(&signed_view(&signer, &lying), &signer.jwks(), true, &evidence).await.unwrap_err();
    assert!(refusal.contains("symbols read 50,00"), "{refusal}");

    // Genuine and signed, but not where its block committed it: refused.
    let elsewhere = Committed { root: hex(&[0; 32]), ..committed(&claims) };
    let refusal = open_ticket(&view, &signer.jwks(), true, &elsewhere).await.unwrap_err();
    assert!(refusal.starts_with("Ticket refusé"), "{refusal}");

    // A QA deck's test ticket: refused by a real-money page, opened by a demo one.
    let test_ticket = TicketClaims { qa: true, ..claims };
    let view = signed_view(&signer, &test_ticket);
    let refusal = open_ticket(&view, &signer.jwks(), true, &committed(&test_ticket)).await.unwrap_err();
    assert!(refusal.contains("ticket de test"), "{refusal}");
    assert!(
        open_ticket(&view, &signer.jwks(), false, &committed(&test_ticket)).await.is_ok(),
        "a demo page plays test tickets"
    );
}

#[wasm_bindgen_test]
async fn the_browser_checks_a_tickets_proof_against_its_blocks_root_and_refuses_a_tampered_one() {
    use vegas::payload::PayloadError;
    use vegas::web::inclusion::check;
    let salt = merkle::salt(&[9; 32], 42);
    let claims = TicketClaims { salt: Some(hex(&salt)), ..claims_for(Cents::euros(50)) };
    // A block of 1 000 leaves, this ticket's at its index 42.
    let mut leaves: Vec<[u8; 32]> = (0..1_000u32).map(|i| merkle::salt(&[1; 32], i)).collect();
    leaves[42] = merkle::leaf(&mut Vec::new(), Some(&salt), claims.serial, &claims.zones, claims.lot_cents);
    let root = hex(&merkle::root(leaves.clone()));
    let path: Vec<String> = merkle::proof(leaves, 42).iter().map(|h| hex(h)).collect();
    let proof = InclusionProof { index: 42, leaf_count: 1_000, path };
    assert_eq!(check(&claims, &proof, &root).await, Ok(()), "a genuine proof leads to the root");

    let refused = |result: Result<(), PayloadError>| result == Err(PayloadError::NotCommitted);
    let mut tampered = proof.clone();
    tampered.path[3] = hex(&[0xEE; 32]);
    assert!(refused(check(&claims, &tampered, &root).await), "a tampered sibling");
    assert!(refused(check(&claims, &proof, &hex(&[0; 32])).await), "another root");
    assert!(refused(check(&claims, &InclusionProof { index: 43, ..proof.clone() }, &root).await), "another place");
    assert!(
        refused(check(&claims, &InclusionProof { leaf_count: 2_000, ..proof.clone() }, &root).await),
        "another tree"
    );
    let other_salt = TicketClaims { salt: Some(hex(&merkle::salt(&[9; 32], 43))), ..claims.clone() };
    assert!(refused(check(&other_salt, &proof, &root).await), "another salt");
    let other_symbols = TicketClaims { zones: claims_for(Cents::euros(5)).zones, lot_cents: Cents::euros(5), ..claims };
    assert!(refused(check(&other_symbols, &proof, &root).await), "other symbols");
}

#[wasm_bindgen_test]
async fn the_preview_draws_every_specimen_in_the_browser_with_no_server() {
    #[function_component(Page)]
    fn page() -> Html {
        html! { <yew_router::HashRouter><vegas::web::preview::Preview /></yew_router::HashRouter> }
    }
    let root = mount_point(1400);
    yew::Renderer::<Page>::with_root(root.clone()).render();
    let expected = gallery(&Design::default_design(), "vegas").len() as u32;
    until(|| root.query_selector_all("article.specimen").unwrap().length() == expected).await;
    assert_eq!(root.query_selector_all("article.specimen").unwrap().length(), expected);
    assert_eq!(root.query_selector_all("[data-testid=specimen-error]").unwrap().length(), 0);
    // Each zone of each drawn surface or ticket: 2 + 4 + 4 + 2 per ticket.
    let canvases = root.query_selector_all("canvas.foil").unwrap().length();
    assert!(canvases > expected, "{canvases} foils");
}
