//! Every string from a bundle or an audit is attacker-controlled (agent names, tool names,
//! reasons, session ids), so each one reaches the page through [`text`]: HTML-escaped, with
//! the characters that could hide or reorder what a reviewer reads shown as visible codes,
//! and cut at a length a page can hold.

use std::fmt::Write as _;

/// Longest string shown as it is; a longer one is cut and says how much was left out.
pub const MAX_SHOWN_CHARS: usize = 1_000;

/// `s` safe in HTML text and in a double- or single-quoted attribute value: `& < > " '` as
/// entities, control, bidi, zero-width and line-separator characters as a visible `\u{..}`,
/// and no more than [`MAX_SHOWN_CHARS`] characters.
pub fn text(s: &str) -> String {
    visible(s, true)
}

/// `s` for a terminal: as [`text`] but without HTML's entities, so no character from a bundle
/// can drive the terminal or hide what is around it.
pub fn plain(s: &str) -> String {
    visible(s, false)
}

fn visible(s: &str, html: bool) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for (shown, ch) in s.chars().enumerate() {
        if shown == MAX_SHOWN_CHARS {
            let rest = s.chars().count() - shown;
            let _ = write!(out, "… ({rest} more characters)");
            break;
        }
        match ch {
            '&' if html => out.push_str("&amp;"),
            '<' if html => out.push_str("&lt;"),
            '>' if html => out.push_str("&gt;"),
            '"' if html => out.push_str("&quot;"),
            '\'' if html => out.push_str("&#39;"),
            c if hidden(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// Characters that a browser would not show as themselves, or that would change how the text
/// around them reads: controls (C0, DEL, C1), bidi embeddings, overrides, isolates and marks,
/// zero-width characters, the byte order mark, the line and paragraph separators, and
/// non-characters.
fn hidden(c: char) -> bool {
    let u = c as u32;
    c.is_control()
        || matches!(
            u,
            0x061c | 0x115f | 0x1160 | 0x17b4 | 0x17b5 | 0x180e | 0x3164 | 0xfeff | 0xffa0
        )
        || (0x200b..=0x200f).contains(&u)
        || (0x2028..=0x202e).contains(&u)
        || (0x2060..=0x206f).contains(&u)
        || (0xfff0..=0xfffb).contains(&u)
        || (0xfdd0..=0xfdef).contains(&u)
        || (u & 0xfffe) == 0xfffe
        || (0xe0000..=0xe007f).contains(&u)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_quotes_become_entities() {
        assert_eq!(
            text("<script>alert(\"x\")</script>&'"),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;"
        );
    }

    #[test]
    fn invisible_and_reordering_characters_are_shown_as_codes() {
        assert_eq!(text("re\u{202e}viewer"), "re\\u{202e}viewer");
        assert_eq!(
            text("a\u{0}b\nc\u{1b}[2J\u{2028}\u{200b}\u{feff}"),
            "a\\u{0}b\\u{a}c\\u{1b}[2J\\u{2028}\\u{200b}\\u{feff}"
        );
        assert_eq!(text("\u{2066}x\u{2069}"), "\\u{2066}x\\u{2069}");
        assert_eq!(text("\u{e0041}"), "\\u{e0041}");
        // Ordinary text outside ASCII stays as it is.
        assert_eq!(text("Grüße 😀 ревьюер"), "Grüße 😀 ревьюер");
    }

    #[test]
    fn plain_text_keeps_markup_and_shows_terminal_controls_as_codes() {
        assert_eq!(plain("<a> & 'b'"), "<a> & 'b'");
        assert_eq!(
            plain("s\u{1b}]0;x\u{7}\u{202e}1"),
            "s\\u{1b}]0;x\\u{7}\\u{202e}1"
        );
    }

    #[test]
    fn a_long_string_is_cut_and_says_so() {
        let long = "<".repeat(MAX_SHOWN_CHARS + 10);
        let shown = text(&long);
        assert!(shown.ends_with("… (10 more characters)"), "{shown}");
        assert_eq!(shown.matches("&lt;").count(), MAX_SHOWN_CHARS);
        assert!(!shown.contains('<'));
    }
}
