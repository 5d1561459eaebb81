//! Sign-in for remote servers: MCP authorization (OAuth 2.1, authorization code with PKCE) on
//! rmcp's `auth` module.
//!
//! rmcp discovers the protected-resource and authorization-server metadata, registers the client
//! (pre-registered id, client ID metadata document or dynamic registration), builds the
//! authorization URL, exchanges the code and refreshes tokens. This module adds what a desktop
//! host needs around it: the person's browser ([`Authorizer`]), a loopback listener for the
//! redirect, and tokens stored per server in the system keyring, else in the user's data
//! directory readable by the owner only ([`TokenFile`]). Tokens never appear in logs, traces or
//! Views.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession, CredentialStore, StoredCredentials,
};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::bridge::BoxFuture;
use crate::secrets::{self, Place, Secret};

/// How long a person has to finish signing in before the attempt is abandoned.
pub const SIGN_IN_TIMEOUT: Duration = Duration::from_secs(300);
/// The client name shown on the authorization server's consent page.
const CLIENT_NAME: &str = "mcp-apps-host";

/// One server's OAuth tokens (the client id, the token response and the granted scopes, as
/// JSON): in the system keyring (Secret Service, item kind `oauth-token`) when one answers, else
/// in a file that only its owner can read (mode 0600 in a 0700 directory), where earlier
/// versions kept them. Such a file from before is still read, and moved into the keyring when
/// one answers. Where new tokens went is logged once per run.
#[derive(Debug, Clone)]
pub struct TokenFile {
    path: PathBuf,
    secret: Secret,
    keyring: bool,
}

/// Where the host last said sign-in tokens go (0: not yet, 1: the keyring, 2: files): it says so
/// once, and again only when that changes.
static SAID_WHERE: AtomicU8 = AtomicU8::new(0);

impl TokenFile {
    /// The tokens of a server identity (see [`ServerSpec::identity`]); their file, when there is
    /// no system keyring, is under `dir`, or under the user's data directory
    /// (`~/.local/share/mcp-apps-host/tokens`) when `dir` is `None`. The keyring item is the
    /// identity's whatever `dir` is.
    ///
    /// [`ServerSpec::identity`]: super::ServerSpec::identity
    pub fn for_server(identity: &str, dir: Option<&Path>) -> Option<Self> {
        let dir = match dir {
            Some(d) => d.to_path_buf(),
            None => directories::ProjectDirs::from("", "", "mcp-apps-host")?.data_dir().join("tokens"),
        };
        let name: String = Sha256::digest(identity.as_bytes()).iter().take(16).map(|b| format!("{b:02x}")).collect();
        let path = dir.join(format!("{name}.json"));
        Some(Self { secret: Secret::oauth_token(identity, name, path.clone()), path, keyring: true })
    }

    /// The owner-only file the tokens are kept in when no system keyring answers (and where
    /// earlier versions kept them).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Forgets the tokens (logout): from the system keyring and the file. `Ok(false)` when there
    /// were none.
    pub fn forget(&self) -> std::io::Result<bool> {
        secrets::blocking(|| self.forget_now())
    }

    async fn forget_now(&self) -> std::io::Result<bool> {
        let in_keyring = match self.keyring {
            true => secrets::keyring_delete(&self.secret).await.unwrap_or_else(|why| {
                tracing::debug!("sign-in tokens not looked for in the system keyring: {why}");
                false
            }),
            false => false,
        };
        let in_file = match std::fs::remove_file(&self.path) {
            Ok(()) => true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(e) => return Err(e),
        };
        Ok(in_keyring || in_file)
    }

    /// The stored JSON: the keyring's, else the file's (moved into the keyring when one answers).
    async fn read(&self) -> Result<Option<String>, AuthError> {
        let keyring = match self.keyring {
            true => secrets::keyring_lookup(&self.secret).await,
            false => Err("not asked".to_owned()),
        };
        if let Ok(Some(json)) = keyring {
            return Ok(Some(json));
        }
        let json = match tokio::fs::read_to_string(&self.path).await {
            Ok(json) => json,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(store_error("cannot read", e)),
        };
        if keyring.is_ok() {
            // A file from before (or from a run without a keyring), and a keyring that answers
            // now: the tokens move there, and the file goes.
            match secrets::keyring_store(&self.secret, &json).await {
                Ok(()) => {
                    let _ = std::fs::remove_file(&self.path);
                    tracing::info!(
                        "moved {} from the owner-only file {} into the system keyring (Secret Service)",
                        self.secret.label(),
                        self.path.display()
                    );
                }
                Err(why) => tracing::debug!("sign-in tokens stay in their file: {why}"),
            }
        }
        Ok(Some(json))
    }

