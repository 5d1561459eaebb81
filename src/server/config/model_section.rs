//! The host's own `model` section in a desktop-format config file (`~/.config/mcp-apps-host/
//! mcp.json`): which model the conversation uses when `--model` is not given.
//!
//! ```json
//! {"mcpServers": {...}, "model": {"name": "openai:gpt-4.1-mini", "url": "http://127.0.0.1:8080/v1", "keyFile": "openai.key"}}
//! ```
//!
//! A key itself never goes in the file (it is shared and backed up more than a key should be):
//! `keyFile` names an owner-only file, relative to the config file, or the provider's
//! environment variable holds it.

use std::path::{Path, PathBuf};

use super::fields::{field, optional_string, Json};

/// The `model` section.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelConfig {
    /// `PROVIDER:NAME`, as `--model` takes it.
    pub name: String,
    /// The API's base URL, as `--model-url`.
    pub url: Option<String>,
    /// The key file, as `--model-key-file` (made absolute against the config file's directory).
    pub key_file: Option<PathBuf>,
}

/// The section of `top`, if there is one.
pub(super) fn model_section(top: &[(String, Json)], dir: &Path) -> Result<Option<ModelConfig>, String> {
    let Some(section) = field(top, "model") else { return Ok(None) };
    let Json::Object(fields) = section else {
        return Err(format!("\"model\" must be an object, found {}", section.describe()));
    };
    for (key, _) in fields {
        match key.as_str() {
            "name" | "url" | "keyFile" => {}
            "apiKey" | "key" | "api_key" => {
                return Err("\"model\" must not hold a key: name an owner-only \"keyFile\" or use the provider's \
                            environment variable"
                    .into())
            }
            other => return Err(format!("unknown key {other:?} in \"model\" (it has \"name\", \"url\", \"keyFile\")")),
        }
    }
    let name = optional_string(fields, "name")
        .map_err(|e| format!("in \"model\": {e}"))?
        .ok_or("\"model\" needs \"name\": PROVIDER:NAME, for example \"openai:gpt-4.1-mini\"")?;
    let url = optional_string(fields, "url").map_err(|e| format!("in \"model\": {e}"))?.map(str::to_owned);
    let key_file = optional_string(fields, "keyFile").map_err(|e| format!("in \"model\": {e}"))?.map(|f| dir.join(f));
    Ok(Some(ModelConfig { name: name.to_owned(), url, key_file }))
}
