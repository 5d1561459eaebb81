//! Builds the web process extension (`webext/collect.c`) that the desktop host gives WebKit
//! (see `src/desktop/web_extension.rs`).

fn main() {
    println!("cargo::rerun-if-changed=webext/collect.c");
    let desktop = std::env::var_os("CARGO_FEATURE_DESKTOP").is_some();
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if !desktop || !linux {
        return;
    }
    let webkit = pkg_config::Config::new()
        .cargo_metadata(false)
        .probe("webkit2gtk-web-extension-4.1")
        .expect("webkit2gtk-web-extension-4.1 (libwebkit2gtk-4.1-dev) is needed for the desktop host");
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let object = out.join("collect.o");
    let library = out.join("libmcp-apps-host-collect.so");
    let compiler = cc::Build::new().get_compiler();
    let mut compile = compiler.to_command();
    compile.args(["-c", "-fPIC", "-O2", "-Wall", "-Werror", "webext/collect.c", "-o"]).arg(&object);
    for dir in &webkit.include_paths {
        compile.arg("-I").arg(dir);
    }
    run(compile, "compile webext/collect.c");
    let mut link = compiler.to_command();
    link.args(["-shared", "-Wl,-z,defs", "-o"]).arg(&library).arg(&object);
    for dir in &webkit.link_paths {
        link.arg("-L").arg(dir);
    }
    for lib in &webkit.libs {
        link.arg(format!("-l{lib}"));
    }
    run(link, "link the web process extension");
}

fn run(mut command: std::process::Command, what: &str) {
    let status = command.status().unwrap_or_else(|e| panic!("cannot {what}: {e}"));
    assert!(status.success(), "cannot {what}: {status}");
}
