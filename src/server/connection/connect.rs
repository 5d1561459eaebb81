//! Connecting: starting a stdio server or reaching a remote one (Streamable HTTP, legacy
//! HTTP+SSE, with stored or fresh sign-in), then the handshake and the first listing.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use rmcp::transport::auth::{AuthClient, AuthorizationManager};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::io::AsyncBufReadExt;

use super::errors::{http_hint, with_tail};
use super::host_client::{HostClient, ProgressRoutes};
use super::late_answers::LateAnswers;
use super::lifecycle::{handshake, HandshakeFailure, Startup};
use super::options::ConnectOptions;
#[cfg(doc)]
use super::options::{MAX_LISTED_TOOLS, MAX_LIST_BYTES, MAX_LIST_PAGES};
use super::{Connection, Negotiation, LIST_PAGE_TIMEOUT};
use crate::error::{Error, Result};
use crate::server::auth::{ClientRegistration, TokenFile, SIGN_IN_TIMEOUT};
use crate::server::config::ServerSpec;
use crate::server::requests::{ElicitationGate, MAX_PENDING_ELICITATIONS};
use crate::server::sse::{display_url, SseError, SseOptions, SseTransport};

const STDERR_TAIL_LINES: usize = 20;

/// Header names the client sets itself (HTTP framing, content negotiation, MCP session and
/// protocol headers). A configured header with one of these names is dropped: the client's wins.
const CLIENT_HEADERS: &[&str] = &[
    "accept",
    "accept-encoding",
    "cache-control",
    "connection",
    "content-encoding",
    "content-length",
    "content-type",
    "host",
    "keep-alive",
    "last-event-id",
    "mcp-method",
    "mcp-name",
    "mcp-protocol-version",
    "mcp-session-id",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];
/// Prefixes of header names the client sets itself (SEP-2243 `Mcp-Param-*`).
const CLIENT_HEADER_PREFIXES: &[&str] = &["mcp-param-"];

impl Connection {
    /// Connects to the server (starting its process for stdio), completes the MCP handshake and
    /// indexes tools and resources, with the default timeouts.
    pub async fn connect(spec: &ServerSpec) -> Result<Arc<Self>> {
        Self::connect_with(spec, ConnectOptions::default()).await
    }

    /// [`Connection::connect`] with explicit options. A remote server that answers 401 is
    /// [`Error::AuthRequired`] (see [`Connection::sign_in`]); stored tokens are used and refreshed.
    /// A server whose tools cannot be read whole within the listing bounds
    /// ([`ConnectOptions::list_timeout`], [`MAX_LIST_PAGES`], [`MAX_LISTED_TOOLS`],
    /// [`MAX_LIST_BYTES`]) fails to connect with a reason naming the bound: a host shows all of a
    /// server's tools or none, never a silently shortened list.
    pub async fn connect_with(spec: &ServerSpec, options: ConnectOptions) -> Result<Arc<Self>> {
        Self::connect_inner(spec, options, None).await
    }

    /// Signs in to a remote server (see [`crate::server::auth::sign_in`]) through the options'
    /// authorizer, then connects with the new tokens. `challenge` is the `WWW-Authenticate` of the
    /// 401 that asked for it.
    pub async fn sign_in(spec: &ServerSpec, options: ConnectOptions, challenge: Option<&str>) -> Result<Arc<Self>> {
        let (ServerSpec::StreamableHttp { url, .. } | ServerSpec::Sse { url, .. }) = spec else {
            return Err(Error::Request {
                server: spec.name().to_owned(),
                method: "sign-in".into(),
                reason: "only remote servers sign in".into(),
            });
        };
        let failed =
            |reason: String| Error::Request { server: spec.name().to_owned(), method: "sign-in".into(), reason };
        let authorizer =
            options.authorizer.clone().ok_or_else(|| failed("this host cannot ask anyone to sign in".into()))?;
        let store = TokenFile::for_server(&spec.identity(), options.token_dir.as_deref())
            .ok_or_else(|| failed("no data directory for the sign-in tokens".into()))?;
        // A client id from the server's config entry wins over the host-wide registration.
        let configured = match spec {
            ServerSpec::StreamableHttp { oauth: Some(c), .. } | ServerSpec::Sse { oauth: Some(c), .. } => {
                Some(ClientRegistration::preregistered(c.client_id.clone(), c.client_secret.clone()))
            }
            _ => None,
        };
        let registration = configured.as_ref().unwrap_or(&options.client_registration);
        let manager =
            crate::server::auth::sign_in(url, challenge, store, registration, authorizer.0.as_ref(), SIGN_IN_TIMEOUT)
                .await
                .map_err(failed)?;
        Self::connect_inner(spec, options, Some(manager)).await
    }

