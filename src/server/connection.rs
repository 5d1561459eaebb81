//! One live MCP client connection (rmcp), with the server's tools and resources indexed.

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::process::Stdio;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use futures_util::FutureExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ClientRequest, InputResponses, PaginatedRequestParams,
    ReadResourceRequestParams, Request, ServerResult,
};
use rmcp::service::{ClientInitializeError, PeerRequestOptions, RunningService};
use rmcp::transport::streamable_http_client::{StreamableHttpClientTransportConfig, StreamableHttpError};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceError};
use serde_json::{json, Map, Value};
use tokio::io::AsyncBufReadExt;

use super::auth::{Authorizer, ClientRegistration, SharedAuthorizer, TokenFile, SIGN_IN_TIMEOUT};
use super::config::ServerSpec;
pub use super::host_client::ServerChange;
use super::host_client::{HostClient, ProgressRoutes, MAX_INPUT_ROUNDS};
pub use super::lifecycle::Negotiation;
use super::lifecycle::{handshake, HandshakeFailure, Startup};
use super::requests::{
    ElicitationGate, Root, ServerRequests, Unattended, ELICITATION_TIMEOUT, MAX_PENDING_ELICITATIONS,
};
use super::sse::{display_url, SseError, SseOptions, SseTransport};
use super::subscriptions::Listening;
use crate::bridge::{BoxFuture, CallControl, ServerPort};
use crate::error::{Error, Result};
use crate::protocol::jsonrpc::code;
use crate::protocol::RpcError;
use crate::ui_resource::{ListedTool, ToolUi, UiLinkError};
use rmcp::transport::auth::{AuthClient, AuthorizationManager};

/// How long a request may take before it is cancelled (the View gets an error, never a hang).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the MCP handshake may take.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
const STDERR_TAIL_LINES: usize = 20;

/// How long a forwarded call may go without progress before it is cancelled.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a forwarded call may take in all, progress or not.
pub const MAX_CALL_DURATION: Duration = Duration::from_secs(600);
/// How long [`Connection::shutdown`] waits for rmcp's close (stdio: stdin closed, 3 s, SIGTERM,
/// 3 s, SIGKILL) before dropping the transport, which kills the process too.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(8);
/// rmcp may write a cancel before the request it cancels (trap 1 in the rmcp notes): a cancel is
/// held back until the request has been out at least this long.
const CANCEL_GUARD: Duration = Duration::from_millis(100);
/// How long handing a message to the transport may take (a server that stops reading its stdin
/// fills the pipe, and a write into it would wait forever).
const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// How long reading a server's tool and resource lists may take in all, every page included
/// (the default of [`ConnectOptions::list_timeout`]). It starts after the handshake, whose own
/// limit is [`HANDSHAKE_TIMEOUT`].
pub const LIST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one page of a listing may take (never past the listing's own deadline).
pub const LIST_PAGE_TIMEOUT: Duration = Duration::from_secs(10);
/// The most pages one list (tools, resources) may have. Real servers list everything in one
/// page or a handful; a hundred leaves room for small pages of a big catalogue.
pub const MAX_LIST_PAGES: usize = 100;
/// The most tools one server may list: far beyond anything a person or a model can use, low
/// enough that the index and every tool lookup stay cheap.
pub const MAX_LISTED_TOOLS: usize = 10_000;
/// The most resources one server may list.
pub const MAX_LISTED_RESOURCES: usize = 10_000;
/// The most listed data one list may hold, measured as the JSON it serializes to (cursors
/// included). A big real catalogue is well under 1 MiB, and [`MAX_LISTED_TOOLS`] tools of 800
/// bytes each fit; what the host holds per server stays small and known whatever the server
/// sends. (rmcp's transports also drop any single message over 16 MiB, so no one page can be
/// larger than that.)
pub const MAX_LIST_BYTES: usize = 8 * 1024 * 1024;

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

/// Timeouts of one connection. `Default` gives the host's production values.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ConnectOptions {
    /// How long connecting and the MCP handshake may take.
    pub handshake_timeout: Duration,
    /// How long a forwarded call may go without progress before it is cancelled.
    pub idle_timeout: Duration,
    /// How long a forwarded call may take in all, progress or not.
    pub max_call_duration: Duration,
    /// How long `resources/read` (and `resources/subscribe`) may take.
    pub request_timeout: Duration,
    /// How long reading the tool and resource lists may take in all (after the handshake, and
    /// on every refresh); one page may take [`LIST_PAGE_TIMEOUT`] at most.
    pub list_timeout: Duration,
    /// Who answers the server's `elicitation/create` and `sampling/createMessage`.
    pub requests: RequestHandler,
    /// The roots offered in `roots/list` (none by default).
    pub roots: Vec<Root>,
    /// How long an elicitation may wait for its answer before it is cancelled.
    pub elicitation_timeout: Duration,
    /// Where sign-in tokens of remote servers are kept (default: the user's data directory).
    pub token_dir: Option<std::path::PathBuf>,
    /// Who takes a person through sign-in (none: a server that needs it fails with
    /// [`Error::AuthRequired`]).
    pub authorizer: Option<SharedAuthorizer>,
    /// How the host registers with authorization servers (default: dynamic registration).
    pub client_registration: ClientRegistration,
    /// The server spoke a 2025 revision the last time (set by the registry for a restart): its
    /// `initialize` is sent at once, without a `server/discover` probe that a server which drops
    /// unknown methods would make wait 10 s again.
    pub(crate) known_legacy: bool,
}

/// A shared [`ServerRequests`] (a newtype so that [`ConnectOptions`] stays `Debug`).
#[derive(Clone)]
pub struct RequestHandler(pub Arc<dyn ServerRequests>);

impl std::fmt::Debug for RequestHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RequestHandler(..)")
    }
}

impl Default for RequestHandler {
    fn default() -> Self {
        Self(Arc::new(Unattended))
    }
}

impl Default for ConnectOptions {
    fn default() -> Self {
        Self {
            handshake_timeout: HANDSHAKE_TIMEOUT,
            idle_timeout: IDLE_TIMEOUT,
            max_call_duration: MAX_CALL_DURATION,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            list_timeout: LIST_TIMEOUT,
            requests: RequestHandler::default(),
            roots: Vec::new(),
            elicitation_timeout: ELICITATION_TIMEOUT,
            token_dir: None,
            authorizer: None,
            client_registration: ClientRegistration::default(),
            known_legacy: false,
        }
    }
}

