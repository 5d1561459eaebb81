//! `check`'s pure parts: default arguments, the JUnit report, the verdict, the self-check.

use super::*;

#[test]
fn required_fields_mean_skip() {
    assert_eq!(default_arguments(&json!({"inputSchema": {"type": "object"}})), Ok(json!({})));
    let err = default_arguments(&json!({"inputSchema": {"required": ["city"]}})).unwrap_err();
    assert!(err.contains("city"));
}

#[test]
fn junit_is_escaped_and_counts() {
    let mut pass = ToolCheck::new("a", None);
    pass.status = "pass";
    let mut fail = ToolCheck::new("b<&>", None);
    fail.reasons.push("CSP violation: \"connect-src\"".into());
    let xml = junit("srv", &[pass, fail]);
    assert!(xml.contains("tests=\"2\" failures=\"1\""));
    assert!(xml.contains("name=\"b&lt;&amp;&gt;\""));
    assert!(xml.contains("&quot;connect-src&quot;"));
}

#[test]
fn the_verdict_comes_from_the_trace() {
    let trace = vec![
        json!({"dir": "host->proxy", "msg": {"method": "ui/notifications/sandbox-resource-ready"}}),
        json!({"dir": "view->host", "msg": {"method": "ui/initialize", "params": {"protocolVersion": "2026-01-26", "appInfo": {"name": "v", "version": "1"}}}}),
        json!({"dir": "view->host", "t_ms": 321.5, "msg": {"method": "ui/notifications/initialized"}}),
        json!({"dir": "host->view", "msg": {"method": "ui/notifications/tool-input"}}),
        json!({"dir": "host->view", "msg": {"method": "ui/notifications/tool-result"}}),
    ];
    let mut ok = ToolCheck::new("t", None);
    judge(&mut ok, &trace, "", Some(0));
    assert_eq!(ok.status, "pass", "{:?}", ok.reasons);
    assert_eq!(ok.initialized_ms, Some(321.5));
    let mut csp = ToolCheck::new("t", None);
    let mut with_violation = trace.clone();
    with_violation.push(json!({"dir": "diagnostic", "msg": {"kind": "csp", "detail": {"directive": "connect-src", "blockedURI": "https://x"}}}));
    judge(&mut csp, &with_violation, "", Some(0));
    assert_eq!(csp.status, "fail");
    assert!(csp.reasons[0].contains("connect-src"));
    let mut silent = ToolCheck::new("t", None);
    judge(&mut silent, &trace[..1], "error: View v1 did not send ui/notifications/initialized within 5 s\n", Some(1));
    assert_eq!(silent.status, "fail");
    assert!(silent.reasons.iter().any(|r| r.contains("handshake")));
}

#[test]
fn a_tolerated_spec_breach_is_a_warning_with_its_clause_not_a_failure() {
    let trace = vec![
        json!({"dir": "host->proxy", "msg": {"method": "ui/notifications/sandbox-resource-ready"}}),
        json!({"dir": "view->host", "msg": {"method": "ui/initialize", "params": {}}}),
        json!({"dir": "diagnostic", "msg": {"kind": "spec", "detail": {"message": "ui/initialize is malformed (missing field `appInfo`)", "clause": "MCP Apps 2026-01-26, ui/initialize: appInfo is required"}}}),
        json!({"dir": "view->host", "t_ms": 12.0, "msg": {"method": "ui/notifications/initialized"}}),
        json!({"dir": "host->view", "msg": {"method": "ui/notifications/tool-input"}}),
        json!({"dir": "host->view", "msg": {"method": "ui/notifications/tool-result"}}),
    ];
    let mut c = ToolCheck::new("t", None);
    judge(&mut c, &trace, "", Some(0));
    assert_eq!(c.status, "pass", "{:?}", c.reasons);
    assert_eq!(c.warnings.len(), 1);
    assert!(
        c.warnings[0].contains("appInfo") && c.warnings[0].contains("2026-01-26, ui/initialize"),
        "{:?}",
        c.warnings
    );
    assert!(serde_json::to_value(&c).unwrap()["warnings"][0].is_string());
}
