//! The `Content-Security-Policy` header of a View's sandbox proxy, built from `_meta.ui.csp`.
//!
//! The spec formula (digest section 4.2) with the restrictive default when nothing is declared.
//! Network origins are never loosened: only entries that parse as an origin (optionally with a
//! `*.` wildcard host and a path) reach the header; anything else is rejected with a reason.
//! Beyond the formula we allow a few non-network sources that real Apps need and that reach no
//! server: `'unsafe-eval'`, `'wasm-unsafe-eval'` and `blob:` for scripts (Apps that compile
//! code, run WebAssembly, or import a bundle they hold as a string, as xmcp's Views do: a blob
//! the View made itself reaches no server and runs nothing `'unsafe-eval'` could not), `blob:`
//! for images, media and workers, `data:` for fonts. `form-action 'none'`
//! is added so a form cannot post the View's data to an undeclared origin.

use crate::protocol::ResourceCsp;

/// A CSP entry that was dropped, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RejectedSource {
    /// The `ResourceCsp` field it came from, e.g. `connectDomains`.
    pub field: &'static str,
    /// The entry as the server sent it.
    pub entry: String,
    /// Why it was dropped.
    pub reason: &'static str,
}

/// The policy of one View: the header and what it really grants.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CspPolicy {
    /// The `Content-Security-Policy` header value.
    pub header: String,
    /// The origins that passed validation (echoed in `hostCapabilities.sandbox.csp`).
    pub granted: ResourceCsp,
    /// Entries that were dropped.
    pub rejected: Vec<RejectedSource>,
}