impl ConnectOptions {
    /// Sets how long connecting and the MCP handshake may take.
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// Sets the idle and total limits of forwarded calls.
    pub fn call_timeouts(mut self, idle: Duration, total: Duration) -> Self {
        self.idle_timeout = idle;
        self.max_call_duration = total;
        self
    }

    /// Sets how long `resources/read` may take.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets how long reading the tool and resource lists may take in all.
    pub fn list_timeout(mut self, timeout: Duration) -> Self {
        self.list_timeout = timeout;
        self
    }

    /// Sets who answers the server's elicitation and sampling requests.
    pub fn requests(mut self, requests: Arc<dyn ServerRequests>) -> Self {
        self.requests = RequestHandler(requests);
        self
    }

    /// Sets the roots offered in `roots/list`.
    pub fn roots(mut self, roots: Vec<Root>) -> Self {
        self.roots = roots;
        self
    }

    /// Sets where sign-in tokens are kept.
    pub fn token_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.token_dir = Some(dir.into());
        self
    }

    /// Sets who takes a person through sign-in.
    pub fn authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.authorizer = Some(SharedAuthorizer(authorizer));
        self
    }

    /// Sets how the host registers with authorization servers.
    pub fn client_registration(mut self, registration: ClientRegistration) -> Self {
        self.client_registration = registration;
        self
    }

    /// Sets how long an elicitation may wait for its answer.
    pub fn elicitation_timeout(mut self, timeout: Duration) -> Self {
        self.elicitation_timeout = timeout;
        self
    }
}

/// `request` again, with the answers to what the server asked and its `requestState` echoed
/// (as it came: the host never reads it).
fn with_input(
    request: &ClientRequest,
    answers: InputResponses,
    state: Option<String>,
) -> Result<ClientRequest, RpcError> {
    let internal = |e: serde_json::Error| RpcError::new(code::INTERNAL_ERROR, e.to_string());
    let mut value = serde_json::to_value(request).map_err(internal)?;
    let Some(params) = value.get_mut("params").and_then(Value::as_object_mut) else {
        return Err(cannot_carry(request));
    };
    params.remove("inputResponses");
    params.remove("requestState");
    if !answers.is_empty() {
        params.insert("inputResponses".into(), serde_json::to_value(answers).map_err(internal)?);
    }
    if let Some(state) = state {
        params.insert("requestState".into(), Value::String(state));
    }
    let again: ClientRequest = serde_json::from_value(value).map_err(internal)?;
    // A request whose params have no such fields (a listing) drops them: say so, rather than
    // asking the person the same question round after round.
    let kept = serde_json::to_value(&again).map_err(internal)?;
    let has = |key: &str| kept["params"].get(key).is_some();
    if !(has("inputResponses") || has("requestState")) {
        return Err(cannot_carry(request));
    }
    Ok(again)
}

fn cannot_carry(request: &ClientRequest) -> RpcError {
    let method = serde_json::to_value(request).ok().and_then(|v| v["method"].as_str().map(str::to_owned));
    RpcError::new(
        code::UNAVAILABLE,
        format!(
            "the server asked for input on `{}`, which cannot carry answers (only tools/call, resources/read and prompts/get can)",
            method.unwrap_or_default()
        ),
    )
}

/// How long to wait before sending again a request whose server asked for nothing but its
/// `requestState` back (it is not ready yet): 50 ms, doubling, at most 250 ms (as rmcp does).
fn state_only_pause(rounds: usize) -> Duration {
    Duration::from_millis((50u64 << rounds.min(3)).min(250))
}

/// A connected MCP server.
pub struct Connection {
    name: String,
    identity: String,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, HostClient>>>,
    peer: rmcp::Peer<RoleClient>,
    /// Each with its UI link read once, when listed.
    tools: RwLock<Vec<ListedTool>>,
    resources: RwLock<Vec<Value>>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    options: ConnectOptions,
    progress: ProgressRoutes,
    changes: tokio::sync::broadcast::Sender<ServerChange>,
    /// The server process (stdio only).
    pid: Option<u32>,
    /// Who answers what a 2026-07-28 server asks inside its results.
    client: HostClient,
    /// A 2026-07-28 server's change notifications.
    listening: tokio::sync::Mutex<Listening>,
    /// Set by [`Connection::shutdown`].
    closed: tokio::sync::watch::Sender<bool>,
    /// UI resources read for Views, for the next View of the same resource.
    ui_cache: super::ui_cache::UiCache,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").field("name", &self.name).finish_non_exhaustive()
    }
}

