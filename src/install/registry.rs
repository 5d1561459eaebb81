//! A `server.json` from a web address: the MCP registry's API answer for one server
//! (`GET /v0/servers/{name}/versions/{version}`: `{"server": {...}, "_meta": {...}}`), or a
//! `server.json` published anywhere else. https only (http for a loopback host, as for servers),
//! no redirects (the address the person gave is the one read), at most [`MAX_BYTES`].

use std::time::Duration;

/// The most a server.json may weigh.
pub(crate) const MAX_BYTES: usize = 1024 * 1024;

/// The text at `raw`.
pub(crate) fn fetch(raw: &str) -> Result<String, String> {
    let url = crate::server::config::parse_remote_url(raw).map_err(|why| format!("cannot read {raw}: {why}"))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the HTTP client: {e}"))?;
    runtime.block_on(async move {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| format!("cannot start the HTTP client: {e}"))?;
        let mut answer = client
            .get(url.clone())
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| format!("cannot read {url}: {e}"))?;
        let status = answer.status();
        if status.is_redirection() {
            let to = answer.headers().get(reqwest::header::LOCATION).and_then(|l| l.to_str().ok()).unwrap_or("?");
            return Err(format!(
                "{url} answered {status}, a redirect to {to}; install from that address if you trust it"
            ));
        }
        if !status.is_success() {
            return Err(format!("{url} answered {status}"));
        }
        let mut body = Vec::new();
        while let Some(chunk) = answer.chunk().await.map_err(|e| format!("cannot read {url}: {e}"))? {
            body.extend_from_slice(&chunk);
            if body.len() > MAX_BYTES {
                return Err(format!("{url} sent more than {MAX_BYTES} bytes: not a server.json"));
            }
        }
        String::from_utf8(body).map_err(|_| format!("{url} did not send text"))
    })
}
