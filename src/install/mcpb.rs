//! `.mcpb` bundles (MCP Bundles, the format desktop chat clients install): a zip with a
//! `manifest.json` and the server's files. The bundle is unpacked into the host's data
//! directory (`<data dir>/mcp-apps-host/bundles/<name>/`); the manifest's `server.mcp_config`
//! (with its `platform_overrides` for `linux`) becomes the config entry, with `${__dirname}`
//! (the unpacked directory), `${HOME}` and the other directory placeholders filled in at once
//! and `${user_config.KEY}` filled from the bundle's `user_config` settings (`sensitive`,
//! `required`, `default`, number `min`/`max`, booleans). Manifest versions 0.2 to 0.4.
//!
//! A signed bundle's signature (the block `mcpb sign` appends) is verified before anything is
//! read, and only the signed bytes are read as the zip ([`super::signature`]). A `multiple`
//! setting's values become one argument each where the setting is an argument of its own
//! (`"args": ["${user_config.dirs}"]`); anywhere else several values are refused.

use std::collections::BTreeMap;
use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::signature::{self, Signature};
use super::{check_name, Part, Plan, Setting, Target, Template};

/// The manifest versions this host reads.
const VERSIONS: &[&str] = &["0.2", "0.3", "0.4"];
/// A bundle larger than this, unpacked, is refused (a zip can claim anything).
const MAX_UNPACKED: u64 = 1024 * 1024 * 1024;
const MAX_ENTRIES: usize = 100_000;
/// A bundle file larger than this is refused: it is read once, whole, and held until the
/// install (what is shown and checked is what is unpacked).
const MAX_FILE: u64 = 512 * 1024 * 1024;

#[derive(Debug, Deserialize)]
struct Manifest {
    #[serde(default)]
    manifest_version: Option<String>,
    #[serde(default)]
    dxt_version: Option<String>,
    name: String,
    #[serde(default)]
    display_name: Option<String>,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    author: Option<Author>,
    server: Server,
    #[serde(default)]
    user_config: BTreeMap<String, UserConfig>,
}

#[derive(Debug, Deserialize)]
struct Author {
    name: String,
}

#[derive(Debug, Deserialize)]
struct Server {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    entry_point: Option<String>,
    #[serde(default)]
    mcp_config: Option<McpConfig>,
}

#[derive(Debug, Default, Deserialize)]
struct McpConfig {
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Option<Vec<String>>,
    #[serde(default)]
    env: Option<BTreeMap<String, String>>,
    #[serde(default)]
    platform_overrides: BTreeMap<String, McpConfig>,
}

#[derive(Debug, Deserialize)]
struct UserConfig {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    required: bool,
    #[serde(default)]
    sensitive: bool,
    #[serde(default)]
    default: Option<serde_json::Value>,
    #[serde(default)]
    min: Option<f64>,
    #[serde(default)]
    max: Option<f64>,
    #[serde(default)]
    multiple: bool,
}

/// What was read from a bundle: the plan, the bundle's bytes as they were read, and where the
/// bundle unpacks to.
pub(crate) struct Bundle {
    /// What it runs, with its settings.
    pub plan: Plan,
    /// The bundle file, for messages: it is never opened again.
    pub file: PathBuf,
    /// The zip's bytes (the signed bytes, when signed), as read once: what the signature was
    /// checked on and the manifest read from is what [`unpack`] writes, whatever the file on
    /// disk holds by then.
    zip: Vec<u8>,
    /// What its signature says (checked: one that does not verify is refused in [`read`]).
    pub signature: Signature,
    /// Where [`unpack`] puts it.
    pub dir: PathBuf,
}

/// The directory bundles are unpacked into: `<data dir>/mcp-apps-host/bundles`.
pub(crate) fn bundles_dir() -> Option<PathBuf> {
    directories::BaseDirs::new().map(|d| d.data_dir().join("mcp-apps-host").join("bundles"))
}

impl std::fmt::Debug for Bundle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bundle")
            .field("plan", &self.plan)
            .field("file", &self.file)
            .field("zip", &self.zip.len())
            .field("signature", &self.signature)
            .field("dir", &self.dir)
            .finish()
    }
}

