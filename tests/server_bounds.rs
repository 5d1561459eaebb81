//! No server can starve the host or another server: listings are bounded in pages, items, bytes
//! and time, and one server's elicitations cannot queue up in front of everyone else's.
//! Fixture: tests/fixtures/bounds-server.mjs (raw JSON-RPC, no SDK).

#[allow(dead_code)]
mod server_support;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_apps_host::bridge::{BoxFuture, CallControl};
use mcp_apps_host::server::connection::{ConnectOptions, Connection, LIST_TIMEOUT};
use mcp_apps_host::server::requests::{ElicitAnswer, Elicitation, ServerRequests, MAX_PENDING_ELICITATIONS};
use mcp_apps_host::server::set::{ServerSet, ServerStatus};
use mcp_apps_host::server::ServerSpec;
use mcp_apps_host::Error;
use serde_json::Value;
use server_support::{first_text, node_stdio};

const BASIC: &str = "node_modules/@modelcontextprotocol/server-basic-vanillajs/dist/index.js";
/// The bound every fault must end within.
const BOUND: Duration = Duration::from_secs(10);
/// How much the host may grow while a hostile listing is read (the listing bound is 8 MiB of
/// JSON; its parsed form and rmcp's copy of one page, up to 16 MiB, come on top).
const MAX_RSS_GROWTH: u64 = 200 * 1024 * 1024;
/// The memory-heavy tests run one at a time, so that each one's RSS is its own.
static HEAVY: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn bounds(mode: &str) -> ServerSpec {
    node_stdio("bounds-server.mjs", &[mode])
}

async fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    true
}

