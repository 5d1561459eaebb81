//! Where sign-in tokens are kept: in a real Secret Service (GNOME Keyring on a private D-Bus
//! session of the test's own) when one answers, in no file; else in the owner-only file, which
//! moves into the keyring once one answers. Signs in to tests/fixtures/oauth-server.mjs.
//!
//! The host finds the bus through `DBUS_SESSION_BUS_ADDRESS`, so each test sets it for this
//! process while it holds [`BUS`]: the tests take turns, and none reaches the keyring of the
//! person running them.

#[allow(dead_code)]
mod keyring_support;
#[allow(dead_code)]
mod server_support;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use keyring_support::{files_holding, PrivateKeyring, NO_BUS};
use mcp_apps_host::bridge::CallControl;
use mcp_apps_host::server::auth::{FollowRedirect, TokenFile};
use mcp_apps_host::server::connection::{ConnectOptions, Connection};
use mcp_apps_host::server::ServerSpec;
use mcp_apps_host::Error;
use server_support::{first_text, Server};

/// Held while a test has pointed this process at its bus (across awaits: tokio's mutex).
static BUS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn on_bus(address: &str) -> tokio::sync::MutexGuard<'static, ()> {
    let guard = BUS.lock().await;
    std::env::set_var("DBUS_SESSION_BUS_ADDRESS", address);
    guard
}

/// The host's log (info and above), from the first call on.
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