/// Reads the bundle's manifest (nothing is unpacked yet). `name` replaces the manifest's. The
/// file is read once, here; the bundle holds its bytes.
pub(crate) fn read(file: &Path, bundles: &Path, name: Option<&str>) -> Result<Bundle, String> {
    let f = std::fs::File::open(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let mut bytes = Vec::new();
    f.take(MAX_FILE + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(format!(
            "{} is larger than {} MiB: not a bundle this host installs",
            file.display(),
            MAX_FILE >> 20
        ));
    }
    from_bytes(bytes, file, bundles, name)
}

/// [`read`] on bytes already read.
fn from_bytes(mut bytes: Vec<u8>, file: &Path, bundles: &Path, name: Option<&str>) -> Result<Bundle, String> {
    // A signature that is there must verify before anything of the bundle is read.
    let checked = signature::check(&bytes)?;
    bytes.truncate(usize::try_from(checked.zip_len).map_err(|_| "the bundle is too large".to_owned())?);
    let mut zip = open(&bytes, file)?;
    check_entries(&mut zip)?;
    let mut text = String::new();
    zip.by_name("manifest.json")
        .map_err(|_| format!("{} has no manifest.json at its top: not an MCP bundle", file.display()))?
        .take(4 * 1024 * 1024)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read manifest.json of {}: {e}", file.display()))?;
    let manifest: Manifest = serde_json::from_str(&text)
        .map_err(|e| format!("manifest.json of {} is not a bundle manifest: {e}", file.display()))?;
    let name = name.map_or_else(|| manifest.name.clone(), str::to_owned);
    check_name(&name).map_err(|e| format!("{e} (the bundle's name is {:?})", manifest.name))?;
    let dir = bundles.join(&name);
    let home = directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf()).unwrap_or_default();
    let mut plan = plan(&manifest, &name, &dir, &home)?;
    plan.facts.insert(0, ("Signature".to_owned(), checked.signature.describe()));
    drop(zip);
    Ok(Bundle { plan, file: file.to_owned(), zip: bytes, signature: checked.signature, dir })
}

/// The zip of a bundle's bytes (without a signature block after them).
fn open<'a>(zip: &'a [u8], file: &Path) -> Result<zip::ZipArchive<Cursor<&'a [u8]>>, String> {
    zip::ZipArchive::new(Cursor::new(zip))
        .map_err(|e| format!("{} is not a zip archive (an .mcpb is one): {e}", file.display()))
}

/// Every entry must stay inside the bundle's directory, be a file or a directory, and the
/// whole fit [`MAX_UNPACKED`]; else the bundle is refused before anything is written.
fn check_entries(zip: &mut zip::ZipArchive<Cursor<&[u8]>>) -> Result<(), String> {
    if zip.len() > MAX_ENTRIES {
        return Err(format!("the bundle has {} entries, more than {MAX_ENTRIES}", zip.len()));
    }
    let mut total = 0u64;
    for i in 0..zip.len() {
        let entry = zip.by_index_raw(i).map_err(|e| format!("entry {i} of the bundle cannot be read: {e}"))?;
        let raw = entry.name().map_err(|e| format!("entry {i} of the bundle has no readable name: {e}"))?.into_owned();
        if entry.enclosed_name().is_none() || raw.starts_with('/') || raw.contains('\\') {
            return Err(format!(
                "the bundle's entry {raw:?} would be written outside its directory; refused, nothing was unpacked"
            ));
        }
        if entry.is_symlink() {
            return Err(format!("the bundle's entry {raw:?} is a symbolic link; refused, nothing was unpacked"));
        }
        total = total.saturating_add(entry.size());
    }
    if total > MAX_UNPACKED {
        return Err(format!("the bundle unpacks to {total} bytes, more than {MAX_UNPACKED}"));
    }
    Ok(())
}