/// This process's resident set, in bytes.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("a VmRSS line");
    let kib: u64 = line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("VmRSS in kB");
    kib * 1024
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Samples the RSS every few milliseconds and keeps the peak; says when growth passed the limit,
/// so a host without bounds fails the test quickly instead of eating the machine's memory.
struct RssWatch {
    before: u64,
    peak: Arc<AtomicU64>,
    over: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RssWatch {
    fn start(limit: u64) -> Self {
        let before = rss();
        let (peak, over, stop) =
            (Arc::new(AtomicU64::new(before)), Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let thread = {
            let (peak, over, stop) = (peak.clone(), over.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let now = rss();
                    peak.fetch_max(now, Ordering::Relaxed);
                    if now.saturating_sub(before) > limit {
                        over.store(true, Ordering::Relaxed);
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
        };
        Self { before, peak, over, stop, thread: Some(thread) }
    }

    async fn exceeded(&self) {
        while !self.over.load(Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// (peak growth, growth now), in bytes.
    fn finish(mut self) -> (u64, u64) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let now = rss();
        let peak = self.peak.load(Ordering::Relaxed).max(now);
        (peak.saturating_sub(self.before), now.saturating_sub(self.before))
    }
}

/// Connects while watching memory: fails the test when the RSS grows past [`MAX_RSS_GROWTH`] or
/// nothing is decided within `limit`.
async fn connect_watched(
    spec: &ServerSpec,
    options: ConnectOptions,
    limit: Duration,
) -> (Result<Arc<Connection>, Error>, Duration, (u64, u64)) {
    let watch = RssWatch::start(MAX_RSS_GROWTH);
    let started = Instant::now();
    let outcome = tokio::select! {
        outcome = Connection::connect_with(spec, options) => outcome,
        () = watch.exceeded() => {
            panic!("the host grew by more than {} MiB within {:?}", mib(MAX_RSS_GROWTH), started.elapsed())
        }
        () = tokio::time::sleep(limit) => panic!("connecting was neither done nor failed within {limit:?}"),
    };
    let took = started.elapsed();
    (outcome, took, watch.finish())
}

fn list_failure(outcome: Result<Arc<Connection>, Error>) -> (String, String) {
    match outcome {
        Ok(conn) => panic!("connect should fail, but {} connected with {} tools", conn.name(), conn.tools().len()),
        Err(e @ Error::Request { .. }) => {
            let shown = e.to_string();
            let Error::Request { method, reason, .. } = e else { unreachable!() };
            assert_eq!(method, "tools/list", "{shown}");
            (reason, shown)
        }
        Err(other) => panic!("expected a tools/list error, got {other}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn endless_tool_pages_fail_within_the_bounds_and_memory_stays_bounded() {
    let _heavy = HEAVY.lock().await;
    let spec = bounds("endless-tools-pages");
    let (outcome, took, (peak, after)) = connect_watched(&spec, ConnectOptions::default(), LIST_TIMEOUT * 2).await;
    let (reason, shown) = list_failure(outcome);
    eprintln!(
        "endless tool pages: failed after {took:?}; RSS growth peak {:.1} MiB, after {:.1} MiB: {shown}",
        mib(peak),
        mib(after)
    );
    assert!(shown.contains(spec.name()), "names the server: {shown}");
    assert!(reason.contains("bound") && reason.contains("pages"), "names the bound and what was seen: {reason}");
    assert!(took < LIST_TIMEOUT, "a bound ends it before the list deadline: {took:?}");
    assert!(peak < MAX_RSS_GROWTH, "peak RSS growth {:.1} MiB", mib(peak));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_page_over_the_byte_bound_fails_the_server() {
    let _heavy = HEAVY.lock().await;
    let spec = bounds("huge-tools");
    let (outcome, took, (peak, after)) = connect_watched(&spec, ConnectOptions::default(), LIST_TIMEOUT * 2).await;
    let (reason, shown) = list_failure(outcome);
    eprintln!(
        "huge tools page: failed after {took:?}; RSS growth peak {:.1} MiB, after {:.1} MiB: {shown}",
        mib(peak),
        mib(after)
    );
    assert!(reason.contains("bound of 8 MiB") && reason.contains("read so far"), "names the byte bound: {reason}");
    assert!(took < BOUND, "{took:?}");
    assert!(peak < MAX_RSS_GROWTH, "peak RSS growth {:.1} MiB", mib(peak));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_page_over_the_transport_limit_never_arrives_and_the_list_deadline_ends_it() {
    let _heavy = HEAVY.lock().await;
    let limit = Duration::from_secs(2);
    let options = ConnectOptions::default().list_timeout(limit);
    let (outcome, took, (peak, after)) = connect_watched(&bounds("oversized-page"), options, BOUND).await;
    let (reason, shown) = list_failure(outcome);
    eprintln!(
        "oversized page: failed after {took:?}; RSS growth peak {:.1} MiB, after {:.1} MiB: {shown}",
        mib(peak),
        mib(after)
    );
    assert!(reason.contains("within 2 s") && reason.contains("more than 16 MiB"), "{reason}");
    assert!(took >= limit && took < limit + Duration::from_secs(4), "{took:?}");
    assert!(peak < MAX_RSS_GROWTH, "peak RSS growth {:.1} MiB", mib(peak));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_repeated_cursor_ends_the_listing() {
    let started = Instant::now();
    let conn = tokio::time::timeout(BOUND, Connection::connect(&bounds("repeat-cursor")))
        .await
        .expect("a repeated cursor ends the listing instead of following it forever")
        .unwrap();
    let names: Vec<String> =
        conn.tools().iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect::<Vec<_>>();
    assert_eq!(names, ["echo", "work", "page-2"]);
    let asked = || conn.stderr_tail().into_iter().filter(|l| l.starts_with("TOOLS/LIST")).count();
    // The output is read by another task: give it a moment, then check nothing more was asked.
    wait_until(Duration::from_secs(1), || asked() >= 2).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(asked(), 2, "the first page and the page of the cursor, once: {:?}", conn.stderr_tail());
    eprintln!("repeated cursor: listing ended after {:?} with {names:?}", started.elapsed());
    conn.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn endless_resource_pages_keep_what_was_read_and_the_server_works() {
    let started = Instant::now();
    let conn = tokio::time::timeout(LIST_TIMEOUT * 2, Connection::connect(&bounds("endless-resources-pages")))
        .await
        .expect("the resource listing ends at a bound")
        .unwrap();
    let took = started.elapsed();
    assert!(conn.listed_resource("data://page-0/item-0.txt").is_some(), "the first pages are kept");
    assert!(conn.tool("echo").is_some());
    let args = serde_json::json!({"text": "still usable"}).as_object().cloned();
    let result = conn.call_tool("echo".into(), args, CallControl::default()).await.unwrap();
    assert_eq!(first_text(&result), "endless-resources-pages: still usable");
    eprintln!("endless resource pages: connected after {took:?}, resources truncated with a warning");
    conn.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_never_answers_tools_list_fails_within_the_list_deadline() {
    let limit = Duration::from_secs(1);
    let options = ConnectOptions::default().list_timeout(limit);
    let started = Instant::now();
    let outcome = tokio::time::timeout(BOUND, Connection::connect_with(&bounds("silent-tools-list"), options))
        .await
        .expect("the listing after the handshake has a deadline");
    let took = started.elapsed();
    let (reason, shown) = list_failure(outcome);
    eprintln!("silent tools/list: failed after {took:?}: {shown}");
    assert!(reason.contains("within 1 s"), "names the deadline: {reason}");
    assert!(took >= limit && took < limit + Duration::from_secs(4), "{took:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_silent_server_does_not_hold_up_a_good_one_in_the_registry() {
    let limit = Duration::from_secs(5);
    let specs = vec![bounds("silent-tools-list"), node_stdio(BASIC, &["--stdio"])];
    let set = ServerSet::new(specs, ConnectOptions::default().list_timeout(limit));
    let names = set.names();
    let (silent, good) = (names[0].clone(), names[1].clone());
    let started = Instant::now();
    let starting = tokio::spawn({
        let set = set.clone();
        async move { set.start().await }
    });
    assert!(
        wait_until(BOUND, || set.status(&good) == Some(ServerStatus::Ready)).await,
        "the good server is ready: {:?}",
        set.servers()
    );
    let ready = started.elapsed();
    let result = set.port(&good).call_tool("get-time".into(), None, CallControl::default()).await.unwrap();
    assert!(!first_text(&result).is_empty(), "{result}");
    let used = started.elapsed();
    if used < limit {
        assert_eq!(set.status(&silent), Some(ServerStatus::Starting), "still listing: {:?}", set.servers());
    }
    tokio::time::timeout(limit + BOUND, starting)
        .await
        .expect("start returns once the silent server's list deadline passed")
        .unwrap();
    let failed = started.elapsed();
    let Some(ServerStatus::Failed { reason, .. }) = set.status(&silent) else {
        panic!("the silent server fails: {:?}", set.servers())
    };
    assert!(reason.contains("tools/list") && reason.contains("within 5 s"), "{reason}");
    assert_eq!(set.status(&good), Some(ServerStatus::Ready));
    eprintln!("server set: good server ready after {ready:?} and used after {used:?}; silent one failed after {failed:?}: {reason}");
    set.shutdown().await;
}

/// Holds every elicitation until released, counting what reached it (what a person would see).
struct Holding {
    asked: AtomicUsize,
    release: Arc<tokio::sync::Semaphore>,
}

impl Holding {
    fn new() -> Arc<Self> {
        Arc::new(Self { asked: AtomicUsize::new(0), release: Arc::new(tokio::sync::Semaphore::new(0)) })
    }
}

impl ServerRequests for Holding {
    fn elicit(&self, _request: Elicitation) -> BoxFuture<ElicitAnswer> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let release = self.release.clone();
        Box::pin(async move {
            let _ = release.acquire().await;
            ElicitAnswer::Decline
        })
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_elicitation_flood_reaches_the_person_only_up_to_the_cap() {
    let holder = Holding::new();
    let options = ConnectOptions::default().requests(holder.clone());
    let conn = Connection::connect_with(&bounds("elicit-flood"), options).await.unwrap();
    let started = Instant::now();
    let call = tokio::spawn({
        let conn = conn.clone();
        async move { conn.call_tool("work".into(), None, CallControl::default()).await }
    });
    let refused = format!("refused={}", 300 - MAX_PENDING_ELICITATIONS);
    let all_refused = wait_until(BOUND, || conn.stderr_tail().iter().any(|l| l.contains(&refused))).await;
    let delivered = holder.asked.load(Ordering::SeqCst);
    assert!(delivered <= MAX_PENDING_ELICITATIONS, "{delivered} of 300 elicitations reached the handler");
    assert!(all_refused, "the server heard {refused}: {:?}", conn.stderr_tail());
    assert_eq!(delivered, MAX_PENDING_ELICITATIONS, "the first ones still reach the person");
    holder.release.add_permits(1000);
    let result: Value = tokio::time::timeout(BOUND, call).await.expect("the call ends").unwrap().unwrap();
    let text = first_text(&result);
    let expected = format!("answered={MAX_PENDING_ELICITATIONS} {refused}");
    assert!(text.contains(&expected), "{text}");
    let question = format!("the host already shows {MAX_PENDING_ELICITATIONS} questions from this server");
    assert!(text.contains(&question) && text.contains("answer them first"), "{text}");
    eprintln!("elicitation flood: {delivered} delivered, rest refused within {:?}: {text}", started.elapsed());
    conn.shutdown().await;
}
