//! Sign-in for remote servers against tests/fixtures/oauth-server.mjs (PRM, authorization-server
//! metadata, dynamic registration, PKCE, short-lived tokens with refresh): the flow, where the
//! tokens are kept, refresh on expiry, logout, and that no token reaches the logs.

#[allow(dead_code)]
mod keyring_support;
#[allow(dead_code)]
mod server_support;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_apps_host::bridge::CallControl;
use mcp_apps_host::server::auth::{FollowRedirect, TokenFile};
use mcp_apps_host::server::connection::{ConnectOptions, Connection};
use mcp_apps_host::server::ServerSpec;
use mcp_apps_host::Error;
use server_support::{first_text, Server};

/// Everything logged at debug level and above, by the host and by rmcp.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Points this process at a session bus where nothing listens, before any test connects: the
/// tokens go to their owner-only files, never to the keyring of the person running the tests.
fn no_keyring() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| std::env::set_var("DBUS_SESSION_BUS_ADDRESS", keyring_support::NO_BUS));
}

fn capture_logs() -> Captured {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing_subscriber::fmt().with_env_filter("debug").with_writer(move || writer.clone()).with_ansi(false).init();
    captured
}

#[tokio::test(flavor = "multi_thread")]
async fn sign_in_stores_owner_only_tokens_refreshes_them_and_never_logs_them() {
    no_keyring();
    let logs = capture_logs();
    let server = Server::fixture("oauth-server.mjs", &["--expires", "2"]);
    let spec = ServerSpec::from_url(&server.url("/mcp"), &[]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let options = ConnectOptions::default().token_dir(dir.path()).authorizer(Arc::new(FollowRedirect));

    // No tokens: the server's 401 is a sign-in request with its challenge, not a failure.
    let challenge = match Connection::connect_with(&spec, options.clone()).await {
        Err(Error::AuthRequired { challenge, .. }) => challenge,
        other => panic!("expected AuthRequired, got {other:?}"),
    };
    assert!(challenge.contains("resource_metadata="), "{challenge}");

    // Sign in: discovery, registration, PKCE, the redirect to the loopback listener, the code.
    let conn = Connection::sign_in(&spec, options.clone(), Some(&challenge)).await.unwrap();
    let first = conn.call_tool("whoami".into(), None, CallControl::default()).await.unwrap();
    assert_eq!(first_text(&first), "called with token #1");
    let issued = server.wait_for_lines("TOKEN authorization_code", 1, Duration::from_secs(2)).await;
    let token = issued[0].rsplit(' ').next().unwrap().to_owned();

    // The tokens are on disk, for the owner only.
    let file = TokenFile::for_server(&spec.identity(), Some(dir.path())).unwrap();
    let stored = std::fs::read_to_string(file.path()).unwrap();
    assert!(stored.contains(&token), "the access token is stored");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(file.path()).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(dir.path()).unwrap().permissions().mode() & 0o777, 0o700);
    }

    // The token expires (2 s): the next call refreshes it and goes through.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let second = conn.call_tool("whoami".into(), None, CallControl::default()).await.unwrap();
    assert_eq!(first_text(&second), "called with token #2", "a refreshed token was used");
    assert_eq!(server.wait_for_lines("TOKEN refresh_token", 1, Duration::from_secs(2)).await.len(), 1);
    conn.shutdown().await;

    // A new connection uses the stored tokens: no sign-in.
    let again = Connection::connect_with(&spec, ConnectOptions::default().token_dir(dir.path())).await.unwrap();
    assert!(again.tool("whoami").is_some());
    again.shutdown().await;

    // Logout forgets them: sign-in is needed again.
    assert!(file.forget().unwrap());
    let after = Connection::connect_with(&spec, ConnectOptions::default().token_dir(dir.path())).await;
    assert!(matches!(after, Err(Error::AuthRequired { .. })), "{after:?}");

    // No access or refresh token ever reached the logs.
    let logs = String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned();
    assert!(logs.contains("signed in"), "the sign-in is logged:\n{logs}");
    for line in server.lines_starting("TOKEN ") {
        let token = line.rsplit(' ').next().unwrap();
        assert!(!logs.contains(token), "token {token} leaked into the logs");
    }
    for refresh in stored.split('"').filter(|s| s.starts_with("rt-")) {
        assert!(!logs.contains(refresh), "refresh token leaked into the logs");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_id_from_the_config_is_used_instead_of_registering() {
    no_keyring();
    let server = Server::fixture("oauth-server.mjs", &[]);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    let entry = serde_json::json!({"mcpServers": {"remote": {"url": server.url("/mcp"), "oauth": {"clientId": "from-config"}}}});
    std::fs::write(&config, entry.to_string()).unwrap();
    let load = mcp_apps_host::server::config::load_config(&config, &Default::default()).unwrap();
    let spec = load.servers[0].clone();
    let options = ConnectOptions::default().token_dir(dir.path()).authorizer(Arc::new(FollowRedirect));
    let challenge = match Connection::connect_with(&spec, options.clone()).await {
        Err(Error::AuthRequired { challenge, .. }) => challenge,
        other => panic!("expected AuthRequired, got {other:?}"),
    };
    let conn = Connection::sign_in(&spec, options, Some(&challenge)).await.unwrap();
    assert!(conn.tool("whoami").is_some());
    let authorize = server.wait_for_lines("AUTHORIZE", 1, Duration::from_secs(2)).await;
    assert_eq!(authorize, ["AUTHORIZE client_id=from-config"]);
    assert!(server.lines_starting("REGISTER").is_empty(), "no dynamic registration with a configured client");
    conn.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_legacy_sse_server_signs_in_the_same_way() {
    no_keyring();
    let server = Server::fixture("oauth-server.mjs", &[]);
    let spec = ServerSpec::from_url(&server.url("/sse"), &[]).unwrap();
    assert!(matches!(spec, ServerSpec::Sse { .. }));
    let dir = tempfile::tempdir().unwrap();
    let options = ConnectOptions::default().token_dir(dir.path()).authorizer(Arc::new(FollowRedirect));
    let challenge = match Connection::connect_with(&spec, options.clone()).await {
        Err(Error::AuthRequired { challenge, .. }) => challenge,
        other => panic!("expected AuthRequired, got {other:?}"),
    };
    assert!(challenge.contains("oauth-protected-resource/sse"), "{challenge}");
    let conn = Connection::sign_in(&spec, options, Some(&challenge)).await.unwrap();
    let result = conn.call_tool("whoami".into(), None, CallControl::default()).await.unwrap();
    assert_eq!(first_text(&result), "called with token #1");
    // The stream and every POST carried the token.
    let posts = server.wait_for_lines("SSE tools/call", 1, Duration::from_secs(2)).await;
    assert!(posts[0].ends_with(&server.lines_starting("TOKEN ")[0].rsplit(' ').next().unwrap().to_owned()));
    conn.shutdown().await;
    // Stored tokens are used next time.
    let again = Connection::connect_with(&spec, ConnectOptions::default().token_dir(dir.path())).await.unwrap();
    assert!(again.tool("whoami").is_some());
    again.shutdown().await;
}

/// A browser the person never finishes signing in with.
struct Abandoned;

impl mcp_apps_host::server::auth::Authorizer for Abandoned {
    fn open(&self, _url: &str) -> mcp_apps_host::bridge::BoxFuture<Result<(), String>> {
        Box::pin(async { Ok(()) })
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sign_in_in_progress_can_be_cancelled_and_tried_again() {
    no_keyring();
    use mcp_apps_host::server::set::{ServerSet, ServerStatus};
    let server = Server::fixture("oauth-server.mjs", &[]);
    let spec = ServerSpec::from_url(&server.url("/mcp"), &[]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let options = ConnectOptions::default().token_dir(dir.path()).authorizer(Arc::new(Abandoned));
    let set = ServerSet::new(vec![spec], options);
    set.start().await;
    let name = set.names()[0].clone();
    assert!(matches!(set.status(&name), Some(ServerStatus::SignInRequired { .. })), "{:?}", set.servers());
    // Nobody finishes in the browser: the sign-in waits until it is cancelled.
    let waiting = {
        let (set, name) = (set.clone(), name.clone());
        tokio::spawn(async move { set.sign_in(&name).await })
    };
    let started = std::time::Instant::now();
    while set.status(&name) != Some(ServerStatus::SigningIn) {
        assert!(started.elapsed() < Duration::from_secs(10), "{:?}", set.servers());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    set.cancel_sign_in(&name);
    let outcome = tokio::time::timeout(Duration::from_secs(5), waiting).await.expect("cancel ends the wait").unwrap();
    assert!(outcome.unwrap_err().to_string().contains("cancelled"));
    assert!(matches!(set.status(&name), Some(ServerStatus::SignInRequired { .. })), "the Sign in button is back");
    set.shutdown().await;
}
