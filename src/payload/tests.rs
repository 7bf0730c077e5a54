use super::*;
use crate::composer::{Design, compose};
use crate::rules::{Reel, Throw};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn signer() -> TicketSigner {
    TicketSigner::from_secret([42; 32])
}

fn claims(lot: Cents) -> TicketClaims {
    let zones = compose(&Design::default_design(), lot, &mut ChaCha20Rng::seed_from_u64(9)).unwrap();
    TicketClaims {
        v: FORMAT_VERSION,
        jti: "t-1".into(),
        sub: "p-1".into(),
        iat: 1_764_700_000,
        serial: Serial { emission: 1, block: 2, index: 345 },
        zones,
        lot_cents: lot,
        salt: None,
        qa: false,
    }
}

/// Re-signs tampered claims with the real key, as a compromised composer would.
fn resign(claims: &TicketClaims) -> String {
    signer().sign(claims)
}

fn parts(token: &str) -> Vec<String> {
    token.split('.').map(str::to_owned).collect()
}

fn decode_claims(token: &str) -> serde_json::Value {
    serde_json::from_slice(&B64.decode(&parts(token)[1]).unwrap()).unwrap()
}

fn with_claims(token: &str, value: &serde_json::Value) -> String {
    let p = parts(token);
    format!("{}.{}.{}", p[0], B64.encode(serde_json::to_vec(value).unwrap()), p[2])
}

#[test]
fn a_signed_ticket_verifies_and_reads_its_lot() {
    let c = claims(Cents::euros(50));
    let token = signer().sign(&c);
    let verified = verify(&token, &signer().jwks()).unwrap();
    assert_eq!(verified.claims, c);
    assert_eq!(verified.outcome.lot, Cents::euros(50));
}

#[test]
fn the_header_is_standard_eddsa_with_a_thumbprint_kid() {
    let token = signer().sign(&claims(Cents::ZERO));
    let header: serde_json::Value = serde_json::from_slice(&B64.decode(&parts(&token)[0]).unwrap()).unwrap();
    assert_eq!(header["alg"], "EdDSA");
    assert_eq!(header["typ"], JWS_TYPE);
    assert_eq!(header["kid"], signer().kid());
    let jwk = signer().jwk();
    assert_eq!((jwk.kty.as_str(), jwk.crv.as_str()), ("OKP", "Ed25519"));
    assert_eq!(jwk.kid.len(), 43, "base64url of a SHA-256");
}

#[test]
fn rfc_8037_test_key_has_the_published_thumbprint() {
    // RFC 8037 appendix A.3: the thumbprint of the example Ed25519 key.
    assert_eq!(
        thumbprint("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"),
        "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
    );
}

#[test]
fn a_changed_symbol_breaks_the_signature() {
    let token = signer().sign(&claims(Cents::ZERO));
    let mut value = decode_claims(&token);
    value["zones"]["jackpot"]["tray"] = serde_json::json!(300);
    assert_eq!(verify(&with_claims(&token, &value), &signer().jwks()), Err(PayloadError::Signature));
}

#[test]
fn a_changed_lot_breaks_the_signature() {
    let token = signer().sign(&claims(Cents::ZERO));
    let mut value = decode_claims(&token);
    value["lot_cents"] = serde_json::json!(4_000_000);
    assert_eq!(verify(&with_claims(&token, &value), &signer().jwks()), Err(PayloadError::Signature));
}

#[test]
fn a_flipped_signature_byte_is_refused() {
    let token = signer().sign(&claims(Cents::euros(5)));
    let p = parts(&token);
    let mut sig = B64.decode(&p[2]).unwrap();
    sig[10] ^= 1;
    let forged = format!("{}.{}.{}", p[0], p[1], B64.encode(sig));
    assert_eq!(verify(&forged, &signer().jwks()), Err(PayloadError::Signature));
}

