//! Interaction scripts: parsing, matching what a View sent, the web process's answers.

use super::*;

fn parse(text: &str) -> Result<Interaction, String> {
    Interaction::parse("t", text, Path::new("/tmp"))
}

#[test]
fn a_script_reads_each_kind_of_step() {
    let s = parse(
        r##"{"tool": "get-time", "steps": [
            {"click": "#get-time-btn"},
            {"click": {"text": "Send Message", "nth": 1}},
            {"type": "hello", "into": "#message-text"},
            {"press": "Enter"},
            {"waitFor": "ui/message", "timeoutMs": 900},
            {"waitFor": {"method": "ui/message", "params": {"role": "user"}}},
            {"expectCall": {"tool": "get-time", "arguments": {}}},
            {"expectText": "2026"},
            {"screenshot": "after-click"},
            {"wait": 100}
        ]}"##,
    )
    .unwrap();
    assert_eq!(s.tool.as_deref(), Some("get-time"));
    assert_eq!(s.steps.len(), 10);
    assert_eq!(
        s.steps[1],
        Step::Click(Target::Named { selector: None, text: Some("Send Message".into()), nth: Some(1) })
    );
    assert_eq!(
        s.steps[4],
        Step::WaitFor { method: "ui/message".into(), params: None, timeout: Some(Duration::from_millis(900)) }
    );
    assert_eq!(
        s.steps[6],
        Step::WaitFor {
            method: "tools/call".into(),
            params: Some(json!({"name": "get-time", "arguments": {}})),
            timeout: None
        }
    );
    assert_eq!(s.steps[2].describe(), "type \"hello\" into #message-text");
}

#[test]
fn a_bad_script_is_refused_with_the_step_it_is_about() {
    let bad = |text: &str| parse(text).unwrap_err();
    assert!(bad(r#"{"steps": []}"#).contains("no steps"));
    assert!(bad(r#"{"steps": [{}]}"#).contains("step 1 does nothing"));
    assert!(bad(r##"{"steps": [{"click": "#a", "press": "Enter"}]}"##).contains("more than one thing"));
    assert!(bad(r#"{"steps": [{"press": "Hyper"}]}"#).contains("unknown key"));
    assert!(bad(r##"{"steps": [{"into": "#a"}]}"##).contains("`into` goes with `type`"));
    assert!(bad(r#"{"steps": [{"screenshot": "../up"}]}"#).contains("a screenshot's name"));
    assert!(bad(r#"{"steps": [{"click": {"selector": "a", "text": "b"}}]}"#).contains("not both"));
    assert!(bad(r#"{"steps": [{"clack": "a"}]}"#).contains("unknown field"));
    let many = format!(r#"{{"steps": [{}]}}"#, vec![r#"{"wait": 1}"#; MAX_STEPS + 1].join(","));
    assert!(bad(&many).contains("at most"));
}

#[test]
fn expected_params_are_held_at_any_depth() {
    let actual = json!({"name": "get-time", "arguments": {"a": 1, "b": [1, {"c": 2, "d": 3}]}, "_meta": {}});
    assert!(holds(&actual, &json!({"name": "get-time"})));
    assert!(holds(&actual, &json!({"arguments": {"b": [1, {"c": 2}]}})));
    assert!(!holds(&actual, &json!({"arguments": {"b": [1]}})), "arrays match item for item");
    assert!(!holds(&actual, &json!({"name": "get-date"})));
    assert!(!holds(&actual, &json!({"arguments": {"z": null}})), "a missing key is not null");
}

#[test]
fn expectations_look_after_the_last_action_and_match_each_message_once() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    rt.block_on(async {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let call = |n: u32| {
            json!({"dir": "view->host", "view": "v1", "msg": {"method": "tools/call", "params": {"name": "t", "arguments": {"n": n}}}})
        };
        tx.send(call(1)).unwrap();
        tx.send(json!({"dir": "view->host", "view": "v2", "msg": {"method": "tools/call", "params": {"name": "t"}}})).unwrap();
        let mut seen = Vec::new();
        let limit = Duration::from_millis(50);
        let p = json!({"name": "t"});
        assert!(wait_for(&mut rx, "v1", &mut seen, 0, "tools/call", Some(&p), limit).await.is_ok());
        // The one call was matched; another View's call is not this View's.
        let e = wait_for(&mut rx, "v1", &mut seen, 0, "tools/call", Some(&p), limit).await.unwrap_err();
        assert!(e.contains("no tools/call with"), "{e}");
        tx.send(call(2)).unwrap();
        let e = wait_for(&mut rx, "v1", &mut seen, 0, "tools/call", Some(&json!({"arguments": {"n": 3}})), limit)
            .await
            .unwrap_err();
        assert!(e.contains(r#"{"n":2}"#), "the failure names what the View did send: {e}");
        // After an action, what came before does not count.
        let after = seen.len();
        let e = wait_for(&mut rx, "v1", &mut seen, after, "tools/call", None, limit).await.unwrap_err();
        assert!(e.contains("it sent: nothing"), "{e}");
    });
}

#[test]
fn an_answer_of_the_web_process_adds_the_frames_places() {
    let f = Found::from_answer(
        r#"{"found":{"x":10,"y":20,"tag":"button","says":"Go"},"proxy":{"x":0,"y":0},"view":{"x":2,"y":3}}"#,
        "#go",
    )
    .unwrap();
    assert_eq!((f.x, f.y, f.tag.as_str()), (12.0, 23.0, "button"));
    let e =
        Found::from_answer(r#"{"found":{"error":"not found","count":0},"proxy":null,"view":null}"#, "#go").unwrap_err();
    assert_eq!(e, "no element of the View matches #go");
    assert!(Found::from_answer(r#"{"error":"the page holds no View"}"#, "#go").is_err());
    assert!(Found::from_answer("", "#go").is_err());
}
