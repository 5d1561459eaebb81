//! What a person is shown before deciding: text that a server or View controls can never fake
//! what is decided on.
//!
//! An attacker's tool name with newlines made an "Open link?" dialog read as a host-verified link
//! to a well-known site; 3,000 characters of userinfo before `@` hid the real host; a right-to-left
//! override made `invoice\u{202E}txt.exe` read as `invoiceexe.txt`. The rules, for every dialog,
//! card title and status line:
//! - the thing decided on (a link's host, a file's name, the App asking) comes first, in its own
//!   element, on one line, from [`LinkSubject`], [`file_label`] or [`tool_label`];
//! - control, bidirectional-override, zero-width and line-separator characters are shown escaped
//!   (`\u{202e}`), never interpreted ([`one_line`], [`block`]);
//! - a tool name outside the MCP spec's characters (`A-Z a-z 0-9 _ - .`, at most 128) is shown
//!   escaped ([`tool_label`]);
//! - links with userinfo (`user@host`) are refused: they exist to hide the host.
//!
//! Pure functions: the shell only ever puts their output into `textContent`.

use std::fmt::Write as _;

use crate::text::escape_char;
pub use crate::text::{block, is_deceptive, one_line, one_line_max, MAX_BLOCK_CHARS, MAX_LINE_CHARS};

/// The most characters of a host name shown; longer ones keep their end (the registrable
/// domain), which is what a person must see.
pub const MAX_HOST_CHARS: usize = 80;
/// The MCP spec's limit on a tool name's length.
pub const MAX_TOOL_NAME: usize = 128;

/// A tool name as a person sees it: characters outside the spec's set (`A-Z a-z 0-9 _ - .`) are
/// escaped, and a name longer than the spec allows is cut.
pub fn tool_label(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut count = 0usize;
    for c in name.chars() {
        count += 1;
        if count > MAX_TOOL_NAME {
            continue;
        }
        if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
            out.push(c);
        } else {
            escape_char(&mut out, c);
        }
    }
    if out.is_empty() {
        out.push_str("(unnamed tool)");
    }
    if count > MAX_TOOL_NAME {
        let _ = write!(out, "… ({} more characters)", count - MAX_TOOL_NAME);
    }
    out
}

/// A file name as a person sees it.
pub fn file_label(name: &str) -> String {
    one_line(name)
}

/// What a person decides on when a link is to be opened: its host (and port when not the
/// scheme's default) on one line, and the whole address as a detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkSubject {
    /// `example.com`, `example.com:8443`; IDN hosts in their ASCII (punycode) form, so a
    /// look-alike cannot pass for the real name; a very long host keeps its end.
    pub host: String,
    /// The whole address, escaped and bounded.
    pub address: String,
}

impl LinkSubject {
    /// The subject of `url`, or why it may not be opened at all: only `http` and `https` with a
    /// host, and no userinfo.
    pub fn of(url: &url::Url) -> Result<Self, String> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("only http and https addresses can be opened, not {}:", url.scheme()));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("addresses with a user name or password before the host (user@host) are refused: they hide the real host".into());
        }
        let Some(host) = url.host_str().filter(|h| !h.is_empty()) else {
            return Err("the address has no host".into());
        };
        let mut shown = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        let chars = shown.chars().count();
        if chars > MAX_HOST_CHARS {
            let skip = chars - (MAX_HOST_CHARS - 1);
            shown = format!("…{}", shown.chars().skip(skip).collect::<String>());
        }
        Ok(Self { host: one_line(&shown), address: one_line_max(url.as_str(), 600) })
    }

    /// Parses `text` first.
    pub fn parse(text: &str) -> Result<(url::Url, Self), String> {
        let url = url::Url::parse(text).map_err(|e| format!("not an address: {e}"))?;
        let subject = Self::of(&url)?;
        Ok((url, subject))
    }
}

/// The App asking, as a person sees it: `tool · server`, both escaped.
pub fn app_label(tool: &str, server: &str) -> String {
    format!("{} · {}", tool_label(tool), server_label(server))
}

