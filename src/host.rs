//! The embedding API: a host in your own app.
//!
//! ```no_run
//! use mcp_apps_host::host::Host;
//!
//! fn main() -> mcp_apps_host::Result<()> {
//!     let code = Host::builder()
//!         .server_command("npx -y @modelcontextprotocol/server-basic-vanillajs --stdio")
//!         .open_tool("get-time", serde_json::Map::new())
//!         .build()?
//!         .run()?;
//!     std::process::exit(code);
//! }
//! ```

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::mpsc;

pub use crate::app::dialogs::Consent;
pub use crate::app::{ExitAfter, Interaction};
use crate::app::{RunOptions, SharedPolicy};
use crate::bridge::{HostPolicy, ViewEvent, ViewId};
use crate::error::{Error, Result};
use crate::protocol::Theme;
use crate::server::connection::RequestHandler;
use crate::server::requests::{Root, ServerRequests};
use crate::server::ServerSpec;

/// A configured host, ready to run.
#[derive(Debug)]
pub struct Host {
    options: RunOptions,
}

/// Builds a [`Host`]. Like wry's `WebViewBuilder`, it keeps the first configuration error and
/// reports it once, from [`HostBuilder::build`], so calls chain without `?`.
#[derive(Default)]
#[must_use]
pub struct HostBuilder {
    servers: Vec<ServerSpec>,
    roots: Vec<Root>,
    requests: Option<Arc<dyn ServerRequests>>,
    tools: Vec<(String, Map<String, Value>)>,
    theme: Option<Theme>,
    trace: Option<PathBuf>,
    policy: Option<SharedPolicy>,
    consent: Option<Consent>,
    exit_after: Option<ExitAfter>,
    timeout: Option<Duration>,
    events: Option<mpsc::UnboundedSender<(ViewId, ViewEvent)>>,
    model: Option<Arc<dyn crate::model::Model>>,
    prompt: Option<String>,
    conversation_events: Option<mpsc::UnboundedSender<crate::conversation::Event>>,
    openai_shim: Option<bool>,
    interaction: Option<Interaction>,
    test_requests: Option<crate::app::test_interface::TestRequests>,
    error: Option<Error>,
}

impl std::fmt::Debug for HostBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostBuilder")
            .field("servers", &self.servers)
            .field("tools", &self.tools)
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl Host {
    /// Starts configuring a host.
    pub fn builder() -> HostBuilder {
        HostBuilder::default()
    }

    /// Runs the host as the app: it owns the main thread (the window's event loop) until the
    /// window closes or the `exit_after` point is reached; returns the exit code.
    pub fn run(self) -> Result<i32> {
        crate::desktop::run(self.options)
    }

    /// Mounts the host in a window the embedder owns, driven by the embedder's event loop.
    ///
    /// The host's webview fills `window`. Whatever the host needs done on the UI thread arrives
    /// in the embedder's loop as `wrap(HostEvent)` through `proxy`; pass it to
    /// [`MountedHost::handle`]. Window events go to [`MountedHost::window_event`]. Call from the
    /// thread that runs the event loop (the main thread).
    pub fn mount<T: Send + 'static>(
        self,
        window: &tao::window::Window,
        proxy: tao::event_loop::EventLoopProxy<T>,
        wrap: impl Fn(HostEvent) -> T + Send + Sync + 'static,
    ) -> Result<MountedHost> {
        let ui = crate::desktop::ui_for(proxy, move |event| wrap(HostEvent(event)));
        let running = crate::desktop::Running::start(self.options, window, ui, true)?;
        Ok(MountedHost { running })
    }
}

/// Work the host needs done on the UI thread, delivered through the embedder's event loop.
/// Opaque: hand it to [`MountedHost::handle`].
pub struct HostEvent(crate::app::window::UserEvent);

impl std::fmt::Debug for HostEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HostEvent(..)")
    }
}

/// A host mounted in an embedder's window (see [`Host::mount`]). Dropping it stops the host:
/// the webview goes, the servers are shut down.
pub struct MountedHost {
    running: crate::desktop::Running,
}

impl std::fmt::Debug for MountedHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MountedHost").finish_non_exhaustive()
    }
}