    async fn connect_inner(
        spec: &ServerSpec,
        options: ConnectOptions,
        signed_in: Option<AuthorizationManager>,
    ) -> Result<Arc<Self>> {
        let name = spec.name().to_owned();
        // Before the spawn: the identity names the program about to start, not a later one.
        let identity = spec.identity();
        let progress = ProgressRoutes::default();
        let (changes, _) = tokio::sync::broadcast::channel(64);
        let client = HostClient {
            server: name.clone(),
            progress: progress.clone(),
            changes: changes.clone(),
            requests: options.requests.0.clone(),
            roots: Arc::new(options.roots.clone()),
            elicitation_timeout: options.elicitation_timeout,
            elicitations: ElicitationGate::new(MAX_PENDING_ELICITATIONS),
        };
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let deadline = tokio::time::Instant::now() + options.handshake_timeout;
        // A local program may first download its package (`npx -y`, `uvx`): it gets longer.
        let stdio_deadline = tokio::time::Instant::now() + options.stdio_start_timeout;
        let handshake_failed = |reason: String| Error::Handshake { server: name.clone(), reason };
        let (service, pid) = match spec {
            ServerSpec::Stdio { program, args, env, cwd, .. } => {
                // `${secret:KEY}` in the entry: the value from the keyring or its owner-only file.
                let (args, env) = crate::secrets::fill_spec(&name, &spec.written_identity(), args, env)
                    .await
                    .map_err(handshake_failed)?;
                let (args, env) = (&args, &env);
                let mut startup = if options.known_legacy { Startup::Initialize } else { Startup::Probe };
                loop {
                    let (transport, pid) = spawn_stdio(&name, program, args, env, cwd.as_deref(), &stderr_tail)?;
                    let limit = options.stdio_start_timeout;
                    let transport = LateAnswers::new(transport);
                    match handshake(client.clone(), transport, startup, stdio_deadline, limit).await {
                        Ok(service) => break (service, pid),
                        // A fresh process: the first one's stdin holds a failed lifecycle.
                        Err(failure) if failure.try_initialize => startup = Startup::Initialize,
                        Err(failure) => {
                            // Give the stderr reader a moment: the reason a server died is usually its last words.
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            return Err(handshake_failed(with_tail(&failure.reason, &stderr_tail)));
                        }
                    }
                }
            }
            ServerSpec::StreamableHttp { url, headers, .. } => {
                let headers = crate::secrets::fill_pairs(&name, &spec.written_identity(), headers)
                    .await
                    .map_err(handshake_failed)?;
                let headers = request_headers(&headers)?;
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
                // Every remote connection can carry a sign-in: stored tokens are sent (and
                // refreshed); without any, the request goes out plain and a 401 asks for one.
                let manager = match signed_in {
                    Some(m) => Some(m),
                    None => tokio::time::timeout_at(deadline, stored_sign_in(spec, url, &options)).await.ok().flatten(),
                };
                let authorized = match manager {
                    Some(manager) => Some(AuthClient::new(remote_http_client()?, manager)),
                    None => None,
                };
                let mut startup = if options.known_legacy { Startup::Initialize } else { Startup::Probe };
                let service = loop {
                    let limit = options.handshake_timeout;
                    let outcome = match authorized.clone() {
                        Some(http) => {
                            let transport = StreamableHttpClientTransport::with_client(http, config.clone());
                            handshake(client.clone(), transport, startup, deadline, limit).await
                        }
                        None => {
                            let transport =
                                StreamableHttpClientTransport::<reqwest::Client>::from_config(config.clone());
                            handshake(client.clone(), transport, startup, deadline, limit).await
                        }
                    };
                    match outcome {
                        Ok(service) => break service,
                        Err(failure) if failure.try_initialize => startup = Startup::Initialize,
                        Err(HandshakeFailure { challenge: Some(challenge), .. }) => {
                            return Err(Error::AuthRequired { server: name.clone(), challenge });
                        }
                        Err(HandshakeFailure { reason, .. }) => {
                            let hint = http_hint(&reason);
                            return Err(handshake_failed(format!(
                                "{reason} (Streamable HTTP, POST {}){hint}",
                                display_url(url)
                            )));
                        }
                    }
                };
                (service, None)
            }
            ServerSpec::Builtin { name: builtin } => {
                let handler = crate::demo::builtin(builtin)
                    .ok_or_else(|| handshake_failed(format!("there is no built-in server {builtin:?}")))?;
                let (client_end, server_end) = tokio::io::duplex(1 << 20);
                tokio::spawn(crate::demo::serve_stream(server_end, handler));
                let service =
                    handshake(client.clone(), client_end, Startup::Initialize, deadline, options.handshake_timeout)
                        .await
                        .map_err(|failure| handshake_failed(failure.reason))?;
                (service, None)
            }
            ServerSpec::Sse { url, headers, .. } => {
                let headers = crate::secrets::fill_pairs(&name, &spec.written_identity(), headers)
                    .await
                    .map_err(handshake_failed)?;
                let headers = request_headers(&headers)?;
                let mut sse = SseOptions::default().headers(headers).connect_timeout(options.handshake_timeout);
                let manager = match signed_in {
                    Some(m) => Some(m),
                    None => tokio::time::timeout_at(deadline, stored_sign_in(spec, url, &options)).await.ok().flatten(),
                };
                if let Some(manager) = manager {
                    sse = sse.auth(manager);
                }
                let transport = match tokio::time::timeout_at(deadline, SseTransport::connect(url.clone(), sse)).await {
                    Ok(Ok(transport)) => transport,
                    Ok(Err(SseError::AuthRequired { challenge, .. })) => {
                        return Err(Error::AuthRequired { server: name.clone(), challenge });
                    }
                    Ok(Err(e)) => {
                        let reason = e.to_string();
                        let hint = http_hint(&reason);
                        return Err(handshake_failed(format!("{reason} (legacy HTTP+SSE){hint}")));
                    }
                    Err(_) => {
                        return Err(handshake_failed(format!(
                            "GET {} delivered no SSE `endpoint` event within {} s (legacy HTTP+SSE)",
                            display_url(url),
                            options.handshake_timeout.as_secs_f32()
                        )))
                    }
                };
                let service =
                    handshake(client.clone(), transport, Startup::Initialize, deadline, options.handshake_timeout)
                        .await
                        .map_err(|failure| {
                            handshake_failed(format!("{} (legacy HTTP+SSE, {})", failure.reason, display_url(url)))
                        })?;
                (service, None)
            }
        };
        let peer = service.peer().clone();
        // The response cache would answer a failed refetch with stale data; a host wants the truth.
        peer.set_response_cache_config(rmcp::ClientCacheConfig::disabled()).await;

        let conn = Arc::new(Self {
            name,
            identity,
            service: tokio::sync::Mutex::new(Some(service)),
            peer,
            tools: RwLock::new(Vec::new()),
            resources: RwLock::new(Vec::new()),
            stderr_tail,
            options,
            progress,
            changes: changes.clone(),
            pid,
            client,
            listening: Default::default(),
            closed: tokio::sync::watch::Sender::new(false),
            ui_cache: super::ui_cache::UiCache::new(changes.subscribe()),
        });
        if let Err(e) = conn.refresh().await {
            conn.shutdown().await;
            return Err(e);
        }
        if conn.negotiation() == Some(Negotiation::Discover) {
            let mut listening = conn.listening.lock().await;
            if let Err(e) = listening.listen(&conn.peer, None, &conn.changes, LIST_PAGE_TIMEOUT).await {
                // The server still works; the host just hears of its changes when it next asks.
                tracing::warn!(server = %conn.name, "subscriptions/listen failed: {e}");
            }
        }
        Ok(conn)
    }
}

