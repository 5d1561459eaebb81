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
    let set = ServerSet::new(vec![ServerSpec::builtin("demo")], ConnectOptions::default());
    set.start().await;
    assert_eq!(set.label("demo").as_deref(), Some("demo"));
    assert_eq!(set.servers()[0].label, "demo");
    assert!(set.find_tool(Some("demo"), "weather").is_ok());
    set.shutdown().await;
}

#[test]
fn same_names_are_told_apart() {
    let specs = vec![ServerSpec::builtin("demo"), ServerSpec::builtin("demo"), ServerSpec::builtin("demo")];
    let set = ServerSet::new(specs, ConnectOptions::default());
    assert_eq!(set.names(), ["demo", "demo (2)", "demo (3)"]);
    assert_eq!(set.status("demo (2)"), Some(ServerStatus::Starting));
}

#[tokio::test]
async fn two_servers_with_the_same_tool_are_kept_apart() {
    let set = ServerSet::new(vec![ServerSpec::builtin("demo"), ServerSpec::builtin("demo")], ConnectOptions::default());
    set.start().await;
    assert!(set.servers().iter().all(|s| s.status == ServerStatus::Ready), "{:?}", set.servers());
    let err = set.find_tool(None, "weather").unwrap_err().to_string();
    assert!(err.contains("several servers") && err.contains("demo (2)"), "{err}");
    let found = set.find_tool(Some("demo (2)"), "weather").unwrap();
    assert_eq!(found.server, "demo (2)");
    let missing = set.find_tool(Some("demo"), "nope").unwrap_err().to_string();
    assert!(missing.contains("weather"), "{missing}");
    assert!(set.find_tool(Some("other"), "weather").unwrap_err().to_string().contains("no such server"));
    set.shutdown().await;
    assert_eq!(set.status("demo"), Some(ServerStatus::Stopped));
}

#[tokio::test]
async fn a_server_that_cannot_start_fails_alone_and_waits_its_backoff() {
    let missing = ServerSpec::from_command_line("/nonexistent/mcp-server --stdio").unwrap();
    let set = ServerSet::new(vec![missing, ServerSpec::builtin("demo")], ConnectOptions::default());
    let mut events = set.events();
    set.start().await;
    assert_eq!(set.status("demo"), Some(ServerStatus::Ready));
    let Some(ServerStatus::Failed { reason, .. }) = set.status("mcp-server") else { panic!("{:?}", set.servers()) };
    assert!(reason.contains("could not start"), "{reason}");
    // Asked again at once: still in backoff, and the error says so without spawning again.
    let again = set.connection("mcp-server").await.unwrap_err().to_string();
    assert!(again.contains("next restart in"), "{again}");
    let mut seen = Vec::new();
    while let Ok(e) = events.try_recv() {
        seen.push((e.server, e.kind));
    }
    assert!(seen.contains(&("demo".into(), ServerEventKind::Status(ServerStatus::Ready))), "{seen:?}");
    // A restart ignores the backoff (and fails again, reported as such).
    assert!(set.restart("mcp-server").await.is_err());
    assert!(matches!(set.status("mcp-server"), Some(ServerStatus::Failed { .. })));
}