impl MountedHost {
    /// Carries out one [`HostEvent`]. Returns the exit code once the host has finished: after
    /// [`close`](Self::close), or when the `exit_after` point was reached.
    pub fn handle(&mut self, window: &tao::window::Window, event: HostEvent) -> Option<i32> {
        self.running.handle(window, event.0)
    }

    /// Tells the host about its window: size and theme changes. A close request is the
    /// embedder's to decide; call [`close`](Self::close) to close the host.
    pub fn window_event(&self, window: &tao::window::Window, event: &tao::event::WindowEvent<'_>) {
        self.running.window_event(window, event);
    }

    /// Starts closing: every View gets its `ui/resource-teardown`, the servers stop, then
    /// [`handle`](Self::handle) returns the exit code.
    pub fn close(&self) {
        self.running.close();
    }

    /// The webview showing the host (for sizing it, or focusing it).
    pub fn webview(&self) -> &wry::WebView {
        self.running.webview()
    }
}

impl HostBuilder {
    fn keep(mut self, error: Error) -> Self {
        self.error.get_or_insert(error);
        self
    }

    /// An MCP server, as a command line (POSIX quoting; started directly, not through a shell).
    /// Repeatable: every server is connected at once.
    pub fn server_command(self, command_line: &str) -> Self {
        match ServerSpec::from_command_line(command_line) {
            Ok(spec) => self.server(spec),
            Err(e) => self.keep(e),
        }
    }

    /// An MCP server, as a resolved spec (from a config file, a URL, ...). Repeatable.
    pub fn server(mut self, spec: ServerSpec) -> Self {
        self.servers.push(spec);
        self
    }

    /// A directory servers may work in, offered in `roots/list` (repeatable).
    pub fn root(mut self, dir: impl AsRef<std::path::Path>) -> Self {
        match Root::directory(dir.as_ref()) {
            Ok(root) => {
                self.roots.push(root);
                self
            }
            Err(e) => self.keep(e),
        }
    }

    /// Answers servers' `elicitation/create` and `sampling/createMessage` instead of the in-app
    /// form (sampling is offered only when this handler says it can sample).
    pub fn server_requests(mut self, requests: Arc<dyn ServerRequests>) -> Self {
        self.requests = Some(requests);
        self
    }

    /// A tool to call at start, its View shown (repeatable); `server/tool` when several servers
    /// have a tool of that name.
    pub fn open_tool(mut self, name: &str, arguments: Map<String, Value>) -> Self {
        self.tools.push((name.to_owned(), arguments));
        self
    }

    /// Light or dark instead of the system's theme.
    pub fn theme(mut self, theme: Theme) -> Self {
        self.theme = Some(theme);
        self
    }

    /// Writes the JSON Lines trace of every message here.
    pub fn trace(mut self, path: impl Into<PathBuf>) -> Self {
        self.trace = Some(path.into());
        self
    }

    /// Decides what Views may do (links, messages, downloads, display modes, app tool calls)
    /// instead of the built-in in-app dialogs.
    pub fn policy(mut self, policy: Arc<dyn HostPolicy>) -> Self {
        self.policy = Some(SharedPolicy(policy));
        self
    }

    /// How the built-in dialogs are answered (ignored when a [`policy`](Self::policy) is set).
    pub fn consent(mut self, consent: Consent) -> Self {
        self.consent = Some(consent);
        self
    }

    /// Ends [`Host::run`] with 0 once every opened View reached this point (1 on failure).
    pub fn exit_after(mut self, point: ExitAfter, timeout: Duration) -> Self {
        self.exit_after = Some(point);
        self.timeout = Some(timeout);
        self
    }

    /// Receives every View's events: lifecycle, messages, model context, logs.
    pub fn events(mut self, events: mpsc::UnboundedSender<(ViewId, ViewEvent)>) -> Self {
        self.events = Some(events);
        self
    }

    /// Holds a conversation with `model`, which calls the servers' tools: a built-in one
    /// ([`crate::model::ModelSpec::build`]) or the embedder's own [`crate::model::Model`].
    pub fn model(mut self, model: Arc<dyn crate::model::Model>) -> Self {
        self.model = Some(model);
        self
    }

    /// The first prompt for the model, sent once the servers are connected.
    pub fn prompt(mut self, text: impl Into<String>) -> Self {
        self.prompt = Some(text.into());
        self
    }

