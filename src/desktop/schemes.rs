//! The two custom schemes: `mcp-host://app/` (the trusted shell) and `mcp-sandbox://<label>/`
//! (sandbox proxies, served with each View's CSP as a response header).

use std::borrow::Cow;

use wry::http::{header, Request, Response, StatusCode};

use crate::app::proxies::ProxyRegistry;

const SHELL_HTML: &str = include_str!("../../assets/index.html");
const SHELL_JS: &str = include_str!("../../assets/shell.js");
const SHELL_CSS: &str = include_str!("../../assets/shell.css");
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

/// Serves `mcp-host://app/...`.
pub fn serve_host(request: &Request<Vec<u8>>) -> Response<Body> {
    let uri = request.uri();
    if uri.host() != Some("app") {
        return not_found(&uri.to_string());
    }
    let (ct, body) = match uri.path() {
        "/" | "/index.html" => ("text/html; charset=utf-8", SHELL_HTML),
        "/shell.js" => ("text/javascript; charset=utf-8", SHELL_JS),
        "/shell.css" => ("text/css; charset=utf-8", SHELL_CSS),
        _ => return not_found(&uri.to_string()),
    };
    response(StatusCode::OK, ct, Cow::Borrowed(body.as_bytes()), Some(SHELL_CSP))
}

/// The proxy page's policy: the View's CSP, and the sandbox flags a frame of the View would get
/// from its `sandbox` attribute. The proxy is the top page of the View's webview, and the View
/// can script it (same origin): the directive keeps popups, dialogs, top navigation and
/// downloads shut for both, as they were when the proxy was a sandboxed frame of the shell.
fn proxy_policy(csp: &str) -> String {
    format!("{csp}; sandbox {}", crate::sandbox::FRAME_SANDBOX)
}

/// Serves `mcp-sandbox://<label>/proxy.html?view=<id>` with the View's CSP header, `proxy.js`,
/// and `openai-shim.js` (loaded by an OpenAI Apps SDK widget's document as a same-origin script,
/// so it runs under that View's CSP like the View's own scripts).
pub fn serve_sandbox(request: &Request<Vec<u8>>, registry: &ProxyRegistry) -> Response<Body> {
    let uri = request.uri();
    let label = uri.host().unwrap_or_default();
    match uri.path() {
        "/proxy.html" => {
            let view =
                uri.query().unwrap_or_default().split('&').find_map(|kv| kv.strip_prefix("view=")).unwrap_or_default();
            match registry.policy(view) {
                // The label check keeps a View of one server from loading another server's proxy.
                Some(policy) if policy.label == label => {
                    // Test-only: proves `check --self` notices a host without its CSP header.
                    let csp = if std::env::var_os("MCP_APPS_HOST_TEST_DISABLE_CSP").is_some() {
                        tracing::error!("MCP_APPS_HOST_TEST_DISABLE_CSP is set: serving a View WITHOUT its CSP header");
                        None
                    } else {
                        Some(proxy_policy(&policy.csp))
                    };
                    response(
                        StatusCode::OK,
                        "text/html; charset=utf-8",
                        Cow::Borrowed(PROXY_HTML.as_bytes()),
                        csp.as_deref(),
                    )
                }
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
        let reg = ProxyRegistry::default();
        reg.insert("v1", ProxyPolicy { label: "abc".into(), csp: "default-src 'none'".into() });
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
    fn shell_assets_carry_the_shell_policy() {
        let r = serve_host(&get("mcp-host://app/"));
        assert_eq!(r.status(), 200);
        assert!(r.headers()[header::CONTENT_SECURITY_POLICY].to_str().unwrap().contains("frame-src mcp-sandbox:"));
        assert_eq!(serve_host(&get("mcp-host://evil/")).status(), 404);
    }
}
