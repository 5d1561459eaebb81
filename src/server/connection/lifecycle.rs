//! How a connection starts, and so which MCP revision it speaks: 2026-07-28 (`server/discover`,
//! the client's capabilities in every request's `_meta`) with servers that offer it, the
//! `initialize` handshake (2025-11-25 and older) with the rest.

use std::time::Duration;

use rmcp::model::{ProtocolVersion, ServerResult};
use rmcp::service::{ClientInitializeError, ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::IntoTransport;
use rmcp::RoleClient;

use super::errors::{auth_challenge, describe_init_error};
use super::host_client::HostClient;

/// How a connection is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Startup {
    /// `server/discover` first; when the server does not know it (an error answer, or silence for
    /// rmcp's fixed 10 s), `initialize` on the same connection.
    Probe,
    /// `initialize` only: legacy HTTP+SSE and the built-in servers (2025 revisions by
    /// definition), and the second try at a server that answered `server/discover` with a
    /// success that is not a discovery result.
    Initialize,
}

impl Startup {
    fn mode(self) -> ClientLifecycleMode {
        match self {
            Startup::Probe => ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
            },
            Startup::Initialize => ClientLifecycleMode::Initialize,
        }
    }

    /// What the handshake waits for, for a timeout's sentence.
    fn awaited(self) -> &'static str {
        match self {
            Startup::Probe => "server/discover or initialize",
            Startup::Initialize => "initialize",
        }
    }
}

/// How the revision of a connection was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Negotiation {
    /// `server/discover` (2026-07-28 and later): no session state, capabilities per request.
    Discover,
    /// The `initialize` handshake (2025-11-25 and older).
    Initialize,
}

impl Negotiation {
    /// How a revision is negotiated: the revisions after 2025-11-25 have no `initialize`.
    pub(super) fn of(version: &ProtocolVersion) -> Self {
        if version.has_initialize() {
            Negotiation::Initialize
        } else {
            Negotiation::Discover
        }
    }

    /// The method that negotiated it, as people read it.
    pub fn method(self) -> &'static str {
        match self {
            Negotiation::Discover => "server/discover",
            Negotiation::Initialize => "initialize",
        }
    }
}

/// Why a handshake failed.
#[derive(Debug)]
pub(super) struct HandshakeFailure {
    /// One sentence.
    pub reason: String,
    /// The `WWW-Authenticate` challenge, when the server asked for sign-in.
    pub challenge: Option<String>,
    /// The server answered `server/discover` with a success that is not a discovery result (the
    /// conformance suite's servers answer `{}` to any method they do not know), or with only
    /// revisions the host does not speak: rmcp does not fall back then, so the caller starts a
    /// fresh connection with [`Startup::Initialize`], as for a server that refused the probe.
    pub try_initialize: bool,
}

/// The MCP handshake on any transport, bounded by `deadline`.
pub(super) async fn handshake<T, E, A>(
    client: HostClient,
    transport: T,
    startup: Startup,
    deadline: tokio::time::Instant,
    limit: Duration,
) -> Result<RunningService<RoleClient, HostClient>, HandshakeFailure>
where
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    match tokio::time::timeout_at(deadline, client.serve_with_lifecycle(transport, startup.mode())).await {
        Ok(Ok(service)) => Ok(service),
        Ok(Err(e)) => {
            let try_initialize = startup == Startup::Probe && falls_back_to_initialize(&e);
            let reason = match &e {
                ClientInitializeError::ExpectedInitResult(Some(_)) if try_initialize => {
                    "the server answered server/discover with something that is not a discovery result".to_owned()
                }
                ClientInitializeError::NoCompatibleProtocolVersion { server_supported, .. } if try_initialize => {
                    format!("the server offers by server/discover only revisions the host does not speak ({server_supported:?})")
                }
                _ => describe_init_error(&e),
            };
            if try_initialize {
                tracing::info!("{reason}: trying initialize on a fresh connection");
            }
            Err(HandshakeFailure { reason, challenge: auth_challenge(&e), try_initialize })
        }
        Err(_) => Err(HandshakeFailure {
            reason: format!("no answer to {} within {} s", startup.awaited(), limit.as_secs_f32()),
            challenge: None,
            try_initialize: false,
        }),
    }
}

/// A probe answer after which `initialize` is tried: a success to `server/discover` that is not
/// a discovery result (and not a late `initialize` answer either: rmcp reports both the same
/// way), or a discovery (or version error) that offers no revision the host speaks: a server
/// may speak a 2025 revision by `initialize` besides, as it would after an error answer.
fn falls_back_to_initialize(error: &ClientInitializeError) -> bool {
    match error {
        ClientInitializeError::ExpectedInitResult(Some(answer)) => !matches!(answer, ServerResult::DiscoverResult(_)),
        ClientInitializeError::NoCompatibleProtocolVersion { .. } => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_revision_says_how_it_was_negotiated() {
        assert_eq!(Negotiation::of(&ProtocolVersion::V_2026_07_28), Negotiation::Discover);
        assert_eq!(Negotiation::of(&ProtocolVersion::V_2025_11_25), Negotiation::Initialize);
        assert_eq!(Negotiation::of(&ProtocolVersion::V_2025_03_26), Negotiation::Initialize);
        assert_eq!(Negotiation::Discover.method(), "server/discover");
    }

    #[test]
    fn only_a_probe_tries_initialize_after_an_answer_that_is_not_discovery() {
        let odd = ClientInitializeError::ExpectedInitResult(Some(ServerResult::empty(())));
        assert!(falls_back_to_initialize(&odd));
        assert!(!falls_back_to_initialize(&ClientInitializeError::ExpectedInitResult(None)));
        let unsupported = ClientInitializeError::NoCompatibleProtocolVersion {
            client_supported: vec![ProtocolVersion::V_2026_07_28],
            server_supported: vec![],
        };
        assert!(falls_back_to_initialize(&unsupported));
        assert!(matches!(Startup::Probe.mode(), ClientLifecycleMode::Auto { .. }));
        assert!(matches!(Startup::Initialize.mode(), ClientLifecycleMode::Initialize));
    }
}
