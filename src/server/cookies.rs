//! The cookies the server sets and reads, for players and staff alike, through `axum-extra`'s jars:
//! each of ours is `SameSite=Strict`, `HttpOnly` unless the page must read it, and `Secure` unless the
//! server listens on loopback over plain HTTP. The device cookie is signed (HMAC-SHA256) by the jar.

use axum_extra::extract::cookie::SameSite;
pub use axum_extra::extract::cookie::{Cookie, CookieJar, Key, SignedCookieJar};

/// Whether the page's script may read a cookie.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Sent with requests only: a session, a device's proof.
    ServerOnly,
    /// Read by the page too: it holds no secret.
    Page,
}

/// One of our cookies: `name=value` on `path` for `seconds`.
pub fn ours(
    name: &'static str,
    value: String,
    path: &'static str,
    seconds: i64,
    reach: Reach,
    secure: bool,
) -> Cookie<'static> {
    Cookie::build((name, value))
        .path(path)
        .same_site(SameSite::Strict)
        .http_only(reach == Reach::ServerOnly)
        .secure(secure)
        .max_age(time::Duration::seconds(seconds))
        .build()
}

/// What tells the browser to forget cookie `name` set on `path`: added to a jar (a jar's `remove` says
/// nothing of a cookie the request did not carry, and a sign-out by bearer token carries none).
pub fn forget(name: &'static str, path: &'static str) -> Cookie<'static> {
    let mut cookie = Cookie::build((name, "")).path(path).build();
    cookie.make_removal();
    cookie
}

/// The value of cookie `name`, if the request carries it.
pub fn value_of(headers: &axum::http::HeaderMap, name: &str) -> Option<String> {
    CookieJar::from_headers(headers).get(name).map(|c| c.value().to_owned())
}

/// The key the signed jar signs with, from a secret every instance shares.
pub fn signing_key(secret: &[u8; 32]) -> Key {
    Key::derive_from(secret)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_cookie_is_strict_http_only_and_secure_off_loopback() {
        let cookie = ours("vegas_session", "abc".into(), "/", 60, Reach::ServerOnly, true).to_string();
        for attribute in ["vegas_session=abc", "HttpOnly", "SameSite=Strict", "Secure", "Path=/", "Max-Age=60"] {
            assert!(cookie.contains(attribute), "{cookie}");
        }
        let page = ours("vegas_signed_in", "1".into(), "/", 60, Reach::Page, false).to_string();
        assert!(!page.contains("HttpOnly") && !page.contains("Secure"), "{page}");
    }

    #[test]
    fn a_forgotten_cookie_is_sent_empty_and_expired() {
        use axum::response::IntoResponse;
        let response = (CookieJar::new().add(forget("vegas_session", "/")), ()).into_response();
        let set = response.headers().get(axum::http::header::SET_COOKIE).unwrap().to_str().unwrap();
        assert!(set.starts_with("vegas_session=;") && set.contains("Max-Age=0") && set.contains("Path=/"), "{set}");
    }

    #[test]
    fn a_signed_cookie_reads_back_only_unchanged_and_under_its_key() {
        use axum::response::IntoResponse;
        let key = signing_key(&[7; 32]);
        let jar = SignedCookieJar::new(key.clone()).add(ours(
            "vegas_device",
            "p-1.100".into(),
            "/",
            60,
            Reach::ServerOnly,
            false,
        ));
        let response = (jar, ()).into_response();
        let set = response.headers().get(axum::http::header::SET_COOKIE).unwrap().to_str().unwrap().to_owned();
        let signed = set.split(';').next().unwrap().strip_prefix("vegas_device=").unwrap().to_owned();
        assert_ne!(signed, "p-1.100", "sent signed");
        let read = |value: &str, key: Key| {
            let mut headers = axum::http::HeaderMap::new();
            headers.insert(axum::http::header::COOKIE, format!("vegas_device={value}").parse().unwrap());
            SignedCookieJar::from_headers(&headers, key).get("vegas_device").map(|c| c.value().to_owned())
        };
        assert_eq!(read(&signed, key.clone()), Some("p-1.100".into()));
        assert_eq!(read(&signed.replace("p-1", "p-2"), key), None, "a changed value fails its signature");
        assert_eq!(read(&signed, signing_key(&[8; 32])), None, "another key");
    }
}