    /// Stores the JSON: in the keyring when it answers, else in the file; says where once.
    async fn write(&self, json: &str) -> Result<(), AuthError> {
        let place = match self.keyring {
            true => secrets::put(&self.secret, json).await.map_err(|e| store_error("cannot store", e))?,
            false => {
                crate::private_file::write(&self.path, json.as_bytes()).map_err(|e| store_error("cannot write", e))?;
                Place::File { path: self.path.clone(), why: "not asked".to_owned() }
            }
        };
        let kind = if place == Place::Keyring { 1 } else { 2 };
        if SAID_WHERE.swap(kind, Ordering::Relaxed) != kind {
            tracing::info!("sign-in tokens are kept in {place}");
        }
        Ok(())
    }

    /// The same tokens, never in the keyring (the unit tests do not touch the person's).
    #[cfg(test)]
    fn without_keyring(mut self) -> Self {
        self.keyring = false;
        self
    }
}

fn store_error(what: &str, e: impl std::fmt::Display) -> AuthError {
    AuthError::InternalError(format!("token store: {what}: {e}"))
}

#[async_trait::async_trait]
impl CredentialStore for TokenFile {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        match self.read().await? {
            Some(json) => serde_json::from_str(&json).map(Some).map_err(|e| store_error("unreadable", e)),
            None => Ok(None),
        }
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let json = serde_json::to_string(&credentials).map_err(|e| store_error("cannot encode", e))?;
        self.write(&json).await
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.forget_now().await.map(drop).map_err(|e| store_error("cannot remove", e))
    }
}

/// Takes a person through the authorization page: opens `url` so that the authorization server
/// eventually redirects to the host's loopback listener.
pub trait Authorizer: Send + Sync + 'static {
    /// Shows the authorization URL (the system browser, a dialog, a test hook).
    fn open(&self, url: &str) -> BoxFuture<Result<(), String>>;
}

/// Opens the authorization URL in the system browser (or with a command, the URL appended).
#[derive(Debug, Clone, Default)]
pub struct SystemBrowser {
    /// A command line that opens URLs instead of the system's opener.
    pub opener: Option<String>,
}

impl Authorizer for SystemBrowser {
    fn open(&self, url: &str) -> BoxFuture<Result<(), String>> {
        let mut words = match &self.opener {
            Some(cmd) => shell_words::split(cmd).map_err(|e| e.to_string()),
            None if cfg!(target_os = "macos") => Ok(vec!["open".to_owned()]),
            None if cfg!(windows) => Ok(vec!["cmd".to_owned(), "/c".to_owned(), "start".to_owned(), String::new()]),
            None => Ok(vec!["xdg-open".to_owned()]),
        };
        let spawned = words.as_mut().map_err(|e| e.clone()).and_then(|words| {
            if words.is_empty() {
                return Err("empty opener command".to_owned());
            }
            let program = words.remove(0);
            crate::host_env::as_given(&mut std::process::Command::new(&program))
                .args(words.iter())
                .arg(url)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .spawn()
                .map(drop)
                .map_err(|e| format!("cannot start {program}: {e}"))
        });
        Box::pin(std::future::ready(spawned))
    }
}

/// A browser stand-in for tests and the conformance suite: fetches the authorization URL without
/// following redirects and delivers the `Location` it answers with (the redirect to the host's
/// loopback listener) by requesting it, as a browser would after the person approved.
#[derive(Debug, Clone, Copy, Default)]
pub struct FollowRedirect;

