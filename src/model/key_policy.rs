//! Where the model's key may go. The key is the person's; it goes to the model's endpoint and
//! nowhere else:
//! - a key from the environment (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`) goes only to the
//!   endpoint the environment or the command line named (or the provider's own); a config file
//!   that points it at another origin gets it only once the person said yes to that origin
//!   ([`EndpointApprovals`]);
//! - a key file is one line of a key's characters, and a config file may name one only in the
//!   host's own directories (on the command line any file goes): a shared config cannot make
//!   the host send another secret file (a git credential) as a bearer token.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use url::Url;

use super::ModelSpec;

/// The variables the host reads model keys from: a server never inherits them unless its
/// config entry names them.
pub const KEY_VARIABLES: [&str; 2] = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"];

/// Whether `key` has a key's shape: one line of at most 4,096 of the characters keys and
/// tokens are made of (letters, digits, `. _ ~ + / = -`).
pub fn key_shaped(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 4096
        && key.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '~' | '+' | '/' | '=' | '-'))
}

/// Whether a config file may name `key_file`: only inside one of the host's own directories
/// `own` (compared after links are resolved).
pub fn key_file_allowed(key_file: &Path, own: &[PathBuf]) -> Result<(), String> {
    let real =
        std::fs::canonicalize(key_file).map_err(|e| format!("cannot read the key file {}: {e}", key_file.display()))?;
    let inside = own.iter().filter_map(|d| std::fs::canonicalize(d).ok()).any(|d| real.starts_with(d));
    if inside {
        return Ok(());
    }
    let dirs: Vec<String> = own.iter().map(|d| d.display().to_string()).collect();
    Err(format!(
        "the config file names the key file {}, which is not in the host's own directories ({}): a config \
         file may only name a key file there; name it with --model-key-file to use it",
        key_file.display(),
        dirs.join(", ")
    ))
}

/// An origin as it is written in an approval: `https://host:port`.
pub fn origin_of(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// The origins the person let receive a key from the environment although a config file, not
/// the environment or the command line, named them: one owner-only file in the host's data
/// directory, a line `VARIABLE ORIGIN` each.
#[derive(Debug, Clone)]
pub struct EndpointApprovals {
    path: PathBuf,
}

impl EndpointApprovals {
    /// The user's file (`$XDG_DATA_HOME/mcp-apps-host/model-endpoints`).
    pub fn user() -> Option<Self> {
        let dirs = directories::ProjectDirs::from("", "", "mcp-apps-host")?;
        Some(Self { path: dirs.data_dir().join("model-endpoints") })
    }

    /// The file at `path`.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    fn load(&self) -> BTreeSet<String> {
        std::fs::read_to_string(&self.path).unwrap_or_default().lines().map(str::to_owned).collect()
    }

    /// Whether `variable`'s key may go to `origin`.
    pub fn allows(&self, variable: &str, origin: &str) -> bool {
        self.load().contains(&format!("{variable} {origin}"))
    }

    /// Remembers that `variable`'s key may go to `origin`.
    pub fn allow(&self, variable: &str, origin: &str) -> std::io::Result<()> {
        let mut all = self.load();
        all.insert(format!("{variable} {origin}"));
        let text: String = all.into_iter().map(|l| l + "\n").collect();
        crate::private_file::write(&self.path, text.as_bytes())
    }
}

/// Where the model's key came from, for the question a config file's endpoint asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeySource {
    /// `OPENAI_API_KEY`/`ANTHROPIC_API_KEY`.
    Environment,
    /// What `key set` kept (the keyring or its owner-only file).
    Stored,
}

/// What the host asks (and says when it cannot ask) before a config file's endpoint gets the
/// key: whose key it is and where it came from.
pub(crate) fn endpoint_question(config: &Path, variable: &str, origin: &str, source: KeySource) -> String {
    let key = match source {
        KeySource::Environment => format!("your {variable} (from the environment)"),
        KeySource::Stored => "the model API key you stored with `mcp-apps-host key set`".to_owned(),
    };
    format!(
        "The config file {} sends {key} to {origin}, which neither the environment nor the command line named.",
        config.display()
    )
}

