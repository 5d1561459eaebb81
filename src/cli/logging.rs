//! The host's log: `MCP_APPS_HOST_LOG` filters it; every record stays on one line.

/// Logs to stderr, filtered by `MCP_APPS_HOST_LOG` (default `mcp_apps_host=info,warn`).
pub(super) fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("MCP_APPS_HOST_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("mcp_apps_host=info,warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| OneLine(std::io::stderr()))
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
}

/// A log writer that keeps every record on one line: a newline or carriage return inside a
/// record (a server's or View's text in a message) is written escaped, so no peer can forge a
/// line of the host's log. tracing's fmt layer writes each record with one `write_all`.
struct OneLine(std::io::Stderr);

impl std::io::Write for OneLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.write_all(buf).map(|()| buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        let body = buf.strip_suffix(b"\n").unwrap_or(buf);
        if !body.iter().any(|b| matches!(b, b'\n' | b'\r')) {
            return self.0.write_all(buf);
        }
        let mut out = Vec::with_capacity(buf.len() + 16);
        for &b in body {
            match b {
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\r' => out.extend_from_slice(b"\\r"),
                b => out.push(b),
            }
        }
        if body.len() < buf.len() {
            out.push(b'\n');
        }
        self.0.write_all(&out)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}
