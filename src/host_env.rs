//! What the host sets in its own environment before any thread exists, for itself and its web
//! processes, and takes out again for every other child it starts ([`as_given`]), so a child
//! sees the environment the host was given.
//!
//! **The D-Bus session bus, when there is none to be had.** GTK, tao and WebKit each ask for the
//! session bus while the window and its web processes start (accessibility, `GApplication`, the
//! desktop portal's colour scheme, WebKit's own services). Without `DBUS_SESSION_BUS_ADDRESS`,
//! libdbus and GIO fall back to *autolaunch*: they fork the host and run `dbus-launch`,
//! synchronously, on the main thread, once per caller. Where no bus can come of it (no address,
//! no socket at `$XDG_RUNTIME_DIR/bus`, no `dbus-launch` on `PATH`: a CI runner, a container,
//! `check` under Xvfb) every attempt is a wasted fork of a large process; a cold start paid seven
//! of them (measured with `strace -f`, ~60 ms of a ~700 ms cold start). [`settle`] then names an
//! address that fails at once (`disabled:`, a transport neither library knows). Where a bus
//! exists, or could be started, nothing changes.
//!
//! **GDK's GL, which the host does not draw with.** When GDK opens an X display it loads the GL
//! driver to choose GL-capable visuals (through libepoxy and GLX: Mesa and its LLVM where there
//! is no GPU driver): 40-50 ms of CPU on the main thread before the window exists, measured with
//! `perf` on this machine kind. The host's webviews paint without accelerated compositing (see
//! `desktop::lean_rendering`) and nothing else of it draws with GL, so [`settle`] sets
//! `GDK_GL=disable`, unless the person set `GDK_GL` or asked for compositing
//! (`MCP_APPS_HOST_COMPOSITING=always`). WebKit still opens its own EGL display.
//!
//! **WebKit's EGL display in the host's own process.** Creating the first `WebKitWebContext`
//! opens an EGL display in the UI process, which loads Mesa's software driver and its LLVM
//! there too: 22 MB of PSS (9 MB of it relocations, private) and about 45 ms of the main thread
//! at start, measured on this machine kind. Without accelerated compositing the UI process
//! only draws the images its web processes paint (cairo), and never uses that display; the web
//! processes need EGL themselves (WebKitGTK 2.50's web process aborts without it). So, unless the
//! person asked for compositing or named EGL vendors of their own, [`settle`] points libglvnd
//! at a folder with no vendor in it ([`NO_EGL_VENDORS`]), and the desktop's first web context
//! takes that out again (`give_egl_back`) once the display exists, before any web process is
//! started: the web processes (and every other child) find their driver as usual. WebGL in a View still works, in its web
//! process (checked by hand with WebGL 2 and `readPixels`). This was measured on X11 only:
//! under any other GDK backend (Wayland) EGL is given back before WebKit opens its display, and
//! nothing changes there.
//!
//! **Where WebKit's processes look up symbols first.** Every WebKit process (the host's own, the
//! network process, each web process) starts by binding the symbols of the 169 libraries
//! WebKitGTK links, all `BIND_NOW`; each lookup walks the process's lookup scope in order until
//! a library defines the name. `LD_DEBUG=bindings` of a web process on this machine kind: 44% of
//! its 71 000 start-up bindings (31 000) are flite's `cmu_time_awb` voice (WebKit's speech
//! synthesis) binding its own exported tables, from 58th place in the scope, so more than half
//! of all the walking is that one library's. `perf` of a cold start put 88 ms of each web
//! process and 62 ms of the host's in `ld.so`, most of it in `do_lookup_x`. So [`settle`] puts
//! that library first in the scope of the processes WebKit starts, with `LD_PRELOAD` naming the
//! very file the host's process loaded (nothing more is loaded: it is a dependency of
//! `libwebkit2gtk` anyway), and `build.rs` puts it in the host binary's own `DT_NEEDED` list
//! when the `libwebkit2gtk` it links needs it (last in the list, where `rustc` puts linker
//! arguments: 17th in the scope instead of 58th). Measured: `mcp-apps-host --version` 60 -> 50
//! ms (fastest of 15), a cold start's median 303 -> 284 ms (12 interleaved runs each). Not when
//! the person set `LD_PRELOAD` themselves (theirs stands), when the library is not in the host's
//! process (a WebKit built without flite), or when its path would not survive `LD_PRELOAD`'s
//! separators; every child other than WebKit's gets the environment as it was given.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// The variable libdbus and GIO read.
const ADDRESS: &str = "DBUS_SESSION_BUS_ADDRESS";
/// An address both libraries refuse immediately, without autolaunch.
const NO_BUS: &str = "disabled:";

