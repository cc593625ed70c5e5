//! Showing untrusted text safely: object names, label and ConfigMap values and commit
//! messages come from whoever can write to the cluster or the repository. In a terminal, a
//! control character can move the cursor, rewrite earlier lines or forge a table row; in a
//! log, a newline forges a log line; in HTML, markup runs. Every human-facing output escapes
//! such text through these helpers (machine formats, JSON, escape by their own rules).

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` must not reach a terminal as is: C0 and C1 controls, DEL, and the Unicode
/// bidirectional overrides and isolates that reorder what is shown ("Trojan Source").
pub fn is_unsafe_char(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every [`is_unsafe_char`] written as a visible escape: `\n`, `\r`, `\t`,
/// `\x1b` below U+0080, `\u{85}` above. Borrowed when nothing needed escaping.
pub fn escape_control(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_unsafe_char(c) && (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if is_unsafe_char(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `text` for HTML element content or a quoted attribute value: `& < > " '` as character
/// references, and control characters escaped as by [`escape_control`] so they show.
pub fn escape_html(text: &str) -> String {
    let visible = escape_control(text);
    let mut out = String::with_capacity(visible.len() + 16);
    for c in visible.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` as one POSIX shell word: bare when it is plainly safe, else single-quoted, so a
/// command shown for copying (`kubectl get ...`, `pulumi cancel ...`) runs what it says.
pub fn shell_quote(text: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._-:@%+=,".contains(c);
    if !text.is_empty() && text.chars().all(safe) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_become_visible_escapes() {
        assert!(matches!(escape_control("web-1"), Cow::Borrowed("web-1")));
        assert_eq!(
            escape_control("a\u{1b}[2Jb\nc\td\re\u{7f}"),
            "a\\x1b[2Jb\\nc\\td\\re\\x7f"
        );
        // C1 controls and bidi overrides, while other non-ASCII text stays as it is.
        assert_eq!(
            escape_control("\u{9b}31m \u{202e}gnp.exe über"),
            "\\u{9b}31m \\u{202e}gnp.exe über"
        );
    }

    #[test]
    fn html_escapes_markup_and_controls() {
        assert_eq!(
            escape_html("<script>alert('x&y')</script>\"\u{7}"),
            "&lt;script&gt;alert(&#39;x&amp;y&#39;)&lt;/script&gt;&quot;\\x07"
        );
    }

    #[test]
    fn shell_words_are_quoted_unless_plainly_safe() {
        assert_eq!(
            shell_quote("deployment.v1.apps/web"),
            "deployment.v1.apps/web"
        );
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("a b;$(x)"), "'a b;$(x)'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}
