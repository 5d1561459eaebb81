use std::time::Duration;

use super::entries::calls_itself;
use super::*;

#[test]
fn backoff_doubles_up_to_the_cap() {
    assert_eq!(backoff(1), Duration::from_secs(1));
    assert_eq!(backoff(2), Duration::from_secs(2));
    assert_eq!(backoff(4), Duration::from_secs(8));
    assert_eq!(backoff(7), BACKOFF_MAX);
    assert_eq!(backoff(u32::MAX), BACKOFF_MAX);
}

#[test]
fn a_server_may_not_rename_itself_its_own_name_goes_beside_the_label() {
    // The server's own name, when it says something else, is kept to be shown beside.
    assert_eq!(
        calls_itself("index", Some("Everything Reference Server")).as_deref(),
        Some("Everything Reference Server")
    );
    assert_eq!(calls_itself("notes", Some(" Vault ")).as_deref(), Some("Vault"));
    // The same as the label, nothing at all, or only blanks: nothing beside it.
    assert_eq!(calls_itself("notes", Some("notes")), None);
    assert_eq!(calls_itself("index", None), None);
    assert_eq!(calls_itself("index", Some("  \t ")), None);
    // Untrusted text: one line, bounded.
    let own = calls_itself("index", Some("Evil\nsecond line")).unwrap();
    assert!(!own.contains('\n'), "{own}");
    assert!(calls_itself("index", Some(&"x".repeat(500))).unwrap().chars().count() < 100);
}

#[tokio::test]
async fn a_given_name_is_the_label_and_lookups_take_the_name() {
    // A built-in server's name is given, not made up: its label stays (a stdio server's
    // made-up name giving way is proven end to end, tests/e2e_servers.rs).
    let registry = Registry::new(vec![ServerSpec::builtin("demo")], ConnectOptions::default());
    registry.start().await;
    assert_eq!(registry.label("demo").as_deref(), Some("demo"));
    assert_eq!(registry.servers()[0].label, "demo");
    assert!(registry.find_tool(Some("demo"), "weather").is_ok());
    registry.shutdown().await;
}

#[test]
fn same_names_are_told_apart() {
    let specs = vec![ServerSpec::builtin("demo"), ServerSpec::builtin("demo"), ServerSpec::builtin("demo")];
    let registry = Registry::new(specs, ConnectOptions::default());
    assert_eq!(registry.names(), ["demo", "demo (2)", "demo (3)"]);
    assert_eq!(registry.status("demo (2)"), Some(ServerStatus::Starting));
}

#[tokio::test]
async fn two_servers_with_the_same_tool_are_kept_apart() {
    let registry =
        Registry::new(vec![ServerSpec::builtin("demo"), ServerSpec::builtin("demo")], ConnectOptions::default());
    registry.start().await;
    assert!(registry.servers().iter().all(|s| s.status == ServerStatus::Ready), "{:?}", registry.servers());
    let err = registry.find_tool(None, "weather").unwrap_err().to_string();
    assert!(err.contains("several servers") && err.contains("demo (2)"), "{err}");
    let found = registry.find_tool(Some("demo (2)"), "weather").unwrap();
    assert_eq!(found.server, "demo (2)");
    let missing = registry.find_tool(Some("demo"), "nope").unwrap_err().to_string();
    assert!(missing.contains("weather"), "{missing}");
    assert!(registry.find_tool(Some("other"), "weather").unwrap_err().to_string().contains("no such server"));
    registry.shutdown().await;
    assert_eq!(registry.status("demo"), Some(ServerStatus::Stopped));
}

#[tokio::test]
async fn a_server_that_cannot_start_fails_alone_and_waits_its_backoff() {
    let missing = ServerSpec::from_command_line("/nonexistent/mcp-server --stdio").unwrap();
    let registry = Registry::new(vec![missing, ServerSpec::builtin("demo")], ConnectOptions::default());
    let mut events = registry.events();
    registry.start().await;
    assert_eq!(registry.status("demo"), Some(ServerStatus::Ready));
    let Some(ServerStatus::Failed { reason, .. }) = registry.status("mcp-server") else {
        panic!("{:?}", registry.servers())
    };
    assert!(reason.contains("could not start"), "{reason}");
    // Asked again at once: still in backoff, and the error says so without spawning again.
    let again = registry.connection("mcp-server").await.unwrap_err().to_string();
    assert!(again.contains("next restart in"), "{again}");
    let mut seen = Vec::new();
    while let Ok(e) = events.try_recv() {
        seen.push((e.server, e.kind));
    }
    assert!(seen.contains(&("demo".into(), ServerEventKind::Status(ServerStatus::Ready))), "{seen:?}");
    // A restart ignores the backoff (and fails again, reported as such).
    assert!(registry.restart("mcp-server").await.is_err());
    assert!(matches!(registry.status("mcp-server"), Some(ServerStatus::Failed { .. })));
}
