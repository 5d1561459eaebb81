//! The `mcp-apps-host` binary: its command line lives in the library (`cli`), beside the app it
//! starts, so the app's options stay internal to the crate.

fn main() -> std::process::ExitCode {
    mcp_apps_host::cli::main()
}
