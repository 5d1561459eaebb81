//! One live MCP client connection (rmcp), with the server's tools and resources indexed.

use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

#[allow(deprecated)]
use rmcp::model::LoggingMessageNotificationParam;
use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ClientCapabilities, ClientConfig, ClientRequest, Implementation,
    ProgressNotificationParam, ReadResourceRequestParams, Request,
};
use rmcp::service::PeerRequestOptions;
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use serde_json::{json, Map, Value};
use tokio::io::AsyncBufReadExt;

use super::config::ServerSpec;
use crate::bridge::{BoxFuture, CallControl, ServerPort};
use crate::error::{Error, Result};
use crate::protocol::jsonrpc::code;
use crate::protocol::{RpcError, EXTENSION_ID, RESOURCE_MIME_TYPE};

/// How long a request may take before it is cancelled (the View gets an error, never a hang).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the MCP handshake may take.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
const STDERR_TAIL_LINES: usize = 20;

/// How long a forwarded call may go without progress before it is cancelled.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a forwarded call may take in all, progress or not.
pub const MAX_CALL_DURATION: Duration = Duration::from_secs(600);
/// rmcp may write a cancel before the request it cancels (trap 1 in the rmcp notes): a cancel is
/// held back until the request has been out at least this long.
const CANCEL_GUARD: Duration = Duration::from_millis(100);

type ProgressRoutes = Arc<Mutex<HashMap<String, tokio::sync::mpsc::UnboundedSender<Value>>>>;

/// The client side of one server: what the host tells it and what it hears back.
#[derive(Clone)]
struct HostClient {
    server: String,
    /// rmcp progress token -> where that call's progress goes.
    progress: ProgressRoutes,
}

impl ClientHandler for HostClient {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        let mut ui = Map::new();
        ui.insert("mimeTypes".into(), json!([RESOURCE_MIME_TYPE]));
        capabilities.extensions = Some([(EXTENSION_ID.to_owned(), ui)].into_iter().collect());
        ClientConfig::new(capabilities, Implementation::new("mcp-apps-host", env!("CARGO_PKG_VERSION")))
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        let key = serde_json::to_string(&params.progress_token).unwrap_or_default();
        let route = self.progress.lock().unwrap_or_else(|e| e.into_inner()).get(&key).cloned();
        if let Some(route) = route {
            let mut update = json!({"progress": params.progress});
            if let Some(total) = params.total {
                update["total"] = json!(total);
            }
            if let Some(message) = params.message {
                update["message"] = json!(message);
            }
            let _ = route.send(update);
        }
    }

    // Deprecated upstream (SEP-2577), but servers of the current spec still send it.
    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        tracing::info!(server = %self.server, level = ?params.level, "server log: {}", params.data);
    }
}

/// A connected MCP server.
pub struct Connection {
    name: String,
    identity: String,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, HostClient>>>,
    peer: rmcp::Peer<RoleClient>,
    tools: RwLock<Vec<Value>>,
    resources: RwLock<Vec<Value>>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    request_timeout: Duration,
    progress: ProgressRoutes,
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
            format!("the server did not answer within {} s; the request was cancelled", timeout.as_secs()),
        ),
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
            RpcError::new(code::UNAVAILABLE, format!("the server connection is gone: {e}"))
        }
        other => RpcError::new(code::INTERNAL_ERROR, other.to_string()),
    }
}