/// Starts a stdio server with its stderr captured into `tail`.
fn spawn_stdio(
    name: &str,
    program: &str,
    args: &[String],
    env: &[(String, String)],
    cwd: Option<&std::path::Path>,
    tail: &Arc<Mutex<VecDeque<String>>>,
) -> Result<(TokioChildProcess, Option<u32>)> {
    let command_line = shell_words::join(std::iter::once(program).chain(args.iter().map(String::as_str)));
    let mut cmd = tokio::process::Command::new(program);
    crate::host_env::as_given(cmd.as_std_mut());
    // The host's own secrets stay the host's: a server gets a model key only when its config
    // entry names the variable (`env` below puts it back).
    for variable in crate::model::key_policy::KEY_VARIABLES {
        cmd.env_remove(variable);
    }
    cmd.args(args).envs(env.iter().cloned()).kill_on_drop(true);
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| Error::Spawn { command: command_line, source })?;
    let pid = transport.id();
    if let Some(stderr) = stderr {
        let tail = tail.clone();
        let server = name.to_owned();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::info!(target: "mcp_apps_host::server::stderr", server = %server, "{line}");
                let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
                if tail.len() == STDERR_TAIL_LINES {
                    tail.pop_front();
                }
                tail.push_back(line);
            }
        });
    }
    Ok((transport, pid))
}