    /// Receives the conversation's turns (the person's, the Apps', the model's) and tool calls.
    pub fn conversation_events(mut self, events: mpsc::UnboundedSender<crate::conversation::Event>) -> Self {
        self.conversation_events = Some(events);
        self
    }

    /// Whether ChatGPT Apps SDK widgets get the `window.openai` shim (default: yes; see
    /// "ChatGPT Apps SDK widgets" in docs/app-developers.md).
    pub fn openai_shim(mut self, on: bool) -> Self {
        self.openai_shim = Some(on);
        self
    }

    /// Runs an interaction session ([`Interaction::read`]) in the first View once it initialized,
    /// with real input events; [`Host::run`] then ends with 0 when every step passed, else 1.
    /// Each step is written to the trace (`"dir": "session"`).
    pub fn interaction(mut self, script: Interaction) -> Self {
        self.interaction = Some(script);
        self
    }

    /// A conformance runner's handle on the host once it runs: the test interface
    /// ([`TestInterface`]).
    pub fn test_interface(mut self) -> (Self, TestInterface) {
        let (tx, requests) = crate::app::test_interface::TestRequests::channel();
        self.test_requests = Some(requests);
        (self, TestInterface { tx })
    }

    /// The host, or the first configuration error.
    pub fn build(self) -> Result<Host> {
        if let Some(e) = self.error {
            return Err(e);
        }
        if self.servers.is_empty() {
            return Err(Error::Desktop("no server: call `server_command` or `server`".into()));
        }
        if self.prompt.is_some() && self.model.is_none() {
            return Err(Error::Desktop("`prompt` needs a `model`".into()));
        }
        if self.interaction.is_some() && self.tools.is_empty() {
            return Err(Error::Desktop("`interaction` needs an `open_tool`".into()));
        }
        if self.exit_after.is_some() && self.tools.is_empty() && self.exit_after != Some(ExitAfter::Answer) {
            return Err(Error::Desktop("`exit_after` needs at least one `open_tool`".into()));
        }
        let mut options = RunOptions::app_with(self.servers);
        options.roots = self.roots;
        options.requests = self.requests.map(RequestHandler);
        options.opens = self.tools;
        options.theme = self.theme;
        options.trace = self.trace;
        options.policy = self.policy;
        options.consent = self.consent.unwrap_or_default();
        options.automation.exit_after = self.exit_after;
        if self.interaction.is_some() && options.automation.exit_after.is_none() {
            // A View that never starts ends the run too.
            options.automation.exit_after = Some(ExitAfter::Initialized);
        }
        options.automation.interaction = self.interaction;
        options.automation.test_requests = self.test_requests;
        if let Some(t) = self.timeout {
            options.timeout = t;
        }
        options.events = self.events;
        options.conversation.model = self.model.map(crate::desktop::SharedModel);
        options.conversation.prompt = self.prompt;
        options.conversation.events = self.conversation_events;
        if let Some(shim) = self.openai_shim {
            options.openai_shim = shim;
        }
        Ok(Host { options })
    }
}

/// A conformance runner's handle on a running host: the test interface that the MCP Apps
/// conformance work proposes hosts offer (ext-apps issue #743), from any thread. Each request
/// goes the way the person's action would and is answered with JSON, or an error that says why.
/// `run --test-interface` offers the same over stdin and stdout.
#[derive(Debug, Clone)]
pub struct TestInterface {
    tx: mpsc::UnboundedSender<crate::app::test_interface::TestRequest>,
}

