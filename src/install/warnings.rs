//! What in a command line can make it run code other than the program it names, said in words
//! beside the command line the person agrees to.
//!
//! An install link once hid `NODE_OPTIONS=--import=data:…` past the dialog's cut; the whole line
//! is shown now, and these words make the parts that matter hard to miss in it: environment
//! variables that load code or move where programs come from, a shell's `-c`, an interpreter's
//! code on its command line, and the options of `npx`/`uvx`/`pip` that change which package (or
//! which registry) runs. A pure rule over plain strings: the same for every source.

/// Environment variables by exact name, with what each can do.
const ENV: &[(&str, &str)] = &[
    ("NODE_OPTIONS", "can make Node load any code (--import, --require) into the server"),
    ("NODE_PATH", "changes where Node finds the modules the server loads"),
    ("LD_PRELOAD", "loads a library of its choosing into the server's program"),
    ("LD_LIBRARY_PATH", "makes programs load their libraries from a folder of its choosing"),
    ("LD_AUDIT", "loads a library of its choosing into the server's program"),
    ("PYTHONPATH", "changes where Python finds the modules the server imports"),
    ("PYTHONSTARTUP", "names a Python file to run"),
    ("PYTHONHOME", "changes which Python library the server runs with"),
    ("PYTHONINSPECT", "makes Python read commands after the script"),
    ("BASH_ENV", "names a file of shell commands every bash script runs first"),
    ("ENV", "names a file of shell commands a shell runs first"),
    ("PERL5OPT", "adds options (code) to every Perl program"),
    ("PERL5LIB", "changes where Perl finds the modules the server loads"),
    ("RUBYOPT", "adds options (code) to every Ruby program"),
    ("RUBYLIB", "changes where Ruby finds the files the server loads"),
    ("JAVA_TOOL_OPTIONS", "adds options (agents: code) to every Java program"),
    ("_JAVA_OPTIONS", "adds options (agents: code) to every Java program"),
    ("PATH", "decides which program each name runs"),
    ("PIP_INDEX_URL", "changes the registry Python packages come from"),
    ("PIP_EXTRA_INDEX_URL", "adds a registry Python packages may come from"),
    ("UV_INDEX", "adds a registry Python packages may come from"),
    ("UV_INDEX_URL", "changes the registry Python packages come from"),
    ("UV_DEFAULT_INDEX", "changes the registry Python packages come from"),
    ("UV_EXTRA_INDEX_URL", "adds a registry Python packages may come from"),
    ("GIT_SSH_COMMAND", "names a command git runs"),
];

/// Environment variables by prefix (compared without case where the tool reads them so).
const ENV_PREFIX: &[(&str, &str, bool)] = &[
    ("DYLD_", "changes which libraries a program loads (macOS)", false),
    ("NPM_CONFIG_", "changes npm's settings (its registry, scripts it runs)", true),
];

/// Shells whose `-c` runs the text after it as a script.
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "busybox"];

/// Interpreters, with the options that take code to run (long ones also as `--opt=...`).
const INTERPRETERS: &[(&[&str], &[&str], &str)] = &[
    (
        &["node", "nodejs", "bun"],
        &["-e", "--eval", "-p", "--print", "--import", "--require", "-r", "--loader", "--experimental-loader"],
        "runs or loads code given on the command line",
    ),
    (&["deno"], &["eval", "-e", "--eval", "--import-map", "--preload"], "runs or loads code given on the command line"),
    (&["perl", "ruby"], &["-e", "-E", "-r", "-M"], "runs code given on the command line"),
];

/// Package runners, with the options that change which package runs or where it comes from.
const RUNNERS: &[(&[&str], &[&str])] = &[
    (
        &["npx", "npm", "pnpm", "pnpx", "yarn", "bunx"],
        &["--registry", "--package", "-p", "--call", "-c", "--userconfig", "--globalconfig", "--node-options"],
    ),
    (
        &["uvx", "uv", "pipx", "pip", "pip3"],
        &[
            "--index-url",
            "-i",
            "--extra-index-url",
            "--index",
            "--default-index",
            "--find-links",
            "-f",
            "--from",
            "--with",
            "--with-requirements",
            "--with-editable",
            "--spec",
            "--pip-args",
        ],
    ),
];