fn rpc_error(e: ServiceError) -> RpcError {
    match e {
        ServiceError::McpError(e) => RpcError { code: e.code.0.into(), message: e.message.into_owned(), data: e.data },
        ServiceError::Timeout { timeout } => RpcError::new(
            code::UNAVAILABLE,
            format!("the server did not answer within {} s; the request was cancelled", timeout.as_secs_f32()),
        ),
        ServiceError::TransportClosed => {
            RpcError::new(code::UNAVAILABLE, "the connection to the server is closed; the request got no answer")
        }
        ServiceError::TransportSend(e) => RpcError::new(
            code::UNAVAILABLE,
            format!("the request could not be sent to the server: {}", error_chain(e.error.as_ref())),
        ),
        other => RpcError::new(code::INTERNAL_ERROR, other.to_string()),
    }
}

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

    /// Signs in to a remote server (see [`super::auth::sign_in`]) through the options'
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
        let manager = super::auth::sign_in(url, challenge, store, registration, authorizer.0.as_ref(), SIGN_IN_TIMEOUT)
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
        let handshake_failed = |reason: String| Error::Handshake { server: name.clone(), reason };
        let (service, pid) = match spec {
            ServerSpec::Stdio { program, args, env, cwd, .. } => {
                // `${secret:KEY}` in the entry: the value from the keyring or its owner-only file.
                let (args, env) =
                    crate::secrets::fill_spec(&name, &spec.identity(), args, env).await.map_err(handshake_failed)?;
                let (args, env) = (&args, &env);
                let mut startup = if options.known_legacy { Startup::Initialize } else { Startup::Probe };
                loop {
                    let (transport, pid) = spawn_stdio(&name, program, args, env, cwd.as_deref(), &stderr_tail)?;
                    let limit = options.handshake_timeout;
                    match handshake(client.clone(), transport, startup, deadline, limit).await {
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
                let headers =
                    crate::secrets::fill_pairs(&name, &spec.identity(), headers).await.map_err(handshake_failed)?;
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
                let headers =
                    crate::secrets::fill_pairs(&name, &spec.identity(), headers).await.map_err(handshake_failed)?;
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
            identity: spec.identity(),
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

    /// Reads the tool and resource lists, page by page, within the bounds ([`MAX_LIST_PAGES`],
    /// [`MAX_LISTED_TOOLS`], [`MAX_LISTED_RESOURCES`], [`MAX_LIST_BYTES`], [`LIST_PAGE_TIMEOUT`]
    /// and [`ConnectOptions::list_timeout`] for both lists together). A server that wants
    /// sign-in only now may say so here.
    ///
    /// Tools past a bound are an error, not a shorter list: the host fails loudly rather than
    /// show part of a server's tools as if it were all of them (a tool that silently is not
    /// there looks like a server bug, and a model or View that needs it gets a confusing "no
    /// such tool"); the reason names the bound and what was read. Resources past a bound keep
    /// what was read, with a warning: UI resources need not be listed to be read, so the server
    /// stays usable. A repeated cursor ends a listing (what it points to was read already).
    async fn list_all(&self) -> std::result::Result<(Vec<Value>, Vec<Value>), ListError> {
        let deadline = tokio::time::Instant::now() + self.options.list_timeout;
        let tool_bounds = ListBounds { pages: MAX_LIST_PAGES, items: MAX_LISTED_TOOLS, bytes: MAX_LIST_BYTES };
        let mut tools = Pager::new("tools", tool_bounds);
        self.list_pages(&mut tools, deadline, |cursor| {
            let peer = self.peer.clone();
            async move {
                let page = peer.list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor))).await?;
                Ok((page.tools.iter().filter_map(|t| serde_json::to_value(t).ok()).collect(), page.next_cursor))
            }
        })
        .await?;
        let has_resources = self.peer.peer_info().is_some_and(|i| i.capabilities.resources.is_some());
        let resource_bounds = ListBounds { pages: MAX_LIST_PAGES, items: MAX_LISTED_RESOURCES, bytes: MAX_LIST_BYTES };
        let mut resources = Pager::new("resources", resource_bounds);
        if has_resources {
            let listed = self
                .list_pages(&mut resources, deadline, |cursor| {
                    let peer = self.peer.clone();
                    async move {
                        let page =
                            peer.list_resources(Some(PaginatedRequestParams::default().with_cursor(cursor))).await?;
                        let items = page.resources.iter().filter_map(|r| serde_json::to_value(r).ok()).collect();
                        Ok((items, page.next_cursor))
                    }
                })
                .await;
            if let Err(e) = listed {
                // UI resources need not be listed; reading them still works.
                let kept = resources.items.len();
                tracing::warn!(server = %self.name, "resources/list stopped: {e}; keeping the {kept} resources read");
            }
        }
        Ok((tools.items, resources.items))
    }

    /// Reads one list into `pager` until its last page, a bound, or `deadline`.
    async fn list_pages<F, Fut>(
        &self,
        pager: &mut Pager,
        deadline: tokio::time::Instant,
        mut fetch: F,
    ) -> std::result::Result<(), ListError>
    where
        F: FnMut(Option<String>) -> Fut,
        Fut: Future<Output = std::result::Result<(Vec<Value>, Option<String>), ServiceError>>,
    {
        let mut cursor = None;
        loop {
            let page_deadline = (tokio::time::Instant::now() + LIST_PAGE_TIMEOUT).min(deadline);
            // Dropping rmcp's request future on a timeout cancels the request at the server.
            let (items, next) = match tokio::time::timeout_at(page_deadline, fetch(cursor.take())).await {
                Ok(Ok(page)) => page,
                Ok(Err(e)) => return Err(ListError::Service(e)),
                Err(_) => {
                    let (page, limit) = (pager.pages + 1, self.options.list_timeout.as_secs_f32());
                    let reason = if page_deadline >= deadline {
                        format!("the listing did not finish within {limit} s (no answer to page {page} yet)")
                    } else {
                        format!("no answer to page {page} within {} s", LIST_PAGE_TIMEOUT.as_secs_f32())
                    };
                    // rmcp's stdio transport drops a line over its limit without a word to the caller.
                    let hint = if self.pid.is_some() {
                        "; over stdio, an answer of more than 16 MiB is dropped and never arrives"
                    } else {
                        ""
                    };
                    let seen = if pager.pages > 0 { format!("; {}", pager.seen()) } else { String::new() };
                    return Err(ListError::Stopped(format!("{reason}{hint}{seen}")));
                }
            };
            match pager.take(items, next) {
                Ok(Next::Page(next)) => cursor = Some(next),
                Ok(Next::Done) => return Ok(()),
                Ok(Next::RepeatedCursor) => {
                    tracing::warn!(server = %self.name, "{} listing ended at a repeated cursor; {}", pager.what, pager.seen());
                    return Ok(());
                }
                Err(reason) => return Err(ListError::Stopped(reason)),
            }
        }
    }

    /// Changes the server announces (tool and resource lists, updated resources). After
    /// [`ServerChange::Tools`], call [`Connection::refresh`] to re-read the tools.
    pub fn changes(&self) -> tokio::sync::broadcast::Receiver<ServerChange> {
        self.changes.subscribe()
    }

    /// Asks the server to announce changes of `uri`, when it can, within the request timeout:
    /// `resources/subscribe` (2025 revisions), or a `subscriptions/listen` stream that names it
    /// (2026-07-28).
    pub async fn subscribe(&self, uri: &str) -> Result<(), RpcError> {
        let can = self
            .peer
            .peer_info()
            .is_some_and(|i| i.capabilities.resources.as_ref().and_then(|r| r.subscribe).unwrap_or(false));
        if !can {
            return Err(RpcError::method_not_found("resources/subscribe (the server does not offer it)"));
        }
        let timeout = self.options.request_timeout;
        if self.negotiation() == Some(Negotiation::Discover) {
            let mut listening = self.listening.lock().await;
            return listening.listen(&self.peer, Some(uri), &self.changes, timeout).await.map_err(rpc_error);
        }
        match tokio::time::timeout(timeout, self.request("resources/subscribe", json!({"uri": uri}))).await {
            Ok(answer) => answer.map(drop),
            Err(_) => Err(rpc_error(ServiceError::Timeout { timeout })),
        }
    }

    /// Whether the connection still works: false once the transport closed (the process exited,
    /// the HTTP session or SSE stream could not be recovered, or [`Connection::shutdown`] ran).
    /// A registry restarts a server whose connection is no longer alive.
    pub fn is_alive(&self) -> bool {
        !self.peer.is_transport_closed()
    }

    /// The server process id (stdio servers only).
    pub fn process_id(&self) -> Option<u32> {
        self.pid
    }

    /// Re-reads the server's tools and resources (all pages, within the listing bounds: see
    /// [`ConnectOptions::list_timeout`] and [`MAX_LIST_BYTES`]). When the tools cannot be read
    /// whole, this is an error and the lists read before stay as they were.
    pub async fn refresh(&self) -> Result<()> {
        match self.list_all().await {
            Ok((tools, resources)) => {
                let tools = tools.into_iter().map(ListedTool::new).collect();
                *self.tools.write().unwrap_or_else(|e| e.into_inner()) = tools;
                *self.resources.write().unwrap_or_else(|e| e.into_inner()) = resources;
                Ok(())
            }
            Err(ListError::Service(e)) if service_challenge(&e).is_some() => Err(Error::AuthRequired {
                server: self.name.clone(),
                challenge: service_challenge(&e).unwrap_or_default(),
            }),
            Err(ListError::Service(e)) => Err(Error::Request {
                server: self.name.clone(),
                method: "tools/list".into(),
                reason: with_tail(&e.to_string(), &self.stderr_tail),
            }),
            Err(ListError::Stopped(reason)) => {
                Err(Error::Request { server: self.name.clone(), method: "tools/list".into(), reason })
            }
        }
    }

    /// The server's display name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The protocol revision negotiated with the server, e.g. `2026-07-28` (chosen from its
    /// `server/discover` answer) or `2025-11-25` (its `initialize` answer).
    pub fn protocol_version(&self) -> Option<String> {
        self.peer.peer_info().map(|i| i.protocol_version.to_string())
    }

    /// How that revision was negotiated.
    pub fn negotiation(&self) -> Option<Negotiation> {
        self.peer.peer_info().map(|i| Negotiation::of(&i.protocol_version))
    }

    /// The revision as people read it: `2025-11-25`, or `2026-07-28, by server/discover` for the
    /// revisions without `initialize`.
    pub fn revision_label(&self) -> Option<String> {
        let version = self.protocol_version()?;
        Some(match self.negotiation() {
            Some(Negotiation::Discover) => format!("{version}, by server/discover"),
            _ => version,
        })
    }

    /// The server's own name for itself, from its initialize result: `serverInfo.title` when it
    /// gives one, else `serverInfo.name` (`None` when both are blank). Untrusted text: make it
    /// one line before showing it (the registry's labels do, see [`super::registry::Registry::label`]).
    pub fn server_title(&self) -> Option<String> {
        let info = self.peer.peer_info()?;
        let own = info.server_info.as_ref()?;
        let title = [own.title.as_deref(), Some(own.name.as_str())]
            .into_iter()
            .flatten()
            .map(str::trim)
            .find(|t| !t.is_empty())
            .map(str::to_owned);
        title
    }

    /// What the server tells its clients about using it (`instructions` of its initialize or
    /// discover answer). Untrusted text: the server's own words.
    pub fn instructions(&self) -> Option<String> {
        self.peer.peer_info()?.instructions.clone().filter(|i| !i.trim().is_empty())
    }

    /// The server's stable identity (command line or URL).
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// All tools, as the server defined them.
    pub fn tools(&self) -> Vec<Value> {
        self.tools.read().unwrap_or_else(|e| e.into_inner()).iter().map(|t| t.definition.clone()).collect()
    }

    /// All tools, each with its UI link as read when it was listed.
    pub fn listed_tools(&self) -> Vec<ListedTool> {
        self.tools.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// One tool by name.
    pub fn tool(&self, name: &str) -> Option<Value> {
        self.with_tool(name, |t| t.definition.clone())
    }

    /// What one tool says about its UI, as read when it was listed.
    pub fn tool_ui(&self, name: &str) -> Option<std::result::Result<ToolUi, UiLinkError>> {
        self.with_tool(name, |t| t.ui.clone())
    }

    /// One tool with its UI link, from one listing.
    pub fn listed_tool(&self, name: &str) -> Option<ListedTool> {
        self.with_tool(name, ListedTool::clone)
    }

    fn with_tool<T>(&self, name: &str, read: impl FnOnce(&ListedTool) -> T) -> Option<T> {
        let tools = self.tools.read().unwrap_or_else(|e| e.into_inner());
        tools.iter().find(|t| t.name() == name).map(read)
    }

    /// The `resources/list` entry for a URI, if the server listed it.
    pub fn listed_resource(&self, uri: &str) -> Option<Value> {
        let resources = self.resources.read().unwrap_or_else(|e| e.into_inner());
        resources.iter().find(|r| r.get("uri").and_then(Value::as_str) == Some(uri)).cloned()
    }

    /// The resources the server listed (`resources/list` entries).
    pub fn resources(&self) -> Vec<Value> {
        self.resources.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Whether the server offers prompts (`capabilities.prompts`).
    pub fn has_prompts(&self) -> bool {
        self.peer.peer_info().is_some_and(|i| i.capabilities.prompts.is_some())
    }

    /// The last lines the server wrote to stderr.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.stderr_tail.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect()
    }

    /// `tools/call`: cancelled after [`IDLE_TIMEOUT`] without progress or [`MAX_CALL_DURATION`] in
    /// all (or the limits given in [`ConnectOptions`]); progress goes to `control.progress`, and
    /// `control.cancelled` cancels it at the server.
    pub async fn call_tool(
        &self,
        name: String,
        arguments: Option<Map<String, Value>>,
        mut control: CallControl,
    ) -> Result<Value, RpcError> {
        let mut params = CallToolRequestParams::new(name);
        if let Some(args) = arguments {
            params = params.with_arguments(args);
        }
        // rmcp adds its progress token and protocol metadata to whatever is here.
        params.meta = control.meta.take().map(rmcp::model::RequestMetaObject::from);
        let request = ClientRequest::CallToolRequest(Request::new(params));
        let result = self.send(request, control).await?;
        serde_json::to_value(result).map_err(|e| RpcError::new(code::INTERNAL_ERROR, e.to_string()))
    }

    /// Another request (`resources/read`, `resources/list`, `resources/templates/list`,
    /// `prompts/list`), from its JSON params.
    ///
    /// Answers to a server's questions (`inputResponses`, `requestState`) come from the
    /// server's `input_required` only: whatever the caller (a View's forwarded request) put in
    /// `params` is dropped.
    pub async fn request(&self, method: &str, mut params: Value) -> Result<Value, RpcError> {
        if let Some(params) = params.as_object_mut() {
            params.remove("inputResponses");
            params.remove("requestState");
        }
        let request: ClientRequest = serde_json::from_value(json!({"method": method, "params": params}))
            .map_err(|e| RpcError::invalid_params(format!("{method}: {e}")))?;
        let result = self.send(request, CallControl::default()).await?;
        serde_json::to_value(result).map_err(|e| RpcError::new(code::INTERNAL_ERROR, e.to_string()))
    }

    /// One request to its final answer: a 2026-07-28 server may first answer `input_required`
    /// (multi round-trip requests), asking elicitation, sampling or roots inside its result; the
    /// host answers them as it answers the same requests of a 2025 server, and sends the request
    /// again with the answers and the server's `requestState`, for [`MAX_INPUT_ROUNDS`] at most.
    async fn send(&self, request: ClientRequest, control: CallControl) -> Result<ServerResult, RpcError> {
        let CallControl { progress, cancelled, .. } = control;
        // One cancellation for all rounds: the View cancels the call, not one round of it.
        let cancelled = async move {
            match cancelled {
                Some(rx) => rx.await.ok(),
                None => std::future::pending().await,
            }
        }
        .boxed()
        .shared();
        let was_cancelled = |reason: Option<Option<String>>| {
            let reason = reason.flatten().unwrap_or_else(|| "by the View".into());
            RpcError::new(code::UNAVAILABLE, format!("cancelled: {reason}"))
        };
        let mut request = request;
        let mut state_only = 0;
        for _ in 0..MAX_INPUT_ROUNDS {
            let result = self.send_once(request.clone(), progress.clone(), cancelled.clone()).await?;
            let ServerResult::InputRequiredResult(asked) = result else { return Ok(result) };
            let asks = asked.input_requests.as_ref().is_some_and(|r| !r.is_empty());
            if !asks && asked.request_state.is_none() {
                return Err(RpcError::new(code::UNAVAILABLE, "the server asked for input without saying what"));
            }
            let state = asked.request_state.clone();
            let answers = tokio::select! {
                // A cancel that came with the answers wins: nothing is sent for a cancelled call.
                biased;
                reason = cancelled.clone() => return Err(was_cancelled(reason)),
                () = self.gone() => {
                    return Err(RpcError::new(code::UNAVAILABLE, "the connection ended while the server's question was open"));
                }
                answers = self.client.answer_input(asked) => answers.map_err(|e| rpc_error(ServiceError::McpError(e)))?,
            };
            if let Some(reason) = cancelled.peek() {
                return Err(was_cancelled(reason.clone()));
            }
            if asks {
                state_only = 0;
            } else {
                tokio::time::sleep(state_only_pause(state_only)).await;
                state_only += 1;
            }
            request = with_input(&request, answers, state)?;
        }
        Err(RpcError::new(
            code::UNAVAILABLE,
            format!("the server still asked for input after {MAX_INPUT_ROUNDS} rounds; the request was given up"),
        ))
    }

    async fn send_once(
        &self,
        request: ClientRequest,
        progress: Option<tokio::sync::mpsc::UnboundedSender<Value>>,
        cancelled: impl Future<Output = Option<Option<String>>>,
    ) -> Result<ServerResult, RpcError> {
        let mut options = PeerRequestOptions::with_timeout(self.options.idle_timeout).reset_timeout_on_progress();
        options.max_total_timeout = Some(self.options.max_call_duration);
        let handle =
            match tokio::time::timeout(SEND_TIMEOUT, self.peer.send_cancellable_request(request, options)).await {
                Ok(Ok(h)) => h,
                Ok(Err(e)) => return Err(self.explain(e).await),
                Err(_) => {
                    let limit = SEND_TIMEOUT.as_secs();
                    let message = format!("the request could not be handed to the transport within {limit} s");
                    return Err(RpcError::new(code::UNAVAILABLE, message));
                }
            };
        let sent = tokio::time::Instant::now();
        let (id, peer) = (handle.id.clone(), handle.peer.clone());
        let key = serde_json::to_string(&handle.progress_token).unwrap_or_default();
        if let Some(route) = progress {
            self.progress.lock().unwrap_or_else(|e| e.into_inner()).insert(key.clone(), route);
        }
        // rmcp enforces both limits, but its own cancel on a timeout is a write without one.
        let limit = self.options.max_call_duration + SEND_TIMEOUT;
        let outcome = tokio::select! {
            r = tokio::time::timeout(limit, handle.await_response()) => match r {
                Ok(Ok(result)) => Ok(result),
                Ok(Err(e)) => Err(self.explain(e).await),
                Err(_) => Err(rpc_error(ServiceError::Timeout { timeout: self.options.max_call_duration })),
            },
            reason = cancelled => {
                tokio::time::sleep_until(sent + CANCEL_GUARD).await;
                let reason = reason.flatten();
                let cancel = peer.notify_cancelled(CancelledNotificationParam::new(Some(id), reason.clone()));
                let _ = tokio::time::timeout(SEND_TIMEOUT, cancel).await;
                Err(RpcError::new(code::UNAVAILABLE, format!("cancelled: {}", reason.unwrap_or_else(|| "by the View".into()))))
            }
        };
        self.progress.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
        outcome
    }

    /// `resources/read`, bounded by the request timeout.
    /// A 2026-07-28 server may ask for input first (`input_required`): the host answers it as it
    /// answers a server's own questions, and reads again.
    pub async fn read_resource(&self, uri: String) -> Result<Value, RpcError> {
        let request = ClientRequest::ReadResourceRequest(Request::new(ReadResourceRequestParams::new(uri)));
        let timeout = self.options.request_timeout;
        let result = match tokio::time::timeout(timeout, self.send(request, CallControl::default())).await {
            Err(_) => return Err(rpc_error(ServiceError::Timeout { timeout })),
            Ok(answer) => answer?,
        };
        serde_json::to_value(result).map_err(|e| RpcError::new(code::INTERNAL_ERROR, e.to_string()))
    }

    /// `resources/read` of a View's UI resource, whose result is kept for the next View of the
    /// same resource ([`Connection::kept_ui_resource`]).
    pub(crate) async fn read_ui_resource(&self, uri: String) -> Result<Value, RpcError> {
        let since = self.ui_cache.since();
        match self.read_resource(uri.clone()).await {
            Ok(read) => {
                self.ui_cache.keep(&uri, &read, since);
                Ok(read)
            }
            Err(e) => {
                self.ui_cache.release(&uri);
                Err(e)
            }
        }
    }

    /// What the last [`Connection::read_ui_resource`] of `uri` returned, unless the server said
    /// since that the resource changed, or the copy was too large to keep (see `ui_cache.rs`);
    /// with `true` when the caller is to read it again (one caller at a time).
    pub(crate) fn kept_ui_resource(&self, uri: &str) -> Option<(Arc<Value>, bool)> {
        self.ui_cache.get(uri)
    }

    /// Resolves once the connection is closed (shut down, or its transport ended): a question the
    /// server asked inside a result is withdrawn then.
    async fn gone(&self) {
        while !self.peer.is_transport_closed() && !*self.closed.borrow() {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// When the connection itself failed, the server's last words usually say why.
    async fn explain(&self, error: ServiceError) -> RpcError {
        if let Some(challenge) = service_challenge(&error) {
            // 401 (the token expired and could not be refreshed) or 403 insufficient_scope.
            return RpcError {
                code: code::UNAVAILABLE,
                message: format!("MCP server `{}` needs sign-in for this request", self.name),
                data: Some(json!({ AUTH_CHALLENGE_KEY: challenge })),
            };
        }
        let closed = matches!(error, ServiceError::TransportClosed);
        let mut error = rpc_error(error);
        if closed && self.pid.is_none() && self.is_alive() {
            // Streamable HTTP: the response stream of this one request broke; the session lives on.
            error.message = "the server's response stream for this request closed before the answer came; the \
                             connection itself is still up"
                .into();
        }
        if self.pid.is_some() && error.code == code::UNAVAILABLE {
            if closed {
                error.message = "the server process ended (it crashed or exited); the request got no answer".into();
            }
            // Give the stderr reader a moment to catch up with a process that just died.
            tokio::time::sleep(Duration::from_millis(50)).await;
            error.message = with_tail(&error.message, &self.stderr_tail);
        }
        error
    }

    /// Closes the connection: for stdio, stdin closed, then SIGTERM, then SIGKILL (3 s apart at
    /// most); for Streamable HTTP, the session is deleted; for SSE, the stream is closed.
    pub async fn shutdown(&self) {
        self.closed.send_replace(true);
        self.listening.lock().await.stop();
        if let Some(mut service) = self.service.lock().await.take() {
            if let Ok(None) = service.close_with_timeout(SHUTDOWN_TIMEOUT).await {
                let limit = SHUTDOWN_TIMEOUT.as_secs();
                tracing::warn!(server = %self.name, "close did not finish in {limit} s; dropping it");
            }
        }
    }

    /// This connection as the bridge's [`ServerPort`].
    pub fn port(self: &Arc<Self>) -> Arc<dyn ServerPort> {
        Arc::new(Port(self.clone()))
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
    super::auth::manager(url, store).await.ok()
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

/// The `WWW-Authenticate` challenge of a 401 (or 403 insufficient_scope) in a handshake error.
pub(super) fn auth_challenge(error: &ClientInitializeError) -> Option<String> {
    match error {
        ClientInitializeError::TransportError { error, .. } => challenge_in(error.error.as_ref()),
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => auth_challenge(fallback),
        _ => None,
    }
}

/// The same in a request's error.
fn service_challenge(error: &ServiceError) -> Option<String> {
    let ServiceError::TransportSend(error) = error else { return None };
    challenge_in(error.error.as_ref())
}

/// Where a sign-in challenge rides in an error's `data` ([`auth_challenge_of`]).
const AUTH_CHALLENGE_KEY: &str = "wwwAuthenticate";

/// The `WWW-Authenticate` challenge of a request that failed because the server wants (more)
/// sign-in: sign in with it ([`Connection::sign_in`]) and try again.
pub fn auth_challenge_of(error: &RpcError) -> Option<&str> {
    error.data.as_ref()?.get(AUTH_CHALLENGE_KEY)?.as_str()
}

fn challenge_in(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(SseError::AuthRequired { challenge, .. }) = e.downcast_ref::<SseError>() {
            return Some(challenge.clone());
        }
        if let Some(http) = e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            return http.auth_challenge().map(str::to_owned);
        }
        source = e.source();
    }
    None
}

/// rmcp's handshake errors name transport types; say what failed and why instead.
pub(super) fn describe_init_error(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::TransportError { error, context } => {
            format!("{context}: {}", error_chain(error.error.as_ref()))
        }
        ClientInitializeError::ConnectionClosed(context) => {
            format!("the connection closed while waiting for the {context}")
        }
        // `server/discover` was refused, so the server is taken for a 2025 one: what failed
        // then is what the person needs to know.
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => describe_init_error(fallback),
        other => other.to_string(),
    }
}

/// An error and its causes, one sentence, without repeats. rmcp's HTTP client errors hide their
/// cause (no `source`), so those are opened up.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    type HttpError = StreamableHttpError<reqwest::Error>;
    if let Some(http) = error.downcast_ref::<HttpError>() {
        match http {
            HttpError::Client(inner) => return error_chain(inner),
            HttpError::UnexpectedServerResponse(text) if text.starts_with("HTTP 3") => {
                return format!(
                    "the server answered with a redirect ({}) that was not followed: only same-origin 307/308 \
                     redirects are, so configured headers never reach another origin; configure the final URL",
                    text.trim_end_matches([':', ' '])
                );
            }
            HttpError::UnexpectedServerResponse(text) => {
                return format!("unexpected server response: {}", one_line(text, 300));
            }
            HttpError::AuthRequired(_) | HttpError::InsufficientScope(_) => {
                return format!("{http}: the server wants sign-in");
            }
            _ => {}
        }
    }
    let mut text = match error.downcast_ref::<reqwest::Error>() {
        // reqwest repeats the URL with its query (which may hold a token); callers name the URL.
        Some(http) => match http.url() {
            Some(url) => http.to_string().replace(&format!(" for url ({url})"), ""),
            None => http.to_string(),
        },
        None => error.to_string(),
    };
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Whitespace runs (an HTML error page's newlines) as single spaces, cut to `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match joined.char_indices().nth(max) {
        Some((cut, _)) => format!("{}...", &joined[..cut]),
        None => joined,
    }
}

/// A hint for the HTTP failures people fix by changing the URL.
fn http_hint(reason: &str) -> &'static str {
    if reason.contains("HTTP 404") || reason.contains("HTTP 405") {
        "; check the URL: Streamable HTTP servers usually serve /mcp, legacy SSE servers /sse"
    } else {
        ""
    }
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

fn with_tail(reason: &str, tail: &Mutex<VecDeque<String>>) -> String {
    let tail = tail.lock().unwrap_or_else(|e| e.into_inner());
    if tail.is_empty() {
        reason.to_owned()
    } else {
        let last: Vec<&str> = tail.iter().rev().take(5).rev().map(String::as_str).collect();
        format!("{reason}; server stderr: {}", last.join(" | "))
    }
}

/// Why a listing ended early.
#[derive(Debug)]
enum ListError {
    /// The request failed (the error may carry a sign-in challenge).
    Service(ServiceError),
    /// A bound or a deadline was passed: the sentence says which, and what was read.
    Stopped(String),
}

impl std::fmt::Display for ListError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Service(e) => e.fmt(f),
            Self::Stopped(reason) => f.write_str(reason),
        }
    }
}

