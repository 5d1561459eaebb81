//! The two custom schemes: `mcp-host://app/` (the trusted shell), `mcp-host://frame/` (the
//! host's top document in each View's webview, around its sandbox proxy) and
//! `mcp-sandbox://<label>/` (sandbox proxies, served with each View's CSP as a response header).

use std::borrow::Cow;

use wry::http::{header, Request, Response, StatusCode};

use crate::app::proxies::ProxyPages;

const SHELL_HTML: &str = include_str!("../../assets/index.html");
const SHELL_JS: &str = include_str!("../../assets/shell.js");
const SHELL_CSS: &str = include_str!("../../assets/shell.css");
/// The shell's modules (`assets/shell/`), which `shell.js` imports: served beside it, as they are.
const SHELL_MODULES: &[(&str, &str)] = &[
    ("/shell/about.js", include_str!("../../assets/shell/about.js")),
    ("/shell/cards.js", include_str!("../../assets/shell/cards.js")),
    ("/shell/composer.js", include_str!("../../assets/shell/composer.js")),
    ("/shell/conversation.js", include_str!("../../assets/shell/conversation.js")),
    ("/shell/dev.js", include_str!("../../assets/shell/dev.js")),
    ("/shell/dialogs.js", include_str!("../../assets/shell/dialogs.js")),
    ("/shell/forms.js", include_str!("../../assets/shell/forms.js")),
    ("/shell/layout.js", include_str!("../../assets/shell/layout.js")),
    ("/shell/markdown.js", include_str!("../../assets/shell/markdown.js")),
    ("/shell/modal.js", include_str!("../../assets/shell/modal.js")),
    ("/shell/page.js", include_str!("../../assets/shell/page.js")),
    ("/shell/read.js", include_str!("../../assets/shell/read.js")),
    ("/shell/servers.js", include_str!("../../assets/shell/servers.js")),
    ("/shell/settings.js", include_str!("../../assets/shell/settings.js")),
    ("/shell/side.js", include_str!("../../assets/shell/side.js")),
    ("/shell/status.js", include_str!("../../assets/shell/status.js")),
    ("/shell/welcome.js", include_str!("../../assets/shell/welcome.js")),
];
const PROXY_HTML: &str = include_str!("../../sandbox-proxy/proxy.html");
const PROXY_JS: &str = include_str!("../../sandbox-proxy/proxy.js");
/// The `window.openai` shim the proxy writes into an OpenAI Apps SDK widget's document.
const OPENAI_SHIM_JS: &str = include_str!("../../sandbox-proxy/openai-shim.js");

/// The shell's own policy: our scripts and styles only, frames only from sandbox origins.
const SHELL_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                         frame-src mcp-sandbox:; connect-src 'none'; base-uri 'none'; form-action 'none'";

type Body = Cow<'static, [u8]>;

fn response(status: StatusCode, content_type: &str, body: Body, csp: Option<&str>) -> Response<Body> {
    // A policy that is not visible ASCII would reach WebKit as no policy at all: refuse to serve.
    if csp.is_some_and(|c| !c.bytes().all(|b| (0x20..0x7f).contains(&b))) {
        tracing::error!("refusing to serve a page whose CSP header is not visible ASCII");
        return Response::builder()
            .status(StatusCode::INTERNAL_SERVER_ERROR)
            .header(header::CONTENT_SECURITY_POLICY, "default-src 'none'")
            .body(Cow::Borrowed(b"".as_slice()))
            .unwrap_or_else(|_| Response::new(Cow::Borrowed(b"".as_slice())));
    }
    let mut builder = Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, content_type)
        .header(header::CACHE_CONTROL, "no-store")
        .header("X-Content-Type-Options", "nosniff");
    if let Some(csp) = csp {
        builder = builder.header(header::CONTENT_SECURITY_POLICY, csp);
    }
    builder.body(body).unwrap_or_else(|_| Response::new(Cow::Borrowed(b"".as_slice())))
}

fn not_found(what: &str) -> Response<Body> {
    tracing::warn!("custom protocol: refused {what}");
    response(StatusCode::NOT_FOUND, "text/plain", Cow::Borrowed(b"not found".as_slice()), Some("default-src 'none'"))
}

/// Origin of the top document of each View's webview: the host's own page around the sandbox
/// proxy, neither the shell's origin nor any server's (`sandbox-proxy/proxy.js` takes the
/// host's messages only from this origin).
pub(crate) const FRAME_ORIGIN: &str = "mcp-host://frame";

