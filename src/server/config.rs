//! How to reach a server: the resolved model every config format and CLI flag turns into.

use crate::error::{Error, Result};

/// One MCP server the host should connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerSpec {
    /// A local process speaking MCP on stdin/stdout.
    Stdio {
        /// Display name.
        name: String,
        /// The executable.
        program: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables.
        env: Vec<(String, String)>,
    },
}

impl ServerSpec {
    /// Parses a `--stdio "<command line>"` value with POSIX shell quoting (no expansion, no shell).
    pub fn from_command_line(command_line: &str) -> Result<Self> {
        let words = shell_words::split(command_line).map_err(|e| Error::BadCommand {
            command: command_line.to_owned(),
            reason: e.to_string(),
        })?;
        let mut words = words.into_iter();
        let program = words
            .next()
            .filter(|p| !p.is_empty())
            .ok_or_else(|| Error::BadCommand {
                command: command_line.to_owned(),
                reason: "it is empty".into(),
            })?;
        let args: Vec<String> = words.collect();
        let name = display_name(&program, &args);
        Ok(Self::Stdio {
            name,
            program,
            args,
            env: Vec::new(),
        })
    }

    /// The display name.
    pub fn name(&self) -> &str {
        match self {
            Self::Stdio { name, .. } => name,
        }
    }

    /// A stable identity of the server (what its sandbox origin is derived from).
    pub fn identity(&self) -> String {
        match self {
            Self::Stdio { program, args, .. } => {
                format!(
                    "stdio:{}",
                    shell_words::join(std::iter::once(program).chain(args))
                )
            }
        }
    }
}

/// A short name for a command: the script for interpreters (`node server.mjs` -> `server`),
/// the package for runners (`npx -y @scope/pkg` -> `@scope/pkg`), else the program's file name.
fn display_name(program: &str, args: &[String]) -> String {
    let base = |p: &str| {
        let path = std::path::Path::new(p);
        path.file_stem()
            .or_else(|| path.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| p.to_owned())
    };
    let program_name = base(program);
    let runners = [
        "node", "nodejs", "deno", "bun", "python", "python3", "uv", "uvx", "npx", "pnpm", "yarn",
    ];
    if runners.contains(&program_name.as_str()) {
        if let Some(first) = args.iter().find(|a| !a.starts_with('-') && *a != "run") {
            return if first.starts_with('@') {
                first.clone()
            } else {
                base(first)
            };
        }
    }
    program_name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_quoted_command_lines_without_a_shell() {
        let spec = ServerSpec::from_command_line(r#"node "my server.js" --stdio '$HOME'"#).unwrap();
        let ServerSpec::Stdio {
            program,
            args,
            name,
            ..
        } = &spec;
        assert_eq!(program, "node");
        assert_eq!(args, &["my server.js", "--stdio", "$HOME"]);
        assert_eq!(name, "my server");
        assert_eq!(spec.identity(), "stdio:node 'my server.js' --stdio '$HOME'");
    }

    #[test]
    fn display_names_are_short_and_useful() {
        let name = |cl: &str| ServerSpec::from_command_line(cl).unwrap().name().to_owned();
        assert_eq!(
            name("node tests/fixtures/sdk-app-server.mjs"),
            "sdk-app-server"
        );
        assert_eq!(
            name("npx -y @modelcontextprotocol/server-everything"),
            "@modelcontextprotocol/server-everything"
        );
        assert_eq!(name("/usr/local/bin/weather-mcp --stdio"), "weather-mcp");
        assert_eq!(name("python3 -m"), "python3");
    }

    #[test]
    fn empty_and_unbalanced_command_lines_are_errors() {
        assert!(ServerSpec::from_command_line("   ")
            .unwrap_err()
            .to_string()
            .contains("empty"));
        let err = ServerSpec::from_command_line("node 'open")
            .unwrap_err()
            .to_string();
        assert!(err.contains("node 'open"), "{err}");
    }
}