/// A server's label as one line for a person deciding: when it holds anything but plain ASCII
/// (`fіles` with a Cyrillic `і` looks like `files`), every such character is shown escaped
/// after it, so two servers that look alike read apart.
pub fn server_label(label: &str) -> String {
    let shown = one_line_max(label, 80);
    if label.is_ascii() {
        return shown;
    }
    let mut escaped = String::new();
    for c in label.chars().take(80) {
        if c.is_ascii() && !c.is_ascii_control() {
            escaped.push(c);
        } else {
            escaped.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    format!("{shown} [not plain ASCII: {escaped}]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn look_alike_server_labels_read_apart() {
        assert_eq!(server_label("files"), "files");
        assert_eq!(server_label("f\u{456}les"), "f\u{456}les [not plain ASCII: f\\u{456}les]");
        assert_ne!(server_label("f\u{456}les"), server_label("files"));
    }

    #[test]
    fn bidi_and_newlines_are_shown_not_obeyed() {
        assert_eq!(one_line("invoice\u{202E}txt.exe"), "invoice\\u{202e}txt.exe");
        assert_eq!(one_line("a\nb\r\u{2028}c"), "a\\nb\\r\\u{2028}c");
        assert_eq!(one_line("zero\u{200B}width\u{FEFF}"), "zero\\u{200b}width\\u{feff}");
        assert_eq!(one_line("isolate\u{2066}x\u{2069}"), "isolate\\u{2066}x\\u{2069}");
        assert_eq!(one_line("plain café 東京"), "plain café 東京");
        let long = "x".repeat(500);
        let shown = one_line(&long);
        assert!(shown.starts_with(&"x".repeat(MAX_LINE_CHARS)) && shown.ends_with("(340 more characters)"), "{shown}");
    }

    #[test]
    fn blocks_keep_lines_but_escape_the_rest() {
        assert_eq!(block("hello\nworld\u{202E}"), "hello\nworld\\u{202e}");
        let long = "y".repeat(MAX_BLOCK_CHARS + 10);
        assert!(block(&long).ends_with("(10 more characters)"));
    }

    #[test]
    fn tool_names_outside_the_spec_are_escaped() {
        assert_eq!(tool_label("get-time_v2.1"), "get-time_v2.1");
        assert_eq!(
            tool_label("open\n\nVerified link: https://bank.example"),
            "open\\n\\nVerified\\u{20}link\\u{3a}\\u{20}https\\u{3a}\\u{2f}\\u{2f}bank.example"
        );
        assert_eq!(tool_label(""), "(unnamed tool)");
        assert!(tool_label(&"a".repeat(300)).ends_with("(172 more characters)"));
    }

    #[test]
    fn links_show_their_real_host_first() {
        let (_, s) = LinkSubject::parse("https://example.com/path?q=1").unwrap();
        assert_eq!(s.host, "example.com");
        let (_, s) = LinkSubject::parse("http://example.com:8080/").unwrap();
        assert_eq!(s.host, "example.com:8080");
        // A look-alike host is shown as what it is.
        let (_, s) = LinkSubject::parse("https://еxample.com/").unwrap();
        assert!(s.host.starts_with("xn--"), "{}", s.host);
        // A very long host keeps its registrable end.
        let long = format!("https://{}.evil.example/", "a".repeat(300));
        let (_, s) = LinkSubject::parse(&long).unwrap();
        assert!(s.host.starts_with('…') && s.host.ends_with(".evil.example"), "{}", s.host);
        assert!(s.host.chars().count() <= MAX_HOST_CHARS);
    }

    #[test]
    fn userinfo_and_other_schemes_are_refused() {
        let hidden = format!("https://bank.example{}@evil.example/", "%20".repeat(1000));
        assert!(LinkSubject::parse(&hidden).unwrap_err().contains("user name"));
        assert!(LinkSubject::parse("https://user:pw@example.com/").is_err());
        for bad in [
            "file:///etc/passwd",
            "javascript:alert(1)",
            "mcp-host://app/",
            "ssh://h",
            "vscode://x",
            "--help",
            "/usr/bin/xterm",
        ] {
            assert!(LinkSubject::parse(bad).is_err(), "{bad}");
        }
    }
}