/// The bounds of one list.
#[derive(Debug, Clone, Copy)]
struct ListBounds {
    pages: usize,
    items: usize,
    bytes: usize,
}

/// What to do after a page.
#[derive(Debug, PartialEq, Eq)]
enum Next {
    /// Ask for the page of this cursor.
    Page(String),
    /// That was the last page.
    Done,
    /// The server named a cursor it named before: following it would read the same pages again.
    RepeatedCursor,
}

/// One list read page by page, within its bounds. Items are only ever kept within the bounds: the
/// item that would pass one is dropped with the rest of its page.
#[derive(Debug)]
struct Pager {
    /// `tools` or `resources`, for the sentences.
    what: &'static str,
    bounds: ListBounds,
    items: Vec<Value>,
    pages: usize,
    bytes: usize,
    cursors: HashSet<String>,
}

impl Pager {
    fn new(what: &'static str, bounds: ListBounds) -> Self {
        Self { what, bounds, items: Vec::new(), pages: 0, bytes: 0, cursors: HashSet::new() }
    }

    /// Takes one page; fails with a sentence naming the bound and what was read once it is passed.
    fn take(&mut self, page: Vec<Value>, next: Option<String>) -> std::result::Result<Next, String> {
        self.pages += 1;
        for item in page {
            if self.items.len() >= self.bounds.items {
                return Err(self.passed(&format!("{} {}", self.bounds.items, self.what)));
            }
            let size = json_size(&item);
            if self.bytes + size > self.bounds.bytes {
                return Err(self.passed(&format!("{} of listed data", bytes_text(self.bounds.bytes))));
            }
            self.bytes += size;
            self.items.push(item);
        }
        // An empty cursor is how some servers say "no more" (the spec says: leave it out).
        let Some(next) = next.filter(|c| !c.is_empty()) else { return Ok(Next::Done) };
        if self.cursors.contains(&next) {
            return Ok(Next::RepeatedCursor);
        }
        if self.bytes + next.len() > self.bounds.bytes {
            return Err(self.passed(&format!("{} of listed data", bytes_text(self.bounds.bytes))));
        }
        if self.pages >= self.bounds.pages {
            return Err(self.passed(&format!("{} pages", self.bounds.pages)));
        }
        self.bytes += next.len();
        self.cursors.insert(next.clone());
        Ok(Next::Page(next))
    }