impl Authorizer for FollowRedirect {
    fn open(&self, url: &str) -> BoxFuture<Result<(), String>> {
        let url = url.to_owned();
        Box::pin(async move {
            let client = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|e| e.to_string())?;
            let answer = client.get(&url).send().await.map_err(|e| format!("authorization page: {e}"))?;
            let location = answer
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .ok_or_else(|| format!("the authorization page answered {} without a redirect", answer.status()))?
                .to_owned();
            client.get(&location).send().await.map_err(|e| format!("the redirect: {e}"))?;
            Ok(())
        })
    }
}

/// How the host identifies itself to authorization servers. Empty (the default): dynamic client
/// registration. rmcp picks, in the spec's order: a pre-registered client, then a client ID
/// metadata document (when the server supports them), then dynamic registration.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct ClientRegistration {
    /// A client id registered with the authorization server beforehand.
    pub client_id: Option<String>,
    /// Its secret, for confidential clients.
    pub client_secret: Option<String>,
    /// An `https` URL of a client ID metadata document describing this client.
    pub metadata_url: Option<String>,
}

impl std::fmt::Debug for ClientRegistration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientRegistration")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "[REDACTED]"))
            .field("metadata_url", &self.metadata_url)
            .finish()
    }
}

impl ClientRegistration {
    /// A client registered beforehand, with its secret if it has one.
    pub fn preregistered(client_id: impl Into<String>, client_secret: Option<String>) -> Self {
        Self { client_id: Some(client_id.into()), client_secret, metadata_url: None }
    }

    /// A client described by a metadata document at this `https` URL.
    pub fn metadata_document(url: impl Into<String>) -> Self {
        Self { metadata_url: Some(url.into()), ..Self::default() }
    }
}

/// An authorization manager for `server_url` whose tokens live in `store` (loaded if present).
pub async fn manager(server_url: &url::Url, store: TokenFile) -> Result<AuthorizationManager, String> {
    let mut manager = if is_loopback(server_url) {
        AuthorizationManager::new_allowing_private_addresses(server_url.as_str()).await
    } else {
        AuthorizationManager::new(server_url.as_str()).await
    }
    .map_err(|e| format!("authorization setup: {e}"))?;
    manager.set_credential_store(store);
    if let Err(e) = manager.initialize_from_store().await {
        // Stored tokens that no longer fit (another authorization server, a broken file) mean a
        // new sign-in, not a broken server.
        tracing::warn!(server = %server_url, "stored sign-in not usable: {e}");
    }
    Ok(manager)
}

fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Signs in to the server at `server_url`: discovers its authorization server (from the 401's
/// `WWW-Authenticate` challenge when there is one), registers the client, sends the person to
/// the authorization page through `authorizer`, takes the redirect on a loopback listener and
/// exchanges the code. The tokens end up in `store`; the returned manager carries them.
pub async fn sign_in(
    server_url: &url::Url,
    challenge: Option<&str>,
    store: TokenFile,
    client: &ClientRegistration,
    authorizer: &dyn Authorizer,
    timeout: Duration,
) -> Result<AuthorizationManager, String> {
    // What this server granted before: a sign-in again (a step-up) asks for it and for what is
    // challenged now (SEP-2350), or the new token would lose what the old one could do.
    let granted = store.load().await.ok().flatten().map(|c| c.granted_scopes).unwrap_or_default();
    let mut manager = manager(server_url, store).await?;
    let metadata = manager
        .resolve_metadata_from_challenge(challenge)
        .await
        .map_err(|e| format!("cannot find the server's authorization server: {e}"))?;
    manager.set_metadata(metadata.metadata);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| format!("cannot listen for the sign-in redirect: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let mut request = AuthorizationRequest::new(redirect).with_client_name(CLIENT_NAME);
    if let Some(challenge) = challenge {
        request = request.with_challenge(challenge);
    }
    if !granted.is_empty() {
        // rmcp would take the union itself, but a fresh manager does not know the stored grant.
        let mut scopes = granted;
        for scope in manager.select_scopes(None, &[]) {
            if !scopes.contains(&scope) {
                scopes.push(scope);
            }
        }
        request = request.with_scopes(scopes);
    }
    if let Some(id) = &client.client_id {
        request = request.with_preregistered_client(id.clone());
        if let Some(secret) = &client.client_secret {
            request = request.with_client_secret(secret.clone());
        }
    }
    if let Some(url) = &client.metadata_url {
        request = request.with_client_metadata_url(url.clone());
    }
    let session =
        AuthorizationSession::new(manager, request).await.map_err(|(_, e)| format!("cannot start the sign-in: {e}"))?;
    tracing::info!(server = %server_url, "signing in: the authorization page is opening");
    let (opened, callback) = tokio::join!(
        authorizer.open(session.get_authorization_url()),
        tokio::time::timeout(timeout, receive_callback(&listener)),
    );
    opened.map_err(|e| format!("cannot open the authorization page: {e}"))?;
    let callback = callback
        .map_err(|_| format!("sign-in not finished within {} s", timeout.as_secs()))?
        .map_err(|e| format!("sign-in redirect: {e}"))?;
    session.handle_callback_url(&callback).await.map_err(|e| format!("sign-in failed: {e}"))?;
    tracing::info!(server = %server_url, "signed in");
    Ok(session.auth_manager)
}

/// Waits for the authorization server's redirect to `/callback` and answers the browser.
async fn receive_callback(listener: &tokio::net::TcpListener) -> Result<String, String> {
    loop {
        let (mut stream, _) = listener.accept().await.map_err(|e| e.to_string())?;
        let mut buf = vec![0u8; 16 * 1024];
        let mut len = 0;
        // Read the request head (bounded).
        while len < buf.len() {
            let n = stream.read(&mut buf[len..]).await.map_err(|e| e.to_string())?;
            if n == 0 {
                break;
            }
            len += n;
            if buf[..len].windows(4).any(|w| w == b"\r\n\r\n") {
                break;
            }
        }
        let head = String::from_utf8_lossy(&buf[..len]);
        let target = head.lines().next().and_then(|l| l.split_whitespace().nth(1)).unwrap_or_default().to_owned();
        if !target.starts_with("/callback") {
            let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await;
            continue;
        }
        let url = format!("http://127.0.0.1{target}");
        let denied = url::Url::parse(&url)
            .ok()
            .and_then(|u| u.query_pairs().find(|(k, _)| k == "error").map(|(_, v)| v.into_owned()));
        let body = match &denied {
            Some(error) => format!("Sign-in did not complete ({error}). You can close this tab."),
            None => "Signed in to the MCP server. You can close this tab and return to mcp-apps-host.".to_owned(),
        };
        let page = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.write_all(page.as_bytes()).await;
        return match denied {
            Some(error) => Err(format!("the authorization server answered `{error}`")),
            None => Ok(url),
        };
    }
}

/// The shared authorizer of a connection's options (a newtype so options stay `Debug`).
#[derive(Clone)]
pub struct SharedAuthorizer(pub Arc<dyn Authorizer>);

impl std::fmt::Debug for SharedAuthorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedAuthorizer(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn tokens_are_owner_only_and_forgotten_on_logout() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenFile::for_server("http:https://mcp.example/mcp", Some(dir.path())).unwrap().without_keyring();
        assert!(store.load().await.unwrap().is_none());
        let credentials: StoredCredentials =
            serde_json::from_value(serde_json::json!({"client_id": "c1", "token_response": null})).unwrap();
        store.save(credentials).await.unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(store.path()).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "token file mode");
            let dir_mode = std::fs::metadata(store.path().parent().unwrap()).unwrap().permissions().mode() & 0o777;
            assert_eq!(dir_mode, 0o700, "token directory mode");
        }
        assert_eq!(store.load().await.unwrap().unwrap().client_id, "c1");
        assert!(store.forget().unwrap());
        assert!(!store.forget().unwrap());
        // Different servers, different files.
        let other = TokenFile::for_server("http:https://other.example/mcp", Some(dir.path())).unwrap();
        assert_ne!(other.path(), store.path());
    }

    #[test]
    fn loopback_urls_are_recognised() {
        assert!(is_loopback(&"http://localhost:3000/mcp".parse().unwrap()));
        assert!(is_loopback(&"http://127.0.0.1/mcp".parse().unwrap()));
        assert!(!is_loopback(&"https://mcp.example/mcp".parse().unwrap()));
    }
}
