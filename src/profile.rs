//! Host profiles: what another MCP Apps host tells a View and allows it, as data, so this host
//! can stand in for it (`run --profile`, `check --profile`, the preview).
//!
//! A profile is a JSON file: the `ui/initialize` answer's host info and platform, the display
//! modes the host offers, its container's height cap, which optional requests it offers
//! (`ui/open-link`, `ui/message`, `ui/update-model-context`, `ui/download-file`), which
//! `_meta.ui.csp` fields it honours (and whether it keeps `http://localhost` sources), whether it
//! has `window.openai`, and every fact's source (vendor documentation, an issue, a probe, or an
//! assumption, said so). The host ships profiles in `profiles/`; a person adds or overrides one
//! with a file in `$XDG_CONFIG_HOME/mcp-apps-host/profiles/`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::protocol::{DisplayMode, ResourceCsp};

/// The profiles the host ships, as their files.
const BUILTIN: [&str; 9] = [
    include_str!("../profiles/mcp-apps-host.json"),
    include_str!("../profiles/claude-desktop.json"),
    include_str!("../profiles/claude-web.json"),
    include_str!("../profiles/claude-ios.json"),
    include_str!("../profiles/chatgpt.json"),
    include_str!("../profiles/vscode.json"),
    include_str!("../profiles/cursor.json"),
    include_str!("../profiles/goose.json"),
    include_str!("../profiles/m365-copilot.json"),
];

/// What one host tells and allows a View.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct HostProfile {
    /// Its name (`vscode`), as `--profile` takes it.
    pub name: String,
    /// What a person reads (`VS Code (GitHub Copilot Chat)`).
    pub title: String,
    /// The `hostInfo` of its `ui/initialize` answer.
    pub host_info: HostInfo,
    /// `hostContext.platform`: `web`, `desktop` or `mobile`.
    pub platform: String,
    /// The display modes it offers (`inline` always among them).
    pub display_modes: Vec<DisplayMode>,
    /// Its container's height cap in px, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_height: Option<f64>,
    /// The optional requests it offers.
    pub offers: Offers,
    /// The `_meta.ui.csp` fields it honours.
    pub csp: CspHonoured,
    /// Whether it has `window.openai` for Apps SDK widgets.
    pub openai_shim: bool,
    /// Where each fact comes from.
    pub facts: Vec<Fact>,
}

/// `hostInfo`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostInfo {
    /// The host's name.
    pub name: String,
    /// Its version.
    pub version: String,
}

/// The optional View requests a host offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Offers {
    /// `ui/open-link`.
    pub open_links: bool,
    /// `ui/message`.
    pub message: bool,
    /// `ui/update-model-context`.
    pub update_model_context: bool,
    /// `ui/download-file`.
    pub download_file: bool,
}

/// Which `_meta.ui.csp` fields a host honours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CspHonoured {
    /// `connectDomains`.
    pub connect_domains: bool,
    /// `resourceDomains`.
    pub resource_domains: bool,
    /// `frameDomains`.
    pub frame_domains: bool,
    /// `baseUriDomains`.
    pub base_uri_domains: bool,
    /// Whether `http://localhost` (and `127.0.0.1`) sources are kept.
    pub localhost: bool,
}

/// One fact of a profile and its source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fact {
    /// The fact.
    pub fact: String,
    /// Where it comes from: a URL, an issue, a document.
    pub source: String,
    /// `vendor-doc`, `issue`, `probe` or `assumed`.
    pub kind: String,
}

impl HostProfile {
    /// A profile from its file's text, checked.
    pub fn parse(text: &str) -> Result<Self, String> {
        let profile: Self = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let valid_name =
            !profile.name.is_empty() && profile.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !valid_name {
            return Err(format!("the profile name {:?} is not letters, digits and -", profile.name));
        }
        if !profile.display_modes.contains(&DisplayMode::Inline) {
            return Err(format!("the profile {} offers no inline display mode", profile.name));
        }
        if let Some(f) =
            profile.facts.iter().find(|f| !matches!(f.kind.as_str(), "vendor-doc" | "issue" | "probe" | "assumed"))
        {
            return Err(format!("a fact's kind is {:?}: vendor-doc, issue, probe or assumed", f.kind));
        }
        Ok(profile)
    }

    /// The profiles the host ships.
    pub fn builtin() -> Vec<Self> {
        BUILTIN.iter().map(|t| Self::parse(t).expect("a shipped profile parses")).collect()
    }

    /// Where a person's own profiles are (`$XDG_CONFIG_HOME/mcp-apps-host/profiles`).
    pub fn user_dir() -> Option<PathBuf> {
        directories::ProjectDirs::from("", "", "mcp-apps-host").map(|d| d.config_dir().join("profiles"))
    }