/// Checks one declared source; `Ok` is the text that goes into the header.
fn validate_source(entry: &str) -> Result<String, &'static str> {
    if entry.is_empty() {
        return Err("empty");
    }
    // A header must be visible ASCII: wry would turn anything else into an empty policy.
    if !entry.is_ascii() {
        return Err("contains a non-ASCII character (use the punycode / percent-encoded form)");
    }
    if entry.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err("contains whitespace or a control character");
    }
    if entry.chars().any(|c| matches!(c, ';' | ',' | '\'' | '"' | '\\')) {
        return Err("contains ; , quote or backslash (would inject into the policy)");
    }
    let (scheme, rest) = entry.split_once("://").ok_or("not an origin (scheme://host)")?;
    if !matches!(scheme.to_ascii_lowercase().as_str(), "https" | "http" | "wss" | "ws") {
        return Err("scheme must be https, http, wss or ws");
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    if path.contains(['?', '#']) {
        return Err("has a query or fragment");
    }
    if authority.contains('@') {
        return Err("has userinfo");
    }
    let (host, port) = if authority.starts_with('[') {
        let end = authority.find(']').ok_or("bad IPv6 host")? + 1;
        match &authority[end..] {
            "" => (&authority[..end], None),
            rest => (&authority[..end], Some(rest.strip_prefix(':').ok_or("bad port")?)),
        }
    } else {
        match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if let Some(port) = port {
        if port != "*" && (port.is_empty() || port.parse::<u16>().is_err()) {
            return Err("bad port");
        }
    }
    let bare = host.strip_prefix("*.").unwrap_or(host);
    let ipv6 = bare.len() > 2
        && bare.starts_with('[')
        && bare.ends_with(']')
        && bare[1..bare.len() - 1].chars().all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.');
    let valid_host = !bare.is_empty()
        && (ipv6 || bare.split('.').all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')));
    if !valid_host {
        return Err("bad host (a wildcard is only allowed as a leading `*.`)");
    }
    Ok(entry.to_owned())
}

fn filter(field: &'static str, entries: Option<&Vec<String>>, rejected: &mut Vec<RejectedSource>) -> Vec<String> {
    let mut ok = Vec::new();
    for entry in entries.into_iter().flatten() {
        match validate_source(entry) {
            Ok(src) if !ok.contains(&src) => ok.push(src),
            Ok(_) => {}
            Err(reason) => rejected.push(RejectedSource { field, entry: entry.clone(), reason }),
        }
    }
    ok
}

fn directive(name: &str, base: &[&str], extra: &[String]) -> String {
    let mut parts = vec![name.to_owned()];
    parts.extend(base.iter().map(|s| (*s).to_owned()));
    parts.extend(extra.iter().cloned());
    parts.join(" ")
}

fn some_if_nonempty(v: &[String]) -> Option<Vec<String>> {
    (!v.is_empty()).then(|| v.to_vec())
}

/// The resource `_meta` key of an OpenAI Apps SDK widget's CSP.
pub const OPENAI_WIDGET_CSP_KEY: &str = "openai/widgetCSP";

/// Maps an OpenAI Apps SDK `_meta["openai/widgetCSP"]` to the MCP Apps CSP fields:
/// `connect_domains` -> `connectDomains`, `resource_domains` -> `resourceDomains`,
/// `frame_domains` -> `frameDomains`. Nothing else is read (`redirect_domains` is about ChatGPT's
/// own link handling and grants nothing here). The result is a declaration like any other: it
/// still goes through [`build_csp`], which validates every entry and rejects what is not an origin.
///
/// Errors name what is malformed (not an object, a field that is not an array of strings).
pub fn csp_from_openai_widget_csp(value: &serde_json::Value) -> Result<ResourceCsp, String> {
    let obj = value.as_object().ok_or_else(|| format!("_meta[\"{OPENAI_WIDGET_CSP_KEY}\"] must be an object"))?;
    let list = |key: &str| -> Result<Option<Vec<String>>, String> {
        match obj.get(key) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::Array(items)) => items
                .iter()
                .map(|i| i.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .map(Some)
                .ok_or_else(|| format!("_meta[\"{OPENAI_WIDGET_CSP_KEY}\"].{key} must be an array of strings")),
            Some(_) => Err(format!("_meta[\"{OPENAI_WIDGET_CSP_KEY}\"].{key} must be an array of strings")),
        }
    };
    Ok(ResourceCsp {
        connect_domains: list("connect_domains")?,
        resource_domains: list("resource_domains")?,
        frame_domains: list("frame_domains")?,
        base_uri_domains: None,
    })
}

/// Builds the policy for a View from its declared `_meta.ui.csp` (`None` when nothing is declared).
pub fn build_csp(declared: Option<&ResourceCsp>) -> CspPolicy {
    let mut rejected = Vec::new();
    let connect = filter("connectDomains", declared.and_then(|c| c.connect_domains.as_ref()), &mut rejected);
    let resource = filter("resourceDomains", declared.and_then(|c| c.resource_domains.as_ref()), &mut rejected);
    let frame = filter("frameDomains", declared.and_then(|c| c.frame_domains.as_ref()), &mut rejected);
    let base_uri = filter("baseUriDomains", declared.and_then(|c| c.base_uri_domains.as_ref()), &mut rejected);

    // With no CSP metadata at all the spec's default says `connect-src 'none'`; with metadata the
    // formula starts from `'self'` (the sandbox origin, never the host's).
    let connect_base: &[&str] = if declared.is_some() { &["'self'"] } else { &["'none'"] };
    let none_if_empty = |name: &str, list: &[String], fallback: &str| {
        if list.is_empty() {
            format!("{name} {fallback}")
        } else {
            directive(name, &[], list)
        }
    };
    let directives = [
        "default-src 'none'".to_owned(),
        directive(
            "script-src",
            &["'self'", "'unsafe-inline'", "'unsafe-eval'", "'wasm-unsafe-eval'", "blob:"],
            &resource,
        ),
        directive("style-src", &["'self'", "'unsafe-inline'"], &resource),
        if connect.is_empty() {
            directive("connect-src", connect_base, &[])
        } else {
            directive("connect-src", &["'self'"], &connect)
        },
        directive("img-src", &["'self'", "data:", "blob:"], &resource),
        directive("font-src", &["'self'", "data:"], &resource),
        directive("media-src", &["'self'", "data:", "blob:"], &resource),
        directive("worker-src", &["'self'", "blob:"], &resource),
        none_if_empty("frame-src", &frame, "'none'"),
        "object-src 'none'".to_owned(),
        none_if_empty("base-uri", &base_uri, "'self'"),
        "form-action 'none'".to_owned(),
    ];
    let granted = ResourceCsp {
        connect_domains: some_if_nonempty(&connect),
        resource_domains: some_if_nonempty(&resource),
        frame_domains: some_if_nonempty(&frame),
        base_uri_domains: some_if_nonempty(&base_uri),
    };
    CspPolicy { header: directives.join("; "), granted, rejected }
}

/// The web origins a View's policy `header` lets it request (the http, https, ws and wss
/// sources of its fetching directives), as "scheme host port" for the host's check below the
/// page (`webext/requests.c`): scheme and host in lower case, a leading `*.` kept, the port
/// given or the scheme's default, or `*`. Paths are left to the CSP.
pub(crate) fn request_origins(header: &str) -> Vec<String> {
    const FETCHING: [&str; 8] =
        ["connect-src", "script-src", "style-src", "img-src", "font-src", "media-src", "worker-src", "frame-src"];
    let mut out = Vec::new();
    for directive in header.split(';') {
        let mut words = directive.split_whitespace();
        if !words.next().is_some_and(|name| FETCHING.contains(&name)) {
            continue;
        }
        for source in words {
            let Some((scheme, rest)) = source.split_once("://") else { continue };
            let scheme = scheme.to_ascii_lowercase();
            let default = match scheme.as_str() {
                "http" | "ws" => "80",
                "https" | "wss" => "443",
                _ => continue,
            };
            let authority = rest.split('/').next().unwrap_or_default().to_ascii_lowercase();
            let (host, port) = match authority.rsplit_once(':') {
                Some((h, p)) if !p.contains(']') => (h.to_owned(), p.to_owned()),
                _ => (authority.clone(), default.to_owned()),
            };
            let host = host.trim_start_matches('[').trim_end_matches(']').to_owned();
            let entry = format!("{scheme} {host} {port}");
            if !host.is_empty() && !out.contains(&entry) {
                out.push(entry);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_below_the_page_gets_the_declared_web_origins_only() {
        let p = build_csp(Some(&csp(
            &["https://api.example.com", "wss://live.example.com:8443"],
            &["https://*.cdn.example/lib/", "http://[::1]:9000"],
            &["https://embed.example"],
            &["https://base.example"],
        )));
        assert_eq!(
            request_origins(&p.header),
            [
                "https *.cdn.example 443",
                "http ::1 9000",
                "https api.example.com 443",
                "wss live.example.com 8443",
                "https embed.example 443",
            ]
        );
        // Nothing declared: nothing but the host's own schemes.
        assert!(request_origins(&build_csp(None).header).is_empty());
    }

    fn directive_of<'a>(header: &'a str, name: &str) -> &'a str {
        header
            .split("; ")
            .find(|d| d.split(' ').next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} in {header}"))
    }

    fn csp(connect: &[&str], resource: &[&str], frame: &[&str], base: &[&str]) -> ResourceCsp {
        let v = |l: &[&str]| (!l.is_empty()).then(|| l.iter().map(|s| s.to_string()).collect());
        ResourceCsp {
            connect_domains: v(connect),
            resource_domains: v(resource),
            frame_domains: v(frame),
            base_uri_domains: v(base),
        }
    }

    #[test]
    fn no_metadata_gives_the_restrictive_default() {
        let p = build_csp(None);
        assert_eq!(
            p.header,
            "default-src 'none'; \
             script-src 'self' 'unsafe-inline' 'unsafe-eval' 'wasm-unsafe-eval' blob:; \
             style-src 'self' 'unsafe-inline'; connect-src 'none'; \
             img-src 'self' data: blob:; font-src 'self' data:; media-src 'self' data: blob:; \
             worker-src 'self' blob:; frame-src 'none'; object-src 'none'; base-uri 'self'; \
             form-action 'none'"
        );
        assert_eq!(p.granted, ResourceCsp::default());
        assert!(p.rejected.is_empty());
    }

    #[test]
    fn connect_domains_go_to_connect_src_only() {
        let p = build_csp(Some(&csp(&["https://api.example.com", "wss://live.example.com"], &[], &[], &[])));
        assert_eq!(
            directive_of(&p.header, "connect-src"),
            "connect-src 'self' https://api.example.com wss://live.example.com"
        );
        assert!(!directive_of(&p.header, "script-src").contains("api.example.com"));
        assert!(!directive_of(&p.header, "img-src").contains("api.example.com"));
    }

    #[test]
    fn declared_but_empty_metadata_allows_self_connections_only() {
        let p = build_csp(Some(&ResourceCsp::default()));
        assert_eq!(directive_of(&p.header, "connect-src"), "connect-src 'self'");
    }

    #[test]
    fn resource_domains_go_to_every_static_directive() {
        let p = build_csp(Some(&csp(&[], &["https://*.cdn.example"], &[], &[])));
        for d in ["script-src", "style-src", "img-src", "font-src", "media-src", "worker-src"] {
            assert!(directive_of(&p.header, d).ends_with(" https://*.cdn.example"), "{d}: {}", p.header);
        }
        assert_eq!(directive_of(&p.header, "connect-src"), "connect-src 'self'");
    }

    #[test]
    fn frame_and_base_uri_domains() {
        let p = build_csp(Some(&csp(&[], &[], &["https://www.youtube.com"], &["https://base.example"])));
        assert_eq!(directive_of(&p.header, "frame-src"), "frame-src https://www.youtube.com");
        assert_eq!(directive_of(&p.header, "base-uri"), "base-uri https://base.example");
        assert_eq!(directive_of(&p.header, "object-src"), "object-src 'none'");
    }

    #[test]
    fn hostile_entries_are_rejected_with_reasons_and_never_reach_the_header() {
        let hostile = [
            "https://a.example; script-src *",
            "https://a.example, https://b.example",
            "'unsafe-inline'",
            "\"https://q.example\"",
            "https://a.example\nscript-src *",
            "https://a .example",
            "*",
            "https:",
            "data:",
            "javascript://x",
            "https://*",
            "https://a.*.example",
            "https://user@a.example",
            "https://a.example:99999",
            "",
        ];
        let declared = csp(&hostile, &hostile, &hostile, &hostile);
        let p = build_csp(Some(&declared));
        assert_eq!(p.rejected.len(), hostile.len() * 4);
        assert_eq!(p.granted, ResourceCsp::default());
        for d in p.header.split("; ") {
            assert!(!d.contains("example") && !d.contains(" * ") && !d.ends_with(" *"), "leaked: {d}");
        }
        // Exactly the 12 directives, none injected.
        assert_eq!(p.header.split("; ").count(), 12, "{}", p.header);
    }

    #[test]
    fn valid_origin_shapes_pass() {
        for ok in [
            "https://example.com",
            "http://localhost:3000",
            "https://*.example.com",
            "https://example.com:*",
            "https://cdn.example.com/lib/",
            "wss://x.example",
            "http://[::1]:8080",
            "http://[::1]",
        ] {
            assert_eq!(validate_source(ok), Ok(ok.to_owned()), "{ok}");
        }
    }

    #[test]
    fn duplicates_are_collapsed() {
        let p = build_csp(Some(&csp(&["https://a.example", "https://a.example"], &[], &[], &[])));
        assert_eq!(p.granted.connect_domains, Some(vec!["https://a.example".to_owned()]));
    }
    #[test]
    fn openai_widget_csp_maps_to_the_mcp_fields_and_is_validated_like_any_declaration() {
        use serde_json::json;
        let declared = csp_from_openai_widget_csp(&json!({
            "connect_domains": ["https://api.example.com"],
            "resource_domains": ["https://cdn.example.com", "cdn-without-scheme.example.com"],
            "frame_domains": ["https://embed.example.com"],
            "redirect_domains": ["https://checkout.example.com"],
        }))
        .unwrap();
        assert_eq!(declared.connect_domains, Some(vec!["https://api.example.com".to_owned()]));
        assert_eq!(declared.base_uri_domains, None);
        let p = build_csp(Some(&declared));
        assert_eq!(directive_of(&p.header, "connect-src"), "connect-src 'self' https://api.example.com");
        assert!(directive_of(&p.header, "img-src").ends_with(" https://cdn.example.com"), "{}", p.header);
        assert_eq!(directive_of(&p.header, "frame-src"), "frame-src https://embed.example.com");
        // Not an origin: rejected by the same validation as `_meta.ui.csp` entries.
        assert_eq!(p.rejected.len(), 1, "{:?}", p.rejected);
        assert_eq!(p.rejected[0].field, "resourceDomains");
        assert!(!p.header.contains("checkout"), "{}", p.header);
        // Hostile entries never reach the header.
        let hostile = csp_from_openai_widget_csp(&json!({"connect_domains": ["https://a.example; script-src *", "*"]}));
        let p = build_csp(Some(&hostile.unwrap()));
        assert_eq!(directive_of(&p.header, "connect-src"), "connect-src 'self'");
        assert_eq!(p.rejected.len(), 2);
        assert!(csp_from_openai_widget_csp(&json!(["https://a.example"])).is_err());
        assert!(csp_from_openai_widget_csp(&json!({"connect_domains": "https://a.example"})).is_err());
        assert!(csp_from_openai_widget_csp(&json!({"connect_domains": [1]})).is_err());
    }
}
