//! What the Views' memory does when they go: a hundred Views open and close with their teardown
//! and hand their memory back, and the host's web process extension (`webext/collect.c`)
//! collects and releases a process's memory once its pages went. The figures themselves are
//! benchmarks (BENCHMARKS.md); these tests check the behaviour.

mod common;

use std::time::Duration;

use common::hostile::read_trace;
use common::*;
use serde_json::Value;

/// `pid` and every process under it.
fn process_tree(pid: u32) -> Vec<u32> {
    let mut parents: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else { continue };
        // The parent pid is the second field after the command's closing parenthesis.
        if let Some(ppid) =
            stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)).and_then(|s| s.parse().ok())
        {
            parents.insert(p, ppid);
        }
    }
    let in_tree = |mut p: u32| loop {
        if p == pid {
            return true;
        }
        match parents.get(&p) {
            Some(&pp) if pp != 0 && pp != p => p = pp,
            _ => return false,
        }
    };
    parents.keys().copied().filter(|&p| in_tree(p)).collect()
}

/// PSS in kB of `pid` and all its descendants (the WebKit processes), from /proc.
fn pss_tree_kb(pid: u32) -> u64 {
    process_tree(pid)
        .iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/smaps_rollup")).ok())
        .filter_map(|s| {
            s.lines()
                .find(|l| l.starts_with("Pss:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        })
        .sum()
}

/// Mesa's EGL driver and its LLVM, as they show in a process's maps.
const MESA_EGL: [&str; 2] = ["libEGL_mesa", "libLLVM"];

/// Which of [`MESA_EGL`] `maps` (a process's `/proc/<pid>/maps`) holds.
fn mesa_egl_in(maps: &str) -> Vec<&'static str> {
    MESA_EGL.into_iter().filter(|lib| maps.contains(lib)).collect()
}

/// The library the host puts first in the lookup scope of WebKit's processes (`host_env.rs`).
const VOICE: &str = "libflite_cmu_time_awb.so";

/// What a process maps (`/proc/<pid>/maps`) and its `LD_PRELOAD`, if it has one.
struct Process {
    maps: String,
    preload: Option<String>,
}

fn process(pid: u32) -> Process {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    let preload = environ
        .split(|&b| b == 0)
        .find_map(|v| v.strip_prefix(b"LD_PRELOAD="))
        .map(|v| String::from_utf8_lossy(v).into_owned());
    Process { maps: std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default(), preload }
}

/// The paths of the files `maps` maps, one per mapping.
fn mapped_files(maps: &str) -> impl Iterator<Item = &str> {
    maps.lines().filter_map(|l| l.find(" /").map(|at| &l[at + 1..]))
}

/// The path of the [`VOICE`] file `maps` holds, if any.
fn voice_in(maps: &str) -> Option<&str> {
    mapped_files(maps).find(|p| p.contains(VOICE))
}

/// The demo with `env`, once both its Views have their results: the host's own process and each
/// of its web processes.
fn processes_of_the_demo(env: &[(&str, &str)]) -> (Process, Vec<Process>) {
    let dir = tempfile::tempdir().unwrap();
    let trace_path = dir.path().join("trace.jsonl");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"))
        .args(["demo", "--trace", trace_path.to_str().unwrap()])
        .envs(env.iter().copied())
        .env("MCP_APPS_HOST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let results = |t: &[Value]| t.iter().filter(|r| r["msg"]["method"] == "ui/notifications/tool-result").count();
    let start = std::time::Instant::now();
    while results(&read_trace(&trace_path)) < 2 && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(200));
    }
    let pid = child.id();
    let host = process(pid);
    let web: Vec<_> = process_tree(pid)
        .into_iter()
        .filter(|p| std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.starts_with("WebKitWebProces")))
        .map(process)
        .collect();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(results(&read_trace(&trace_path)), 2, "both demo Views got their results");
    (host, web)
}

#[test]
fn the_hosts_own_process_goes_without_egl_and_its_web_processes_keep_it() {
    let (host, web) = processes_of_the_demo(&[]);
    assert_eq!(mesa_egl_in(&host.maps), Vec::<&str>::new(), "the host's process maps Mesa's EGL");
    assert!(web.len() >= 2, "the shell's and the Views' web processes: {}", web.len());
    for p in &web {
        assert_eq!(mesa_egl_in(&p.maps), MESA_EGL.to_vec(), "every web process finds its EGL driver again");
    }
    // The person's own EGL vendors stand, for the host's process too.
    let (host, _) = processes_of_the_demo(&[("__EGL_VENDOR_LIBRARY_DIRS", "/usr/share/glvnd/egl_vendor.d")]);
    assert_eq!(
        mesa_egl_in(&host.maps),
        MESA_EGL.to_vec(),
        "with the person's vendors, the host's process opens EGL as WebKit does"
    );
}

/// Where the host's WebKit loads flite's voice, every web process has that very file first in
/// its lookup scope (`LD_PRELOAD`) and maps it once; a person's own `LD_PRELOAD` stands.
#[test]
fn web_processes_look_up_symbols_in_the_voice_first_and_a_persons_preload_stands() {
    let (host, web) = processes_of_the_demo(&[]);
    let Some(voice) = voice_in(&host.maps) else {
        // A WebKit built without flite: nothing to put first.
        assert!(web.iter().all(|p| p.preload.is_none()), "nothing to preload, yet a web process has LD_PRELOAD");
        return;
    };
    assert_eq!(host.preload, None, "the host's own process was started without LD_PRELOAD");
    assert!(web.len() >= 2, "the shell's and the Views' web processes: {}", web.len());
    for p in &web {
        assert_eq!(p.preload.as_deref(), Some(voice), "a web process's LD_PRELOAD");
        let files: std::collections::BTreeSet<_> = mapped_files(&p.maps).filter(|f| f.contains(VOICE)).collect();
        assert_eq!(files.into_iter().collect::<Vec<_>>(), vec![voice], "the voice is mapped once, from the same file");
    }
    let (_, web) = processes_of_the_demo(&[("LD_PRELOAD", "")]);
    for p in &web {
        assert_eq!(p.preload.as_deref(), Some(""), "the person's LD_PRELOAD stands");
    }
}

#[test]
fn a_hundred_views_open_then_close_with_teardown_and_memory_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let trace_path = dir.path().join("trace.jsonl");
    let script = automation(
        &dir,
        r##"
        await wait(4000);
        for (let i = 0; i < 100; i++) { await call("counter"); await wait(20); }
        await until(() => document.querySelectorAll(".card .slot").length >= 100, 120000);
        await wait(12000);
        document.querySelectorAll(".card header button").forEach((b) => b.click());
        "##,
    );
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"))
        // Every View live: this is closing 100 open Views (sleep has a test of its own; with it,
        // closing every card at once also closes Views waking in cards that came near, before
        // they initialized, and those cannot answer their teardown).
        .args(["demo", "--live-views", "0", "--automation", &script, "--trace", trace_path.to_str().unwrap()])
        .env("MCP_APPS_HOST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let read = || read_trace(&trace_path);
    let count = |t: &[Value], f: &dyn Fn(&Value) -> bool| t.iter().filter(|r| f(r)).count();
    let wait_for = |f: &dyn Fn(&[Value]) -> bool, limit: Duration| {
        let start = std::time::Instant::now();
        while start.elapsed() < limit {
            if f(&read()) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        false
    };
    std::thread::sleep(Duration::from_secs(3));
    let baseline = pss_tree_kb(pid);
    let all_open = wait_for(
        &|t| count(t, &|r| r["msg"]["method"] == "ui/notifications/initialized") >= 100,
        Duration::from_secs(150),
    );
    let peak = pss_tree_kb(pid);
    let all_closed = wait_for(&|t| teardowns(t) >= 100, Duration::from_secs(60));
    std::thread::sleep(Duration::from_secs(3));
    let after = pss_tree_kb(pid);
    // With no View open for a while, the host replaces the web process; the shell comes back.
    let recycled = wait_for(
        &|t| t.iter().any(|r| r["dir"] == "diagnostic" && r["msg"]["kind"] == "recycled"),
        Duration::from_secs(30),
    );
    std::thread::sleep(Duration::from_secs(3));
    let after_recycle = pss_tree_kb(pid);
    // The server's web process is kept warm for 30 s after its last View closed (KEEP_WARM in
    // frames.rs), with whatever its engine kept of 100 pages; once it goes, the host, the network
    // process and the new shell are left. Wait for that (bounded), reading every second.
    let halfway = baseline + peak.saturating_sub(baseline) / 2;
    let since = std::time::Instant::now();
    let mut settled = after_recycle;
    while settled >= halfway && since.elapsed() < Duration::from_secs(45) {
        std::thread::sleep(Duration::from_secs(1));
        settled = pss_tree_kb(pid);
    }
    let trace = read();
    let _ = child.kill();
    let _ = child.wait();
    eprintln!(
        "100 Views: PSS {} MB before, {} MB with 100 open, {} MB after closing them, {} MB after the web \
         process was recycled, {} MB {:.0} s later",
        baseline / 1024,
        peak / 1024,
        after / 1024,
        after_recycle / 1024,
        settled / 1024,
        since.elapsed().as_secs_f64()
    );
    assert!(all_open, "not every View initialized");
    assert!(all_closed, "not every View got ui/resource-teardown");
    // Every teardown was answered (the demo Views answer it); none was left hanging.
    let asked: Vec<(&Value, &Value)> = trace
        .iter()
        .filter(|r| r["dir"] == "host->view" && r["msg"]["method"] == "ui/resource-teardown")
        .map(|r| (&r["view"], &r["msg"]["id"]))
        .collect();
    let answered = asked
        .iter()
        .filter(|(v, id)| {
            trace.iter().any(|r| {
                r["dir"] == "view->host"
                    && &&r["view"] == v
                    && &&r["msg"]["id"] == id
                    && r["msg"].get("result").is_some()
            })
        })
        .count();
    assert_eq!(answered, asked.len(), "every teardown answered");
    assert!(peak > baseline, "100 Views cost memory: {baseline} -> {peak} kB");
    assert!(recycled, "the web process was not recycled once no View was open");
    // The recycle and the end of the kept-warm process hand back most of what the Views took.
    assert!(
        settled < halfway,
        "memory did not come back: {baseline} kB before, {peak} kB peak, {after_recycle} kB after the recycle, \
         {settled} kB 45 s later"
    );
}

/// How many lines of the host's stderr so far (the test's file) contain `needle`.
fn stderr_count(path: &std::path::Path, needle: &str) -> usize {
    std::fs::read_to_string(path).unwrap_or_default().lines().filter(|l| l.contains(needle)).count()
}

/// `mcp-apps-host demo` with `args`, the extension's log on (`MCP_APPS_HOST_COLLECT_LOG`) and its
/// stderr in `stderr`.
fn demo_logging_collections(args: &[&str], stderr: &std::path::Path) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"))
        .arg("demo")
        .args(args)
        .env("MCP_APPS_HOST_LOG", "warn")
        .env("MCP_APPS_HOST_COLLECT_LOG", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(stderr).unwrap())
        .spawn()
        .unwrap()
}

/// The `ui/resource-teardown` requests the host sent.
fn teardowns(trace: &[Value]) -> usize {
    trace.iter().filter(|r| r["dir"] == "host->view" && r["msg"]["method"] == "ui/resource-teardown").count()
}

/// Views that close leave garbage in their server's web process. The extension collects it half
/// a second after the last page went and has the allocator hand it back; its log
/// (`MCP_APPS_HOST_COLLECT_LOG`) says so. Without the extension in the web process (not built,
/// not installed, or not loaded by WebKit) there is no such line.
#[test]
fn closed_views_are_collected_and_their_memory_released_in_their_process() {
    let dir = tempfile::tempdir().unwrap();
    let trace_path = dir.path().join("trace.jsonl");
    let stderr_path = dir.path().join("stderr.txt");
    let script = automation(
        &dir,
        r##"
        for (let i = 0; i < 4; i++) { await call("counter"); await wait(50); }
        await until(() => document.querySelectorAll(".card .slot").length >= 4, 60000);
        await wait(2000);
        document.querySelectorAll(".card header button").forEach((b) => b.click());
        "##,
    );
    let mut child =
        demo_logging_collections(&["--automation", &script, "--trace", trace_path.to_str().unwrap()], &stderr_path);
    let start = std::time::Instant::now();
    // When the four teardowns had been sent, and how many collections and releases had run by
    // then (pages of the process may have gone before: those are not these Views').
    let mut closed = None;
    let mut released = false;
    while start.elapsed() < Duration::from_secs(90) && !released {
        std::thread::sleep(Duration::from_millis(200));
        if closed.is_none() && teardowns(&read_trace(&trace_path)) >= 4 {
            let before = (stderr_count(&stderr_path, "collected with"), stderr_count(&stderr_path, "released in"));
            closed = Some((std::time::Instant::now(), before));
        }
        if let Some((_, (collected, freed))) = closed {
            released = stderr_count(&stderr_path, "collected with") > collected
                && stderr_count(&stderr_path, "released in") > freed;
        }
    }
    let after_close = closed.map(|(at, _)| at.elapsed());
    let _ = child.kill();
    let _ = child.wait();
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("mcp-apps-host-collect")).collect();
    eprintln!("{}", lines.join("\n"));
    assert!(closed.is_some(), "the four Views were not closed");
    assert!(released, "no collection and release after the Views closed:\n{stderr}");
    // Half a second after the pages went, plus the collection and the release: far under 10 s.
    assert!(after_close.unwrap() < Duration::from_secs(10), "released only {after_close:?} after the closes");
}

