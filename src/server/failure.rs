//! Why a server failed, in words a person understands. A failure's reason is written for the
//! log: rmcp's error, the JSON-RPC detail, the last lines the program wrote to stderr (a Node
//! stack, npm's report). A person gets one sentence that says what happened and what to do;
//! the reason itself stays beside it, behind "Details".

/// What a person reads about a failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Words {
    /// One sentence: what happened, and what to do when that is known.
    pub said: String,
    /// The reason as the log has it, with the program's last stderr lines, for "Details".
    pub details: String,
}

/// Where the reason's stderr tail starts (see `connection::errors::with_tail`).
const STDERR_MARK: &str = "; server stderr: ";

/// `reason` (a `ServerStatus::Failed` reason, or any connection error) and the program's last
/// stderr lines (may be empty) as [`Words`].
pub fn in_words(reason: &str, stderr: &[String]) -> Words {
    let (body, tail) = match reason.find(STDERR_MARK) {
        Some(at) => (&reason[..at], Some(&reason[at + STDERR_MARK.len()..])),
        None => (reason, None),
    };
    let mut lines: Vec<String> = stderr.iter().map(|l| l.trim().to_owned()).filter(|l| !l.is_empty()).collect();
    if lines.is_empty() {
        lines = tail
            .into_iter()
            .flat_map(|t| t.split(" | "))
            .map(|l| l.trim().to_owned())
            .filter(|l| !l.is_empty())
            .collect();
    }
    let said = match what_happened(body, &lines) {
        Some(said) => said,
        None => sentence(plain_tail(body)),
    };
    let mut details = reason.to_owned();
    if !stderr.is_empty() {
        details = format!("{body}\n\nThe program's last output:\n{}", stderr.join("\n"));
    }
    Words { said, details }
}

/// The known failures, each in a sentence.
fn what_happened(body: &str, stderr: &[String]) -> Option<String> {
    let lower = body.to_ascii_lowercase();
    if let Some(command) = backticked(body).filter(|_| body.starts_with("could not start MCP server")) {
        let program = command.split_whitespace().next().unwrap_or(command);
        if lower.contains("no such file") || lower.contains("not found") {
            return Some(format!(
                "The program {program} was not found. Install it, or give its full path (an app started from the desktop menu may not have your shell's PATH)."
            ));
        }
        if lower.contains("permission denied") {
            return Some(format!("The program {program} may not be run (permission denied)."));
        }
    }
    if let Some(said) = npm_says(stderr) {
        return Some(said);
    }
    let error_line = stderr.iter().rev().find_map(|l| error_in(l));
    let stopped = lower.contains("connection closed")
        || lower.contains("process ended")
        || lower.contains("transport closed")
        || lower.contains("exited");
    if stopped {
        return Some(match error_line {
            Some(e) => format!("The server stopped before it was ready. It said: {}", full_stop(e)),
            None => "The server stopped before it was ready, without saying why. Its log may tell more.".to_owned(),
        });
    }
    if lower.contains("uncorrelated")
        || lower.contains("expected id")
        || lower.contains("deserializ")
        || lower.contains("invalid json")
    {
        return Some(
            "The server answered something this app cannot read: it may not be an MCP server, or it writes other text where MCP messages go."
                .to_owned(),
        );
    }
    if lower.contains("did not answer within") || lower.contains("timed out") || lower.contains("timeout") {
        return Some("The server did not get ready in time. Retry: a first start may need longer.".to_owned());
    }
    if lower.contains("connection refused") || lower.contains("tcp connect error") {
        return Some("Nothing answers at the server's address. Is the server running?".to_owned());
    }
    if lower.contains("dns error") || lower.contains("failed to lookup") || lower.contains("name or service not known")
    {
        return Some("The server's address names a host that is not known. Check the address.".to_owned());
    }
    if lower.contains("certificate") {
        return Some("The server's certificate is not trusted, so this app does not talk to it.".to_owned());
    }
    if let Some(code) = http_status(&lower) {
        return Some(match code {
            404 => {
                "The address answered 404 Not Found: it may not be the server's MCP endpoint (often it ends in /mcp)."
                    .to_owned()
            }
            401 | 403 => "The server refused the connection: it wants sign-in or a key it was not given.".to_owned(),
            500..=599 => format!("The server had an error of its own (HTTP {code}). Retry later."),
            _ => format!("The server answered HTTP {code} where MCP was expected."),
        });
    }
    error_line.map(|e| format!("The server failed. It said: {}", full_stop(e)))
}

/// npm's own report of a package it could not get.
fn npm_says(stderr: &[String]) -> Option<String> {
    let npm: Vec<&String> = stderr.iter().filter(|l| l.starts_with("npm ERR!") || l.starts_with("npm error")).collect();
    if npm.is_empty() {
        return None;
    }
    let all = npm.iter().map(|l| l.to_ascii_lowercase()).collect::<Vec<_>>().join(" ");
    Some(if all.contains("404") {
        "npm could not find the server's package. Check its name.".to_owned()
    } else if all.contains("enotfound") || all.contains("network") || all.contains("etimedout") {
        "npm could not download the server's package: the network did not answer.".to_owned()
    } else {
        "npm could not start the server's package. Its log says why.".to_owned()
    })
}