/// GDK's switch for its GL support.
const GDK_GL: &str = "GDK_GL";
/// The host's own switch: `always` gives every webview WebKit's accelerated compositing back
/// (see `desktop::lean_rendering`), and GDK keeps its GL.
const COMPOSITING: &str = "MCP_APPS_HOST_COMPOSITING";

/// Where libglvnd looks for EGL vendors' descriptions, and the list that wins over it.
const EGL_VENDOR_DIRS: &str = "__EGL_VENDOR_LIBRARY_DIRS";
const EGL_VENDOR_FILES: &str = "__EGL_VENDOR_LIBRARY_FILENAMES";
/// A folder that does not exist: EGL finds no vendor there and loads no driver.
const NO_EGL_VENDORS: &str = "/nonexistent/mcp-apps-host/no-egl-vendors";

/// The dynamic loader's list of libraries to load first.
const PRELOAD: &str = "LD_PRELOAD";
/// The library WebKit's processes spend most of their symbol lookups on (see the module docs),
/// as its file name starts.
const FRONT_OF_SCOPE: &str = "libflite_cmu_time_awb.so";

static BUS_STAND_IN: AtomicBool = AtomicBool::new(false);
static GL_OFF: AtomicBool = AtomicBool::new(false);
/// [`NO_EGL_VENDORS`] is set, until the window runtime made its web context (`give_egl_back`).
static EGL_OFF: AtomicBool = AtomicBool::new(false);
/// [`PRELOAD`] names [`FRONT_OF_SCOPE`] for WebKit's processes.
static PRELOAD_SET: AtomicBool = AtomicBool::new(false);

/// Sets what the module docs say. Call it first thing in `main`, before any thread exists (it
/// sets environment variables).
pub(crate) fn settle() {
    let unset = std::env::var_os(ADDRESS).is_none_or(|a| a.is_empty());
    let runtime_dir = std::env::var_os("XDG_RUNTIME_DIR").map(std::path::PathBuf::from);
    let path = std::env::var_os("PATH").unwrap_or_default();
    if unset && !bus_possible(runtime_dir.as_deref(), &path) {
        std::env::set_var(ADDRESS, NO_BUS);
        BUS_STAND_IN.store(true, Ordering::Relaxed);
    }
    if gdk_gl_unwanted(std::env::var_os(GDK_GL).as_deref(), compositing_asked()) {
        std::env::set_var(GDK_GL, "disable");
        GL_OFF.store(true, Ordering::Relaxed);
    }
    let vendors_given = std::env::var_os(EGL_VENDOR_DIRS).is_some() || std::env::var_os(EGL_VENDOR_FILES).is_some();
    if cfg!(feature = "desktop") && ui_egl_unwanted(vendors_given, compositing_asked()) {
        std::env::set_var(EGL_VENDOR_DIRS, NO_EGL_VENDORS);
        EGL_OFF.store(true, Ordering::SeqCst);
    }
    if cfg!(all(feature = "desktop", target_os = "linux")) && std::env::var_os(PRELOAD).is_none() {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
        if let Some(path) = loaded_library(&maps, FRONT_OF_SCOPE) {
            std::env::set_var(PRELOAD, path);
            PRELOAD_SET.store(true, Ordering::Relaxed);
        }
    }
}

/// Takes [`NO_EGL_VENDORS`] out of the host's environment, once; whether it was there. The
/// desktop calls it around the host's first web context (`desktop::first_web_context`, which
/// knows GDK's backend), so the web processes WebKit starts from then on find their driver.
#[cfg(feature = "desktop")]
pub(crate) fn give_egl_back() -> bool {
    let was_off = EGL_OFF.swap(false, Ordering::SeqCst);
    if was_off {
        std::env::remove_var(EGL_VENDOR_DIRS);
    }
    was_off
}

/// Says at `debug` what [`settle`] set (once logging is up).
pub(crate) fn report() {
    if BUS_STAND_IN.load(Ordering::Relaxed) {
        tracing::debug!("no D-Bus session bus can be had here: {ADDRESS}={NO_BUS} for the host and its web processes");
    }
    if GL_OFF.load(Ordering::Relaxed) {
        tracing::debug!("{GDK_GL}=disable: GDK does not load a GL driver for visuals the host does not draw with");
    }
    if PRELOAD_SET.load(Ordering::Relaxed) {
        let path = std::env::var(PRELOAD).unwrap_or_default();
        tracing::debug!("{PRELOAD}={path}: first in the lookup scope of WebKit's processes");
    }
}

