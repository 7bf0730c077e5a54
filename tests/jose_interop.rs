//! A ticket payload checks with an independent JOSE library (`jsonwebtoken`), as the format promises.
#![cfg(not(target_arch = "wasm32"))]

use rand::SeedableRng;
use vegas::composer::{Design, compose};
use vegas::money::Cents;
use vegas::payload::{FORMAT_VERSION, Serial, TicketClaims, TicketSigner};

#[test]
fn jsonwebtoken_verifies_a_ticket_with_the_published_jwk() {
    let signer = TicketSigner::from_secret([5; 32]);
    let zones =
        compose(&Design::default_design(), Cents::euros(30), &mut rand_chacha::ChaCha20Rng::seed_from_u64(1)).unwrap();
    let claims = TicketClaims {
        v: FORMAT_VERSION,
        jti: "t".into(),
        sub: "p".into(),
        iat: 1,
        serial: Serial { emission: 1, block: 1, index: 0 },
        zones,
        lot_cents: Cents::euros(30),
        salt: None,
        qa: false,
    };
    let token = signer.sign(&claims);

    let jwk: jsonwebtoken::jwk::Jwk = serde_json::from_value(serde_json::to_value(signer.jwk()).unwrap()).unwrap();
    let key = jsonwebtoken::DecodingKey::from_jwk(&jwk).unwrap();
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::EdDSA);
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    let decoded = jsonwebtoken::decode::<serde_json::Value>(&token, &key, &validation).unwrap();
    assert_eq!(decoded.header.kid.as_deref(), Some(signer.kid()));
    assert_eq!(decoded.claims["lot_cents"], 3000);

    let mut forged = token.clone();
    forged.replace_range(forged.len() - 3.., "AAA");
    assert!(jsonwebtoken::decode::<serde_json::Value>(&forged, &key, &validation).is_err());
}
