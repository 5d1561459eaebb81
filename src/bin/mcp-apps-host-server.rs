//! `mcp-apps-host-server probe|demo`: the host's built-in MCP servers on stdio, in a binary that
//! links neither GTK nor WebKit (see `cli::builtin_server_main`).

fn main() -> std::process::ExitCode {
    mcp_apps_host::cli::builtin_server_main()
}
