//! The `mcp-apps-host` binary.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