impl Captured {
    fn since(&self, mark: usize) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()[mark..]).into_owned()
    }
    fn mark(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

fn logs() -> Captured {
    static LOGS: std::sync::OnceLock<Captured> = std::sync::OnceLock::new();
    LOGS.get_or_init(|| {
        let captured = Captured::default();
        let writer = captured.clone();
        tracing_subscriber::fmt()
            .with_env_filter("mcp_apps_host=info")
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .init();
        captured
    })
    .clone()
}

/// Connects to `spec` with no one to sign in: the 401's challenge.
async fn challenge(spec: &ServerSpec, options: &ConnectOptions) -> String {
    match Connection::connect_with(spec, options.clone()).await {
        Err(Error::AuthRequired { challenge, .. }) => challenge,
        other => panic!("expected AuthRequired, got {other:?}"),
    }
}

/// The access token the fixture issued last for `grant` (`authorization_code`, `refresh_token`).
fn issued(server: &Server, grant: &str) -> Vec<String> {
    server.lines_starting(&format!("TOKEN {grant}")).iter().map(|l| l.rsplit(' ').next().unwrap().to_owned()).collect()
}

const ITEMS: [&str; 4] = ["application", "mcp-apps-host", "kind", "oauth-token"];

#[tokio::test(flavor = "multi_thread")]
async fn signed_in_tokens_go_to_the_secret_service_and_no_file() {
    let logs = logs();
    let home = tempfile::tempdir().unwrap();
    let keyring = PrivateKeyring::start(home.path());
    let _bus = on_bus(&keyring.address).await;
    let mark = logs.mark();
    let server = Server::fixture("oauth-server.mjs", &[]);
    let spec = ServerSpec::from_url(&server.url("/mcp"), &[]).unwrap();
    let tokens = home.path().join("data/mcp-apps-host/tokens");
    let options = ConnectOptions::default().token_dir(&tokens).authorizer(Arc::new(FollowRedirect));

    let challenge = challenge(&spec, &options).await;
    let conn = Connection::sign_in(&spec, options, Some(&challenge)).await.unwrap();
    let called = conn.call_tool("whoami".into(), None, CallControl::default()).await.unwrap();
    assert_eq!(first_text(&called), "called with token #1");
    conn.shutdown().await;
    let token = issued(&server, "authorization_code").pop().expect("a token was issued");

    // In the keyring, labelled with the server's URL; in no file under the home directory.
    let found = keyring.search(&ITEMS);
    assert!(found.contains(&token), "the keyring holds the token:\n{found}");
    assert!(found.contains(&format!("attribute.server = {}", server.url("/mcp"))), "{found}");
    assert_eq!(files_holding(home.path(), &token), Vec::<std::path::PathBuf>::new(), "no file holds the token");
    assert!(!TokenFile::for_server(&spec.identity(), Some(&tokens)).unwrap().path().exists());
    let said = logs.since(mark);
    assert!(said.contains("sign-in tokens are kept in the system keyring (Secret Service)"), "{said}");
    assert!(!said.contains(&token), "the token is not logged");

    // A second run uses them: no authorizer, no new sign-in.
    let plain = ConnectOptions::default().token_dir(&tokens);
    let again = Connection::connect_with(&spec, plain.clone()).await.unwrap();
    let called = again.call_tool("whoami".into(), None, CallControl::default()).await.unwrap();
    assert_eq!(first_text(&called), "called with token #1", "the stored token was used");
    again.shutdown().await;
    assert_eq!(issued(&server, "authorization_code").len(), 1, "no second sign-in");

    // Logout deletes the item: sign-in is needed again.
    assert!(TokenFile::for_server(&spec.identity(), Some(&tokens)).unwrap().forget().unwrap());
    assert!(!keyring.search(&ITEMS).contains(&token), "the item is gone");
    let after = Connection::connect_with(&spec, plain).await;
    assert!(matches!(after, Err(Error::AuthRequired { .. })), "{after:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_secret_service_tokens_are_an_owner_only_file_that_moves_into_the_keyring_later() {
    use std::os::unix::fs::PermissionsExt as _;
    let logs = logs();
    let home = tempfile::tempdir().unwrap();
    let server = Server::fixture("oauth-server.mjs", &[]);
    let spec = ServerSpec::from_url(&server.url("/mcp"), &[]).unwrap();
    let tokens = home.path().join("data/mcp-apps-host/tokens");
    let file = TokenFile::for_server(&spec.identity(), Some(&tokens)).unwrap();
    let token = {
        let _bus = on_bus(NO_BUS).await;
        let mark = logs.mark();
        let options = ConnectOptions::default().token_dir(&tokens).authorizer(Arc::new(FollowRedirect));
        let started = std::time::Instant::now();
        let challenge = challenge(&spec, &options).await;
        let conn = Connection::sign_in(&spec, options, Some(&challenge)).await.unwrap();
        conn.shutdown().await;
        assert!(started.elapsed() < Duration::from_secs(20), "no bus is found out quickly");
        let token = issued(&server, "authorization_code").pop().expect("a token was issued");
        assert_eq!(files_holding(home.path(), &token), vec![file.path().to_path_buf()], "the token file holds it");
        assert_eq!(std::fs::metadata(file.path()).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(&tokens).unwrap().permissions().mode() & 0o777, 0o700);
        let said = logs.since(mark);
        assert!(
            said.contains(&format!("sign-in tokens are kept in an owner-only file, {}", file.path().display()))
                && said.contains("(no system keyring: "),
            "the log says where and why:\n{said}"
        );
        assert_eq!(said.matches("sign-in tokens are kept in").count(), 1, "said once:\n{said}");
        token
    };

    // A keyring answers now (the file is what an earlier version, or a run without a keyring,
    // left): the tokens are still used, and move into the keyring.
    let keyring = PrivateKeyring::start(home.path());
    let _bus = on_bus(&keyring.address).await;
    let mark = logs.mark();
    let again = Connection::connect_with(&spec, ConnectOptions::default().token_dir(&tokens)).await.unwrap();
    let called = again.call_tool("whoami".into(), None, CallControl::default()).await.unwrap();
    assert_eq!(first_text(&called), "called with token #1", "the file's token was used");
    again.shutdown().await;
    assert_eq!(issued(&server, "authorization_code").len(), 1, "no second sign-in");
    assert!(keyring.search(&ITEMS).contains(&token), "moved into the keyring");
    assert!(!file.path().exists(), "the file is gone once the keyring has the tokens");
    assert_eq!(files_holding(home.path(), &token), Vec::<std::path::PathBuf>::new());
    assert!(logs.since(mark).contains("into the system keyring"), "{}", logs.since(mark));
}
