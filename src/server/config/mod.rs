//! How to reach a server: the resolved model every config format and CLI flag turns into.
//!
//! Three config file formats are understood, told apart by their content (see [`load_config`]):
//! - **Agent Plugins `mcp.json` 1.0**: `mcp.json` at the root of a plugin (a directory with
//!   `plugin.json`) or any file whose `$schema` is the Agent Plugins MCP schema. Closed variants,
//!   plugin-relative commands, `${PLUGIN_ROOT}` / `${PLUGIN_DATA}` placeholders.
//! - **Desktop chat client**: `{"mcpServers": {"name": {"command", ...} | {"url", ...}}}`.
//! - **VS Code**: `{"servers": {"name": {"type": "stdio" | "http" | "sse", ...}}, "inputs": [...]}`.
//!
//! A file that cannot be read or has an unknown shape fails as a whole; a bad server entry is
//! reported as an [`EntryError`] and skipped, so the other servers still load.
//!
//! Each format has its module (`agent_plugin`, `desktop_client`, `vscode`); they share
//! the resolved model (`spec`), one entry's rules (`entry`) and the field readers (`fields`).

mod agent_plugin;
mod builtin;
mod desktop_client;
mod entry;
mod fields;
mod model_section;
mod spec;
mod vscode;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
pub use agent_plugin::{default_plugin_data_dir, AGENT_PLUGINS_MCP_SCHEMA};
use agent_plugin::{AgentPlugin, AGENT_PLUGINS_SCHEMA_PREFIX};
pub(crate) use builtin::{builtin_server_command, builtin_server_entry, BUILTIN_SERVER_BIN};
use desktop_client::desktop_server;
use entry::Entries;
use fields::{duplicate_key, field, object_field, Json};
pub use model_section::ModelConfig;
pub(crate) use spec::parse_remote_url;
pub use spec::{tell_apart, OAuthClient, ServerSpec, Surroundings};
use vscode::vscode_server;

/// `<user config dir>/mcp-apps-host/mcp.json`, e.g. `~/.config/mcp-apps-host/mcp.json` on Linux.
pub fn default_config_path() -> Option<PathBuf> {
    directories::BaseDirs::new().map(|dirs| dirs.config_dir().join("mcp-apps-host").join("mcp.json"))
}

/// Options for [`load_config`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct LoadOptions {
    /// The `${PLUGIN_DATA}` directory of an Agent Plugin (created if missing);
    /// `None` = [`default_plugin_data_dir`].
    pub plugin_data_dir: Option<PathBuf>,
}

impl LoadOptions {
    /// Default options.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the `${PLUGIN_DATA}` directory used for an Agent Plugins `mcp.json`.
    pub fn plugin_data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.plugin_data_dir = Some(dir.into());
        self
    }
}

/// Which format a config file was read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigFormat {
    /// Agent Plugins `mcp.json` 1.0.
    AgentPlugin,
    /// A desktop chat client's `{"mcpServers": ...}`.
    DesktopClient,
    /// VS Code's `{"servers": ...}`.
    VsCode,
}

/// What a config file resolved to: the servers that passed every rule, and one error per entry
/// that did not.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfigLoad {
    /// The format the file was read as.
    pub format: ConfigFormat,
    /// The valid servers, in file order.
    pub servers: Vec<ServerSpec>,
    /// The skipped entries and why.
    pub errors: Vec<EntryError>,
    /// The host's own `model` section (desktop client and Agent Plugins formats).
    pub model: Option<ModelConfig>,
}

/// A server entry that was skipped, with the rule it broke.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("server {entry:?} in {}: {rule}", path.display())]
#[non_exhaustive]
pub struct EntryError {
    /// The config file.
    pub path: PathBuf,
    /// The server's name (its key in the file).
    pub entry: String,
    /// The rule it broke, human-readable.
    pub rule: String,
}

/// Reads one config file. The format is detected from its content and location:
/// - Agent Plugins when the file is `mcp.json` next to a `plugin.json`, or its `$schema` is an
///   Agent Plugins MCP schema;
/// - VS Code when it has a top-level `servers` object;
/// - the desktop client format when it has a top-level `mcpServers` object.
///
/// Fails if the file cannot be read, is not JSON, or its top level breaks its format's rules.
/// Individual bad entries are collected in [`ConfigLoad::errors`].
pub fn load_config(path: &Path, opts: &LoadOptions) -> Result<ConfigLoad> {
    let fail = |reason: String| Error::Config { path: path.to_owned(), reason };
    let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read it: {e}")))?;
    // Editors on Windows like to start JSON with a byte order mark; serde_json does not.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let doc: Json = serde_json::from_str(text).map_err(|e| fail(format!("it is not valid JSON: {e}")))?;
    let Json::Object(top) = doc else {
        return Err(fail(format!(
            "the top level is {}, expected an object with \"mcpServers\" or \"servers\"",
            doc.kind()
        )));
    };
    if let Some(key) = duplicate_key(&top) {
        return Err(fail(format!("top-level key {key:?} appears twice")));
    }

    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let in_plugin = path.file_name().is_some_and(|n| n == "mcp.json") && dir.join("plugin.json").is_file();
    let agent_schema = matches!(
        field(&top, "$schema"),
        Some(Json::String(s)) if s.starts_with(AGENT_PLUGINS_SCHEMA_PREFIX)
    );
    let mut entries = Entries { path, names: HashSet::new(), servers: Vec::new(), errors: Vec::new() };
    let format = if in_plugin || agent_schema {
        let plugin = AgentPlugin::open(dir, &top, opts).map_err(fail)?;
        for (name, value) in object_field(&top, "mcpServers").map_err(fail)? {
            entries.add(name, plugin.server(name, value));
        }
        ConfigFormat::AgentPlugin
    } else if field(&top, "servers").is_some() {
        if field(&top, "mcpServers").is_some() {
            return Err(fail(
                "it has both \"servers\" (VS Code) and \"mcpServers\" (desktop client); \
                 keep one"
                    .into(),
            ));
        }
        if let Some((key, _)) = top.iter().find(|(k, _)| !matches!(k.as_str(), "servers" | "inputs" | "$schema")) {
            if key == "model" {
                return Err(fail(
                    "a VS Code MCP config has no \"model\": put it in a desktop-format file ({\"mcpServers\": ...})"
                        .into(),
                ));
            }
            return Err(fail(format!(
                "unknown top-level key {key:?}: a VS Code MCP config has only \"servers\" and \"inputs\""
            )));
        }
        for (name, value) in object_field(&top, "servers").map_err(fail)? {
            entries.add(name, vscode_server(name, value));
        }
        ConfigFormat::VsCode
    } else if field(&top, "mcpServers").is_some() {
        // The desktop client's file also holds its other settings: other keys are not ours.
        for (name, value) in object_field(&top, "mcpServers").map_err(fail)? {
            entries.add(name, desktop_server(name, value));
        }
        ConfigFormat::DesktopClient
    } else {
        return Err(fail(
            "no \"mcpServers\" or \"servers\" object: not an MCP server config this host knows \
             (Agent Plugins mcp.json, desktop client mcpServers, VS Code servers)"
                .into(),
        ));
    };
    let model = match format {
        ConfigFormat::VsCode => None,
        _ => model_section::model_section(&top, dir).map_err(fail)?,
    };
    Ok(ConfigLoad { format, servers: entries.servers, errors: entries.errors, model })
}

#[cfg(test)]
mod tests;
