//! Secrets the host keeps for the person: model API keys and servers' secret settings (a
//! bundle's `sensitive` `user_config`, a `server.json`'s `isSecret` variables).
//!
//! They go to the Secret Service (GNOME Keyring, KWallet) over D-Bus when one answers, else to
//! an owner-only file (`<data dir>/mcp-apps-host/secrets/<kind>-<id>`, mode 0600 in a 0700
//! directory), and the host says which. Every D-Bus exchange is bounded by [`TIMEOUT`]: a
//! missing bus, a service that does not answer or a keyring that stays locked is a reason
//! given for the fallback, never a hang.
//!
//! An item carries the attributes `application=mcp-apps-host`, `kind` (`model-key`,
//! `setting`, `oauth-token`) and `id`; a setting also `server` and `setting` (its key), a
//! remote server's sign-in tokens also `server` (its URL without query), for the person
//! reading their keyring. Sign-in tokens fall back to the owner-only file they were always kept
//! in (`<data dir>/mcp-apps-host/tokens/<id>.json`, see `server::auth::TokenFile`). A config file never holds a secret setting: the installer writes
//! `${secret:KEY}` where the value goes, and the host fills it in when it starts the server.
//! A setting's `id` is a hash of the server's name, its written identity (command line or URL,
//! as written, references included: `ServerSpec::written_identity`, not the identity approval
//! modes are kept by, which also holds the host's working directory: the installer stores a
//! secret from a process of its own) and the key, so a reference reaches only the secret given to
//! that same server: a config file that names `${secret:KEY}` under another command gets
//! nothing.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use secret_service::{EncryptionType, SecretService};
use sha2::Digest;

/// The bound of one exchange with the Secret Service (connect, find the collection, read or
/// write an item).
pub(crate) const TIMEOUT: Duration = Duration::from_secs(5);
const APPLICATION: &str = "mcp-apps-host";
const REFERENCE: &str = "${secret:";

/// What a secret is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A model provider's API key.
    ModelKey,
    /// A server's secret setting.
    Setting,
    /// A remote server's OAuth sign-in tokens (JSON: client id, token response, scopes).
    OauthToken,
}

impl Kind {
    fn word(self) -> &'static str {
        match self {
            Kind::ModelKey => "model-key",
            Kind::Setting => "setting",
            Kind::OauthToken => "oauth-token",
        }
    }
}

/// One secret's place: its kind and id, its label, and attributes for the person.
#[derive(Debug, Clone)]
pub(crate) struct Secret {
    kind: Kind,
    id: String,
    label: String,
    extra: Vec<(&'static str, String)>,
    /// The fallback file, when not `<secrets dir>/<kind>-<id>`.
    file: Option<PathBuf>,
}

impl Secret {
    /// The secret setting `key` of the server `server` whose identity is `identity`.
    pub(crate) fn setting(server: &str, identity: &str, key: &str) -> Self {
        let mut h = sha2::Sha256::new();
        for part in [server, identity, key] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        let id: String = h.finalize().iter().take(16).map(|b| format!("{b:02x}")).collect();
        Self {
            kind: Kind::Setting,
            id,
            label: format!("mcp-apps-host: {key} of the server {server}"),
            extra: vec![("server", server.to_owned()), ("setting", key.to_owned())],
            file: None,
        }
    }

    /// The API key of a model provider (`openai`, `anthropic`).
    pub(crate) fn model_key(provider: &str) -> Self {
        Self {
            kind: Kind::ModelKey,
            id: provider.to_owned(),
            label: format!("mcp-apps-host: {provider} API key"),
            extra: vec![("provider", provider.to_owned())],
            file: None,
        }
    }

    /// The sign-in tokens of the remote server whose identity is `identity` (`http:URL`,
    /// `sse:URL`), `id` the hash that also names its fallback `file`. The label and the
    /// `server` attribute, which anyone with the bus can read, name the URL without its query.
    pub(crate) fn oauth_token(identity: &str, id: String, file: PathBuf) -> Self {
        let shown = shown_url(identity);
        Self {
            kind: Kind::OauthToken,
            id,
            label: format!("mcp-apps-host: sign-in tokens for {shown}"),
            extra: vec![("server", shown)],
            file: Some(file),
        }
    }

    fn attributes(&self) -> HashMap<&str, &str> {
        let mut a = HashMap::from([("application", APPLICATION), ("kind", self.kind.word()), ("id", self.id.as_str())]);
        a.extend(self.extra.iter().map(|(k, v)| (*k, v.as_str())));
        a
    }

    /// The lookup attributes: enough to find the one item.
    fn key_attributes(&self) -> HashMap<&str, &str> {
        HashMap::from([("application", APPLICATION), ("kind", self.kind.word()), ("id", self.id.as_str())])
    }

