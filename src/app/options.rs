//! The options of a run: what the CLI and the embedding API set.

use super::*;

/// When `run` should exit on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExitAfter {
    /// Every View completed the handshake.
    Initialized,
    /// Every View received its tool result.
    Result,
    /// Every View was torn down (e.g. after it asked to close).
    Teardown,
    /// The model answered the prompt (every turn sent to it ended; exit 1 if one failed).
    Answer,
}

/// Options of `mcp-apps-host run`: what the run connects to and how Views are decided, with the
/// rest in groups by who sets them ([`Automation`], [`DeveloperOptions`], [`ConversationOptions`],
/// [`Places`], [`Limits`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RunOptions {
    /// The servers to connect to (all at once).
    pub servers: Vec<ServerSpec>,
    /// Tools to call at start, each with its arguments (empty: the app starts with its tool
    /// picker). A name may be given as `server/tool` when several servers have that tool.
    pub opens: Vec<(String, Map<String, Value>)>,
    /// Directories offered to servers in `roots/list`.
    pub roots: Vec<Root>,
    /// Answers servers' elicitation and sampling instead of the in-app form.
    pub requests: Option<RequestHandler>,
    /// Decides for the Views instead of the app's consent dialogs.
    pub policy: Option<SharedPolicy>,
    /// How consent prompts are answered.
    pub consent: Consent,
    /// A command that opens links instead of the system browser (the URL is appended).
    pub opener: Option<String>,
    /// Receives every View's events (lifecycle, messages, model context, logs).
    pub events: Option<mpsc::UnboundedSender<(ViewId, ViewEvent)>>,
    /// Where to write the JSON Lines trace.
    pub trace: Option<PathBuf>,
    /// Start with this theme instead of the system's.
    pub theme: Option<Theme>,
    /// Give up (exit 1) when [`Automation::exit_after`] is not reached in this time; also the
    /// limit for a View to initialize.
    pub timeout: Duration,
    /// Render OpenAI Apps SDK widgets (a `text/html+skybridge` resource, or a tool linked only by
    /// `_meta["openai/outputTemplate"]`) with the `window.openai` shim (default on; the CLI's
    /// `--no-openai-shim` turns it off).
    pub openai_shim: bool,
    /// Stand in for another host (see [`crate::profile`]): what Views are told and allowed.
    pub profile: Option<crate::profile::HostProfile>,
    /// How a script or a test runner drives the run and when it ends.
    pub automation: Automation,
    /// What an App's developer sees: the panel and a local View file.
    pub developer: DeveloperOptions,
    /// The conversation with a model.
    pub conversation: ConversationOptions,
    /// Where the run keeps what outlives it.
    pub places: Places,
    /// The bounds of the web content.
    pub limits: Limits,
    /// What the app's launch found (the desktop app's own; not set by embedders).
    pub(crate) launch: Launch,
}

/// How a script or a test runner drives a run: [`RunOptions::automation`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Automation {
    /// Exit on its own at this point.
    pub exit_after: Option<ExitAfter>,
    /// A script evaluated in the shell once it is ready (automation and tests).
    pub script: Option<String>,
    /// Write a screenshot here once the View has initialized (and reached `exit_after`) and settled.
    pub screenshot: Option<PathBuf>,
    /// How long a View settles before the screenshot or the exit.
    pub settle: Duration,
    /// An interaction session run in the first View once it initialized and has its tool
    /// result; the run then ends with its outcome (0 when every step passed), instead of at
    /// `exit_after`.
    pub interaction: Option<Interaction>,
    /// A conformance runner's requests (the test interface: `super::test_interface`).
    pub test_requests: Option<super::test_interface::TestRequests>,
}

impl Default for Automation {
    fn default() -> Self {
        Self {
            exit_after: None,
            script: None,
            screenshot: None,
            settle: Duration::from_millis(500),
            interaction: None,
            test_requests: None,
        }
    }
}

/// What an App's developer sees: [`RunOptions::developer`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct DeveloperOptions {
    /// Show the developer panel (live log, host-context controls, notification editor, CSP).
    pub panel: bool,
    /// Serve this local HTML file as the View of the opened tools, reloading it when it changes.
    pub html: Option<PathBuf>,
}

