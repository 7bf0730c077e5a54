//! Player names: what a player types, shown as typed (NFKC), and the key that makes names unique, so
//! that `Victim`, fullwidth `ｖｉｃｔｉｍ` and lookalikes cannot sit beside `victim`.
//!
//! The key is the UTS #39 confusable skeleton of the NFKC, case-folded name. A name mixing scripts
//! (Cyrillic `і` among Latin letters) is refused outright: no honest name needs it.

use unicode_normalization::UnicodeNormalization;
use unicode_security::MixedScript;
use unicode_security::confusable_detection::skeleton;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlayerName {
    /// As shown: the name in NFKC.
    pub shown: String,
    /// Unique among players: two names with one key are the same name.
    pub key: String,
}

pub const RULE: &str = "a name has 3 to 32 letters or digits of one script, '.', '_' or '-'";

impl PlayerName {
    pub fn parse(typed: &str) -> Result<PlayerName, String> {
        let shown: String = typed.nfkc().collect();
        let length_ok = (3..=32).contains(&shown.chars().count());
        let characters_ok = shown.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !length_ok || !characters_ok {
            return Err(RULE.into());
        }
        if !shown.as_str().is_single_script() {
            return Err(format!("{RULE}: this one mixes scripts, as lookalike letters do"));
        }
        Ok(PlayerName { key: key_of(&shown), shown })
    }
}

/// The unique key of a name (also of a name typed to log in, which need not be valid to be looked up).
pub fn key_of(typed: &str) -> String {
    let folded: String = typed.nfkc().flat_map(char::to_lowercase).collect::<String>().nfkc().collect();
    skeleton(&folded).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_width_and_lookalikes_share_one_key() {
        let victim = PlayerName::parse("victim").unwrap();
        for same in ["Victim", "VICTIM", "ｖｉｃｔｉｍ", "ｖictim"] {
            assert_eq!(PlayerName::parse(same).unwrap().key, victim.key, "{same}");
        }
        // A whole-script lookalike (every letter Cyrillic) is one script, so allowed, but taken.
        assert_eq!(PlayerName::parse("аре").unwrap().key, PlayerName::parse("ape").unwrap().key);
        assert_ne!(PlayerName::parse("victor").unwrap().key, victim.key);
        assert_eq!(PlayerName::parse("ｖｉｃｔｉｍ").unwrap().shown, "victim", "shown in NFKC");
        assert_eq!(key_of("ＶＩＣＴＩＭ"), victim.key, "a login finds the name however it is typed");
    }

    #[test]
    fn mixed_scripts_and_odd_characters_are_refused() {
        for refused in ["vіctim", "pаypal", "ab", "a b c", "name!", "x".repeat(33).as_str(), "\u{200b}abc"] {
            assert!(PlayerName::parse(refused).is_err(), "{refused:?}");
        }
        for allowed in ["élodie", "Ζωή_99", "jean-luc.p", "マリオ_1"] {
            assert!(PlayerName::parse(allowed).is_ok(), "{allowed:?}");
        }
    }
}