/// The warnings for running `command` with `args` and `env`, one sentence each, in the order
/// found. Empty when nothing in the line is known to load other code.
pub(crate) fn warnings(command: &str, args: &[String], env: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (name, _) in env {
        env_warning(name, "the environment", &mut out);
    }
    let mut program = base_name(command);
    let mut rest: &[String] = args;
    // `env NAME=VALUE program ...`: the variables are environment, the program is the next word.
    if program == "env" {
        let mut i = 0;
        while let Some(a) = rest.get(i) {
            match a.split_once('=') {
                Some((name, _)) if !a.starts_with('-') => env_warning(name, "env's arguments", &mut out),
                _ if a.starts_with('-') => {
                    push(&mut out, format!("env {a} changes how the program after it starts"));
                }
                _ => break,
            }
            i += 1;
        }
        match rest.get(i) {
            Some(next) => {
                program = base_name(next);
                rest = &rest[i + 1..];
            }
            None => rest = &[],
        }
    }
    let python = program.starts_with("python") || program == "py";
    if SHELLS.contains(&program) {
        for a in rest {
            if is_short_cluster(a, 'c') {
                push(&mut out, format!("{program} {a} runs the text after it as a shell script: read all of it"));
            }
        }
    } else if python {
        for a in rest {
            if is_short_cluster(a, 'c') {
                push(&mut out, format!("{program} {a} runs the Python code after it: read all of it"));
            }
        }
    }
    for (names, options, what) in INTERPRETERS {
        if names.contains(&program) {
            for a in rest {
                if let Some(opt) = options.iter().find(|o| matches_option(a, o)) {
                    push(&mut out, format!("{program} {opt} {what}: read all of it"));
                }
            }
        }
    }
    for (names, options) in RUNNERS {
        if names.contains(&program) {
            for a in rest {
                if let Some(opt) = options.iter().find(|o| matches_option(a, o)) {
                    push(&mut out, format!("{program} {opt} changes which package runs, or where it comes from"));
                } else if a.starts_with("--") && a.to_ascii_lowercase().contains("registry") {
                    push(&mut out, format!("{program} {a} changes where packages come from"));
                }
            }
        }
    }
    out
}

fn env_warning(name: &str, place: &str, out: &mut Vec<String>) {
    if let Some((_, what)) = ENV.iter().find(|(n, _)| *n == name) {
        push(out, format!("{name} (in {place}) {what}"));
        return;
    }
    let upper = name.to_ascii_uppercase();
    for (prefix, what, any_case) in ENV_PREFIX {
        let hit = if *any_case { upper.starts_with(prefix) } else { name.starts_with(prefix) };
        if hit {
            push(out, format!("{name} (in {place}) {what}"));
            return;
        }
    }
}

fn push(out: &mut Vec<String>, line: String) {
    if !out.contains(&line) {
        out.push(line);
    }
}

/// The program's own name: `/usr/bin/bash` and `bash` are both `bash`.
fn base_name(command: &str) -> &str {
    command.rsplit('/').next().unwrap_or(command)
}

/// `-c`, `-lc`, `-ec`: a cluster of short options holding `letter` (the last to take a value
/// takes the word after it, so `-ce` means `-c` too).
fn is_short_cluster(arg: &str, letter: char) -> bool {
    arg.len() >= 2
        && arg.starts_with('-')
        && !arg.starts_with("--")
        && arg[1..].chars().all(|c| c.is_ascii_alphabetic())
        && arg[1..].contains(letter)
}

