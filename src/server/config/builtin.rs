//! The host's built-in MCP servers (`probe`, `demo`) as a config entry's command line: served
//! by a small binary beside the host's, or by the host itself.

/// The file name (without `.exe`) of the small binary that serves the host's built-in MCP
/// servers (`mcp-apps-host-server probe|demo`, see `cli::builtin_server_main`).
pub(crate) const BUILTIN_SERVER_BIN: &str = "mcp-apps-host-server";

/// The command line that starts the built-in server `name` (`probe`, `demo`): the small
/// [`BUILTIN_SERVER_BIN`] beside this binary when it is there (they are built and installed
/// together), else this binary's own `__<name>-server`.
pub(crate) fn builtin_server_command(name: &str) -> std::io::Result<String> {
    let (program, args) = builtin_server_entry(name)?;
    Ok(shell_words::join(std::iter::once(program).chain(args)))
}

/// [`builtin_server_command`] as a program and its arguments (a config file's `command` and
/// `args`).
pub(crate) fn builtin_server_entry(name: &str) -> std::io::Result<(String, Vec<String>)> {
    let exe = std::env::current_exe()?;
    let small = exe.with_file_name(format!("{BUILTIN_SERVER_BIN}{}", std::env::consts::EXE_SUFFIX));
    Ok(if small.is_file() {
        (small.to_string_lossy().into_owned(), vec![name.to_owned()])
    } else {
        (exe.to_string_lossy().into_owned(), vec![format!("__{name}-server")])
    })
}
