//! The JUnit XML report: a test case per tool (and profile), with its figures as properties,
//! and one per step of its interaction session.

use super::*;

pub(super) fn xml_escape(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '&' => "&amp;".into(),
            '<' => "&lt;".into(),
            '>' => "&gt;".into(),
            '"' => "&quot;".into(),
            '\'' => "&apos;".into(),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\r' | '\t') => " ".into(),
            c => c.to_string(),
        })
        .collect()
}

pub(super) fn junit(server: &str, checks: &[ToolCheck]) -> String {
    let steps = || checks.iter().flat_map(|c| &c.steps);
    let failures = checks.iter().filter(|c| c.status == "fail").count() + steps().filter(|s| s["ok"] == false).count();
    let skipped = checks.iter().filter(|c| c.status == "skip").count() + steps().filter(|s| s["ok"].is_null()).count();
    let tests = checks.len() + steps().count();
    let total: f64 = checks.iter().map(|c| c.duration_ms as f64 / 1000.0).sum();
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"mcp-apps-host check\" tests=\"{tests}\" failures=\"{failures}\" skipped=\"{skipped}\" time=\"{total:.3}\">\n  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" skipped=\"{skipped}\" time=\"{total:.3}\">\n",
        xml_escape(server),
    );
    for c in checks {
        let mut name = match &c.profile {
            Some(p) => format!("{} [{p}]", c.tool),
            None => c.tool.clone(),
        };
        if let Some(session) = &c.session {
            name.push_str(&format!(" (session {session})"));
        }
        xml.push_str(&format!(
            "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\"",
            xml_escape(server),
            xml_escape(&name),
            c.duration_ms as f64 / 1000.0
        ));
        let properties: String = c
            .figures
            .properties()
            .iter()
            .map(|(k, v)| format!("        <property name=\"{k}\" value=\"{}\"/>\n", xml_escape(v)))
            .collect();
        let properties = format!("\n      <properties>\n{properties}      </properties>");
        match c.status {
            "pass" => xml.push_str(&format!(">{properties}\n    </testcase>\n")),
            "skip" => xml.push_str(&format!(
                ">{properties}\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                xml_escape(&c.reasons.join("; "))
            )),
            _ => xml.push_str(&format!(
                ">{properties}\n      <failure message=\"{}\">{}</failure>\n    </testcase>\n",
                xml_escape(c.reasons.first().map(String::as_str).unwrap_or("failed")),
                xml_escape(&c.reasons.join("\n"))
            )),
        }
        // Each step of its session, a test case of its own.
        for step in &c.steps {
            let action = step["action"].as_str().unwrap_or("?");
            let seconds = step["ms"].as_f64().unwrap_or(0.0) / 1000.0;
            xml.push_str(&format!(
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{seconds:.3}\"",
                xml_escape(&format!("{server}.{name}")),
                xml_escape(&format!("step {}: {action}", step["step"]))
            ));
            let detail = step["detail"].as_str().unwrap_or_default();
            match step["ok"].as_bool() {
                Some(true) => xml.push_str("/>\n"),
                Some(false) => {
                    xml.push_str(&format!(">\n      <failure message=\"{}\"/>\n    </testcase>\n", xml_escape(detail)))
                }
                None => {
                    xml.push_str(&format!(">\n      <skipped message=\"{}\"/>\n    </testcase>\n", xml_escape(detail)))
                }
            }
        }
    }
    xml.push_str("  </testsuite>\n</testsuites>\n");
    xml
}