/// The conversation with a model: [`RunOptions::conversation`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ConversationOptions {
    /// The model of the conversation (none: the app is a tool runner, as without this).
    pub model: Option<SharedModel>,
    /// The first prompt, sent once every server was tried (needs `model`).
    pub prompt: Option<String>,
    /// Reopen this stored conversation (its id; see [`crate::conversation::store`]).
    pub resume: Option<String>,
    /// Receives the conversation's turns.
    pub events: Option<mpsc::UnboundedSender<crate::conversation::Event>>,
}

/// Where a run keeps what outlives it (each default: the user's folder for it):
/// [`RunOptions::places`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Places {
    /// Where conversations are kept.
    pub conversations: Option<crate::conversation::store::Store>,
    /// Where the servers' approval modes are kept.
    pub approvals: Option<crate::conversation::trust::Approvals>,
    /// Where the Views' kept storage is; a removed server's goes with it.
    pub view_storage: Option<crate::sandbox::storage::KeptStorage>,
    /// Where downloads are saved (default: the user's download folder).
    pub downloads: Option<PathBuf>,
}

/// The bounds of the web content: [`RunOptions::limits`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Limits {
    /// The web content's memory limit in MB (default: a quarter of the machine's memory, at
    /// most 4 GiB); above it the host stops the web content and the Apps restart.
    pub web_memory_limit_mb: Option<u64>,
    /// Stop unresponsive web content after this long without the person's answer (default 15 s).
    pub stop_unresponsive: Option<Duration>,
    /// How many Views stay live when more are open (default 10):
    /// the others, out of sight, sleep and wake when scrolled to (0: none sleeps).
    pub live_views: Option<usize>,
}

/// What the desktop app's launch found: [`RunOptions::launch`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Launch {
    /// Mounted in an embedder's window (no picture-in-picture: the window is not ours to move).
    pub embedded: bool,
    /// The config file the servers came from, which the servers panel edits (none: servers
    /// given on the command line, which the app does not write anywhere).
    pub config: Option<PathBuf>,
    /// A server the person opened from outside, to install after the app's own dialog.
    pub install: Option<super::install_request::InstallSlot>,
    /// Where second launches on the same config file knock (see `single_instance`).
    pub front_door: Option<super::single_instance::FrontDoor>,
    /// Why what was opened from outside could not be read, said in the window once it shows.
    pub startup_error: Option<String>,
    /// The command line the welcome's "Add the demo server" writes (none: this executable's
    /// own, see [`crate::server::config::builtin_server_entry`]).
    pub demo_command: Option<(String, Vec<String>)>,
}

/// A [`crate::model::Model`] shared with the host (a newtype so options stay `Debug`).
#[derive(Clone)]
pub struct SharedModel(pub Arc<dyn crate::model::Model>);

impl std::fmt::Debug for SharedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SharedModel({})", self.0.describe())
    }
}

/// A [`HostPolicy`] shared with the host (a newtype so options stay `Debug`).
#[derive(Clone)]
pub struct SharedPolicy(pub Arc<dyn HostPolicy>);

impl std::fmt::Debug for SharedPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedPolicy(..)")
    }
}

impl RunOptions {
    /// Options for calling `tool` on `server` with no arguments.
    #[cfg(test)]
    pub fn new(server: ServerSpec, tool: impl Into<String>) -> Self {
        let mut options = Self::app_with(vec![server]);
        options.opens.push((tool.into(), Map::new()));
        options
    }

    /// Options for the interactive app with several servers.
    pub fn app_with(servers: Vec<ServerSpec>) -> Self {
        Self {
            servers,
            opens: Vec::new(),
            roots: Vec::new(),
            requests: None,
            policy: None,
            consent: Consent::Ask,
            opener: None,
            events: None,
            trace: None,
            theme: None,
            timeout: Duration::from_secs(30),
            openai_shim: true,
            profile: None,
            automation: Automation::default(),
            developer: DeveloperOptions::default(),
            conversation: ConversationOptions::default(),
            places: Places::default(),
            limits: Limits::default(),
            launch: Launch::default(),
        }
    }
}