impl Connection {
    /// Starts the server process, completes the MCP handshake and indexes tools and resources.
    pub async fn connect(spec: &ServerSpec) -> Result<Arc<Self>> {
        let (name, program, args, env, cwd) = match spec {
            ServerSpec::Stdio { name, program, args, env, cwd } => (name, program, args, env, cwd),
            ServerSpec::StreamableHttp { name, .. } | ServerSpec::Sse { name, .. } => {
                return Err(Error::Handshake {
                    server: name.clone(),
                    reason: "Streamable HTTP / SSE transports are not wired yet".into(),
                })
            }
        };
        let command_line = shell_words::join(std::iter::once(program).chain(args));
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args).envs(env.iter().cloned()).kill_on_drop(true);
        if let Some(cwd) = cwd {
            cmd.current_dir(cwd);
        }
        let (transport, stderr) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| Error::Spawn { command: command_line.clone(), source })?;

        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(stderr) = stderr {
            let tail = stderr_tail.clone();
            let server = name.clone();
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

        let progress = ProgressRoutes::default();
        let client = HostClient { server: name.clone(), progress: progress.clone() };
        let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, client.serve(transport)).await;
        let service = match handshake {
            Ok(Ok(service)) => service,
            Ok(Err(e)) => {
                // Give the stderr reader a moment: the reason a server died is usually its last words.
                tokio::time::sleep(Duration::from_millis(100)).await;
                return Err(Error::Handshake { server: name.clone(), reason: with_tail(&e.to_string(), &stderr_tail) });
            }
            Err(_) => {
                return Err(Error::Handshake {
                    server: name.clone(),
                    reason: with_tail(&format!("no answer within {} s", HANDSHAKE_TIMEOUT.as_secs()), &stderr_tail),
                })
            }
        };
        let peer = service.peer().clone();
        // The response cache would answer a failed refetch with stale data; a host wants the truth.
        peer.set_response_cache_config(rmcp::ClientCacheConfig::disabled()).await;

        let conn = Arc::new(Self {
            name: name.clone(),
            identity: spec.identity(),
            service: tokio::sync::Mutex::new(Some(service)),
            peer,
            tools: RwLock::new(Vec::new()),
            resources: RwLock::new(Vec::new()),
            stderr_tail,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            progress,
        });
        conn.refresh().await?;
        Ok(conn)
    }

    /// Re-reads the server's tools and resources (all pages).
    pub async fn refresh(&self) -> Result<()> {
        let request = |method: &str, e: ServiceError| Error::Request {
            server: self.name.clone(),
            method: method.to_owned(),
            reason: with_tail(&e.to_string(), &self.stderr_tail),
        };
        let tools = self.peer.list_all_tools().await.map_err(|e| request("tools/list", e))?;
        let tools: Vec<Value> = tools.iter().filter_map(|t| serde_json::to_value(t).ok()).collect();
        let has_resources = self.peer.peer_info().is_some_and(|i| i.capabilities.resources.is_some());
        let resources = if has_resources {
            match self.peer.list_all_resources().await {
                Ok(r) => r.iter().filter_map(|r| serde_json::to_value(r).ok()).collect(),
                Err(e) => {
                    // UI resources need not be listed; reading them still works.
                    tracing::warn!(server = %self.name, "resources/list failed: {e}");
                    Vec::new()
                }
            }
        } else {
            Vec::new()
        };
        *self.tools.write().unwrap_or_else(|e| e.into_inner()) = tools;
        *self.resources.write().unwrap_or_else(|e| e.into_inner()) = resources;
        Ok(())
    }

    /// The server's display name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server's stable identity (command line or URL).
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// All tools, as the server defined them.
    pub fn tools(&self) -> Vec<Value> {
        self.tools.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// One tool by name.
    pub fn tool(&self, name: &str) -> Option<Value> {
        let tools = self.tools.read().unwrap_or_else(|e| e.into_inner());
        tools.iter().find(|t| t.get("name").and_then(Value::as_str) == Some(name)).cloned()
    }

    /// The `resources/list` entry for a URI, if the server listed it.
    pub fn listed_resource(&self, uri: &str) -> Option<Value> {
        let resources = self.resources.read().unwrap_or_else(|e| e.into_inner());
        resources.iter().find(|r| r.get("uri").and_then(Value::as_str) == Some(uri)).cloned()
    }

    /// The last lines the server wrote to stderr.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.stderr_tail.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect()
    }

    /// `tools/call`: cancelled after [`IDLE_TIMEOUT`] without progress or [`MAX_CALL_DURATION`] in
    /// all; progress goes to `control.progress`, and `control.cancelled` cancels it at the server.
    pub async fn call_tool(
        &self,
        name: String,
        arguments: Option<Map<String, Value>>,
        control: CallControl,
    ) -> Result<Value, RpcError> {
        let mut params = CallToolRequestParams::new(name);
        if let Some(args) = arguments {
            params = params.with_arguments(args);
        }
        let request = ClientRequest::CallToolRequest(Request::new(params));
        let result = self.send(request, control).await?;
        serde_json::to_value(result).map_err(|e| RpcError::new(code::INTERNAL_ERROR, e.to_string()))
    }

    /// Another request (`resources/read`, `resources/list`, `resources/templates/list`,
    /// `prompts/list`), from its JSON params.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        let request: ClientRequest = serde_json::from_value(json!({"method": method, "params": params}))
            .map_err(|e| RpcError::invalid_params(format!("{method}: {e}")))?;
        let result = self.send(request, CallControl::default()).await?;
        serde_json::to_value(result).map_err(|e| RpcError::new(code::INTERNAL_ERROR, e.to_string()))
    }

    async fn send(&self, request: ClientRequest, control: CallControl) -> Result<rmcp::model::ServerResult, RpcError> {
        let mut options = PeerRequestOptions::with_timeout(IDLE_TIMEOUT).reset_timeout_on_progress();
        options.max_total_timeout = Some(MAX_CALL_DURATION);
        let handle = match self.peer.send_cancellable_request(request, options).await {
            Ok(h) => h,
            Err(e) => return Err(self.explain(e).await),
        };
        let sent = tokio::time::Instant::now();
        let (id, peer) = (handle.id.clone(), handle.peer.clone());
        let key = serde_json::to_string(&handle.progress_token).unwrap_or_default();
        if let Some(route) = control.progress {
            self.progress.lock().unwrap_or_else(|e| e.into_inner()).insert(key.clone(), route);
        }
        let cancelled = async {
            match control.cancelled {
                Some(rx) => rx.await.ok(),
                None => std::future::pending().await,
            }
        };
        let outcome = tokio::select! {
            r = handle.await_response() => match r {
                Ok(result) => Ok(result),
                Err(e) => Err(self.explain(e).await),
            },
            reason = cancelled => {
                tokio::time::sleep_until(sent + CANCEL_GUARD).await;
                let reason = reason.flatten();
                let _ = peer.notify_cancelled(CancelledNotificationParam::new(Some(id), reason.clone())).await;
                Err(RpcError::new(code::UNAVAILABLE, format!("cancelled: {}", reason.unwrap_or_else(|| "by the View".into()))))
            }
        };
        self.progress.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
        outcome
    }

    /// `resources/read`, bounded by the request timeout.
    pub async fn read_resource(&self, uri: String) -> Result<Value, RpcError> {
        let read = self.peer.read_resource(ReadResourceRequestParams::new(uri));
        let result = match tokio::time::timeout(self.request_timeout, read).await {
            Err(_) => return Err(rpc_error(ServiceError::Timeout { timeout: self.request_timeout })),
            Ok(Err(e)) => return Err(self.explain(e).await),
            Ok(Ok(result)) => result,
        };
        serde_json::to_value(result).map_err(|e| RpcError::new(code::INTERNAL_ERROR, e.to_string()))
    }

    /// When the connection itself failed, the server's last words usually say why.
    async fn explain(&self, error: ServiceError) -> RpcError {
        let mut error = rpc_error(error);
        if error.code == code::UNAVAILABLE {
            // Give the stderr reader a moment to catch up with a process that just died.
            tokio::time::sleep(Duration::from_millis(50)).await;
            error.message = with_tail(&error.message, &self.stderr_tail);
        }
        error
    }

    /// Closes the connection: stdin closed, then SIGTERM, then SIGKILL (3 s apart at most).
    pub async fn shutdown(&self) {
        if let Some(mut service) = self.service.lock().await.take() {
            let _ = service.close_with_timeout(Duration::from_secs(8)).await;
        }
    }

    /// This connection as the bridge's [`ServerPort`].
    pub fn port(self: &Arc<Self>) -> Arc<dyn ServerPort> {
        Arc::new(Port(self.clone()))
    }
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
}