/// The top document of a View's webview, on [`FRAME_ORIGIN`]: it
/// holds the sandbox proxy in a frame that fills it, so that from inside the View `parent` is
/// the proxy and `top` is another origin (unreadable, not navigable), as in a web host. It runs
/// no script of its own (the host delivers to the proxy with a script of its own, which page
/// policy does not govern), loads nothing but the one proxy page, and its frame has the sandbox
/// flags of a View's frame. `mcp-host://frame/<label>/proxy.html?<view=id | frame=key>` frames
/// `mcp-sandbox://<label>/proxy.html?<the same query>`.
fn frame_page(uri: &wry::http::Uri) -> Response<Body> {
    let proxy = match frame_target(uri.path(), uri.query().unwrap_or_default()) {
        Some(proxy) => proxy,
        None => return not_found(&uri.to_string()),
    };
    // Only a label's and an id's characters reach the page and its policy (checked above).
    let html = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>MCP App</title><style>html,body{{margin:0;\
         padding:0;height:100%;overflow:hidden;background:transparent}}iframe{{display:block;border:0;width:100%;\
         height:100%}}</style></head><body><iframe src=\"{proxy}\" sandbox=\"{sandbox}\" allow=\"{allow}\" \
         title=\"MCP App sandbox\"></iframe></body></html>",
        sandbox = crate::sandbox::FRAME_SANDBOX,
        allow = FRAME_ALLOW,
    );
    let policy = format!(
        "default-src 'none'; script-src 'none'; style-src 'unsafe-inline'; frame-src {proxy}; base-uri 'none'; \
         form-action 'none'"
    );
    response(StatusCode::OK, "text/html; charset=utf-8", Cow::Owned(html.into_bytes()), Some(&policy))
}

/// The features the top document delegates to its proxy frame: what a View may be granted
/// (the proxy narrows it to the View's declared `permissions` on the View's own frame). Not
/// `clipboard-write`: the top document is made before its View is known (a page made in
/// advance), so it cannot say which View declared it, and WebKit does not consult the
/// attribute for the clipboard anyway. The clipboard follows each View's declaration in its
/// webview's settings and the web process extension (`engine::clipboard`).
const FRAME_ALLOW: &str = "camera; microphone; geolocation";

/// The proxy URL a top document at `path` and `query` frames, if both are well formed.
fn frame_target(path: &str, query: &str) -> Option<String> {
    let label = path.strip_prefix('/')?.strip_suffix("/proxy.html")?;
    let (key, id) = query.split_once('=')?;
    let id_ok =
        !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    let label_ok = !label.is_empty() && label.len() <= 64 && label.bytes().all(|b| b.is_ascii_alphanumeric());
    ((key == "view" || key == "frame") && id_ok && label_ok)
        .then(|| format!("{}/proxy.html?{key}={id}", crate::sandbox::origin::sandbox_origin(label)))
}

/// The top document that frames the proxy page `proxy_src` (see [`frame_page`]).
pub(crate) fn frame_src(proxy_src: &str) -> Option<String> {
    let rest = proxy_src.strip_prefix(&format!("{}://", crate::sandbox::SANDBOX_SCHEME))?;
    let (label, query) = rest.split_once("/proxy.html?")?;
    let path = format!("/{label}/proxy.html");
    frame_target(&path, query).filter(|p| p == proxy_src).map(|_| format!("{FRAME_ORIGIN}{path}?{query}"))
}

/// Serves `mcp-host://app/...` (the shell) and `mcp-host://frame/...` (see [`frame_page`]).
pub fn serve_host(request: &Request<Vec<u8>>) -> Response<Body> {
    let uri = request.uri();
    if uri.host() == Some("frame") {
        return frame_page(uri);
    }
    if uri.host() != Some("app") {
        return not_found(&uri.to_string());
    }
    let path = uri.path();
    let (ct, body) = match path {
        "/" | "/index.html" => ("text/html; charset=utf-8", SHELL_HTML),
        "/shell.js" => ("text/javascript; charset=utf-8", SHELL_JS),
        "/shell.css" => ("text/css; charset=utf-8", SHELL_CSS),
        _ => match SHELL_MODULES.iter().find(|(p, _)| *p == path) {
            Some((_, module)) => ("text/javascript; charset=utf-8", *module),
            None => return not_found(&uri.to_string()),
        },
    };
    response(StatusCode::OK, ct, Cow::Borrowed(body.as_bytes()), Some(SHELL_CSP))
}

