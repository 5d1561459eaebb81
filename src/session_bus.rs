//! The D-Bus session bus, when there is none to be had.
//!
//! GTK, tao and WebKit each ask for the session bus while the window and its web processes start
//! (accessibility, `GApplication`, the desktop portal's colour scheme, WebKit's own services).
//! Without `DBUS_SESSION_BUS_ADDRESS`, libdbus and GIO fall back to *autolaunch*: they fork the
//! host and run `dbus-launch`, synchronously, on the main thread, once per caller. Where no bus
//! can come of it (no address, no socket at `$XDG_RUNTIME_DIR/bus`, no `dbus-launch` on `PATH`:
//! a CI runner, a container, `check` under Xvfb) every attempt is a wasted fork of a large
//! process; a cold start paid seven of them (measured with `strace -f`, ~60 ms of a ~700 ms
//! cold start).
//!
//! [`settle`] then names an address that fails at once (`disabled:`, a transport neither library
//! knows), and every child the host starts itself (an MCP server, `check`'s host of each tool,
//! Xvfb, a browser opener) goes through [`as_given`], which takes it out again: a child sees the
//! environment the host was given, and a host started by `check` settles for itself. Where a bus
//! exists, or could be started, nothing changes.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// The variable libdbus and GIO read.
const ADDRESS: &str = "DBUS_SESSION_BUS_ADDRESS";
/// An address both libraries refuse immediately, without autolaunch.
const NO_BUS: &str = "disabled:";

static STAND_IN: AtomicBool = AtomicBool::new(false);

/// Where no session bus can be had, points both libraries at [`NO_BUS`]. Call it first thing in
/// `main`, before any thread exists (it sets an environment variable).
pub(crate) fn settle() {
    let unset = std::env::var_os(ADDRESS).is_none_or(|a| a.is_empty());
    let runtime_dir = std::env::var_os("XDG_RUNTIME_DIR").map(std::path::PathBuf::from);
    let path = std::env::var_os("PATH").unwrap_or_default();
    if unset && !bus_possible(runtime_dir.as_deref(), &path) {
        std::env::set_var(ADDRESS, NO_BUS);
        STAND_IN.store(true, Ordering::Relaxed);
    }
}

/// Says at `debug` that [`settle`] set the address (once logging is up).
pub(crate) fn report() {
    if stand_in() {
        tracing::debug!("no D-Bus session bus can be had here: {ADDRESS}={NO_BUS} for the host and its web processes");
    }
}

/// True when [`settle`] set the address.
fn stand_in() -> bool {
    STAND_IN.load(Ordering::Relaxed)
}

/// `cmd` without the host's stand-in address (see the module docs), so the child gets the
/// environment as it was given.
pub(crate) fn as_given(cmd: &mut std::process::Command) -> &mut std::process::Command {
    if stand_in() {
        cmd.env_remove(ADDRESS);
    }
    cmd
}

/// Whether a session bus exists at the default socket or could be autolaunched from `path`.
fn bus_possible(runtime_dir: Option<&Path>, path: &std::ffi::OsStr) -> bool {
    let socket = runtime_dir.is_some_and(|dir| dir.join("bus").exists());
    socket || std::env::split_paths(path).any(|dir| dir.join("dbus-launch").is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bus_is_possible_with_its_socket_or_with_dbus_launch_only() {
        let dir = tempfile::tempdir().unwrap();
        let (runtime, bin) = (dir.path().join("run"), dir.path().join("bin"));
        std::fs::create_dir_all(&runtime).unwrap();
        std::fs::create_dir_all(&bin).unwrap();
        let path = std::env::join_paths([&bin]).unwrap();
        assert!(!bus_possible(Some(&runtime), &path), "no socket, no dbus-launch");
        assert!(!bus_possible(None, &path));
        std::fs::write(bin.join("dbus-launch"), "").unwrap();
        assert!(bus_possible(Some(&runtime), &path), "dbus-launch can start one");
        std::fs::remove_file(bin.join("dbus-launch")).unwrap();
        std::fs::write(runtime.join("bus"), "").unwrap();
        assert!(bus_possible(Some(&runtime), &path), "the user's bus socket");
    }
}
