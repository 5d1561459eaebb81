//! How one connection is bounded and who answers for the host: [`ConnectOptions`] and the
//! production limits it defaults to.

use std::sync::Arc;
use std::time::Duration;

#[cfg(doc)]
use crate::error::Error;
use crate::server::auth::{Authorizer, ClientRegistration, SharedAuthorizer};
use crate::server::requests::{Root, ServerRequests, Unattended, ELICITATION_TIMEOUT};

/// How long a request may take before it is cancelled (the View gets an error, never a hang).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the MCP handshake may take with a remote server.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a local (stdio) server may take to start and answer the handshake. A first
/// `npx -y …` or `uvx …` downloads its package before the server says a word, which takes
/// minutes on a slow line; the app shows the wait as it goes and the person can cancel it.
pub const STDIO_START_TIMEOUT: Duration = Duration::from_secs(300);

/// How long a forwarded call may go without progress before it is cancelled.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a forwarded call may take in all, progress or not.
pub const MAX_CALL_DURATION: Duration = Duration::from_secs(600);
/// How long [`Connection::shutdown`] waits for rmcp's close (stdio: stdin closed, 3 s, SIGTERM,
/// 3 s, SIGKILL) before dropping the transport, which kills the process too.
pub(super) const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(8);
/// rmcp may write a cancel before the request it cancels (trap 1 in the rmcp notes): a cancel is
/// held back until the request has been out at least this long.
pub(super) const CANCEL_GUARD: Duration = Duration::from_millis(100);
/// How long handing a message to the transport may take (a server that stops reading its stdin
/// fills the pipe, and a write into it would wait forever).
pub(super) const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// How long reading a server's tool and resource lists may take in all, every page included
/// (the default of [`ConnectOptions::list_timeout`]). It starts after the handshake, whose own
/// limit is [`HANDSHAKE_TIMEOUT`].
pub const LIST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one page of a listing may take (never past the listing's own deadline).
pub const LIST_PAGE_TIMEOUT: Duration = Duration::from_secs(10);
/// The most pages one list (tools, resources) may have. Real servers list everything in one
/// page or a handful; a hundred leaves room for small pages of a big catalogue.
pub const MAX_LIST_PAGES: usize = 100;
/// The most tools one server may list: far beyond anything a person or a model can use, low
/// enough that the index and every tool lookup stay cheap.
pub const MAX_LISTED_TOOLS: usize = 10_000;
/// The most resources one server may list.
pub const MAX_LISTED_RESOURCES: usize = 10_000;
/// The most listed data one list may hold, measured as the JSON it serializes to (cursors
/// included). A big real catalogue is well under 1 MiB, and [`MAX_LISTED_TOOLS`] tools of 800
/// bytes each fit; what the host holds per server stays small and known whatever the server
/// sends. (rmcp's transports also drop any single message over 16 MiB, so no one page can be
/// larger than that.)
pub const MAX_LIST_BYTES: usize = 8 * 1024 * 1024;

/// Timeouts of one connection. `Default` gives the host's production values.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ConnectOptions {
    /// How long connecting and the MCP handshake may take (remote servers).
    pub handshake_timeout: Duration,
    /// How long a local (stdio) server may take to start and answer the handshake.
    pub stdio_start_timeout: Duration,
    /// How long a forwarded call may go without progress before it is cancelled.
    pub idle_timeout: Duration,
    /// How long a forwarded call may take in all, progress or not.
    pub max_call_duration: Duration,
    /// How long `resources/read` (and `resources/subscribe`) may take.
    pub request_timeout: Duration,
    /// How long reading the tool and resource lists may take in all (after the handshake, and
    /// on every refresh); one page may take [`LIST_PAGE_TIMEOUT`] at most.
    pub list_timeout: Duration,
    /// Who answers the server's `elicitation/create` and `sampling/createMessage`.
    pub requests: RequestHandler,
    /// The roots offered in `roots/list` (none by default).
    pub roots: Vec<Root>,
    /// How long an elicitation may wait for its answer before it is cancelled.
    pub elicitation_timeout: Duration,
    /// Where sign-in tokens of remote servers are kept when no system keyring answers, and where
    /// earlier versions kept them (default: the user's data directory; see
    /// [`TokenFile`](crate::server::auth::TokenFile)).
    pub token_dir: Option<std::path::PathBuf>,
    /// Who takes a person through sign-in (none: a server that needs it fails with
    /// [`Error::AuthRequired`]).
    pub authorizer: Option<SharedAuthorizer>,
    /// How the host registers with authorization servers (default: dynamic registration).
    pub client_registration: ClientRegistration,
    /// The server spoke a 2025 revision the last time (set by the server set for a restart): its
    /// `initialize` is sent at once, without a `server/discover` probe that a server which drops
    /// unknown methods would make wait 10 s again.
    pub(crate) known_legacy: bool,
}

