//! One hidden zone: its content, and over it a canvas the player scratches with mouse, touch or pen
//! (pointer events), or uncovers with Enter/Space. The coverage model is [`ScratchGrid`]; the canvas is
//! only its view. Drawn at the device pixel ratio, so the foil stays crisp on high-DPI screens.
//!
//! Sizes are layout sizes (`offsetWidth`), not on-screen boxes, so a zone inside a zoomed or scaled
//! container (the designers' preview magnifies whole tickets) paints and scratches the same way. The
//! strokes are kept in fractions of the zone, so that a resized zone (a phone turned sideways) is
//! painted anew at its size with what had been scratched.

use super::local::KeptStrokes;
use crate::play::scratch::ScratchGrid;
use crate::rules::{Zone, serde_name};
use std::rc::Rc;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use web_sys::{
    CanvasRenderingContext2d, HtmlCanvasElement, HtmlImageElement, KeyboardEvent, PointerEvent, ResizeObserver,
};
use yew::prelude::*;

/// Brush radius and grid cell, in CSS pixels.
const BRUSH: f64 = 16.0;
const CELL: f64 = 6.0;

#[derive(Properties, PartialEq)]
pub struct Props {
    pub zone: Zone,
    /// The ticket's id, under which a half-scratched foil is kept over a reload (empty: not kept).
    pub ticket_id: AttrValue,
    pub scratchable: bool,
    pub revealed: bool,
    /// Text alternative of the content, read once the zone is uncovered.
    pub alt: AttrValue,
    pub on_reveal: Callback<Zone>,
    #[prop_or_default]
    pub class: Classes,
    pub children: Html,
}

/// What the designers' preview forces on every foil below it (a Yew context); the game never sets it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FoilSettings {
    /// Paint foils at this device pixel ratio instead of the screen's.
    pub pixel_ratio: Option<f64>,
    /// Covered zones show their foil half scratched away.
    pub half_scratched: bool,
}

/// Time between two zones uncovered by « Auto » (the game and its preview pace it alike): a foil's fade
/// (the style's `.foil` transition), so that each zone shows before the next goes.
pub fn auto_pause_ms() -> u32 {
    if prefers_reduced_motion() { 80 } else { 450 }
}

pub fn prefers_reduced_motion() -> bool {
    web_sys::window()
        .and_then(|w| w.match_media("(prefers-reduced-motion: reduce)").ok().flatten())
        .is_some_and(|m| m.matches())
}

fn context(canvas: &HtmlCanvasElement) -> Option<CanvasRenderingContext2d> {
    canvas.get_context("2d").ok().flatten()?.dyn_into().ok()
}

/// The zone's layout size in CSS pixels, whatever zoom or transform its ancestors apply.
fn layout_size(canvas: &HtmlCanvasElement) -> (f64, f64) {
    (f64::from(canvas.offset_width()).max(1.0), f64::from(canvas.offset_height()).max(1.0))
}

