//! Builds the web process extension (`webext/collect.c`, `webext/requests.c`, `webext/session.c`, `webext/clipboard.c`) that the desktop host gives WebKit
//! (see `src/desktop/web_extension.rs`), and puts the library WebKit's processes spend most of
//! their start-up symbol lookups on in the host binary's own `DT_NEEDED` list (see
//! `src/host_env.rs`).

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The library `src/host_env.rs` puts first in the lookup scope, by its soname.
const FRONT_OF_SCOPE: &str = "libflite_cmu_time_awb.so.1";

fn main() {
    for file in [
        "webext/collect.c",
        "webext/requests.c",
        "webext/requests.h",
        "webext/session.c",
        "webext/session.h",
        "webext/clipboard.c",
        "webext/clipboard.h",
    ] {
        println!("cargo::rerun-if-changed={file}");
    }
    let desktop = std::env::var_os("CARGO_FEATURE_DESKTOP").is_some();
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if !desktop || !linux {
        return;
    }
    let webkit = pkg_config::Config::new()
        .cargo_metadata(false)
        .probe("webkit2gtk-web-extension-4.1")
        .expect("webkit2gtk-web-extension-4.1 (libwebkit2gtk-4.1-dev) is needed for the desktop host");
    front_of_scope();
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let library = out.join("libmcp-apps-host-collect.so");
    let compiler = cc::Build::new().get_compiler();
    let mut objects = Vec::new();
    for source in ["collect", "requests", "session", "clipboard"] {
        let object = out.join(format!("{source}.o"));
        let mut compile = compiler.to_command();
        compile.args(["-c", "-fPIC", "-O2", "-Wall", "-Werror", &format!("webext/{source}.c"), "-o"]).arg(&object);
        for dir in &webkit.include_paths {
            compile.arg("-I").arg(dir);
        }
        run(compile, &format!("compile webext/{source}.c"));
        objects.push(object);
    }
    let mut link = compiler.to_command();
    link.args(["-shared", "-Wl,-z,defs", "-o"]).arg(&library).args(&objects);
    for dir in &webkit.link_paths {
        link.arg("-L").arg(dir);
    }
    for lib in &webkit.libs {
        link.arg(format!("-l{lib}"));
    }
    run(link, "link the web process extension");
}

/// Links [`FRONT_OF_SCOPE`] into the host binary when the `libwebkit2gtk` it links needs it (and
/// only then: a WebKit built without flite gets nothing). `rustc` puts linker arguments after
/// the libraries, so it comes last in the list; without `--no-as-needed` the linker would drop
/// it, since the host uses none of its symbols.
fn front_of_scope() {
    let Ok(libdir) = pkg_config::get_variable("webkit2gtk-4.1", "libdir") else { return };
    let libdir = Path::new(&libdir);
    let webkit = libdir.join("libwebkit2gtk-4.1.so");
    // Decided again when the system's WebKit changes (a new one may need the voice or not).
    println!("cargo::rerun-if-changed={}", webkit.display());
    let voice = libdir.join(FRONT_OF_SCOPE);
    if voice.is_file() && needs(&webkit, FRONT_OF_SCOPE).unwrap_or(false) {
        println!(
            "cargo::rustc-link-arg-bin=mcp-apps-host=-Wl,--push-state,--no-as-needed,{},--pop-state",
            voice.display()
        );
    }
}

/// Whether the ELF object at `path` names `soname` among its `DT_NEEDED` entries; `None` for
/// what this does not read (not a 64-bit little-endian ELF object, or cut short).
fn needs(path: &Path, soname: &str) -> Option<bool> {
    let mut file = std::fs::File::open(path).ok()?;
    let mut read_at = |offset: u64, len: usize| -> Option<Vec<u8>> {
        let mut buf = vec![0; len];
        file.seek(SeekFrom::Start(offset)).ok()?;
        file.read_exact(&mut buf).ok()?;
        Some(buf)
    };
    let u16_at = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let header = read_at(0, 64)?;
    if header[..4] != *b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        return None;
    }
    let (table, entry, count) = (u64_at(&header, 0x28), u16_at(&header, 0x3a) as usize, u16_at(&header, 0x3c) as usize);
    if entry < 64 || count > 4096 {
        return None;
    }
    let sections = read_at(table, entry * count)?;
    let section = |i: usize| &sections[i * entry..(i + 1) * entry];
    // SHT_DYNAMIC: (tag, value) pairs; DT_NEEDED (1) names an offset in its string table.
    let dynamic = (0..count).map(section).find(|s| u32_at(s, 4) == 6)?;
    let strings = section((u32_at(dynamic, 0x28) as usize).min(count - 1));
    let entries = read_at(u64_at(dynamic, 0x18), usize::try_from(u64_at(dynamic, 0x20)).ok()?.min(1 << 20))?;
    let names = read_at(u64_at(strings, 0x18), usize::try_from(u64_at(strings, 0x20)).ok()?.min(16 << 20))?;
    let found = entries.chunks_exact(16).take_while(|e| u64_at(e, 0) != 0).filter(|e| u64_at(e, 0) == 1).any(|e| {
        let start = usize::try_from(u64_at(e, 8)).unwrap_or(usize::MAX).min(names.len());
        names[start..].split(|&b| b == 0).next() == Some(soname.as_bytes())
    });
    Some(found)
}

fn run(mut command: std::process::Command, what: &str) {
    let status = command.status().unwrap_or_else(|e| panic!("cannot {what}: {e}"));
    assert!(status.success(), "cannot {what}: {status}");
}