/// The proxy page's policy: the View's CSP, and the sandbox flags a frame of the View would get
/// from its `sandbox` attribute. The View can script the proxy (same origin): the directive
/// keeps popups, dialogs, top navigation and downloads shut for both, whatever frame holds the
/// proxy (the host's top document gives its frame the same flags).
fn proxy_policy(csp: &str) -> String {
    format!("{csp}; sandbox {}", crate::sandbox::FRAME_SANDBOX)
}

/// The policy of a proxy page loaded before its View is known (`proxy.html?frame=<key>`) on
/// `origin`: its own script and style, frames only of its View documents (`view.html`, each
/// served with its View's CSP header), nothing else, and the sandbox flags of a View's frame.
/// The View can reach this document (same origin), so it allows less than any View's own
/// policy: no request of any kind. `'unsafe-eval'` is the one thing it shares with every View's
/// policy: code the View runs in this realm can do nothing the View's own realm cannot, and the
/// hostile suite plants its attacks on the proxy's navigation guard that way.
fn shared_proxy_policy(origin: &str) -> String {
    format!(
        "default-src 'none'; script-src 'self' 'unsafe-eval'; style-src 'unsafe-inline'; frame-src {origin}/view.html; \
         base-uri 'none'; form-action 'none'; sandbox {}",
        crate::sandbox::FRAME_SANDBOX
    )
}

/// The CSP header, unless a test asks to serve Views without one.
fn view_policy(csp: &str) -> Option<String> {
    // Test-only: proves `check --self` notices a host without its CSP header.
    if std::env::var_os("MCP_APPS_HOST_TEST_DISABLE_CSP").is_some() {
        tracing::error!("MCP_APPS_HOST_TEST_DISABLE_CSP is set: serving a View WITHOUT its CSP header");
        return None;
    }
    Some(proxy_policy(csp))
}

/// The value of `key` in the request's query.
fn query<'a>(uri: &'a wry::http::Uri, key: &str) -> &'a str {
    let prefix = format!("{key}=");
    uri.query().unwrap_or_default().split('&').find_map(|kv| kv.strip_prefix(prefix.as_str())).unwrap_or_default()
}

