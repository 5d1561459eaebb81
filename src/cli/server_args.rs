//! The server flags every subcommand shares: `--stdio`, `--url` + `--header`, `--config` + `--server`.

use std::path::PathBuf;

use anyhow::{bail, Context};

use mcp_apps_host::server::config::{default_config_path, load_config, LoadOptions};
use mcp_apps_host::server::ServerSpec;

/// Which server to talk to.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ServerArgs {
    /// The server's command line (POSIX quoting; run directly, not through a shell).
    #[arg(long, value_name = "COMMAND LINE", conflicts_with_all = ["url", "config"])]
    pub stdio: Option<String>,
    /// A remote server's URL (Streamable HTTP; a path ending in /sse means legacy HTTP+SSE).
    #[arg(long, value_name = "URL", conflicts_with = "config")]
    pub url: Option<String>,
    /// A header for --url, as "Name: value" (repeatable).
    #[arg(long = "header", value_name = "NAME: VALUE", requires = "url")]
    pub headers: Vec<String>,
    /// A config file (mcp.json of Agent Plugins, a desktop client's mcpServers, or VS Code's servers).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Which server of the config file (needed when it has several).
    #[arg(long, value_name = "NAME")]
    pub server: Option<String>,
    /// A server compiled into this host (`demo`), run in-process.
    #[arg(long, value_name = "NAME", hide = true, conflicts_with_all = ["stdio", "url", "config"])]
    pub builtin: Option<String>,
}

impl ServerArgs {
    /// The one server these flags name.
    pub fn resolve(&self) -> anyhow::Result<ServerSpec> {
        if let Some(name) = &self.builtin {
            return Ok(ServerSpec::builtin(name.clone()));
        }
        if let Some(cmd) = &self.stdio {
            return Ok(ServerSpec::from_command_line(cmd)?);
        }
        if let Some(url) = &self.url {
            return Ok(ServerSpec::from_url(url, &self.headers)?);
        }
        let path = match &self.config {
            Some(p) => p.clone(),
            None => match default_config_path().filter(|p| p.exists()) {
                Some(p) => p,
                None => bail!(r#"no server given: use --stdio "<command line>", --url URL or --config FILE"#),
            },
        };
        let load = load_config(&path, &LoadOptions::new()).with_context(|| format!("cannot use {}", path.display()))?;
        for e in &load.errors {
            eprintln!("warning: {e}");
        }
        let names: Vec<&str> = load.servers.iter().map(ServerSpec::name).collect();
        match &self.server {
            Some(name) => load.servers.iter().find(|s| s.name() == name).cloned().with_context(|| {
                format!("{} has no usable server {name:?} (it has: {})", path.display(), names.join(", "))
            }),
            None => match load.servers.as_slice() {
                [one] => Ok(one.clone()),
                [] => bail!("{} has no usable server", path.display()),
                _ => {
                    bail!("{} has several servers ({}); pick one with --server NAME", path.display(), names.join(", "))
                }
            },
        }
    }

    /// The same flags as arguments for a child `mcp-apps-host` process.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(name) = &self.builtin {
            args.extend(["--builtin".to_owned(), name.clone()]);
        }
        if let Some(cmd) = &self.stdio {
            args.extend(["--stdio".to_owned(), cmd.clone()]);
        }
        if let Some(url) = &self.url {
            args.extend(["--url".to_owned(), url.clone()]);
            for h in &self.headers {
                args.extend(["--header".to_owned(), h.clone()]);
            }
        }
        if let Some(config) = &self.config {
            args.extend(["--config".to_owned(), config.to_string_lossy().into_owned()]);
        }
        if let Some(server) = &self.server {
            args.extend(["--server".to_owned(), server.clone()]);
        }
        args
    }
}