/// A config file points the key from the environment (or the one `key set` kept) at its own
/// URL: allowed when that is the origin the environment names anyway (`named`), or one the
/// person said yes to before, or says yes to now when `ask` puts the question (with the
/// origin) to them (the CLI asks in a terminal, else answers no); a yes is kept. Otherwise the
/// key is not sent and the error says why and how to send it.
pub(crate) fn check_config_endpoint(
    spec: &ModelSpec,
    named: &Url,
    config: &Path,
    source: KeySource,
    ask: impl FnOnce(&str, &str) -> std::io::Result<bool>,
) -> Result<(), String> {
    let origin = origin_of(&spec.base_url);
    let Some(variable) = spec.key_variable() else { return Ok(()) };
    if origin == origin_of(named) {
        return Ok(());
    }
    let approvals = EndpointApprovals::user();
    if approvals.as_ref().is_some_and(|a| a.allows(variable, &origin)) {
        return Ok(());
    }
    let question = endpoint_question(config, variable, &origin, source);
    if ask(&question, &origin).map_err(|e| format!("cannot read the answer to \"{question}\": {e}"))? {
        if let Some(a) = &approvals {
            if let Err(e) = a.allow(variable, &origin) {
                tracing::warn!("the answer is not kept for next time: {e}");
            }
        }
        return Ok(());
    }
    Err(format!(
        "{question} The key was not sent. To send it, pass --model-url {} on the command line, or answer yes \
         when the host asks in a terminal.",
        spec.base_url
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_file_holds_a_key_and_nothing_else() {
        assert!(key_shaped("sk-proj-AbC_123"));
        assert!(key_shaped("sk-ant-api03-xyz"));
        assert!(key_shaped("eyJhbGciOi.eyJzdWIi.sig-_"));
        assert!(!key_shaped("https://me:ghp_token@github.com"), "a git credential");
        assert!(!key_shaped("machine example.com login me password pw"), "a netrc line");
        assert!(!key_shaped("//registry.npmjs.org/:_authToken=npm_x"), "an npmrc line");
        assert!(!key_shaped(""));
        assert!(!key_shaped(&"a".repeat(4097)));
    }

    #[test]
    fn a_config_file_names_key_files_only_in_the_hosts_own_directories() {
        let own = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let inside = own.path().join("openai.key");
        let outside = elsewhere.path().join(".git-credentials");
        std::fs::write(&inside, "k").unwrap();
        std::fs::write(&outside, "k").unwrap();
        let dirs = [own.path().to_path_buf()];
        assert_eq!(key_file_allowed(&inside, &dirs), Ok(()));
        let e = key_file_allowed(&outside, &dirs).unwrap_err();
        assert!(e.contains(".git-credentials") && e.contains("--model-key-file"), "{e}");
        // A link from inside to a file outside is the file outside.
        #[cfg(unix)]
        {
            let link = own.path().join("link.key");
            std::os::unix::fs::symlink(&outside, &link).unwrap();
            assert!(key_file_allowed(&link, &dirs).is_err());
        }
        // `..` does not climb out.
        let climbing = own.path().join("..").join(elsewhere.path().file_name().unwrap()).join(".git-credentials");
        assert!(key_file_allowed(&climbing, &dirs).is_err());
    }

    #[test]
    fn approved_endpoints_are_per_variable_and_origin() {
        let dir = tempfile::tempdir().unwrap();
        let a = EndpointApprovals::at(dir.path().join("d/model-endpoints"));
        assert!(!a.allows("OPENAI_API_KEY", "http://127.0.0.1:9"));
        a.allow("OPENAI_API_KEY", "http://127.0.0.1:9").unwrap();
        assert!(a.allows("OPENAI_API_KEY", "http://127.0.0.1:9"));
        assert!(!a.allows("ANTHROPIC_API_KEY", "http://127.0.0.1:9"));
        assert!(!a.allows("OPENAI_API_KEY", "http://127.0.0.1:10"));
        let url = Url::parse("https://user:pw@api.example.com:8443/v1?x=1").unwrap();
        assert_eq!(origin_of(&url), "https://api.example.com:8443");
    }

    #[test]
    fn the_endpoint_question_says_where_the_key_comes_from() {
        let config = std::path::Path::new("/p/mcp.json");
        let asked = endpoint_question(config, "OPENAI_API_KEY", "https://elsewhere.example", KeySource::Stored);
        assert_eq!(
            asked,
            "The config file /p/mcp.json sends the model API key you stored with `mcp-apps-host key set` to \
             https://elsewhere.example, which neither the environment nor the command line named."
        );
        let asked = endpoint_question(config, "OPENAI_API_KEY", "https://elsewhere.example", KeySource::Environment);
        assert!(asked.contains("sends your OPENAI_API_KEY (from the environment) to https://elsewhere.example"));
        assert!(!asked.contains("key set"));
    }
}
