//! XML/HTML escaping, shared by the SVG builder and the HTML renderers.

/// Escapes text for XML/HTML element content and for attribute values (double or single
/// quoted): `&`, `<`, `>`, `"` and `'`. Control characters that XML 1.0 forbids are dropped,
/// so that any label still yields a well-formed document.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_drops_forbidden_controls() {
        assert_eq!(
            escape(r#"a<b & "c" 'd'>"#),
            "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;"
        );
        assert_eq!(escape("x\u{0}y\u{1b}z"), "xyz");
        assert_eq!(escape("µs → ok"), "µs → ok");
    }
}