/// The designed foil of a zone: its kind's view of `static/foils.svg`, loaded once and kept.
fn foil_art(zone: Zone) -> Option<HtmlImageElement> {
    thread_local! {
        static ART: std::cell::RefCell<Vec<(&'static str, HtmlImageElement)>> = std::cell::RefCell::default();
    }
    let kind = match zone {
        Zone::PokerHand => "hand",
        Zone::PokerBonus => "card",
        Zone::RouletteWheel => "wheel",
        Zone::RouletteStake1 | Zone::RouletteStake2 | Zone::RouletteStake3 => "chips",
        Zone::JackpotReels => "reels",
        Zone::JackpotTray => "tray",
        _ => "dice",
    };
    ART.with_borrow_mut(|art| {
        if let Some((_, image)) = art.iter().find(|(k, _)| *k == kind) {
            return Some(image.clone());
        }
        let image = HtmlImageElement::new().ok()?;
        // Beside the page, so that the game and the designers' preview each find their own copy.
        image.set_src(&format!("foils.svg#{kind}"));
        art.push((kind, image.clone()));
        Some(image)
    })
}

/// Sizes the canvas to its box at the device pixel ratio and paints the zone's foil with its label
/// (plain silver until its artwork has loaded).
fn paint_foil(canvas: &HtmlCanvasElement, zone: Zone, pixel_ratio: Option<f64>) -> Option<(f64, f64)> {
    let (w, h) = layout_size(canvas);
    let dpr = pixel_ratio.or_else(|| web_sys::window().map(|w| w.device_pixel_ratio())).unwrap_or(1.0).max(1.0);
    canvas.set_width((w * dpr).round() as u32);
    canvas.set_height((h * dpr).round() as u32);
    let ctx = context(canvas)?;
    ctx.scale(dpr, dpr).ok()?;
    if zone == Zone::RouletteWheel {
        // The round wheel's foil is painted round on a square canvas, not rounded by the style: a
        // finger that starts a stroke in its corners lands on the canvas, which then takes the stroke.
        ctx.begin_path();
        ctx.ellipse(w / 2.0, h / 2.0, w / 2.0, h / 2.0, 0.0, 0.0, std::f64::consts::TAU).ok()?;
        ctx.clip();
    }
    ctx.set_fill_style_str("#c9cdd3");
    ctx.fill_rect(0.0, 0.0, w, h);
    let art = foil_art(zone)
        .filter(HtmlImageElement::complete)
        .filter(|art| ctx.draw_image_with_html_image_element_and_dw_and_dh(art, 0.0, 0.0, w, h).is_ok());
    // Tests and designers' screenshots wait for the artwork: `data-foil` says which foil is drawn.
    let _ = canvas.set_attribute("data-foil", if art.is_some() { "art" } else { "plain" });
    let label = zone.label_fr();
    // The size written by JavaScript (the same shortest digits Rust would print): no float formatting
    // code of Rust's in the player's download for this one number.
    let font = |size: f64| {
        format!(
            "700 {}px Georgia, 'DejaVu Serif', serif",
            String::from(js_sys::Number::from(size).to_string_with_radix(10).unwrap_or_default())
        )
    };
    let mut size = (h * 0.22).clamp(10.0, 17.0);
    ctx.set_font(&font(size));
    // 0.7 of the width also fits the chord of the round wheel. A zone too narrow for its label on one
    // line (the bonus card) takes it on two, and smaller only if it must.
    let widest = |lines: &[&str]| {
        lines.iter().filter_map(|line| ctx.measure_text(line).ok()).fold(1.0, |w: f64, m| w.max(m.width()))
    };
    let mut lines = vec![label];
    if widest(&lines) > w * 1.2 {
        lines = label.split(' ').collect();
    }
    let fit = (w * 0.7) / widest(&lines);
    if fit < 1.0 {
        size = (size * fit).max(9.0);
        ctx.set_font(&font(size));
    }
    ctx.set_text_align("center");
    ctx.set_text_baseline("middle");
    ctx.set_fill_style_str("rgba(60,45,20,0.8)");
    for (i, line) in lines.iter().enumerate() {
        let _ = ctx.fill_text(line, w / 2.0, h / 2.0 + (i as f64 - (lines.len() - 1) as f64 / 2.0) * size * 1.15);
    }
    Some((w, h))
}

fn erase_line(canvas: &HtmlCanvasElement, from: (f64, f64), to: (f64, f64)) {
    erase_polyline(canvas, from, &[to]);
}

/// Scratches away a stroke through `points` from `from`, as one path.
fn erase_polyline(canvas: &HtmlCanvasElement, from: (f64, f64), points: &[(f64, f64)]) {
    let Some(ctx) = context(canvas) else { return };
    let _ = ctx.set_global_composite_operation("destination-out");
    // Opaque, so that a stroke removes the foil entirely (the context still holds the hatch's translucent white).
    ctx.set_stroke_style_str("#000");
    ctx.set_line_cap("round");
    ctx.set_line_join("round");
    ctx.set_line_width(BRUSH * 2.0);
    ctx.begin_path();
    ctx.move_to(from.0, from.1);
    for &(x, y) in points {
        ctx.line_to(x, y);
    }
    ctx.stroke();
    let _ = ctx.set_global_composite_operation("source-over");
}

// A pressed pointer's moves over a zone are recorded by a listener in JavaScript: the hottest event of
// the game then costs no call into wasm (measured: a call into wasm per move cost the move about 80 µs
// at 60 Hz). A move keeps its screen point (the zone takes the pointer for the rest of the stroke). The
// frames that draw them (the zone's own code, in wasm) come from one loop that runs while moves come
// and half a second after, not from a frame asked for by each move: asking costs a move about 45 µs in
// Chromium. A pointer the browser cannot capture (one no longer active) still scratches.
#[wasm_bindgen::prelude::wasm_bindgen(inline_js = r#"
export function recordMoves(canvas, moves, frame) {
  let idle = -1;
  const tick = () => {
    if (!moves.live || ++idle > 30) return void (idle = -1);
    if (moves.length) idle = 0, frame();
    requestAnimationFrame(tick);
  };
  const move = e => {
    if (!(e.buttons & 1)) return;
    if (!canvas.hasPointerCapture(e.pointerId)) try { canvas.setPointerCapture(e.pointerId); } catch {}
    if (idle < 0) idle = 0, requestAnimationFrame(tick);
    moves.push(e.clientX, e.clientY);
  };
  moves.live = true;
  canvas.addEventListener("pointermove", move);
  return move;
}
export function followFocus() {
  const at = document.activeElement;
  if (at && at !== document.body && !at.matches(":disabled, [tabindex='-1']")) return;
  const next = document.querySelector(".replay, .choose, .ticket canvas[tabindex='0']")
    ?? document.querySelector(".ticket");
  next?.focus({ preventScroll: true });
}
"#)]
extern "C" {
    #[wasm_bindgen::prelude::wasm_bindgen(js_name = recordMoves)]
    fn record_moves(canvas: &HtmlCanvasElement, moves: &js_sys::Array, frame: &js_sys::Function) -> js_sys::Function;
    /// Gives the focus to the next thing to play (« Rejouer », a surface to choose, the first zone to
    /// scratch, else the ticket) when the player's focus was lost (the button it was on went away or
    /// was turned off, the zone it was on is uncovered); never takes it from anywhere else, and never
    /// scrolls (a finger scratching on a phone would see the page jump). Here in JavaScript: a few DOM
    /// calls that would weigh far more in the download as wasm.
    #[wasm_bindgen::prelude::wasm_bindgen(js_name = followFocus)]
    pub fn follow_focus();
}

/// The pointer on a playable zone: listeners on the canvas itself (not through Yew's page-level
/// delegation), moves recorded in JavaScript ([`record_moves`]), and one animation frame that scratches
/// every point recorded since the last, as one path. Removed when dropped.
struct Strokes {
    canvas: HtmlCanvasElement,
    /// Pointer down, up and cancel.
    listener: Closure<dyn FnMut(PointerEvent)>,
    /// The JavaScript move listener.
    on_move: js_sys::Function,
    /// Screen points not yet drawn, flat (x, y, x, y…); `live` while the zone listens.
    moves: js_sys::Array,
    /// Kept while the zone listens: the frames it asks for call it.
    _frame: Closure<dyn FnMut()>,
}

const STROKE_EVENTS: [&str; 3] = ["pointerdown", "pointerup", "pointercancel"];

/// What a stroke keeps between frames.
#[derive(Default)]
struct Stroke {
    /// The pointer went down: the next point starts a new stroke.
    starts: bool,
    /// Where the zone is on screen for this stroke: its top-left corner and the scale from screen to
    /// zone pixels. Read once a stroke, in a frame, and dropped when the stroke ends.
    placement: Option<(f64, f64, f64, f64)>,
}

impl Strokes {
    fn listen(
        canvas: HtmlCanvasElement,
        zone: Zone,
        state: Rc<std::cell::RefCell<Scratch>>,
        on_reveal: Rc<std::cell::RefCell<Callback<Zone>>>,
        kept: Rc<Option<KeptStrokes>>,
    ) -> Strokes {
        let moves = js_sys::Array::new();
        let stroke = Rc::new(std::cell::RefCell::new(Stroke::default()));
        // Draws what was recorded: one path, one pass over the coverage grid.
        let draw = {
            let (canvas, moves, stroke, state) = (canvas.clone(), moves.clone(), stroke.clone(), state.clone());
            Rc::new(move || {
                if moves.length() == 0 {
                    return;
                }
                let mut st = stroke.borrow_mut();
                // In the zone's own CSS pixels: the on-screen box may be zoomed (see the module doc).
                let (left, top, sx, sy) = *st.placement.get_or_insert_with(|| {
                    let rect = canvas.get_bounding_client_rect();
                    let (w, h) = layout_size(&canvas);
                    (rect.left(), rect.top(), w / rect.width().max(1.0), h / rect.height().max(1.0))
                });
                let at = |i: u32| moves.get(i).as_f64().unwrap_or_default();
                let points: Vec<(f64, f64)> =
                    (0..moves.length() / 2).map(|i| ((at(2 * i) - left) * sx, (at(2 * i + 1) - top) * sy)).collect();
                moves.set_length(0);
                let mut s = state.borrow_mut();
                if std::mem::take(&mut st.starts) {
                    s.last = None;
                }
                drop(st);
                let from = s.last.unwrap_or(points[0]);
                erase_polyline(&canvas, from, &points);
                super::sound::scratch();
                let (w, h) = s.size;
                let mut previous = from;
                for &to in &points {
                    s.strokes.push(((previous.0 / w, previous.1 / h), (to.0 / w, to.1 / h)));
                    if let Some(grid) = s.grid.as_mut() {
                        grid.stroke(previous, to, BRUSH);
                    }
                    previous = to;
                }
                s.last = Some(previous);
                if s.grid.as_ref().is_some_and(ScratchGrid::is_past_threshold) && !s.reported {
                    s.reported = true;
                    drop(s);
                    on_reveal.borrow().emit(zone);
                }
            })
        };
        // One frame callback for the zone's life, asked for again as moves come (not one made per frame).
        let frame = Closure::<dyn FnMut()>::new({
            let draw = draw.clone();
            move || draw()
        });
        let on_move = record_moves(&canvas, &moves, frame.as_ref().unchecked_ref());
        // One listener for the stroke's other events: one closure type in the download, not three.
        let listener = Closure::<dyn FnMut(PointerEvent)>::new({
            let on_move = on_move.clone();
            move |e: PointerEvent| {
                let down = e.type_() == "pointerdown";
                if !down {
                    // A stroke ends: what is recorded is drawn now (its frame then finds nothing left),
                    // and kept for a reload.
                    draw();
                    if let Some(kept) = kept.as_ref() {
                        kept.store(state.borrow().strokes.iter().flat_map(|&((x0, y0), (x1, y1))| [x0, y0, x1, y1]));
                    }
                }
                *stroke.borrow_mut() = Stroke { starts: true, placement: None };
                if down {
                    // A stroke may also start outside the foil (beside it, or in a round foil's corners):
                    // a pressed pointer arriving over the foil scratches from there (the move listener).
                    e.prevent_default();
                    let _ = on_move.call1(&wasm_bindgen::JsValue::NULL, &e);
                }
            }
        });
        for event in STROKE_EVENTS {
            let _ = canvas.add_event_listener_with_callback(event, listener.as_ref().unchecked_ref());
        }
        Strokes { canvas, listener, on_move, moves, _frame: frame }
    }
}

impl Drop for Strokes {
    fn drop(&mut self) {
        for event in STROKE_EVENTS {
            let _ = self.canvas.remove_event_listener_with_callback(event, self.listener.as_ref().unchecked_ref());
        }
        let _ = self.canvas.remove_event_listener_with_callback("pointermove", &self.on_move);
        // No frame asked for may call the frame callback once it is gone.
        let _ = js_sys::Reflect::set(&self.moves, &"live".into(), &false.into());
    }
}

type Segment = ((f64, f64), (f64, f64));

struct Scratch {
    grid: Option<ScratchGrid>,
    /// The zone's layout size when its foil was last painted.
    size: (f64, f64),
    /// Every stroke so far, in fractions of the zone's size, to scratch them again after a resize.
    strokes: Vec<Segment>,
    last: Option<(f64, f64)>,
    reported: bool,
}

/// Paints the foil at the zone's present size, and scratches again what the player had scratched.
fn repaint(canvas: &HtmlCanvasElement, zone: Zone, settings: FoilSettings, revealed: bool, s: &mut Scratch) {
    let Some((w, h)) = paint_foil(canvas, zone, settings.pixel_ratio) else { return };
    let mut grid = ScratchGrid::new(w, h, CELL);
    if settings.half_scratched && !revealed {
        // The left half swept clean, so the designer sees foil and content side by side.
        erase_path(canvas, &sweep_path((w / 2.0 - BRUSH).max(0.0), h));
    }
    for &((x0, y0), (x1, y1)) in &s.strokes {
        let (from, to) = ((x0 * w, y0 * h), (x1 * w, y1 * h));
        erase_line(canvas, from, to);
        grid.stroke(from, to, BRUSH);
    }
    s.grid = Some(grid);
    s.size = (w, h);
}

/// A zone being scratched: the canvas to attach it to, what a key does on it, and whether the player may
/// scratch it now.
pub struct Scratching {
    pub canvas: NodeRef,
    pub onkeydown: Callback<KeyboardEvent>,
    pub enabled: bool,
}

/// Scratching one zone: paints its foil (anew when the zone is resized), sweeps it away when the game
/// uncovers it, and while it is playable takes strokes and Enter/Space; `on_reveal` hears once that the
/// player has uncovered it.
#[hook]
pub fn use_scratch(
    zone: Zone,
    ticket_id: &str,
    scratchable: bool,
    revealed: bool,
    on_reveal: &Callback<Zone>,
) -> Scratching {
    let canvas_ref = use_node_ref();
    let kept = Rc::new(KeptStrokes::of(ticket_id, zone));
    // A foil half scratched before a reload comes back as it was left.
    let state = use_mut_ref(|| {
        let flat = kept.as_ref().as_ref().map(KeptStrokes::load).unwrap_or_default();
        let strokes = flat.chunks_exact(4).map(|s| ((s[0], s[1]), (s[2], s[3]))).collect();
        Scratch { grid: None, size: (0.0, 0.0), strokes, last: None, reported: false }
    });

    let settings = use_context::<FoilSettings>().unwrap_or_default();
    {
        let (canvas_ref, state) = (canvas_ref.clone(), state.clone());
        use_effect_with(settings, move |&settings| {
            let watch = canvas_ref.cast::<HtmlCanvasElement>().map(|canvas| {
                repaint(&canvas, zone, settings, revealed, &mut state.borrow_mut());
                // The artwork still loading (the first ticket of a visit): painted again once it is in.
                if let Some(art) = foil_art(zone).filter(|art| !art.complete()) {
                    let (canvas, state) = (canvas.clone(), state.clone());
                    yew::platform::spawn_local(async move {
                        if wasm_bindgen_futures::JsFuture::from(art.decode()).await.is_ok() {
                            repaint(&canvas, zone, settings, revealed, &mut state.borrow_mut());
                        }
                    });
                }
                // A phone turned sideways or a window resized: paint anew rather than stretch the old foil.
                let on_resize = Closure::<dyn FnMut()>::new({
                    let canvas = canvas.clone();
                    move || {
                        let mut s = state.borrow_mut();
                        if layout_size(&canvas) != s.size {
                            repaint(&canvas, zone, settings, revealed, &mut s);
                        }
                    }
                });
                let observer = ResizeObserver::new(on_resize.as_ref().unchecked_ref()).ok();
                if let Some(observer) = &observer {
                    observer.observe(&canvas);
                }
                (observer, on_resize)
            });
            move || {
                if let Some((Some(observer), _on_resize)) = watch {
                    observer.disconnect();
                }
            }
        });
    }

    // Uncovered by the system (« Auto », or a reopened ticket): sweep the foil away like a coin would.
    {
        let (canvas_ref, state, kept) = (canvas_ref.clone(), state.clone(), kept.clone());
        use_effect_with(revealed, move |&revealed| {
            if let Some(kept) = kept.as_ref().as_ref().filter(|_| revealed) {
                kept.forget();
            }
            if revealed
                && !state.borrow().reported
                && !prefers_reduced_motion()
                && let Some(canvas) = canvas_ref.cast::<HtmlCanvasElement>()
            {
                yew::platform::spawn_local(sweep(canvas));
            }
        });
    }

    // What a stroke does, kept fresh on every render for the listeners below (its callback may change).
    let latest_on_reveal = use_mut_ref(|| on_reveal.clone());
    *latest_on_reveal.borrow_mut() = on_reveal.clone();

    let enabled = scratchable && !revealed;
    {
        let (canvas_ref, state) = (canvas_ref.clone(), state.clone());
        use_effect_with(enabled, move |&enabled| {
            let listening = canvas_ref
                .cast::<HtmlCanvasElement>()
                .filter(|_| enabled)
                .map(|canvas| Strokes::listen(canvas, zone, state, latest_on_reveal, kept));
            move || drop(listening)
        });
    }
    let onkeydown = {
        let (state, on_reveal) = (state, on_reveal.clone());
        Callback::from(move |e: KeyboardEvent| {
            if enabled && (e.key() == "Enter" || e.key() == " ") {
                e.prevent_default();
                let mut s = state.borrow_mut();
                if !s.reported {
                    s.reported = true;
                    on_reveal.emit(zone);
                }
            }
        })
    };
    Scratching { canvas: canvas_ref, onkeydown, enabled }
}

#[function_component(ScratchZone)]
pub fn scratch_zone(props: &Props) -> Html {
    let zone = props.zone;
    let Scratching { canvas, onkeydown, enabled } =
        use_scratch(zone, &props.ticket_id, props.scratchable, props.revealed, &props.on_reveal);
    let slug = serde_name(zone);
    let label = if props.revealed {
        format!("{} : {}", zone.label_fr(), props.alt)
    } else if enabled {
        format!("Zone à gratter « {} » — grattez ou appuyez sur Entrée", zone.label_fr())
    } else {
        format!("Zone « {} », pas encore jouable", zone.label_fr())
    };
    html! {
        <div class={classes!("zone", props.class.clone(), props.revealed.then_some("revealed"),
            enabled.then_some("scratchable"))}
             data-testid={format!("zone-{slug}")} data-revealed={props.revealed.to_string()}>
            <div class="zone-content" aria-hidden={(!props.revealed).to_string()}>{ props.children.clone() }</div>
            // The zone's caption stays once its foil is gone (« grattez ici » only asks to scratch).
            if zone.label_fr() != "grattez ici" { <span class="caption" aria-hidden="true">{ zone.label_fr() }</span> }
            <canvas ref={canvas} class="foil" data-testid={format!("foil-{slug}")}
                tabindex={if enabled { "0" } else { "-1" }} role="button" aria-label={label}
                aria-disabled={(!enabled).to_string()} {onkeydown} />
        </div>
    }
}

/// The zig-zag a coin sweeps over a `w` × `h` zone, one row a brush wide.
fn sweep_path(w: f64, h: f64) -> Vec<(f64, f64)> {
    let rows = ((h / BRUSH).ceil() as usize).max(1);
    let turns = (0..=rows).map(|row| (if row % 2 == 0 { w } else { 0.0 }, (row as f64 + 0.5) * h / rows as f64));
    std::iter::once((0.0, BRUSH / 2.0)).chain(turns).collect()
}

fn erase_path(canvas: &HtmlCanvasElement, path: &[(f64, f64)]) {
    for leg in path.windows(2) {
        erase_line(canvas, leg[0], leg[1]);
    }
}

/// The sweep over a third of a second, then the CSS fade finishes the job.
async fn sweep(canvas: HtmlCanvasElement) {
    let (w, h) = layout_size(&canvas);
    for leg in sweep_path(w, h).windows(2) {
        erase_line(&canvas, leg[0], leg[1]);
        gloo_timers::future::TimeoutFuture::new(30).await;
    }
}
