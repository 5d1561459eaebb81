//! Method names of the MCP Apps protocol and the standard MCP methods a View may use.

/// View -> host: the handshake request.
pub const INITIALIZE: &str = "ui/initialize";
/// View -> host: the handshake is complete; the host may now send to the View.
pub const INITIALIZED: &str = "ui/notifications/initialized";
/// Proxy -> host: the sandbox proxy can accept the resource.
pub const SANDBOX_PROXY_READY: &str = "ui/notifications/sandbox-proxy-ready";
/// Old name of [`SANDBOX_PROXY_READY`] (2025-11-21 era spec text).
pub const SANDBOX_READY_LEGACY: &str = "ui/notifications/sandbox-ready";
/// Host -> proxy: the HTML and its policy.
pub const SANDBOX_RESOURCE_READY: &str = "ui/notifications/sandbox-resource-ready";
/// Prefix of the messages that only concern the proxy and are never forwarded to a View.
pub const SANDBOX_PREFIX: &str = "ui/notifications/sandbox-";
/// Host -> View: the complete tool arguments.
pub const TOOL_INPUT: &str = "ui/notifications/tool-input";
/// Host -> View: streamed partial tool arguments.
pub const TOOL_INPUT_PARTIAL: &str = "ui/notifications/tool-input-partial";
/// Host -> View: the tool's `CallToolResult`.
pub const TOOL_RESULT: &str = "ui/notifications/tool-result";
/// Host -> View: the tool run was cancelled or failed.
pub const TOOL_CANCELLED: &str = "ui/notifications/tool-cancelled";
/// Host -> View: some host context fields changed.
pub const HOST_CONTEXT_CHANGED: &str = "ui/notifications/host-context-changed";
/// View -> host: the View's content size changed.
pub const SIZE_CHANGED: &str = "ui/notifications/size-changed";
/// Old name of [`SIZE_CHANGED`] (2025-11-21 era spec text).
pub const SIZE_CHANGE_LEGACY: &str = "ui/notifications/size-change";
/// Host -> View: the View is about to be unmounted.
pub const RESOURCE_TEARDOWN: &str = "ui/resource-teardown";
/// View -> host: the View asks to be closed.
pub const REQUEST_TEARDOWN: &str = "ui/notifications/request-teardown";
/// View -> host: open a URL outside the webview.
pub const OPEN_LINK: &str = "ui/open-link";
/// View -> host: add a message to the conversation.
pub const MESSAGE: &str = "ui/message";
/// View -> host: replace the View's model context.
pub const UPDATE_MODEL_CONTEXT: &str = "ui/update-model-context";
/// View -> host: ask for another display mode.
pub const REQUEST_DISPLAY_MODE: &str = "ui/request-display-mode";
/// View -> host: offer a file for download.
pub const DOWNLOAD_FILE: &str = "ui/download-file";

/// Standard MCP: liveness check, either direction.
pub const PING: &str = "ping";
/// Standard MCP: list tools (host -> View for App-provided tools).
pub const TOOLS_LIST: &str = "tools/list";
/// Standard MCP: the tool list changed.
pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// Standard MCP: list the View's server's resources.
pub const RESOURCES_LIST: &str = "resources/list";
/// Standard MCP: list the View's server's resource templates.
pub const RESOURCE_TEMPLATES_LIST: &str = "resources/templates/list";
/// Standard MCP: list the View's server's prompts.
pub const PROMPTS_LIST: &str = "prompts/list";
/// Standard MCP: call a tool of the View's server.
pub const TOOLS_CALL: &str = "tools/call";
/// Standard MCP: read a resource of the View's server.
pub const RESOURCES_READ: &str = "resources/read";
/// Standard MCP: logging from the View.
pub const LOG_MESSAGE: &str = "notifications/message";
/// Standard MCP: cancel a request.
pub const CANCELLED: &str = "notifications/cancelled";
/// Standard MCP: progress of a request.
pub const PROGRESS: &str = "notifications/progress";