    fn passed(&self, bound: &str) -> String {
        format!("the server's {} passed the host's bound of {bound}; {}", self.what, self.seen())
    }

    /// What was read so far, as a clause.
    fn seen(&self) -> String {
        let pages = if self.pages == 1 { "page" } else { "pages" };
        format!("read so far: {} {pages}, {} {}, {}", self.pages, self.items.len(), self.what, bytes_text(self.bytes))
    }
}

/// The size of a value's JSON, counted without building the text.
fn json_size(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Bytes for people: `16 MiB`, `3.2 MiB`, `512 KiB`, `12 bytes`.
fn bytes_text(bytes: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * 1024;
    match bytes {
        b if b >= MIB && b % MIB == 0 => format!("{} MiB", b / MIB),
        b if b >= MIB => format!("{:.1} MiB", b as f64 / MIB as f64),
        b if b >= KIB => format!("{} KiB", b / KIB),
        b => format!("{b} bytes"),
    }
}

struct Port(Arc<Connection>);

impl ServerPort for Port {
    fn call_tool(
        &self,
        name: String,
        arguments: Option<Map<String, Value>>,
        control: CallControl,
    ) -> BoxFuture<Result<Value, RpcError>> {
        let conn = self.0.clone();
        Box::pin(async move { conn.call_tool(name, arguments, control).await })
    }

    fn request(&self, method: &str, params: Value) -> BoxFuture<Result<Value, RpcError>> {
        let conn = self.0.clone();
        let method = method.to_owned();
        Box::pin(async move { conn.request(&method, params).await })
    }

    fn tool(&self, name: &str) -> Option<Value> {
        self.0.tool(name)
    }

    fn listed_tool(&self, name: &str) -> Option<ListedTool> {
        self.0.listed_tool(name)
    }
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

    #[test]
    fn error_pages_become_one_short_line() {
        assert_eq!(
            one_line("<html>\n  <body>\n\tCannot POST /mcp\n</body>", 100),
            "<html> <body> Cannot POST /mcp </body>"
        );
        assert_eq!(one_line("ééééé", 3), "ééé...");
        assert!(http_hint("HTTP 404 Not Found").contains("/mcp"));
        assert_eq!(http_hint("HTTP 500"), "");
    }

    #[test]
    fn connect_options_builders_set_what_they_name() {
        let options = ConnectOptions::default()
            .handshake_timeout(Duration::from_secs(2))
            .call_timeouts(Duration::from_secs(3), Duration::from_secs(4))
            .request_timeout(Duration::from_secs(5))
            .list_timeout(Duration::from_secs(6));
        assert_eq!(
            (options.handshake_timeout, options.idle_timeout, options.max_call_duration, options.request_timeout),
            (Duration::from_secs(2), Duration::from_secs(3), Duration::from_secs(4), Duration::from_secs(5))
        );
        assert_eq!(options.list_timeout, Duration::from_secs(6));
        let default = ConnectOptions::default();
        assert_eq!((default.idle_timeout, default.max_call_duration), (IDLE_TIMEOUT, MAX_CALL_DURATION));
        assert_eq!(default.list_timeout, LIST_TIMEOUT);
    }

    fn tools(page: usize, count: usize) -> Vec<Value> {
        (0..count).map(|i| json!({"name": format!("t{page}-{i}")})).collect()
    }

    #[test]
    fn pages_are_followed_until_the_last_one() {
        let mut pager = Pager::new("tools", ListBounds { pages: 10, items: 100, bytes: 1 << 20 });
        assert_eq!(pager.take(tools(0, 3), Some("c1".into())), Ok(Next::Page("c1".into())));
        assert_eq!(pager.take(tools(1, 3), Some("c2".into())), Ok(Next::Page("c2".into())));
        assert_eq!(pager.take(tools(2, 1), None), Ok(Next::Done));
        assert_eq!(pager.items.len(), 7);
        assert_eq!(pager.bytes, pager.items.iter().map(json_size).sum::<usize>() + 4, "cursors count too");
        assert_eq!(json_size(&json!({"name": "t0-0"})), serde_json::to_string(&json!({"name": "t0-0"})).unwrap().len());
        // An empty cursor ends a listing as an absent one does.
        let mut empty = Pager::new("tools", ListBounds { pages: 10, items: 100, bytes: 1 << 20 });
        assert_eq!(empty.take(tools(0, 1), Some(String::new())), Ok(Next::Done));
    }

    #[test]
    fn a_repeated_cursor_ends_the_listing() {
        let mut pager = Pager::new("tools", ListBounds { pages: 10, items: 100, bytes: 1 << 20 });
        assert_eq!(pager.take(tools(0, 1), Some("a".into())), Ok(Next::Page("a".into())));
        assert_eq!(pager.take(tools(1, 1), Some("b".into())), Ok(Next::Page("b".into())));
        assert_eq!(pager.take(tools(2, 1), Some("a".into())), Ok(Next::RepeatedCursor));
        assert_eq!(pager.items.len(), 3, "the last page still counts");
    }

    #[test]
    fn each_bound_stops_the_listing_with_what_was_read() {
        let mut pages = Pager::new("tools", ListBounds { pages: 2, items: 100, bytes: 1 << 20 });
        assert!(pages.take(tools(0, 1), Some("a".into())).is_ok());
        let err = pages.take(tools(1, 1), Some("b".into())).unwrap_err();
        assert_eq!(
            err,
            "the server's tools passed the host's bound of 2 pages; read so far: 2 pages, 2 tools, 31 bytes"
        );
        // The last page within the bounds is fine without a next cursor.
        let mut last = Pager::new("tools", ListBounds { pages: 1, items: 100, bytes: 1 << 20 });
        assert_eq!(last.take(tools(0, 1), None), Ok(Next::Done));

        let mut items = Pager::new("resources", ListBounds { pages: 10, items: 5, bytes: 1 << 20 });
        assert!(items.take(tools(0, 4), Some("a".into())).is_ok());
        let err = items.take(tools(1, 4), None).unwrap_err();
        assert!(
            err.starts_with(
                "the server's resources passed the host's bound of 5 resources; read so far: 2 pages, 5 resources"
            ),
            "{err}"
        );
        assert_eq!(items.items.len(), 5, "kept: everything within the bound");

        let mut bytes = Pager::new("tools", ListBounds { pages: 10, items: 100, bytes: 40 });
        let err = bytes.take(tools(0, 3), None).unwrap_err();
        assert_eq!(err, "the server's tools passed the host's bound of 40 bytes of listed data; read so far: 1 page, 2 tools, 30 bytes");
        let mut cursor = Pager::new("tools", ListBounds { pages: 10, items: 100, bytes: 40 });
        assert!(
            cursor.take(tools(0, 1), Some("x".repeat(100))).unwrap_err().contains("40 bytes"),
            "a huge cursor counts"
        );
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(bytes_text(MAX_LIST_BYTES), "8 MiB");
        assert_eq!(bytes_text(3 * 1024 * 1024 + 300 * 1024), "3.3 MiB");
        assert_eq!(bytes_text(2048), "2 KiB");
        assert_eq!(bytes_text(12), "12 bytes");
    }
}
