//! Dates as French players read them, in the browser's time zone.

/// A date and time as a French player reads them: « 03/12/2026 20:51 », or « 20:51:07 » for a step.
pub fn french_time(unix: i64, with_date: bool) -> String {
    let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(unix as f64 * 1000.0));
    let options = js_sys::Object::new();
    if with_date {
        let _ = js_sys::Reflect::set(&options, &"dateStyle".into(), &"short".into());
    }
    let _ = js_sys::Reflect::set(&options, &"timeStyle".into(), &(if with_date { "short" } else { "medium" }).into());
    date.to_locale_string("fr-FR", &options).into()
}