/// `cmd` without what [`settle`] set (see the module docs), so the child gets the environment
/// as it was given.
pub(crate) fn as_given(cmd: &mut std::process::Command) -> &mut std::process::Command {
    if BUS_STAND_IN.load(Ordering::Relaxed) {
        cmd.env_remove(ADDRESS);
    }
    if GL_OFF.load(Ordering::Relaxed) {
        cmd.env_remove(GDK_GL);
    }
    if EGL_OFF.load(Ordering::SeqCst) {
        cmd.env_remove(EGL_VENDOR_DIRS);
    }
    if PRELOAD_SET.load(Ordering::Relaxed) {
        cmd.env_remove(PRELOAD);
    }
    cmd
}

/// Whether the person asked for accelerated compositing ([`COMPOSITING`] is `always`).
pub(crate) fn compositing_asked() -> bool {
    std::env::var_os(COMPOSITING).is_some_and(|v| v == "always")
}

/// Whether GDK's GL is turned off, given `GDK_GL` and whether compositing was asked for: only
/// when the person asked for neither (their `GDK_GL` stands, whatever it says).
fn gdk_gl_unwanted(gdk_gl: Option<&std::ffi::OsStr>, compositing: bool) -> bool {
    gdk_gl.is_none() && !compositing
}

/// Whether the host's own process goes without EGL: when compositing was not asked for and the
/// person named no EGL vendor (their `__EGL_VENDOR_LIBRARY_*` stands).
fn ui_egl_unwanted(vendors_given: bool, compositing: bool) -> bool {
    !vendors_given && !compositing
}

/// The path of the library mapped in a process (its `/proc/<pid>/maps`) whose file name starts
/// with `name`, if there is one and `LD_PRELOAD` can carry it (no space or colon in it).
fn loaded_library<'a>(maps: &'a str, name: &str) -> Option<&'a str> {
    // A line: address, permissions, offset, device and inode, then the path from its first `/`.
    maps.lines()
        .filter_map(|line| line.find(" /").map(|at| &line[at + 1..]))
        .find(|path| path.rsplit('/').next().is_some_and(|file| file.starts_with(name)))
        .filter(|path| !path.contains([' ', ':']))
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
    fn gdk_gl_is_turned_off_only_when_nobody_asked_for_gl() {
        let os = |s: &'static str| Some(std::ffi::OsStr::new(s));
        assert!(gdk_gl_unwanted(None, false));
        assert!(!gdk_gl_unwanted(None, true), "compositing asked for");
        assert!(!gdk_gl_unwanted(os("always"), false), "the person's GDK_GL stands");
        assert!(!gdk_gl_unwanted(os(""), false));
    }

    #[test]
    fn the_hosts_egl_is_turned_off_only_when_nobody_asked_for_it() {
        assert!(ui_egl_unwanted(false, false));
        assert!(!ui_egl_unwanted(false, true), "compositing asked for");
        assert!(!ui_egl_unwanted(true, false), "the person's EGL vendors stand");
    }

    #[test]
    fn the_library_to_put_first_is_found_by_its_file_name_and_only_when_ld_preload_can_carry_it() {
        let maps = "\
55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1234                       /usr/bin/mcp-apps-host
7f1c2e000000-7f1c2e010000 r--p 00000000 08:01 5678                       /usr/lib/x86_64-linux-gnu/libflite_cmu_time_awb.so.2.2
7f1c2e010000-7f1c2e020000 r-xp 00010000 08:01 5678                       /usr/lib/x86_64-linux-gnu/libflite_cmu_time_awb.so.2.2
7ffd1a000000-7ffd1a021000 rw-p 00000000 00:00 0                          [stack]
";
        assert_eq!(
            loaded_library(maps, FRONT_OF_SCOPE),
            Some("/usr/lib/x86_64-linux-gnu/libflite_cmu_time_awb.so.2.2")
        );
        assert_eq!(loaded_library(maps, "libwebkit2gtk"), None, "not loaded");
        assert_eq!(
            loaded_library("7f00-7f01 r--p 0 08:01 9 /opt/my libs/libflite_cmu_time_awb.so.1\n", FRONT_OF_SCOPE),
            None,
            "a space"
        );
        assert_eq!(
            loaded_library("7f00-7f01 r--p 0 08:01 9 /opt/a:b/libflite_cmu_time_awb.so.1\n", FRONT_OF_SCOPE),
            None,
            "a colon"
        );
        assert_eq!(
            loaded_library("7f00-7f01 r--p 0 08:01 9 /opt/libflite_cmu_time_awb.so.1 (deleted)\n", FRONT_OF_SCOPE),
            None
        );
        // This test binary links the same libwebkit2gtk as the host: where that needs the voice,
        // it is found in this very process.
        let own = std::fs::read_to_string("/proc/self/maps").unwrap();
        assert_eq!(loaded_library(&own, FRONT_OF_SCOPE).is_some(), own.contains(FRONT_OF_SCOPE));
    }

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