/// The plan of a manifest unpacked into `dir`.
fn plan(m: &Manifest, name: &str, dir: &Path, home: &Path) -> Result<Plan, String> {
    let version = m.manifest_version.as_deref().or(m.dxt_version.as_deref()).unwrap_or("");
    if !VERSIONS.contains(&version) {
        return Err(format!(
            "the bundle's manifest_version {version:?} is not one this host reads ({})",
            VERSIONS.join(", ")
        ));
    }
    let base = m.server.mcp_config.as_ref();
    let linux = base.and_then(|c| c.platform_overrides.get("linux"));
    let pick = |f: &dyn Fn(&McpConfig) -> Option<String>| linux.and_then(f).or_else(|| base.and_then(f));
    let entry = m.server.entry_point.clone();
    let (default_command, default_args) = match (m.server.kind.as_str(), &entry) {
        ("node", Some(e)) => (Some("node".to_owned()), vec![format!("${{__dirname}}/{e}")]),
        ("python", Some(e)) => (Some("python3".to_owned()), vec![format!("${{__dirname}}/{e}")]),
        ("binary", Some(e)) => (Some(format!("${{__dirname}}/{e}")), Vec::new()),
        ("node" | "python" | "binary" | "uv", _) => (None, Vec::new()),
        (other, _) => return Err(format!("the bundle's server type {other:?} is not node, python, uv or binary")),
    };
    let command = pick(&|c| c.command.clone())
        .or(default_command)
        .ok_or("the bundle's manifest has no server.mcp_config.command and no entry_point")?;
    let args = linux.and_then(|c| c.args.clone()).or_else(|| base.and_then(|c| c.args.clone())).unwrap_or(default_args);
    let mut env: BTreeMap<String, String> = base.and_then(|c| c.env.clone()).unwrap_or_default();
    env.extend(linux.and_then(|c| c.env.clone()).unwrap_or_default());

    let dirs = Dirs { bundle: dir.to_string_lossy().into_owned(), home: home.to_string_lossy().into_owned() };
    let mut settings = Vec::new();
    for (key, u) in &m.user_config {
        settings.push(setting(key, u, &dirs)?);
    }
    let known = |k: &str| m.user_config.contains_key(k);
    let command = dirs.fill(&command);
    let command = match dirs.template(&command, &known)?.0.as_slice() {
        [Part::Lit(c)] => c.clone(),
        _ => return Err("the bundle's command may not hold a ${user_config...} setting".to_owned()),
    };
    let args = args.iter().map(|a| Ok(vec![dirs.template(a, &known)?])).collect::<Result<_, String>>()?;
    let env = env.iter().map(|(k, v)| Ok((k.clone(), dirs.template(v, &known)?))).collect::<Result<_, String>>()?;

    let mut origin = format!("bundle {}", m.name);
    if let Some(v) = &m.version {
        origin.push_str(&format!(" {v}"));
    }
    let mut facts = Vec::new();
    if let Some(d) = &m.display_name {
        facts.push(("Title".to_owned(), crate::consent::one_line_max(d, 120)));
    }
    if let Some(a) = &m.author {
        facts.push((
            "Author".to_owned(),
            format!("{} (as the bundle says)", crate::consent::one_line_max(&a.name, 120)),
        ));
    }
    if let Some(d) = m.description.as_deref().filter(|d| !d.is_empty()) {
        facts.push(("Description".to_owned(), crate::consent::one_line_max(d, 200)));
    }
    facts.push(("Unpacks into".to_owned(), dir.display().to_string()));
    Plan { name: name.to_owned(), origin, facts, settings, target: Target::Stdio { command, args, env } }.bounded()
}

fn setting(key: &str, u: &UserConfig, dirs: &Dirs) -> Result<Setting, String> {
    let default = match &u.default {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => Some(dirs.fill(s)),
        Some(serde_json::Value::Array(items)) => {
            let all: Vec<String> = items.iter().filter_map(|v| v.as_str()).map(|s| dirs.fill(s)).collect();
            (!all.is_empty()).then(|| all.join(&super::SEP.to_string()))
        }
        Some(other) => Some(other.to_string()),
    };
    let (choices, number) = match u.kind.as_str() {
        "string" | "directory" | "file" => (Vec::new(), None),
        "number" => (Vec::new(), Some((u.min, u.max))),
        "boolean" => (vec!["true".to_owned(), "false".to_owned()], None),
        other => return Err(format!("user_config {key:?} has type {other:?}, not one the manifest format has")),
    };
    let mut description = u.title.clone().unwrap_or_default();
    if let Some(d) = u.description.as_deref().filter(|d| !d.is_empty()) {
        if !description.is_empty() {
            description.push_str(": ");
        }
        description.push_str(d);
    }
    if matches!(u.kind.as_str(), "directory" | "file") {
        description.push_str(&format!(" (a {})", u.kind));
    }
    Ok(Setting {
        key: key.to_owned(),
        title: u.title.clone().unwrap_or_default(),
        description,
        required: u.required,
        secret: u.sensitive,
        default,
        choices,
        number,
        multiple: u.multiple,
        path: match u.kind.as_str() {
            "directory" => Some(super::PathKind::Directory),
            "file" => Some(super::PathKind::File),
            _ => None,
        },
    })
}

/// The placeholders filled in when the bundle is read.
struct Dirs {
    bundle: String,
    home: String,
}