/// Serves, on `mcp-sandbox://<label>/`:
/// - `proxy.html?frame=<key>`: a proxy page made before its View is known, with
///   [`SHARED_PROXY_CSP`]; its View's document comes from `view.html`;
/// - `view.html?view=<id>&t=<token>`: the View's document, once, with the View's CSP header;
/// - `proxy.html?view=<id>`: the proxy of a View whose document the proxy writes itself (an
///   OpenAI Apps SDK widget, held back until its shim is ready), with the View's CSP header,
///   which the written document inherits;
/// - `proxy.js`, and `openai-shim.js` (loaded by an OpenAI Apps SDK widget's document as a
///   same-origin script, so it runs under that View's CSP like the View's own scripts).
pub fn serve_sandbox(request: &Request<Vec<u8>>, proxies: &ProxyPages) -> Response<Body> {
    let uri = request.uri();
    let label = uri.host().unwrap_or_default();
    let html = "text/html; charset=utf-8";
    match uri.path() {
        // The label goes into the policy: only a label's characters (it is a hex digest).
        "/proxy.html" if !query(uri, "frame").is_empty() && !label.bytes().all(|b| b.is_ascii_alphanumeric()) => {
            not_found(&uri.to_string())
        }
        "/proxy.html" if !query(uri, "frame").is_empty() => {
            let policy = shared_proxy_policy(&crate::sandbox::origin::sandbox_origin(label));
            response(StatusCode::OK, html, Cow::Borrowed(PROXY_HTML.as_bytes()), Some(&policy))
        }
        "/proxy.html" => match proxies.policy(query(uri, "view")) {
            // The label check keeps a View of one server from loading another server's proxy.
            Some(policy) if policy.label == label => response(
                StatusCode::OK,
                html,
                Cow::Borrowed(PROXY_HTML.as_bytes()),
                view_policy(&policy.csp).as_deref(),
            ),
            _ => not_found(&uri.to_string()),
        },
        "/view.html" => {
            let view = query(uri, "view");
            match proxies.policy(view) {
                Some(policy) if policy.label == label => match proxies.take_document(view, query(uri, "t")) {
                    Some(doc) => response(
                        StatusCode::OK,
                        html,
                        Cow::Owned(doc.into_bytes()),
                        view_policy(&policy.csp).as_deref(),
                    ),
                    None => not_found(&format!("{uri} (served already, or not its token)")),
                },
                _ => not_found(&uri.to_string()),
            }
        }
        // Every sandbox response carries a policy: a frame navigated here must not be a CSP-free
        // document that sibling Views of the same origin could borrow.
        "/proxy.js" => response(
            StatusCode::OK,
            "text/javascript; charset=utf-8",
            Cow::Borrowed(PROXY_JS.as_bytes()),
            Some("default-src 'none'"),
        ),
        "/openai-shim.js" => response(
            StatusCode::OK,
            "text/javascript; charset=utf-8",
            Cow::Borrowed(OPENAI_SHIM_JS.as_bytes()),
            Some("default-src 'none'"),
        ),
        _ => not_found(&uri.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::proxies::ProxyPolicy;

    fn get(uri: &str) -> Request<Vec<u8>> {
        Request::builder().uri(uri).body(Vec::new()).unwrap()
    }

    #[test]
    fn proxy_is_served_with_its_views_csp_and_only_on_its_label() {
        let reg = ProxyPages::default();
        reg.insert("v1", ProxyPolicy { label: "abc".into(), csp: "default-src 'none'".into(), clipboard_write: false });
        let ok = serve_sandbox(&get("mcp-sandbox://abc/proxy.html?view=v1"), &reg);
        assert_eq!(ok.status(), 200);
        assert_eq!(
            ok.headers()[header::CONTENT_SECURITY_POLICY],
            "default-src 'none'; sandbox allow-scripts allow-same-origin allow-forms"
        );
        assert_eq!(serve_sandbox(&get("mcp-sandbox://other/proxy.html?view=v1"), &reg).status(), 404);
        assert_eq!(serve_sandbox(&get("mcp-sandbox://abc/proxy.html?view=v2"), &reg).status(), 404);
        assert_eq!(serve_sandbox(&get("mcp-sandbox://abc/secret"), &reg).status(), 404);
        let shim = serve_sandbox(&get("mcp-sandbox://abc/openai-shim.js"), &reg);
        assert_eq!(shim.status(), 200);
        assert_eq!(shim.headers()[header::CONTENT_SECURITY_POLICY], "default-src 'none'");
    }

    #[test]
    fn a_shared_proxy_page_allows_only_its_views_documents() {
        let reg = ProxyPages::default();
        let page = serve_sandbox(&get("mcp-sandbox://abc/proxy.html?frame=f1"), &reg);
        assert_eq!(page.status(), 200);
        let csp = page.headers()[header::CONTENT_SECURITY_POLICY].to_str().unwrap().to_owned();
        assert!(csp.starts_with("default-src 'none';"), "{csp}");
        assert!(csp.contains("frame-src mcp-sandbox://abc/view.html;"), "{csp}");
        assert!(csp.ends_with("; sandbox allow-scripts allow-same-origin allow-forms"), "{csp}");
        assert!(csp.contains("; script-src 'self' 'unsafe-eval';"), "{csp}");
        for open in ["connect-src", "img-src", "*", "http", "data:", "blob:"] {
            assert!(!csp.contains(open), "{open} in {csp}");
        }
        // The label is written into the policy: nothing but a label's characters.
        assert_eq!(serve_sandbox(&get("mcp-sandbox://a.b/proxy.html?frame=f1"), &reg).status(), 404);
    }

    #[test]
    fn a_views_document_is_served_once_with_its_csp_on_its_label_only() {
        let reg = ProxyPages::default();
        reg.insert("v1", ProxyPolicy { label: "abc".into(), csp: "default-src 'none'".into(), clipboard_write: false });
        let t = reg.put_document("v1", "<p>the view</p>".into());
        assert_eq!(serve_sandbox(&get(&format!("mcp-sandbox://other/view.html?view=v1&t={t}")), &reg).status(), 404);
        assert_eq!(serve_sandbox(&get(&format!("mcp-sandbox://abc/view.html?view=v2&t={t}")), &reg).status(), 404);
        // Without the token (another page of the origin guessing the View's id), nothing, and
        // the document is still there for the View's own frame.
        assert_eq!(serve_sandbox(&get("mcp-sandbox://abc/view.html?view=v1"), &reg).status(), 404);
        assert_eq!(serve_sandbox(&get("mcp-sandbox://abc/view.html?view=v1&t=00"), &reg).status(), 404);
        let doc = serve_sandbox(&get(&format!("mcp-sandbox://abc/view.html?view=v1&t={t}")), &reg);
        assert_eq!(doc.status(), 200);
        assert_eq!(doc.body().as_ref(), b"<p>the view</p>");
        assert_eq!(
            doc.headers()[header::CONTENT_SECURITY_POLICY],
            "default-src 'none'; sandbox allow-scripts allow-same-origin allow-forms"
        );
        // A reload, or another frame of the origin asking again, gets nothing.
        let again = serve_sandbox(&get(&format!("mcp-sandbox://abc/view.html?view=v1&t={t}")), &reg);
        assert_eq!(again.status(), 404);
        assert_eq!(again.headers()[header::CONTENT_SECURITY_POLICY], "default-src 'none'");
    }

    #[test]
    fn a_views_top_document_frames_only_its_proxy_and_runs_nothing() {
        let proxy = "mcp-sandbox://abc123/proxy.html?view=v7";
        let top = frame_src(proxy).unwrap();
        assert_eq!(top, "mcp-host://frame/abc123/proxy.html?view=v7");
        let page = serve_host(&get(&top));
        assert_eq!(page.status(), 200);
        let csp = page.headers()[header::CONTENT_SECURITY_POLICY].to_str().unwrap().to_owned();
        assert!(csp.contains("script-src 'none';"), "{csp}");
        assert!(csp.contains(&format!("frame-src {proxy};")), "{csp}");
        let html = std::str::from_utf8(page.body()).unwrap();
        assert!(
            html.contains(&format!("<iframe src=\"{proxy}\" sandbox=\"allow-scripts allow-same-origin allow-forms\""))
        );
        assert!(!html.contains("<script"), "{html}");
        assert_eq!(
            frame_src("mcp-sandbox://abc123/proxy.html?frame=f2").unwrap(),
            "mcp-host://frame/abc123/proxy.html?frame=f2"
        );
        // Nothing but a label and an id gets into the page or its policy.
        for bad in [
            "mcp-host://frame/abc/proxy.html?view=v1%22",
            "mcp-host://frame/a.b/proxy.html?view=v1",
            "mcp-host://frame/abc/proxy.html?view=v1;x",
            "mcp-host://frame/abc/proxy.html?other=v1",
            "mcp-host://frame/abc/proxy.html",
            "mcp-host://frame/abc/view.html?view=v1",
            "mcp-host://frame/abc/proxy.html?view=v1&t=2",
        ] {
            assert_eq!(serve_host(&get(bad)).status(), 404, "{bad}");
        }
        assert_eq!(frame_src("mcp-sandbox://abc/proxy.html?view=v1&t=2"), None);
        assert_eq!(frame_src("mcp-host://app/proxy.html?view=v1"), None);
    }

    #[test]
    fn shell_assets_carry_the_shell_policy() {
        let r = serve_host(&get("mcp-host://app/"));
        assert_eq!(r.status(), 200);
        assert!(r.headers()[header::CONTENT_SECURITY_POLICY].to_str().unwrap().contains("frame-src mcp-sandbox:"));
        assert_eq!(serve_host(&get("mcp-host://evil/")).status(), 404);
    }

    /// The shell's entry imports its modules by relative path: every module in `assets/shell/`
    /// is served, as JavaScript with the shell's policy, and every import names one that is.
    #[test]
    fn every_module_of_the_shell_is_served_as_javascript() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/shell");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| format!("/shell/{}", e.unwrap().file_name().to_string_lossy()))
            .collect();
        on_disk.sort();
        let served: Vec<String> = SHELL_MODULES.iter().map(|(p, _)| (*p).to_owned()).collect();
        assert_eq!(served, on_disk, "each module is in SHELL_MODULES, in order");
        let entry = std::iter::once(("/shell.js", "/"));
        for (path, dir) in entry.chain(SHELL_MODULES.iter().map(|(p, _)| (*p, "/shell/"))) {
            let r = serve_host(&get(&format!("mcp-host://app{path}")));
            assert_eq!(r.status(), 200, "{path}");
            assert_eq!(r.headers()[header::CONTENT_TYPE], "text/javascript; charset=utf-8", "{path}");
            assert_eq!(r.headers()[header::CONTENT_SECURITY_POLICY], SHELL_CSP, "{path}");
            let text = std::str::from_utf8(r.body()).unwrap();
            for import in text.split(" from \"./").skip(1) {
                let target = format!("{dir}{}", &import[..import.find('"').unwrap()]);
                assert!(
                    SHELL_MODULES.iter().any(|(p, _)| *p == target),
                    "{path} imports {target}, which is not served"
                );
            }
        }
    }
}
