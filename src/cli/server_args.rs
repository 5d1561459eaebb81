//! The server flags every subcommand shares: `--stdio`, `--url` + `--header`, `--config` + `--server`.

use std::path::PathBuf;

use anyhow::{bail, Context};

use crate::server::config::{default_config_path, load_config, LoadOptions};
use crate::server::ServerSpec;

/// Which servers to talk to.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ServerArgs {
    /// A server's command line (POSIX quoting; run directly, not through a shell). Repeatable.
    #[arg(long, value_name = "COMMAND LINE")]
    pub stdio: Vec<String>,
    /// A remote server's URL (Streamable HTTP; a path ending in /sse means legacy HTTP+SSE).
    /// Repeatable.
    #[arg(long, value_name = "URL")]
    pub url: Vec<String>,
    /// A header for --url, as "Name: value" (repeatable; only with a single --url, so a secret
    /// never reaches another server: several remote servers with headers go in a config file).
    #[arg(long = "header", value_name = "NAME: VALUE", requires = "url")]
    pub headers: Vec<String>,
    /// A config file (mcp.json of Agent Plugins, a desktop client's mcpServers, or VS Code's
    /// servers). Without --server, every server in it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Which server of the config file (repeatable).
    #[arg(long, value_name = "NAME", requires = "config")]
    pub server: Vec<String>,
    /// A server compiled into this host (`demo`), run in-process.
    #[arg(long, value_name = "NAME", hide = true, conflicts_with_all = ["stdio", "url", "config"])]
    pub builtin: Option<String>,
}

impl ServerArgs {
    /// Whether any server flag was given.
    pub fn is_empty(&self) -> bool {
        self.stdio.is_empty() && self.url.is_empty() && self.config.is_none() && self.builtin.is_none()
    }

    /// The one server these flags name (for commands that look at one server).
    pub fn resolve(&self) -> anyhow::Result<ServerSpec> {
        let mut all = self.resolve_all()?;
        match all.len() {
            1 => Ok(all.remove(0)),
            _ => {
                let names: Vec<&str> = all.iter().map(ServerSpec::name).collect();
                bail!(
                    "this command looks at one server, and these flags name {} ({}); give one --stdio or --url, or \
                     pick one with --config FILE --server NAME",
                    all.len(),
                    names.join(", ")
                )
            }
        }
    }

    /// Every server these flags name, in order: --stdio, --url, then the config file's.
    pub fn resolve_all(&self) -> anyhow::Result<Vec<ServerSpec>> {
        if let Some(name) = &self.builtin {
            return Ok(vec![ServerSpec::builtin(name.clone())]);
        }
        if self.url.len() > 1 && !self.headers.is_empty() {
            bail!("--header with several --url is ambiguous (which server gets it?); put them in a config file");
        }
        let mut specs = Vec::new();
        for cmd in &self.stdio {
            specs.push(ServerSpec::from_command_line(cmd)?);
        }
        for url in &self.url {
            specs.push(ServerSpec::from_url(url, &self.headers)?);
        }
        let path = match &self.config {
            Some(p) => Some(p.clone()),
            None if specs.is_empty() => match default_config_path().filter(|p| p.exists()) {
                Some(p) => Some(p),
                None => bail!(r#"no server given: use --stdio "<command line>", --url URL or --config FILE"#),
            },
            None => None,
        };
        if let Some(path) = path {
            specs.extend(self.pick_from_config(&path)?);
        }
        Ok(specs)
    }

    /// The servers of the app (`run`, `open`) and the config file it may edit: with no server
    /// flags (or `--config FILE` alone) the config file's servers, none when the file is missing
    /// or has none (the app then opens on its welcome) or cannot be read (its servers editor
    /// then says why, and reads it again once fixed), and that file; with other flags the
    /// servers they name and no file to edit.
    pub fn app_servers(&self) -> anyhow::Result<(Vec<ServerSpec>, Option<PathBuf>)> {
        let Some(path) = self.app_config()? else { return Ok((self.resolve_all()?, None)) };
        if !path.exists() {
            return Ok((Vec::new(), Some(path)));
        }
        let load = match load_config(&path, &LoadOptions::new()) {
            Ok(load) => load,
            Err(e) => {
                eprintln!("warning: {e}; the app opens without its servers: fix the file, then Reload config");
                return Ok((Vec::new(), Some(path)));
            }
        };
        for e in &load.errors {
            eprintln!("warning: {e}");
        }
        Ok((load.servers, Some(path)))
    }

    /// The config file the app runs on: `--config`, else the default file; none when servers
    /// are named on the command line (a developer's run, on no file).
    pub fn app_config(&self) -> anyhow::Result<Option<PathBuf>> {
        if self.builtin.is_some() || !self.stdio.is_empty() || !self.url.is_empty() || !self.server.is_empty() {
            return Ok(None);
        }
        Ok(Some(match &self.config {
            Some(path) => path.clone(),
            None => default_config_path().context("no config directory: give --config FILE")?,
        }))
    }

    /// The `model` section of the config file these flags use (with `--config`, or the default
    /// file when no other server is named). Only the app asks, and it opens on a file that
    /// cannot be read (see [`Self::app_servers`]): such a file has no model for it.
    pub fn config_model(&self) -> anyhow::Result<Option<(crate::server::config::ModelConfig, std::path::PathBuf)>> {
        if self.builtin.is_some() {
            return Ok(None);
        }
        let path = match &self.config {
            Some(p) => p.clone(),
            None if self.stdio.is_empty() && self.url.is_empty() => {
                match default_config_path().filter(|p| p.exists()) {
                    Some(p) => p,
                    None => return Ok(None),
                }
            }
            None => return Ok(None),
        };
        Ok(load_config(&path, &LoadOptions::new()).ok().and_then(|load| load.model).map(|m| (m, path)))
    }

    fn pick_from_config(&self, path: &std::path::Path) -> anyhow::Result<Vec<ServerSpec>> {
        let load = load_config(path, &LoadOptions::new()).with_context(|| format!("cannot use {}", path.display()))?;
        for e in &load.errors {
            eprintln!("warning: {e}");
        }
        let names: Vec<&str> = load.servers.iter().map(ServerSpec::name).collect();
        if self.server.is_empty() {
            if load.servers.is_empty() {
                bail!("{} has no usable server", path.display());
            }
            return Ok(load.servers);
        }
        self.server
            .iter()
            .map(|name| {
                load.servers.iter().find(|s| s.name() == name).cloned().with_context(|| {
                    format!("{} has no usable server {name:?} (it has: {})", path.display(), names.join(", "))
                })
            })
            .collect()
    }

    /// The same flags as arguments for a child `mcp-apps-host` process.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(name) = &self.builtin {
            args.extend(["--builtin".to_owned(), name.clone()]);
        }
        for cmd in &self.stdio {
            args.extend(["--stdio".to_owned(), cmd.clone()]);
        }
        for url in &self.url {
            args.extend(["--url".to_owned(), url.clone()]);
        }
        for h in &self.headers {
            args.extend(["--header".to_owned(), h.clone()]);
        }
        if let Some(config) = &self.config {
            args.extend(["--config".to_owned(), config.to_string_lossy().into_owned()]);
        }
        for server in &self.server {
            args.extend(["--server".to_owned(), server.clone()]);
        }
        args
    }
}