/// The authorization manager of a remote server's stored sign-in (tokens are loaded if there are
/// any; without them the first request goes out plain and a 401 asks for sign-in).
async fn stored_sign_in(spec: &ServerSpec, url: &url::Url, options: &ConnectOptions) -> Option<AuthorizationManager> {
    let store = TokenFile::for_server(&spec.identity(), options.token_dir.as_deref())?;
    crate::server::auth::manager(url, store).await.ok()
}

/// The HTTP client of a signed-in remote connection, with rmcp's own defaults: no idle pooling,
/// and only same-origin 307/308 redirects followed (a configured header or a token must never
/// reach another origin, and a POST must not turn into a GET).
fn remote_http_client() -> Result<reqwest::Client> {
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt.previous().first().is_some_and(|first| first.origin() == attempt.url().origin());
        let keeps_method = matches!(attempt.status().as_u16(), 307 | 308);
        if attempt.previous().len() > 10 {
            attempt.error("too many redirects")
        } else if same_origin && keeps_method {
            attempt.follow()
        } else {
            attempt.stop()
        }
    });
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .redirect(policy)
        .build()
        .map_err(|e| Error::Desktop(format!("cannot build the HTTP client: {e}")))
}

/// The configured headers as sent: valid names and values, minus the ones the client sets
/// itself (the client's win, compared ignoring case). Values are marked sensitive so they stay
/// out of debug output.
pub(crate) fn request_headers(headers: &[(String, String)]) -> Result<HeaderMap> {
    let mut map = HeaderMap::new();
    for (position, (name, value)) in headers.iter().enumerate() {
        let header_name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|e| Error::BadHeader {
            header: if name.trim().is_empty() { format!("#{}", position + 1) } else { name.clone() },
            reason: format!("not a valid header name: {e}"),
        })?;
        let lower = header_name.as_str();
        if CLIENT_HEADERS.contains(&lower) || CLIENT_HEADER_PREFIXES.iter().any(|p| lower.starts_with(p)) {
            tracing::warn!(header = %header_name, "configured header ignored: the MCP client sets it itself");
            continue;
        }
        let mut header_value = HeaderValue::from_str(value.trim()).map_err(|_| Error::BadHeader {
            header: name.clone(),
            reason: "the value has characters not allowed in a header (control characters or non-ASCII)".into(),
        })?;
        header_value.set_sensitive(true);
        map.insert(header_name, header_value);
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
    }

    #[test]
    fn configured_headers_keep_their_values_and_lose_to_client_headers() {
        let map = request_headers(&pairs(&[
            ("X-Api-Key", "secret"),
            ("Authorization", "Bearer t"),
            ("ACCEPT", "text/plain"),
            ("Mcp-Session-Id", "forged"),
            ("mcp-protocol-version", "1999-01-01"),
            ("Mcp-Param-Region", "eu"),
            ("Content-Length", "5"),
            ("Host", "elsewhere.example"),
            ("Last-Event-ID", "7"),
        ]))
        .unwrap();
        let names: Vec<&str> = map.keys().map(HeaderName::as_str).collect();
        assert_eq!(names, ["x-api-key", "authorization"]);
        assert_eq!(map["x-api-key"], "secret");
        assert!(map["authorization"].is_sensitive(), "values stay out of debug output");
        assert!(!format!("{map:?}").contains("secret"));
    }

    #[test]
    fn invalid_headers_are_errors_that_do_not_echo_the_value() {
        let err = request_headers(&pairs(&[("Bad Name", "v")])).unwrap_err();
        assert!(matches!(err, Error::BadHeader { ref header, .. } if header == "Bad Name"), "{err}");
        let err = request_headers(&pairs(&[("X-Token", "line\nbreak-secret")])).unwrap_err();
        assert!(!err.to_string().contains("break-secret"), "{err}");
        let err = request_headers(&pairs(&[("", "v")])).unwrap_err();
        assert!(err.to_string().contains("#1"), "{err}");
    }
}
