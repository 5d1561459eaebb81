//! One live MCP client connection (rmcp), with the server's tools and resources indexed.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

#[allow(deprecated)]
use rmcp::model::LoggingMessageNotificationParam;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation,
    ReadResourceRequestParams,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use serde_json::{json, Map, Value};
use tokio::io::AsyncBufReadExt;

use super::config::ServerSpec;
use crate::bridge::{BoxFuture, ServerPort};
use crate::error::{Error, Result};
use crate::protocol::jsonrpc::code;
use crate::protocol::{RpcError, EXTENSION_ID, RESOURCE_MIME_TYPE};

/// How long a request may take before it is cancelled (the View gets an error, never a hang).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the MCP handshake may take.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
const STDERR_TAIL_LINES: usize = 20;

/// The client side of one server: what the host tells it and what it hears back.
#[derive(Clone)]
struct HostClient {
    server: String,
}

impl ClientHandler for HostClient {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        let mut ui = Map::new();
        ui.insert("mimeTypes".into(), json!([RESOURCE_MIME_TYPE]));
        capabilities.extensions = Some([(EXTENSION_ID.to_owned(), ui)].into_iter().collect());
        ClientConfig::new(
            capabilities,
            Implementation::new("mcp-apps-host", env!("CARGO_PKG_VERSION")),
        )
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
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

fn rpc_error(e: ServiceError) -> RpcError {
    match e {
        ServiceError::McpError(e) => RpcError {
            code: e.code.0.into(),
            message: e.message.into_owned(),
            data: e.data,
        },
        ServiceError::Timeout { timeout } => RpcError::new(
            code::UNAVAILABLE,
            format!(
                "the server did not answer within {} s; the request was cancelled",
                timeout.as_secs()
            ),
        ),
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => RpcError::new(
            code::UNAVAILABLE,
            format!("the server connection is gone: {e}"),
        ),
        other => RpcError::new(code::INTERNAL_ERROR, other.to_string()),
    }
}

impl Connection {
    /// Starts the server process, completes the MCP handshake and indexes tools and resources.
    pub async fn connect(spec: &ServerSpec) -> Result<Arc<Self>> {
        let ServerSpec::Stdio {
            name,
            program,
            args,
            env,
        } = spec;
        let command_line = shell_words::join(std::iter::once(program).chain(args));
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args).envs(env.iter().cloned()).kill_on_drop(true);
        let (transport, stderr) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| Error::Spawn {
                command: command_line.clone(),
                source,
            })?;

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

        let client = HostClient {
            server: name.clone(),
        };
        let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, client.serve(transport)).await;
        let service = match handshake {
            Ok(Ok(service)) => service,
            Ok(Err(e)) => {
                // Give the stderr reader a moment: the reason a server died is usually its last words.
                tokio::time::sleep(Duration::from_millis(100)).await;
                return Err(Error::Handshake {
                    server: name.clone(),
                    reason: with_tail(&e.to_string(), &stderr_tail),
                });
            }
            Err(_) => {
                return Err(Error::Handshake {
                    server: name.clone(),
                    reason: with_tail(
                        &format!("no answer within {} s", HANDSHAKE_TIMEOUT.as_secs()),
                        &stderr_tail,
                    ),
                })
            }
        };
        let peer = service.peer().clone();
        // The response cache would answer a failed refetch with stale data; a host wants the truth.
        peer.set_response_cache_config(rmcp::ClientCacheConfig::disabled())
            .await;

        let conn = Arc::new(Self {
            name: name.clone(),
            identity: spec.identity(),
            service: tokio::sync::Mutex::new(Some(service)),
            peer,
            tools: RwLock::new(Vec::new()),
            resources: RwLock::new(Vec::new()),
            stderr_tail,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
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
        let tools = self
            .peer
            .list_all_tools()
            .await
            .map_err(|e| request("tools/list", e))?;
        let tools: Vec<Value> = tools
            .iter()
            .filter_map(|t| serde_json::to_value(t).ok())
            .collect();
        let has_resources = self
            .peer
            .peer_info()
            .is_some_and(|i| i.capabilities.resources.is_some());
        let resources = if has_resources {
            match self.peer.list_all_resources().await {
                Ok(r) => r
                    .iter()
                    .filter_map(|r| serde_json::to_value(r).ok())
                    .collect(),
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
        tools
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
            .cloned()
    }

    /// The `resources/list` entry for a URI, if the server listed it.
    pub fn listed_resource(&self, uri: &str) -> Option<Value> {
        let resources = self.resources.read().unwrap_or_else(|e| e.into_inner());
        resources
            .iter()
            .find(|r| r.get("uri").and_then(Value::as_str) == Some(uri))
            .cloned()
    }

    /// The last lines the server wrote to stderr.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.stderr_tail
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    /// `tools/call`, bounded by the request timeout.
    pub async fn call_tool(
        &self,
        name: String,
        arguments: Option<Map<String, Value>>,
    ) -> Result<Value, RpcError> {
        let mut params = CallToolRequestParams::new(name);
        if let Some(args) = arguments {
            params = params.with_arguments(args);
        }
        let call = self.peer.call_tool(params);
        let result = match tokio::time::timeout(self.request_timeout, call).await {
            Err(_) => {
                return Err(rpc_error(ServiceError::Timeout {
                    timeout: self.request_timeout,
                }))
            }
            Ok(Err(e)) => return Err(self.explain(e).await),
            Ok(Ok(result)) => result,
        };
        serde_json::to_value(result).map_err(|e| RpcError::new(code::INTERNAL_ERROR, e.to_string()))
    }

    /// `resources/read`, bounded by the request timeout.
    pub async fn read_resource(&self, uri: String) -> Result<Value, RpcError> {
        let read = self.peer.read_resource(ReadResourceRequestParams::new(uri));
        let result = match tokio::time::timeout(self.request_timeout, read).await {
            Err(_) => {
                return Err(rpc_error(ServiceError::Timeout {
                    timeout: self.request_timeout,
                }))
            }
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
        let last: Vec<&str> = tail
            .iter()
            .rev()
            .take(5)
            .rev()
            .map(String::as_str)
            .collect();
        format!("{reason}; server stderr: {}", last.join(" | "))
    }
}

struct Port(Arc<Connection>);

impl ServerPort for Port {
    fn call_tool(
        &self,
        name: String,
        arguments: Option<Map<String, Value>>,
    ) -> BoxFuture<Result<Value, RpcError>> {
        let conn = self.0.clone();
        Box::pin(async move { conn.call_tool(name, arguments).await })
    }

    fn read_resource(&self, uri: String) -> BoxFuture<Result<Value, RpcError>> {
        let conn = self.0.clone();
        Box::pin(async move { conn.read_resource(uri).await })
    }

    fn tool(&self, name: &str) -> Option<Value> {
        self.0.tool(name)
    }
}