impl TestInterface {
    /// One request by name (`displayTestApp`, `resetEnvironment`, `getConversation`,
    /// `getConversationContext`, `changeHostContext`, `confirmAction`, `sendMessage`, `callTool`,
    /// `readModelToolList`, `interact`) with its params; see the App developers' guide.
    pub async fn call(&self, method: &str, params: Value) -> std::result::Result<Value, String> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let request = crate::app::test_interface::TestRequest { method: method.to_owned(), params, reply };
        self.tx.send(request).map_err(|_| "the host is not running".to_owned())?;
        answer.await.map_err(|_| "the host ended before it answered".to_owned())?
    }

    /// [`Self::call`] from a thread outside any async runtime.
    pub fn call_blocking(&self, method: &str, params: Value) -> std::result::Result<Value, String> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let request = crate::app::test_interface::TestRequest { method: method.to_owned(), params, reply };
        self.tx.send(request).map_err(|_| "the host is not running".to_owned())?;
        answer.blocking_recv().map_err(|_| "the host ended before it answered".to_owned())?
    }

    /// Calls `tool` as the person would from the picker and answers once its View initialized:
    /// `{"view", "tool"}`.
    pub async fn display_test_app(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> std::result::Result<Value, String> {
        self.call("displayTestApp", serde_json::json!({ "tool": tool, "arguments": arguments })).await
    }

    /// Closes every View and refuses every open question (`call("resetEnvironment", {"server",
    /// "tool"})` closes only those Views).
    pub async fn reset_environment(&self) -> std::result::Result<Value, String> {
        self.call("resetEnvironment", Value::Null).await
    }

    /// The conversation's turns, each once and in order: `{"messages": [{"role", "text", ...}]}`
    /// with the role `user`, `assistant`, `app` (with `from` and its `view`) or `tool` (the
    /// model's call with its result).
    pub async fn get_conversation(&self) -> std::result::Result<Value, String> {
        self.call("getConversation", Value::Null).await
    }

    /// Each View's model context: `{"contexts": [{"view", "from", "text"}]}`.
    pub async fn get_conversation_context(&self) -> std::result::Result<Value, String> {
        self.call("getConversationContext", Value::Null).await
    }

    /// Changes the host context of every open View (`ui/notifications/host-context-changed`).
    pub async fn change_host_context(&self, context: Value) -> std::result::Result<Value, String> {
        self.call("changeHostContext", serde_json::json!({ "context": context })).await
    }

    /// Answers the oldest open consent dialog, yes or no, as the person would.
    pub async fn confirm_action(&self, accept: bool) -> std::result::Result<Value, String> {
        self.call("confirmAction", serde_json::json!({ "accept": accept })).await
    }

    /// Sends the person's message to the model (a model must be configured).
    pub async fn send_message(&self, text: &str) -> std::result::Result<Value, String> {
        self.call("sendMessage", serde_json::json!({ "text": text })).await
    }

    /// Calls a server's tool as the host; its result.
    pub async fn call_tool(&self, name: &str, arguments: Map<String, Value>) -> std::result::Result<Value, String> {
        self.call("callTool", serde_json::json!({ "name": name, "arguments": arguments })).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_error_is_reported_at_build() {
        let err = Host::builder().server_command("node 'unterminated").open_tool("x", Map::new()).build().unwrap_err();
        assert!(err.to_string().contains("unterminated"), "{err}");
        let err = Host::builder().build().unwrap_err();
        assert!(err.to_string().contains("no server"), "{err}");
        let two = Host::builder().server_command("a").server_command("b").root("/tmp").build().unwrap();
        assert_eq!(two.options.servers.len(), 2);
        assert_eq!(two.options.roots[0].uri, "file:///tmp/");
        assert!(Host::builder()
            .server_command("a")
            .exit_after(ExitAfter::Result, Duration::from_secs(1))
            .build()
            .is_err());
        let err = Host::builder().server_command("a").prompt("hi").build().unwrap_err();
        assert!(err.to_string().contains("needs a `model`"), "{err}");
        let chat = Host::builder()
            .server_command("a")
            .model(Arc::new(crate::model::ScriptedModel))
            .prompt("hi")
            .exit_after(ExitAfter::Answer, Duration::from_secs(5))
            .build()
            .unwrap();
        assert_eq!(chat.options.conversation.prompt.as_deref(), Some("hi"));
        let ok =
            Host::builder().server_command("node s.js").open_tool("t", Map::new()).theme(Theme::Dark).build().unwrap();
        assert_eq!(ok.options.opens.len(), 1);
        assert_eq!(ok.options.theme, Some(Theme::Dark));
    }

    #[test]
    fn handles_cross_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<crate::bridge::ViewHandle>();
        send_sync::<crate::bridge::Trace>();
        send_sync::<crate::server::Connection>();
        send_sync::<HostBuilder>();
        send_sync::<Host>();
    }
}