    fn file(&self) -> Option<PathBuf> {
        if let Some(f) = &self.file {
            return Some(f.clone());
        }
        secrets_dir().map(|d| d.join(format!("{}-{}", self.kind.word(), self.id)))
    }

    /// What the secret is, for messages (`mcp-apps-host: ...`).
    pub(crate) fn label(&self) -> &str {
        &self.label
    }
}

/// A remote server identity's URL as it may be shown: origin and path, no query or user info.
fn shown_url(identity: &str) -> String {
    let url = identity.split_once(':').map_or(identity, |(_, rest)| rest);
    match url::Url::parse(url) {
        Ok(u) => format!("{}{}", u.origin().ascii_serialization(), u.path()),
        Err(_) => "a remote server".to_owned(),
    }
}

/// Where owner-only secret files go: `<data dir>/mcp-apps-host/secrets`.
pub(crate) fn secrets_dir() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "mcp-apps-host").map(|d| d.data_dir().join("secrets"))
}

/// Where a secret went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Place {
    /// The Secret Service's default collection.
    Keyring,
    /// An owner-only file, because the Secret Service could not take it (why).
    File {
        /// The file.
        path: PathBuf,
        /// Why not the Secret Service.
        why: String,
    },
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Keyring => write!(f, "the system keyring (Secret Service)"),
            Place::File { path, why } => {
                write!(f, "an owner-only file, {} (no system keyring: {why})", path.display())
            }
        }
    }
}

async fn bounded<T, F>(what: &str, fut: F) -> Result<T, String>
where
    F: std::future::Future<Output = Result<T, secret_service::Error>>,
{
    match tokio::time::timeout(TIMEOUT, fut).await {
        Ok(r) => r.map_err(|e| format!("{what}: {e}")),
        Err(_) => Err(format!("{what}: no answer within {} s", TIMEOUT.as_secs())),
    }
}

async fn connect() -> Result<SecretService<'static>, String> {
    if std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_none()
        && !std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|d| std::path::Path::new(&d).join("bus").exists())
    {
        return Err("no D-Bus session bus".to_owned());
    }
    bounded("the Secret Service", SecretService::connect(EncryptionType::Dh)).await
}

/// Stores in the keyring's default collection (unlocked first), replacing an item of the same
/// attributes.
pub(crate) async fn keyring_store(s: &Secret, value: &str) -> Result<(), String> {
    let service = connect().await?;
    let collection = match bounded("its default collection", service.get_default_collection()).await {
        Ok(c) => c,
        Err(_) => bounded("a collection", service.get_any_collection()).await?,
    };
    bounded("unlocking the keyring", collection.ensure_unlocked()).await?;
    bounded("storing the item", collection.create_item(&s.label, s.attributes(), value.as_bytes(), true, "text/plain"))
        .await?;
    Ok(())
}

pub(crate) async fn keyring_lookup(s: &Secret) -> Result<Option<String>, String> {
    let service = connect().await?;
    let found = bounded("searching the keyring", service.search_items(s.key_attributes())).await?;
    let item = match (found.unlocked.first(), found.locked.first()) {
        (Some(item), _) => item,
        (None, Some(item)) => {
            bounded("unlocking the keyring", item.ensure_unlocked()).await?;
            item
        }
        (None, None) => return Ok(None),
    };
    let bytes = bounded("reading the item", item.get_secret()).await?;
    String::from_utf8(bytes).map(Some).map_err(|_| "the keyring's item is not text".to_owned())
}

pub(crate) async fn keyring_delete(s: &Secret) -> Result<bool, String> {
    let service = connect().await?;
    let found = bounded("searching the keyring", service.search_items(s.key_attributes())).await?;
    let mut any = false;
    for item in found.unlocked.iter().chain(&found.locked) {
        bounded("deleting the item", item.delete()).await?;
        any = true;
    }
    Ok(any)
}

/// Stores `value`: in the keyring when it answers, else in an owner-only file; says where.
pub(crate) async fn store(s: &Secret, value: &str) -> Result<Place, String> {
    let place = put(s, value).await?;
    tracing::info!(kind = s.kind.word(), "stored {} in {place}", s.label);
    Ok(place)
}

/// [`store`] without the log line (for a secret written again and again, such as refreshed
/// sign-in tokens, whose caller says where once).
pub(crate) async fn put(s: &Secret, value: &str) -> Result<Place, String> {
    let file = s.file().ok_or("no data directory for the host's secret files")?;
    match keyring_store(s, value).await {
        Ok(()) => {
            // A copy an earlier run left in a file goes: the value is in one place.
            let _ = std::fs::remove_file(&file);
            Ok(Place::Keyring)
        }
        Err(why) => {
            crate::private_file::write(&file, value.as_bytes())
                .map_err(|e| format!("cannot write the secret file {}: {e}", file.display()))?;
            Ok(Place::File { path: file, why })
        }
    }
}