/// An error line as programs print them (`Error: ...`, `ModuleNotFoundError: ...`,
/// `TypeError [ERR_X]: ...`), without a stack frame's `at ...`.
pub(crate) fn error_in(line: &str) -> Option<String> {
    let line = line.trim();
    if line.starts_with("at ") || line.starts_with("File \"") {
        return None;
    }
    let (name, rest) = line.split_once(": ")?;
    let name = name.split_whitespace().next()?;
    let looks_like_error = name.ends_with("Error") || name.ends_with("Exception") || name == "error" || name == "Error";
    (looks_like_error && !rest.trim().is_empty()).then(|| crate::text::one_line_max(rest.trim(), 200))
}

/// The text between the first pair of backticks.
fn backticked(text: &str) -> Option<&str> {
    let start = text.find('`')? + 1;
    let end = start + text[start..].find('`')?;
    Some(&text[start..end])
}

/// An `HTTP 404`-like status in the reason.
fn http_status(lower: &str) -> Option<u16> {
    let at = lower.find("http ")? + 5;
    lower[at..].get(..3)?.parse().ok().filter(|c| (100..600).contains(c))
}

/// The reason without its `MCP server `x` did not complete initialize:` lead.
fn plain_tail(body: &str) -> &str {
    let body = body.trim();
    match body.find("`: ").or_else(|| body.find("initialize: ").map(|a| a + 9)) {
        Some(at) if body.starts_with("MCP server") || body.starts_with("could not start") => body[at + 3..].trim(),
        _ => body,
    }
}

/// `text` ending as a sentence does.
fn full_stop(mut text: String) -> String {
    if !text.ends_with(['.', '!', '?']) {
        text.push('.');
    }
    text
}

/// `text` as a sentence: a capital letter first, a full stop last, one line.
fn sentence(text: &str) -> String {
    let text = crate::text::one_line_max(text, 300);
    let mut chars = text.chars();
    let out: String = match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => return "It failed without saying why.".to_owned(),
    };
    full_stop(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(reason: &str) -> String {
        in_words(reason, &[]).said
    }

    #[test]
    fn a_missing_program_is_named_with_what_to_do() {
        let s = said("could not start MCP server `uvx mcp-server-time`: No such file or directory (os error 2)");
        assert!(s.starts_with("The program uvx was not found."), "{s}");
        assert!(s.contains("PATH"), "{s}");
    }

    #[test]
    fn a_node_crash_says_its_error_not_its_stack() {
        let reason = "MCP server `notes` did not complete initialize: the connection closed while waiting for the \
                      discover response; server stderr: Error: Cannot find module 'express' |     at Module._resolveFilename \
                      (node:internal/modules/cjs/loader:1225:15) |     at node:internal/main/run_main_module:28:49 | Node.js v20.20.2";
        let w = in_words(reason, &[]);
        assert_eq!(w.said, "The server stopped before it was ready. It said: Cannot find module 'express'.");
        assert!(!w.said.contains("node:internal"), "{}", w.said);
        assert!(w.details.contains("node:internal/modules"), "the stack stays behind Details: {}", w.details);
    }

    #[test]
    fn the_stderr_of_the_program_is_read_when_given() {
        let stderr = vec![
            "Traceback (most recent call last):".to_owned(),
            "  File \"/x/server.py\", line 1, in <module>".to_owned(),
            "ModuleNotFoundError: No module named 'mcp'".to_owned(),
        ];
        let w = in_words("MCP server `py` did not complete initialize: the server process ended", &stderr);
        assert_eq!(w.said, "The server stopped before it was ready. It said: No module named 'mcp'.");
        assert!(w.details.contains("Traceback"), "{}", w.details);
    }

    #[test]
    fn json_rpc_detail_becomes_a_sentence() {
        let s = said("MCP server `x` did not complete initialize: uncorrelated error response: expected id 1, error response carried 0");
        assert!(s.starts_with("The server answered something this app cannot read"), "{s}");
        assert!(!s.contains("id 1"), "{s}");
    }

    #[test]
    fn npm_and_http_failures_say_what_to_check() {
        let npm = vec![
            "npm ERR! code E404".to_owned(),
            "npm ERR! 404 Not Found - GET https://registry.npmjs.org/nope".to_owned(),
        ];
        assert_eq!(
            in_words("MCP server `n` did not complete initialize: the connection closed", &npm).said,
            "npm could not find the server's package. Check its name."
        );
        assert!(said("MCP server `r` did not complete initialize: HTTP 404 Not Found").contains("/mcp"));
        assert!(said("MCP server `r` did not complete initialize: error sending request: tcp connect error: Connection refused (os error 111)")
            .starts_with("Nothing answers"));
    }

    #[test]
    fn anything_else_is_its_own_words_as_a_sentence() {
        assert_eq!(
            said("MCP server `s` did not complete initialize: the server wants protocol 2099-01-01"),
            "The server wants protocol 2099-01-01."
        );
        assert_eq!(said("You stopped its start."), "You stopped its start.");
        assert_eq!(said(""), "It failed without saying why.");
    }
}
