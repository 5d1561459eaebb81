//! Shaping untrusted text into what a person reads: deceptive characters (controls,
//! bidirectional overrides, zero-width) shown escaped, and a bound on length. Used wherever such
//! text reaches a person or a log line (the consent dialogs, the model's error sentences).

use std::fmt::Write as _;

/// The most characters of server- or View-provided text a dialog shows in one line.
pub const MAX_LINE_CHARS: usize = 160;
/// The most characters of a dialog's detail block (a message's text, a full URL).
pub const MAX_BLOCK_CHARS: usize = 4000;

/// Characters that change how the text around them reads without being seen themselves: C0 and
/// C1 controls, bidirectional embeddings, overrides, isolates and marks, zero-width characters,
/// line and paragraph separators, and other invisible format characters.
pub fn is_deceptive(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2060}'..='\u{206F}'
            | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}' | '\u{1D173}'..='\u{1D17A}' | '\u{E0000}'..='\u{E007F}')
        || matches!(c, '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}' | '\u{00AD}' | '\u{034F}')
}

/// One deceptive character as its escape (`\\n`, `\\u{202e}`).
pub(crate) fn escape_char(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

/// One line of untrusted text: every deceptive character (newlines too) escaped, at most
/// [`MAX_LINE_CHARS`] characters shown.
pub fn one_line(text: &str) -> String {
    one_line_max(text, MAX_LINE_CHARS)
}

/// [`one_line`] with another length limit.
pub fn one_line_max(text: &str, max_chars: usize) -> String {
    escape(text, max_chars, false)
}

/// One line of untrusted text shown whole, however long: every deceptive character (newlines
/// too) escaped, nothing cut. For what a person agrees to run, where a hidden tail is the attack;
/// the caller bounds the size of what it shows.
pub fn whole_line(text: &str) -> String {
    escape(text, usize::MAX, false)
}

/// A block of untrusted text (a message's body): newlines kept as line breaks, every other
/// deceptive character escaped, at most [`MAX_BLOCK_CHARS`] characters.
pub fn block(text: &str) -> String {
    escape(text, MAX_BLOCK_CHARS, true)
}

/// The first `max_chars` characters of `text` with every deceptive character escaped (newlines
/// kept when `keep_newlines`), and how many more there were.
fn escape(text: &str, max_chars: usize, keep_newlines: bool) -> String {
    let mut out = String::with_capacity(text.len().min(max_chars.saturating_mul(4)));
    let mut total = 0usize;
    for c in text.chars() {
        total += 1;
        if total > max_chars {
            continue;
        }
        if c == '\n' && keep_newlines {
            out.push('\n');
        } else if is_deceptive(c) {
            escape_char(&mut out, c);
        } else {
            out.push(c);
        }
    }
    if total > max_chars {
        let _ = write!(out, "… ({} more characters)", total - max_chars);
    }
    out
}
