//! Sound effects synthesised with Web Audio, so that no sound file is downloaded: the rasp of a coin on
//! the foil, a chime when a surface wins, a fanfare that grows with a big win. Muted by a toggle the
//! browser remembers (local storage). Browsers start sound only after a gesture of the player's: the
//! first scratch or click opens the audio context.

use std::cell::{Cell, RefCell};
use web_sys::{AudioContext, OscillatorType};

const MUTED_KEY: &str = "vegas.muted";
/// The least time between two rasps while a stroke goes on, in milliseconds.
const SCRATCH_EVERY_MS: f64 = 70.0;

thread_local! {
    static CONTEXT: RefCell<Option<AudioContext>> = const { RefCell::new(None) };
    static LAST_SCRATCH: Cell<f64> = const { Cell::new(0.0) };
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok()?
}

pub fn muted() -> bool {
    storage().and_then(|s| s.get_item(MUTED_KEY).ok().flatten()).is_some_and(|v| v == "1")
}

pub fn set_muted(muted: bool) {
    if let Some(storage) = storage() {
        let _ = if muted { storage.set_item(MUTED_KEY, "1") } else { storage.remove_item(MUTED_KEY) };
    }
}

/// A note: its frequency (Hz), when it starts and how long it rings (seconds after now).
type Note = (f32, f64, f64);

fn play(notes: &[Note], kind: OscillatorType, volume: f32) {
    if muted() {
        return;
    }
    CONTEXT.with(|context| {
        let mut context = context.borrow_mut();
        if context.is_none() {
            *context = AudioContext::new().ok();
        }
        let Some(audio) = context.as_ref() else { return };
        let now = audio.current_time();
        for &(frequency, start, length) in notes {
            let (Ok(oscillator), Ok(envelope)) = (audio.create_oscillator(), audio.create_gain()) else { return };
            oscillator.set_type(kind);
            oscillator.frequency().set_value(frequency);
            let (begin, end) = (now + start, now + start + length);
            // A quick attack and a fading tail, so that no note clicks.
            let gain = envelope.gain();
            let _ = gain.set_value_at_time(0.0, begin);
            let _ = gain.linear_ramp_to_value_at_time(volume, begin + 0.01);
            let _ = gain.exponential_ramp_to_value_at_time(0.0001, end);
            let _ = oscillator
                .connect_with_audio_node(&envelope)
                .and_then(|_| envelope.connect_with_audio_node(&audio.destination()));
            let _ = oscillator.start_with_when(begin);
            let _ = oscillator.stop_with_when(end + 0.05);
        }
    });
}

/// The rasp of the coin, at most every [`SCRATCH_EVERY_MS`] while a stroke goes on.
pub fn scratch() {
    let now = js_sys::Date::now();
    if now - LAST_SCRATCH.get() < SCRATCH_EVERY_MS {
        return;
    }
    LAST_SCRATCH.set(now);
    let pitch = 1_400.0 + (js_sys::Math::random() * 900.0) as f32;
    play(&[(pitch, 0.0, 0.035)], OscillatorType::Sawtooth, 0.025);
}

/// A rising chime: a surface shows its win.
pub fn surface_won() {
    play(&[(659.3, 0.0, 0.2), (830.6, 0.08, 0.2), (987.8, 0.16, 0.35)], OscillatorType::Triangle, 0.12);
}

/// A fanfare whose length grows with the win: a note more for each tenfold of euros (3 for 3 €, 4 for
/// 30 €, … all 8 for 40 000 €).
pub fn fanfare(euros: u64) {
    const SCALE: [f32; 8] = [523.3, 659.3, 784.0, 1046.5, 784.0, 1046.5, 1318.5, 1568.0];
    let notes = (3 + euros.max(1).ilog10() as usize).min(SCALE.len());
    let fanfare: Vec<Note> = SCALE[..notes].iter().enumerate().map(|(i, &f)| (f, i as f64 * 0.13, 0.32)).collect();
    play(&fanfare, OscillatorType::Square, 0.06);
}
