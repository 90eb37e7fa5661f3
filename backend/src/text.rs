//! The one sanitiser for untrusted text on its way to the snapshot: board titles, assignees
//! and statuses (written by agents and people), and the strings peers put in their replies
//! (protocol versions and the like). Each is flattened (controls become a space; every
//! default-ignorable and bidi-control character, by Unicode's own properties, is removed),
//! passed through the redaction gate, and only then cut to a bound.
//!
//! Redacting before cutting matters: a cut could leave half a secret that no longer matches
//! any secret shape, and that half would leak.

use icu_properties::CodePointSetData;
use icu_properties::props::{BidiControl, DefaultIgnorableCodePoint};

use crate::redact::RedactionGate;

const ELLIPSIS: char = '…';

/// Flattens, redacts and cuts `raw` to at most `max` characters.
pub fn clean(raw: &str, max: usize) -> String {
    let flat = flatten(raw);
    let redacted = RedactionGate::default().redact_str(&flat).into_owned();
    cut(&redacted, max)
}

/// Control characters (newlines and tabs included) become one space; invisible characters
/// ([`is_invisible`]) are removed; runs of whitespace collapse, and the ends are trimmed.
fn flatten(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut pending_space = false;
    for c in raw.chars() {
        if is_invisible(c) && !c.is_control() {
            continue;
        }
        if c.is_control() || c.is_whitespace() {
            pending_space = !out.is_empty();
        } else {
            if pending_space {
                out.push(' ');
                pending_space = false;
            }
            out.push(c);
        }
    }
    out
}

/// Characters that hide text or move it instead of showing it, by Unicode's own properties
/// rather than a hand list: every default-ignorable code point (zero-width spaces and joiners,
/// the soft hyphen, invisible operators, fillers, tag characters, variation selectors) and
/// every bidi control (overrides, isolates, marks, the Arabic letter mark).
fn is_invisible(c: char) -> bool {
    CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c)
        || CodePointSetData::new::<BidiControl>().contains(c)
}

/// At most `max` characters, always at a char boundary; a cut ends in "…".
fn cut(text: &str, max: usize) -> String {
    if max == 0 {
        return String::new();
    }
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some(_) => {
            let keep = text
                .char_indices()
                .nth(max - 1)
                .map_or(text.len(), |(i, _)| i);
            let mut out = text[..keep].trim_end().to_string();
            out.push(ELLIPSIS);
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::REDACTED;

    const TITLE_MAX_CHARS: usize = 120;

    #[test]
    fn peer_text_is_cut_and_flattened() {
        assert_eq!(clean("a\nb", 10), "a b");
        assert_eq!(clean("abcdef", 4), "abc…");
    }

    #[test]
    fn short_text_passes_unchanged() {
        assert_eq!(
            clean("Fix the arm64 pull", TITLE_MAX_CHARS),
            "Fix the arm64 pull"
        );
    }

    #[test]
    fn control_and_bidi_characters_are_flattened() {
        assert_eq!(clean("a\nb\t\tc\r\n\u{202E}d\u{0}", 50), "a b c d");
        assert_eq!(clean("  \n ", 50), "");
    }

    /// What `a2a::short` let through before there was one sanitiser: a version string that
    /// reads "1.0" but carries a right-to-left override and zero-width characters.
    #[test]
    fn zero_width_and_isolate_characters_do_not_pass() {
        assert_eq!(clean("1.\u{200B}0\u{2067}\u{FEFF}", 16), "1.0");
        assert_eq!(clean("\u{200D}\u{2066}v1\u{2069}", 16), "v1");
    }

    /// What hostile clients got through the hand list (issue 21): each kept in a title and
    /// shown back. Every one is default-ignorable or a bidi control, and none survives, alone,
    /// inside a word or at its ends.
    #[test]
    fn every_invisible_character_is_removed() {
        let invisible = [
            '\u{061C}',  // ARABIC LETTER MARK (bidi control)
            '\u{2060}',  // WORD JOINER
            '\u{00AD}',  // SOFT HYPHEN
            '\u{180E}',  // MONGOLIAN VOWEL SEPARATOR
            '\u{2061}',  // FUNCTION APPLICATION
            '\u{2062}',  // INVISIBLE TIMES
            '\u{2063}',  // INVISIBLE SEPARATOR
            '\u{2064}',  // INVISIBLE PLUS
            '\u{E0001}', // LANGUAGE TAG
            '\u{E0041}', // TAG LATIN CAPITAL LETTER A
            '\u{E007F}', // CANCEL TAG
            '\u{3164}',  // HANGUL FILLER
            '\u{FFA0}',  // HALFWIDTH HANGUL FILLER
            '\u{115F}',  // HANGUL CHOSEONG FILLER
            '\u{200E}',  // LEFT-TO-RIGHT MARK
            '\u{202E}',  // RIGHT-TO-LEFT OVERRIDE
            '\u{FE0F}',  // VARIATION SELECTOR-16
        ];
        for c in invisible {
            let title = format!("{c}dep{c}loy{c}");
            assert_eq!(clean(&title, 50), "deploy", "U+{:04X}", c as u32);
            assert_eq!(clean(&c.to_string(), 50), "", "U+{:04X}", c as u32);
        }
        // What shows stays: letters of every script, spaces between words, emoji.
        assert_eq!(
            clean("déploiement نشر 배포 🦀", 50),
            "déploiement نشر 배포 🦀"
        );
    }

    #[test]
    fn a_cut_cannot_break_a_secret_out_of_its_shape() {
        let hash = format!("0x{}", "5f2b1d0c".repeat(8));
        let cut = clean(&format!("key {hash}"), 40);
        assert!(!cut.contains("5f2b1d0c"), "{cut}");
        assert!(cut.contains(REDACTED), "{cut}");
    }

    #[test]
    fn long_text_is_cut_at_a_char_boundary_with_an_ellipsis() {
        let title = "é".repeat(200);
        let out = clean(&title, TITLE_MAX_CHARS);
        assert_eq!(out.chars().count(), TITLE_MAX_CHARS);
        assert!(out.ends_with('…'));
        let exact = "x".repeat(TITLE_MAX_CHARS);
        assert_eq!(clean(&exact, TITLE_MAX_CHARS), exact);
        let emoji = "🦀".repeat(130);
        assert_eq!(clean(&emoji, 10), format!("{}…", "🦀".repeat(9)));
    }

    #[test]
    fn secrets_are_redacted_before_the_cut() {
        // The key straddles the cut: cutting first would leave "sk-ant-api03-PLA…", a prefix too
        // short to match the key shape, and it would leak.
        let title = format!(
            "{} sk-ant-api03-PLANTEDabcdefghijklmnop0123456789",
            "x".repeat(100)
        );
        let out = clean(&title, TITLE_MAX_CHARS);
        assert_eq!(out, format!("{} {REDACTED}", "x".repeat(100)));
    }
}