#[test]
fn an_unknown_kid_or_another_key_is_refused() {
    let token = signer().sign(&claims(Cents::euros(5)));
    let other = TicketSigner::from_secret([1; 32]);
    assert!(matches!(verify(&token, &other.jwks()), Err(PayloadError::UnknownKey(_))));
    // The other key published under our kid: the signature does not match it.
    let mut jwks = other.jwks();
    jwks.keys[0].kid = signer().kid().to_owned();
    assert_eq!(verify(&token, &jwks), Err(PayloadError::Signature));
    // A header naming a kid that is not published.
    let p = parts(&token);
    let header = B64.encode(br#"{"alg":"EdDSA","kid":"nope"}"#);
    assert_eq!(
        verify(&format!("{header}.{}.{}", p[1], p[2]), &signer().jwks()),
        Err(PayloadError::UnknownKey("nope".into()))
    );
}

#[test]
fn alg_none_and_garbage_are_refused() {
    let token = signer().sign(&claims(Cents::euros(5)));
    let p = parts(&token);
    let none = B64.encode(br#"{"alg":"none","kid":"x"}"#);
    assert_eq!(verify(&format!("{none}.{}.", p[1]), &signer().jwks()), Err(PayloadError::Algorithm("none".into())));
    for bad in ["", "a.b", "a.b.c.d", &format!("{}.{}", p[0], p[1]), &format!("{}.{}.!!", p[0], p[1])] {
        assert!(matches!(verify(bad, &signer().jwks()), Err(PayloadError::Malformed(_))), "{bad:?}");
    }
}

#[test]
fn a_validly_signed_ticket_whose_symbols_disagree_with_its_lot_is_refused() {
    let mut c = claims(Cents::ZERO);
    c.lot_cents = Cents::euros(1_000);
    assert_eq!(
        verify(&resign(&c), &signer().jwks()),
        Err(PayloadError::LotMismatch { signed: Cents::euros(1_000), read: Cents::ZERO })
    );
}

#[test]
fn a_validly_signed_ticket_the_regulation_does_not_define_is_refused() {
    let mut c = claims(Cents::ZERO);
    c.zones.jackpot.reels = [Reel::Cherry, Reel::Cherry, Reel::Bar];
    assert_eq!(verify(&resign(&c), &signer().jwks()), Err(PayloadError::InvalidTicket(InvalidTicket::TwoCherries)));
    let mut c = claims(Cents::ZERO);
    c.zones.craps.throws[0] = Throw(7, 1);
    // A die of 7 does not even parse as a throw.
    assert!(matches!(verify(&resign(&c), &signer().jwks()), Err(PayloadError::Claims(e)) if e.contains("7+1")));
}

#[test]
fn a_future_format_version_is_named_as_such() {
    let mut c = claims(Cents::ZERO);
    for other in [FORMAT_VERSION - 1, FORMAT_VERSION + 1] {
        c.v = other;
        assert_eq!(verify(&resign(&c), &signer().jwks()), Err(PayloadError::Version(other)));
    }
}

#[test]
fn serials_print_as_on_the_ticket() {
    assert_eq!(Serial { emission: 1, block: 3, index: 12_345 }.to_string(), "E1-B3-0012345");
}

#[test]
fn a_serial_reads_back_as_printed_and_as_a_player_types_it() {
    for serial in [
        Serial { emission: 1, block: 3, index: 12_345 },
        Serial { emission: 12, block: 250, index: 0 },
        Serial { emission: 1, block: 1, index: 1_499_999 },
    ] {
        assert_eq!(serial.to_string().parse(), Ok(serial), "{serial}");
    }
    let five = Ok(Serial { emission: 1, block: 1, index: 5 });
    for typed in ["E1-B1-0000005", "e1-b1-0000005", "  E1-B1-5 ", "E01-B1-0000005"] {
        assert_eq!(typed.parse::<Serial>(), five, "{typed:?}");
    }
    for typo in [
        "",
        "5",
        "E1-B1",
        "E1-B1-00x5",
        "E1-1-0000005",
        "B1-E1-0000005",
        "E1-B1-0000005-2",
        "E-B1-5",
        "E1-B1-",
        "E1–B1–0000005",
        "E1-B1-99999999999",
        "E+1-B1-5",
    ] {
        assert_eq!(typo.parse::<Serial>(), Err(NotASerial), "{typo:?}");
    }
}
