//! One hidden zone: its content, and over it a canvas the player scratches with mouse, touch or pen
//! (pointer events), or uncovers with Enter/Space. The coverage model is [`ScratchGrid`]; the canvas is
//! only its view. Drawn at the device pixel ratio, so the foil stays crisp on high-DPI screens.
//!
//! Sizes are layout sizes (`offsetWidth`), not on-screen boxes, so a zone inside a zoomed or scaled
//! container (the designers' preview magnifies whole tickets) paints and scratches the same way. The
//! strokes are kept in fractions of the zone, so that a resized zone (a phone turned sideways) is
//! painted anew at its size with what had been scratched.

use crate::play::scratch::ScratchGrid;
use crate::rules::{Zone, serde_name};
use std::rc::Rc;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement, KeyboardEvent, PointerEvent, ResizeObserver};
use yew::prelude::*;

/// Brush radius and grid cell, in CSS pixels.
const BRUSH: f64 = 16.0;
const CELL: f64 = 6.0;

#[derive(Properties, PartialEq)]
pub struct Props {
    pub zone: Zone,
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

/// Time between two zones uncovered by « Auto » (the game and its preview pace it alike).
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

/// Sizes the canvas to its box at the device pixel ratio and paints the silver foil with its label.
fn paint_foil(canvas: &HtmlCanvasElement, label: &str, pixel_ratio: Option<f64>) -> Option<(f64, f64)> {
    let (w, h) = layout_size(canvas);
    let dpr = pixel_ratio.or_else(|| web_sys::window().map(|w| w.device_pixel_ratio())).unwrap_or(1.0).max(1.0);
    canvas.set_width((w * dpr).round() as u32);
    canvas.set_height((h * dpr).round() as u32);
    let ctx = context(canvas)?;
    ctx.scale(dpr, dpr).ok()?;
    let gradient = ctx.create_linear_gradient(0.0, 0.0, w, h);
    for (stop, color) in [(0.0, "#e9ebee"), (0.35, "#b7bbc2"), (0.5, "#f4f5f7"), (0.7, "#a9aeb6"), (1.0, "#d9dce1")] {
        let _ = gradient.add_color_stop(stop, color);
    }
    ctx.set_fill_style_canvas_gradient(&gradient);
    ctx.fill_rect(0.0, 0.0, w, h);
    // A fine diamond hatch, like real scratch foil.
    ctx.set_stroke_style_str("rgba(255,255,255,0.35)");
    ctx.set_line_width(1.0);
    let mut x = -h;
    while x < w {
        ctx.begin_path();
        ctx.move_to(x, h);
        ctx.line_to(x + h, 0.0);
        ctx.stroke();
        x += 9.0;
    }
    // The size written by JavaScript (the same shortest digits Rust would print): no float formatting
    // code of Rust's in the player's download for this one number.
    let font = |size: f64| format!("700 {}px Georgia, 'DejaVu Serif', serif", String::from(js_sys::Number::from(size).to_string_with_radix(10).unwrap_or_default()));
    let mut size = (h * 0.22).clamp(10.0, 17.0);
    ctx.set_font(&font(size));
    // Narrow zones (the bonus card) get a smaller label rather than a clipped one.
    if let Ok(metrics) = ctx.measure_text(label) {
        // 0.7 of the width also fits the chord of the round wheel.
        let fit = (w * 0.7) / metrics.width().max(1.0);
        if fit < 1.0 {
            size = (size * fit).max(7.0);
            ctx.set_font(&font(size));
        }
    }
    ctx.set_text_align("center");
    ctx.set_text_baseline("middle");
    ctx.set_fill_style_str("rgba(60,45,20,0.75)");
    let _ = ctx.fill_text(label, w / 2.0, h / 2.0);
    Some((w, h))
}

fn erase_line(canvas: &HtmlCanvasElement, from: (f64, f64), to: (f64, f64)) {
    let Some(ctx) = context(canvas) else { return };
    let _ = ctx.set_global_composite_operation("destination-out");
    // Opaque, so that a stroke removes the foil entirely (the context still holds the hatch's translucent white).
    ctx.set_stroke_style_str("#000");
    ctx.set_line_cap("round");
    ctx.set_line_join("round");
    ctx.set_line_width(BRUSH * 2.0);
    ctx.begin_path();
    ctx.move_to(from.0, from.1);
    ctx.line_to(to.0, to.1);
    ctx.stroke();
    let _ = ctx.set_global_composite_operation("source-over");
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
    let Some((w, h)) = paint_foil(canvas, zone.label_fr(), settings.pixel_ratio) else { return };
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

#[function_component(ScratchZone)]
pub fn scratch_zone(props: &Props) -> Html {
    let canvas_ref = use_node_ref();
    let state = use_mut_ref(|| Scratch { grid: None, size: (0.0, 0.0), strokes: Vec::new(), last: None, reported: false });
    let zone = props.zone;

    let settings = use_context::<FoilSettings>().unwrap_or_default();
    {
        let (canvas_ref, state, revealed) = (canvas_ref.clone(), state.clone(), props.revealed);
        use_effect_with(settings, move |&settings| {
            let watch = canvas_ref.cast::<HtmlCanvasElement>().map(|canvas| {
                repaint(&canvas, zone, settings, revealed, &mut state.borrow_mut());
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
        let (canvas_ref, state) = (canvas_ref.clone(), state.clone());
        use_effect_with(props.revealed, move |&revealed| {
            if revealed
                && !state.borrow().reported
                && !prefers_reduced_motion()
                && let Some(canvas) = canvas_ref.cast::<HtmlCanvasElement>()
            {
                yew::platform::spawn_local(sweep(canvas));
            }
        });
    }

    // The pointer in the zone's own CSS pixels: the on-screen box may be zoomed (see the module doc).
    let point = |e: &PointerEvent| -> (f64, f64) {
        let target: HtmlCanvasElement = e.target_unchecked_into();
        let rect = target.get_bounding_client_rect();
        let (w, h) = layout_size(&target);
        let (sx, sy) = (w / rect.width().max(1.0), h / rect.height().max(1.0));
        ((f64::from(e.client_x()) - rect.left()) * sx, (f64::from(e.client_y()) - rect.top()) * sy)
    };

    let scratch_to = {
        let (state, canvas_ref, on_reveal) = (state.clone(), canvas_ref.clone(), props.on_reveal.clone());
        Rc::new(move |to: (f64, f64)| {
            let Some(canvas) = canvas_ref.cast::<HtmlCanvasElement>() else { return };
            let mut s = state.borrow_mut();
            let from = s.last.unwrap_or(to);
            erase_line(&canvas, from, to);
            super::sound::scratch();
            s.last = Some(to);
            let (w, h) = s.size;
            s.strokes.push(((from.0 / w, from.1 / h), (to.0 / w, to.1 / h)));
            if let Some(grid) = s.grid.as_mut() {
                grid.stroke(from, to, BRUSH);
                if grid.is_past_threshold() && !s.reported {
                    s.reported = true;
                    on_reveal.emit(zone);
                }
            }
        })
    };

    let enabled = props.scratchable && !props.revealed;
    let onpointerdown = {
        let (scratch_to, state) = (scratch_to.clone(), state.clone());
        Callback::from(move |e: PointerEvent| {
            if !enabled {
                return;
            }
            e.prevent_default();
            let target: web_sys::Element = e.target_unchecked_into();
            let _ = target.set_pointer_capture(e.pointer_id());
            state.borrow_mut().last = None;
            scratch_to(point(&e));
        })
    };
    // A stroke may start outside the foil (beside it, or in a round foil's corners) and scratch from
    // where it enters: a pressed pointer arriving over the foil starts scratching there.
    let onpointermove = {
        let scratch_to = scratch_to.clone();
        Callback::from(move |e: PointerEvent| {
            if enabled && e.buttons() & 1 == 1 {
                let target: web_sys::Element = e.target_unchecked_into();
                if !target.has_pointer_capture(e.pointer_id()) {
                    let _ = target.set_pointer_capture(e.pointer_id());
                }
                scratch_to(point(&e));
            }
        })
    };
    let onpointerup = {
        let state = state.clone();
        Callback::from(move |_: PointerEvent| state.borrow_mut().last = None)
    };
    let onkeydown = {
        let (state, on_reveal) = (state.clone(), props.on_reveal.clone());
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

    let slug = serde_name(zone);
    let label = if props.revealed {
        format!("{} : {}", zone.label_fr(), props.alt)
    } else if enabled {
        format!("Zone à gratter « {} » — grattez ou appuyez sur Entrée", zone.label_fr())
    } else {
        format!("Zone « {} », pas encore jouable", zone.label_fr())
    };
    html! {
        <div class={classes!("zone", props.class.clone(), props.revealed.then_some("revealed"), enabled.then_some("scratchable"))}
             data-testid={format!("zone-{slug}")} data-revealed={props.revealed.to_string()}>
            <div class="zone-content" aria-hidden={(!props.revealed).to_string()}>{ props.children.clone() }</div>
            <canvas ref={canvas_ref} class="foil" data-testid={format!("foil-{slug}")}
                tabindex={if enabled { "0" } else { "-1" }} role="button" aria-label={label}
                aria-disabled={(!enabled).to_string()}
                {onpointerdown} {onpointermove} onpointerup={onpointerup.clone()} onpointercancel={onpointerup} {onkeydown} />
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