/// `arg` is `option`, or `option=...` for a long one, or `-xVALUE` for a short one.
fn matches_option(arg: &str, option: &str) -> bool {
    if arg == option {
        return true;
    }
    if option.starts_with("--") {
        return arg.strip_prefix(option).is_some_and(|rest| rest.starts_with('='));
    }
    // A short option with its value joined (`-eCODE`); a subcommand (`eval`) only alone.
    option.len() == 2 && option.starts_with('-') && arg.starts_with(option) && !arg.starts_with("--")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(command: &str, args: &[&str], env: &[(&str, &str)]) -> Vec<String> {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        warnings(command, &args, &env)
    }

    fn says(found: &[String], what: &str) -> bool {
        found.iter().any(|l| l.contains(what))
    }

    #[test]
    fn environment_that_loads_code_is_named() {
        for name in [
            "NODE_OPTIONS",
            "LD_PRELOAD",
            "LD_LIBRARY_PATH",
            "PYTHONPATH",
            "PYTHONSTARTUP",
            "BASH_ENV",
            "ENV",
            "DYLD_INSERT_LIBRARIES",
            "npm_config_registry",
        ] {
            let found = w("node", &["server.js"], &[(name, "x")]);
            assert!(says(&found, name), "{name}: {found:?}");
        }
        assert!(w("node", &[], &[("NODE_OPTIONS", "--import=data:x")])[0].contains("can make Node load any code"));
        // A variable of the server's own is not.
        assert!(w("node", &["server.js"], &[("API_KEY", "x"), ("ENVIRONMENT", "prod")]).is_empty());
    }

    #[test]
    fn a_shells_dash_c_and_an_interpreters_code_are_named() {
        for shell in ["sh", "bash", "/bin/zsh", "dash"] {
            for c in ["-c", "-lc", "-ec"] {
                assert!(says(&w(shell, &[c, "echo hi"], &[]), "as a shell script"), "{shell} {c}");
            }
        }
        for opt in ["-e", "--eval", "-p", "--import", "--require", "-r", "--eval=1", "--import=data:x"] {
            for node in ["node", "bun"] {
                let found = w(node, &[opt, "x"], &[]);
                assert!(says(&found, "code given on the command line"), "{node} {opt}: {found:?}");
            }
        }
        assert!(says(&w("deno", &["eval", "x"], &[]), "code given on the command line"));
        assert!(says(&w("python3", &["-c", "import os"], &[]), "runs the Python code"));
        assert!(says(&w("/usr/bin/python3.12", &["-c", "x"], &[]), "runs the Python code"));
        // Through `env`, the program and the variables are still seen.
        let found = w("env", &["NODE_OPTIONS=--require=x", "bash", "-c", "x"], &[]);
        assert!(says(&found, "NODE_OPTIONS (in env's arguments)") && says(&found, "bash -c"), "{found:?}");
    }

    #[test]
    fn package_runner_options_that_move_the_package_are_named() {
        for opt in ["--registry", "--registry=https://x", "--package", "-p", "--@acme:registry=https://x"] {
            assert!(!w("npx", &[opt, "x", "-y", "pkg"], &[]).is_empty(), "npx {opt}");
        }
        for opt in ["--index-url", "--extra-index-url", "--from", "--with", "--default-index", "--index"] {
            assert!(says(&w("uvx", &[opt, "x", "pkg"], &[]), "changes which package runs"), "uvx {opt}");
        }
        assert!(!w("pip", &["install", "--extra-index-url", "https://x", "p"], &[]).is_empty());
    }

    #[test]
    fn an_ordinary_command_line_has_no_warning() {
        assert!(w("npx", &["-y", "@example/weather-mcp@1.2.0", "--stdio"], &[("WEATHER_API_KEY", "<k>")]).is_empty());
        assert!(w("uvx", &["weather-mcp==1.2.0"], &[]).is_empty());
        assert!(w("node", &["/b/files/server/index.js", "--root=/home/p"], &[]).is_empty());
        assert!(w("python3", &["-m", "server", "--config", "c.json"], &[]).is_empty());
        // A server's own options that look like an interpreter's are not an interpreter's.
        assert!(w("/opt/tool/bin/server", &["-e", "prod", "-c", "conf"], &[]).is_empty());
        assert!(w("bash", &["/opt/run.sh", "--config", "c"], &[]).is_empty());
    }
}