    /// Every profile: the shipped ones, then the person's (`dir`), which replace a shipped one
    /// of the same name. A file that does not parse is an error naming it.
    pub fn all_in(dir: Option<&Path>) -> Result<Vec<Self>, String> {
        let mut all = Self::builtin();
        let Some(dir) = dir else { return Ok(all) };
        let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
            Ok(entries) => {
                entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")).collect()
            }
            Err(_) => return Ok(all),
        };
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
            let profile = Self::parse(&text).map_err(|e| format!("{}: {e}", file.display()))?;
            all.retain(|p| p.name != profile.name);
            all.push(profile);
        }
        Ok(all)
    }

    /// The profile `name` (shipped or the person's).
    pub fn named(name: &str) -> Result<Self, String> {
        let all = Self::all_in(Self::user_dir().as_deref())?;
        let names: Vec<String> = all.iter().map(|p| p.name.clone()).collect();
        all.into_iter()
            .find(|p| p.name == name)
            .ok_or_else(|| format!("no host profile {name:?} (there are: {})", names.join(", ")))
    }

    /// `declared` as this host would honour it: the fields it ignores are gone, and so are
    /// localhost sources when it strips them.
    pub fn honoured_csp(&self, declared: Option<&ResourceCsp>) -> Option<ResourceCsp> {
        let declared = declared?;
        let keep = |on: bool, list: &Option<Vec<String>>| -> Option<Vec<String>> {
            let list = list.as_ref().filter(|_| on)?;
            Some(list.iter().filter(|s| self.csp.localhost || !is_localhost(s)).cloned().collect())
        };
        Some(ResourceCsp {
            connect_domains: keep(self.csp.connect_domains, &declared.connect_domains),
            resource_domains: keep(self.csp.resource_domains, &declared.resource_domains),
            frame_domains: keep(self.csp.frame_domains, &declared.frame_domains),
            base_uri_domains: keep(self.csp.base_uri_domains, &declared.base_uri_domains),
        })
    }
}

/// Whether a CSP source names this machine.
fn is_localhost(source: &str) -> bool {
    let host = source.split("://").nth(1).unwrap_or(source);
    let host = host.split(['/', ':']).next().unwrap_or_default();
    matches!(host, "localhost" | "127.0.0.1" | "[::1]") || host.ends_with(".localhost")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_profile_parses_and_sources_its_facts() {
        let all = HostProfile::builtin();
        let names: Vec<&str> = all.iter().map(|p| p.name.as_str()).collect();
        for want in
            ["mcp-apps-host", "claude-desktop", "claude-web", "chatgpt", "vscode", "cursor", "goose", "m365-copilot"]
        {
            assert!(names.contains(&want), "{names:?}");
        }
        assert!(all.iter().all(|p| !p.facts.is_empty() && p.facts.iter().all(|f| !f.source.is_empty())));
        let vscode = all.iter().find(|p| p.name == "vscode").unwrap();
        assert_eq!(vscode.display_modes, [DisplayMode::Inline]);
    }

    #[test]
    fn a_profile_honours_only_the_csp_fields_its_host_does() {
        let declared = ResourceCsp {
            connect_domains: Some(vec!["https://api.example.com".into(), "http://localhost:3000".into()]),
            frame_domains: Some(vec!["https://embed.example.com".into()]),
            ..Default::default()
        };
        let claude = HostProfile::builtin().into_iter().find(|p| p.name == "claude-web").unwrap();
        let honoured = claude.honoured_csp(Some(&declared)).unwrap();
        assert_eq!(honoured.connect_domains, Some(vec!["https://api.example.com".to_owned()]), "localhost stripped");
        assert_eq!(honoured.frame_domains, None, "frameDomains ignored");
        let ios = HostProfile::builtin().into_iter().find(|p| p.name == "claude-ios").unwrap();
        assert_eq!(ios.honoured_csp(Some(&declared)).unwrap(), ResourceCsp::default());
        assert_eq!(claude.honoured_csp(None), None);
    }

    #[test]
    fn a_persons_profile_is_checked_and_replaces_a_shipped_one() {
        let dir = tempfile::tempdir().unwrap();
        let mut mine = HostProfile::builtin().into_iter().find(|p| p.name == "vscode").unwrap();
        mine.title = "My VS Code".into();
        std::fs::write(dir.path().join("vscode.json"), serde_json::to_string(&mine).unwrap()).unwrap();
        let all = HostProfile::all_in(Some(dir.path())).unwrap();
        assert_eq!(
            all.iter().filter(|p| p.name == "vscode").map(|p| p.title.as_str()).collect::<Vec<_>>(),
            ["My VS Code"]
        );
        std::fs::write(dir.path().join("bad.json"), r#"{"name": "x"}"#).unwrap();
        assert!(HostProfile::all_in(Some(dir.path())).unwrap_err().contains("bad.json"));
        assert!(HostProfile::parse(
            &serde_json::to_string(&HostProfile { display_modes: vec![DisplayMode::Pip], ..mine.clone() }).unwrap()
        )
        .unwrap_err()
        .contains("inline"));
        assert!(
            HostProfile::parse(&serde_json::to_string(&HostProfile { name: "../x".into(), ..mine }).unwrap()).is_err()
        );
    }
}