impl Dirs {
    fn fill(&self, text: &str) -> String {
        let user = |name: &str, usual: &str| {
            directories::UserDirs::new()
                .and_then(|u| match name {
                    "DESKTOP" => u.desktop_dir().map(Path::to_path_buf),
                    "DOCUMENTS" => u.document_dir().map(Path::to_path_buf),
                    _ => u.download_dir().map(Path::to_path_buf),
                })
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_else(|| format!("{}/{usual}", self.home))
        };
        let mut out = text.replace("${__dirname}", &self.bundle).replace("${HOME}", &self.home);
        for (name, usual) in [("DESKTOP", "Desktop"), ("DOCUMENTS", "Documents"), ("DOWNLOADS", "Downloads")] {
            let p = format!("${{{name}}}");
            if out.contains(&p) {
                out = out.replace(&p, &user(name, usual));
            }
        }
        out.replace("${pathSeparator}", "/").replace("${/}", "/")
    }

    /// `text` with the directories filled in and each `${user_config.KEY}` a setting.
    fn template(&self, text: &str, known: &dyn Fn(&str) -> bool) -> Result<Template, String> {
        let text = self.fill(text);
        let mut parts = Vec::new();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("${user_config.") {
            let after = &rest[at + "${user_config.".len()..];
            let end = after.find('}').ok_or_else(|| format!("an unclosed ${{user_config. in {text:?}"))?;
            let key = &after[..end];
            if !known(key) {
                return Err(format!(
                    "{text:?} uses ${{user_config.{key}}}, which the bundle's user_config does not have"
                ));
            }
            if at > 0 {
                parts.push(Part::Lit(rest[..at].to_owned()));
            }
            parts.push(Part::Var(key.to_owned()));
            rest = &after[end + 1..];
        }
        if !rest.is_empty() || parts.is_empty() {
            parts.push(Part::Lit(rest.to_owned()));
        }
        Ok(Template(parts))
    }
}

/// Unpacks the bundle into its directory (through a new directory beside it, renamed into
/// place); an installed bundle of that name is replaced only with `replace`, and kept aside
/// until the install is [`Unpacked::keep`]: dropped unkept, the old one comes back.
pub(crate) fn unpack(bundle: &Bundle, replace: bool) -> Result<Unpacked, String> {
    check_free(bundle, replace)?;
    let parent = bundle.dir.parent().ok_or("the bundle's directory has no parent")?;
    std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    let fresh = parent.join(format!(".{}.new-{}", bundle.plan.name, std::process::id()));
    let aside = parent.join(format!(".{}.old-{}", bundle.plan.name, std::process::id()));
    let _ = std::fs::remove_dir_all(&fresh);
    let mut unpacked = Unpacked { dir: bundle.dir.clone(), old: None, kept: false };
    let outcome = extract(bundle, &fresh).and_then(|()| {
        if bundle.dir.exists() {
            std::fs::rename(&bundle.dir, &aside)
                .map_err(|e| format!("cannot move the old {} aside: {e}", bundle.dir.display()))?;
            unpacked.old = Some(aside.clone());
        }
        std::fs::rename(&fresh, &bundle.dir)
            .map_err(|e| format!("cannot move the bundle into {}: {e}", bundle.dir.display()))
    });
    if outcome.is_err() {
        let _ = std::fs::remove_dir_all(&fresh);
    }
    outcome.map(|()| unpacked)
}

/// A bundle unpacked into place, the one it replaced kept aside until [`Unpacked::keep`].
#[derive(Debug)]
pub(crate) struct Unpacked {
    dir: PathBuf,
    old: Option<PathBuf>,
    kept: bool,
}

impl Unpacked {
    /// The install went through: the replaced bundle goes.
    pub(crate) fn keep(mut self) {
        self.kept = true;
        if let Some(old) = &self.old {
            let _ = std::fs::remove_dir_all(old);
        }
    }
}

impl Drop for Unpacked {
    /// The install failed after unpacking: the new bundle goes, the old one comes back.
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        let _ = std::fs::remove_dir_all(&self.dir);
        if let Some(old) = &self.old {
            let _ = std::fs::rename(old, &self.dir);
        }
    }
}

/// A bundle of that name installed already needs `replace`.
pub(crate) fn check_free(bundle: &Bundle, replace: bool) -> Result<(), String> {
    if bundle.dir.exists() && !replace {
        return Err(format!(
            "a bundle named {:?} is installed already ({}); pass --replace to replace it, or --name NAME",
            bundle.plan.name,
            bundle.dir.display()
        ));
    }
    Ok(())
}