/// A full collection blocks its process while it runs, longer the more pages it holds: so the
/// extension does not collect in a process of more than 32 pages (a crowd still there, whose
/// process would look hung), and does once enough of them went.
#[test]
fn a_process_holding_a_crowd_is_not_collected_until_it_holds_few_pages() {
    let dir = tempfile::tempdir().unwrap();
    let trace_path = dir.path().join("trace.jsonl");
    let stderr_path = dir.path().join("stderr.txt");
    // 40 Views and the spare page: 41 pages. Closing 4 leaves 37, closing 10 more leaves 27.
    let script = automation(
        &dir,
        r##"
        const close = (from, to) => { for (let i = from; i <= to; i++) document.querySelector('[data-view="v' + i + '"] header button').click(); };
        for (let i = 0; i < 40; i++) { await call("counter"); await wait(20); }
        await until(() => document.querySelectorAll(".card .slot").length >= 40, 120000);
        await wait(3000);
        close(1, 4);
        await wait(4000);
        close(5, 14);
        "##,
    );
    // Every View live: none goes to sleep, so pages go only when the script closes them.
    let args = ["--live-views", "0", "--automation", &script, "--trace", trace_path.to_str().unwrap()];
    let mut child = demo_logging_collections(&args, &stderr_path);
    let collections = || stderr_count(&stderr_path, "collected with");
    let start = std::time::Instant::now();
    // Collections logged when the first 4 closed, when the next 10 began to close, and after.
    let (mut first, mut second, mut after) = (None, None, None);
    while start.elapsed() < Duration::from_secs(180) && after.is_none() {
        std::thread::sleep(Duration::from_millis(100));
        let sent = teardowns(&read_trace(&trace_path));
        if first.is_none() && sent >= 4 {
            first = Some(collections());
        }
        if second.is_none() && sent >= 5 {
            second = Some(collections());
        }
        if let Some(before) = second.filter(|before| collections() > *before) {
            after = Some(before);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("collected with")).collect();
    eprintln!("{}", lines.join("\n"));
    let (Some(first), Some(second)) = (first, second) else { panic!("the Views were not closed:\n{stderr}") };
    assert_eq!(first, second, "a collection ran while the process held 37 pages:\n{}", lines.join("\n"));
    let Some(before) = after else { panic!("no collection once the process held 27 pages:\n{stderr}") };
    // "collected with N pages in M ms": N is what the process held.
    let pages: u32 = lines[before]
        .split("collected with ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no page count in {:?}", lines[before]));
    assert!(pages <= 32, "collected with {pages} pages");
}