/// The value: from the keyring, else from its owner-only file; `None` when neither has it.
pub(crate) async fn lookup(s: &Secret) -> Result<Option<String>, String> {
    let keyring = keyring_lookup(s).await;
    if let Ok(Some(v)) = keyring {
        return Ok(Some(v));
    }
    let Some(file) = s.file() else { return keyring };
    match std::fs::read_to_string(&file) {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match keyring {
            Ok(None) => Ok(None),
            // The keyring could not be asked: say why, rather than "not found".
            Err(why) => Err(format!("{} is not in a file and the system keyring cannot be read ({why})", s.label)),
            Ok(Some(_)) => unreachable!(),
        },
        Err(e) => Err(format!("cannot read {}: {e}", file.display())),
    }
}

/// Deletes the secret from the keyring and its file; whether there was one.
pub(crate) async fn delete(s: &Secret) -> Result<bool, String> {
    let in_keyring = keyring_delete(s).await.unwrap_or(false);
    let in_file = match s.file() {
        Some(f) => std::fs::remove_file(&f).is_ok(),
        None => false,
    };
    Ok(in_keyring || in_file)
}

/// Where a secret stored now would go, and why not the keyring when not.
pub(crate) async fn status() -> Result<(), String> {
    let service = connect().await?;
    let collection = match bounded("its default collection", service.get_default_collection()).await {
        Ok(c) => c,
        Err(_) => bounded("a collection", service.get_any_collection()).await?,
    };
    if bounded("the keyring's state", collection.is_locked()).await? {
        return Err("the keyring is locked (it will be asked to unlock)".to_owned());
    }
    Ok(())
}

/// Runs async secret work from synchronous code (the command line), on a runtime of its own
/// in a thread of its own, so it works inside or outside another runtime.
pub(crate) fn blocking<T, F, Fut>(work: F) -> T
where
    T: Send,
    F: FnOnce() -> Fut + Send,
    Fut: std::future::Future<Output = T>,
{
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a current-thread runtime builds")
                    .block_on(work())
            })
            .join()
            .expect("the secrets thread does not panic")
    })
}

/// What the installer writes where the setting `key`'s value goes.
pub(crate) fn reference(key: &str) -> String {
    format!("{REFERENCE}{key}}}")
}

/// `text` with every `${secret:KEY}` replaced by the secret setting `KEY` of this server.
pub(crate) async fn fill(server: &str, identity: &str, text: &str) -> Result<String, String> {
    if !text.contains(REFERENCE) {
        return Ok(text.to_owned());
    }
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(REFERENCE) {
        out.push_str(&rest[..at]);
        let after = &rest[at + REFERENCE.len()..];
        let end = after.find('}').ok_or_else(|| format!("an unclosed {REFERENCE} in a setting of {server}"))?;
        let key = &after[..end];
        let secret = Secret::setting(server, identity, key);
        let value = lookup(&secret).await?.ok_or_else(|| {
            format!(
                "the secret setting {key} of the server {server} is in neither the system keyring nor the host's \
                 secret files (it is kept for the server as it was installed; install it again to give it)"
            )
        })?;
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A stdio entry's arguments and environment, filled.
pub(crate) async fn fill_spec(
    server: &str,
    identity: &str,
    args: &[String],
    env: &[(String, String)],
) -> Result<(Vec<String>, Vec<(String, String)>), String> {
    let mut filled = Vec::with_capacity(args.len());
    for a in args {
        filled.push(fill(server, identity, a).await?);
    }
    Ok((filled, fill_pairs(server, identity, env).await?))
}

/// [`fill`] over each value of `pairs`.
pub(crate) async fn fill_pairs(
    server: &str,
    identity: &str,
    pairs: &[(String, String)],
) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        out.push((k.clone(), fill(server, identity, v).await?));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_settings_id_is_bound_to_its_server_identity_and_key() {
        let a = Secret::setting("clock", "stdio:node a.js", "api_key");
        assert_eq!(a.id, Secret::setting("clock", "stdio:node a.js", "api_key").id);
        assert_ne!(a.id, Secret::setting("clock", "stdio:node evil.js", "api_key").id);
        assert_ne!(a.id, Secret::setting("clock2", "stdio:node a.js", "api_key").id);
        assert_ne!(a.id, Secret::setting("clock", "stdio:node a.js", "other").id);
        assert_eq!(reference("api_key"), "${secret:api_key}");
    }

    #[test]
    fn a_token_items_readable_attributes_hold_no_query() {
        let s = Secret::oauth_token("http:https://user:pw@mcp.example/mcp?key=abc", "0f".into(), "/t/0f.json".into());
        assert_eq!(s.kind.word(), "oauth-token");
        assert_eq!(s.label, "mcp-apps-host: sign-in tokens for https://mcp.example/mcp");
        assert_eq!(s.attributes().get("server"), Some(&"https://mcp.example/mcp"));
        assert_eq!(s.file().unwrap(), PathBuf::from("/t/0f.json"));
    }
}