fn extract(bundle: &Bundle, into: &Path) -> Result<(), String> {
    let mut zip = open(&bundle.zip, &bundle.file)?;
    check_entries(&mut zip)?;
    std::fs::create_dir_all(into).map_err(|e| format!("cannot create {}: {e}", into.display()))?;
    let mut written = 0u64;
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(|e| format!("entry {i} of the bundle cannot be read: {e}"))?;
        let relative = entry.enclosed_name().ok_or("an entry escapes the bundle's directory")?;
        let path = into.join(relative);
        if entry.is_dir() {
            std::fs::create_dir_all(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
            continue;
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let mut out = std::fs::File::create(&path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        // The sizes the zip declares are not trusted: what is written is counted.
        let limit = MAX_UNPACKED - written;
        let n = std::io::copy(&mut (&mut entry).take(limit + 1), &mut out)
            .map_err(|e| format!("cannot unpack {}: {e}", path.display()))?;
        written += n;
        if written > MAX_UNPACKED {
            return Err(format!("the bundle unpacks to more than {MAX_UNPACKED} bytes"));
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let exec = entry.unix_mode().is_some_and(|m| m & 0o111 != 0);
            let mode = if exec { 0o755 } else { 0o644 };
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
                .map_err(|e| format!("cannot set the mode of {}: {e}", path.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::install::Resolved;

    fn manifest(json: serde_json::Value) -> Manifest {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn mcp_config_with_linux_overrides_and_placeholders() {
        let m = manifest(serde_json::json!({
            "manifest_version": "0.3", "name": "files", "version": "1.0.0",
            "server": {"type": "node", "entry_point": "server/index.js", "mcp_config": {
                "command": "node",
                "args": ["${__dirname}/server/index.js", "--root=${user_config.root}", "${HOME}/x", "${user_config.dirs}"],
                "env": {"API_KEY": "${user_config.api_key}", "MODE": "base"},
                "platform_overrides": {"linux": {"env": {"MODE": "linux"}}, "win32": {"command": "node.exe"}}
            }},
            "user_config": {
                "api_key": {"type": "string", "title": "API key", "sensitive": true, "required": true},
                "root": {"type": "directory", "default": "${HOME}/Documents"},
                "limit": {"type": "number", "min": 1, "max": 10, "default": 5},
                "dirs": {"type": "directory", "multiple": true, "default": ["${HOME}/a", "${HOME}/b"]}
            }
        }));
        let plan = plan(&m, "files", Path::new("/b/files"), Path::new("/home/p")).unwrap();
        let key = plan.settings.iter().find(|s| s.key == "api_key").unwrap();
        assert!(key.secret && key.required);
        assert!(plan.resolve(&HashMap::new()).unwrap_err().contains("--set api_key=VALUE"));
        assert!(plan.check_answers(&[("limit".into(), "11".into())]).unwrap_err().contains("from 1 to 10"));
        let answers = plan.check_answers(&[("api_key".into(), "k".into())]).unwrap();
        let Resolved::Stdio { command, args, env } = plan.resolve(&answers).unwrap() else { panic!() };
        assert_eq!(command, "node");
        assert_eq!(
            args,
            ["/b/files/server/index.js", "--root=/home/p/Documents", "/home/p/x", "/home/p/a", "/home/p/b"]
        );
        let two = plan
            .check_answers(&[
                ("api_key".into(), "k".into()),
                ("dirs".into(), "/x".into()),
                ("dirs".into(), "/y".into()),
            ])
            .unwrap();
        let Resolved::Stdio { args, .. } = plan.resolve(&two).unwrap() else { panic!() };
        assert_eq!(args[3..], ["/x", "/y"]);
        let err = plan.check_answers(&[("api_key".into(), "k".into()), ("api_key".into(), "j".into())]).unwrap_err();
        assert!(err.contains("takes one value"), "{err}");
        assert_eq!(env, [("API_KEY".into(), "k".into()), ("MODE".into(), "linux".into())]);
    }

    #[test]
    fn unknown_versions_types_and_settings_are_refused() {
        let base = |v: &str, kind: &str, arg: &str| {
            manifest(serde_json::json!({
                "manifest_version": v, "name": "x",
                "server": {"type": kind, "mcp_config": {"command": "node", "args": [arg]}}
            }))
        };
        let p = |m: &Manifest| plan(m, "x", Path::new("/b/x"), Path::new("/h")).unwrap_err();
        assert!(p(&base("9.0", "node", "a")).contains("manifest_version \"9.0\""));
        assert!(p(&base("0.3", "ruby", "a")).contains("server type \"ruby\""));
        assert!(p(&base("0.4", "node", "${user_config.nope}")).contains("does not have"));
    }
}