/// A shared [`ServerRequests`] (a newtype so that [`ConnectOptions`] stays `Debug`).
#[derive(Clone)]
pub struct RequestHandler(pub Arc<dyn ServerRequests>);

impl std::fmt::Debug for RequestHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RequestHandler(..)")
    }
}

impl Default for RequestHandler {
    fn default() -> Self {
        Self(Arc::new(Unattended))
    }
}

impl Default for ConnectOptions {
    fn default() -> Self {
        Self {
            handshake_timeout: HANDSHAKE_TIMEOUT,
            stdio_start_timeout: STDIO_START_TIMEOUT,
            idle_timeout: IDLE_TIMEOUT,
            max_call_duration: MAX_CALL_DURATION,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            list_timeout: LIST_TIMEOUT,
            requests: RequestHandler::default(),
            roots: Vec::new(),
            elicitation_timeout: ELICITATION_TIMEOUT,
            token_dir: None,
            authorizer: None,
            client_registration: ClientRegistration::default(),
            known_legacy: false,
        }
    }
}

impl ConnectOptions {
    /// Sets how long connecting and the MCP handshake may take, for every kind of server.
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self.stdio_start_timeout = timeout;
        self
    }

    /// Sets how long a local (stdio) server may take to start and answer the handshake.
    pub fn stdio_start_timeout(mut self, timeout: Duration) -> Self {
        self.stdio_start_timeout = timeout;
        self
    }

    /// Sets the idle and total limits of forwarded calls.
    pub fn call_timeouts(mut self, idle: Duration, total: Duration) -> Self {
        self.idle_timeout = idle;
        self.max_call_duration = total;
        self
    }

    /// Sets how long `resources/read` may take.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets how long reading the tool and resource lists may take in all.
    pub fn list_timeout(mut self, timeout: Duration) -> Self {
        self.list_timeout = timeout;
        self
    }

    /// Sets who answers the server's elicitation and sampling requests.
    pub fn requests(mut self, requests: Arc<dyn ServerRequests>) -> Self {
        self.requests = RequestHandler(requests);
        self
    }

    /// Sets the roots offered in `roots/list`.
    pub fn roots(mut self, roots: Vec<Root>) -> Self {
        self.roots = roots;
        self
    }

    /// Sets where sign-in tokens are kept when no system keyring answers.
    pub fn token_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.token_dir = Some(dir.into());
        self
    }

    /// Sets who takes a person through sign-in.
    pub fn authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.authorizer = Some(SharedAuthorizer(authorizer));
        self
    }

    /// Sets how the host registers with authorization servers.
    pub fn client_registration(mut self, registration: ClientRegistration) -> Self {
        self.client_registration = registration;
        self
    }

    /// Sets how long an elicitation may wait for its answer.
    pub fn elicitation_timeout(mut self, timeout: Duration) -> Self {
        self.elicitation_timeout = timeout;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_options_builders_set_what_they_name() {
        let options = ConnectOptions::default()
            .handshake_timeout(Duration::from_secs(2))
            .call_timeouts(Duration::from_secs(3), Duration::from_secs(4))
            .request_timeout(Duration::from_secs(5))
            .list_timeout(Duration::from_secs(6));
        assert_eq!(
            (options.handshake_timeout, options.idle_timeout, options.max_call_duration, options.request_timeout),
            (Duration::from_secs(2), Duration::from_secs(3), Duration::from_secs(4), Duration::from_secs(5))
        );
        assert_eq!(options.list_timeout, Duration::from_secs(6));
        let default = ConnectOptions::default();
        assert_eq!((default.idle_timeout, default.max_call_duration), (IDLE_TIMEOUT, MAX_CALL_DURATION));
        assert_eq!(default.list_timeout, LIST_TIMEOUT);
    }
}
