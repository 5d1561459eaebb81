//! Change notifications from a 2026-07-28 server. That revision sends list changes and resource
//! updates only on a `subscriptions/listen` stream the client opened, for what it asked for
//! (2025 servers send them unasked, and take `resources/subscribe` for updates).

use std::time::Duration;

use rmcp::model::{ServerCapabilities, ServerNotification, SubscriptionFilter};
use rmcp::service::Subscription;
use rmcp::{Peer, RoleClient, ServiceError};
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

use super::host_client::ServerChange;

/// One server's listen stream: what it asked for and the task that relays it.
#[derive(Default)]
pub(super) struct Listening {
    /// The resources whose updates are asked for.
    uris: Vec<String>,
    relay: Option<JoinHandle<()>>,
}

impl Listening {
    /// Opens the stream for what the server offers (list changes of tools and resources) and the
    /// resources asked for so far plus `uri`, replacing the stream before it; the acknowledgment
    /// must come within `limit`. A server that refuses keeps what worked before.
    pub async fn listen(
        &mut self,
        peer: &Peer<RoleClient>,
        uri: Option<&str>,
        changes: &broadcast::Sender<ServerChange>,
        limit: Duration,
    ) -> Result<(), ServiceError> {
        let capabilities = peer.peer_info().map(|i| i.capabilities.clone()).unwrap_or_default();
        let mut uris = self.uris.clone();
        if let Some(uri) = uri {
            if !uris.iter().any(|u| u == uri) {
                uris.push(uri.to_owned());
            }
        }
        let Some(filter) = filter(&capabilities, &uris) else { return Ok(()) };
        let subscription = open(peer, filter.clone(), limit).await?;
        let accepted = subscription.acknowledged().resource_subscriptions.clone().unwrap_or_default();
        // The stream carries what it accepted either way; the caller hears of a refused URI.
        self.replace(tokio::spawn(relay(peer.clone(), filter, subscription, changes.clone(), limit)));
        if let Some(uri) = uri.filter(|uri| !accepted.iter().any(|u| u == uri)) {
            tracing::info!("the server did not accept updates of {uri} on its listen stream");
            let message = format!("the server does not announce updates of {uri}");
            return Err(ServiceError::McpError(rmcp::ErrorData::invalid_params(message, None)));
        }
        self.uris = uris;
        Ok(())
    }

    /// The new stream is acknowledged: the old one (and its listen request) can go.
    fn replace(&mut self, relay: JoinHandle<()>) {
        if let Some(old) = self.relay.replace(relay) {
            old.abort();
        }
    }

    /// Ends the stream.
    pub fn stop(&mut self) {
        if let Some(relay) = self.relay.take() {
            relay.abort();
        }
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A listen stream, acknowledged within `limit`.
async fn open(
    peer: &Peer<RoleClient>,
    filter: SubscriptionFilter,
    limit: Duration,
) -> Result<Subscription, ServiceError> {
    match tokio::time::timeout(limit, peer.listen(filter)).await {
        Ok(answer) => answer,
        Err(_) => Err(ServiceError::Timeout { timeout: limit }),
    }
}

/// The longest wait before a stream that ended is opened again.
const RELISTEN_MAX: Duration = Duration::from_secs(30);

/// Relays a stream's notifications as [`ServerChange`]s. A stream that ends while the connection
/// lives (the server closed it, a proxy dropped it) is opened again, after 1 s, doubling up to
/// [`RELISTEN_MAX`]: the host would otherwise stop hearing of changes for good.
async fn relay(
    peer: Peer<RoleClient>,
    filter: SubscriptionFilter,
    mut subscription: Subscription,
    changes: broadcast::Sender<ServerChange>,
    limit: Duration,
) {
    let mut pause = Duration::from_secs(1);
    loop {
        let change = match subscription.next().await {
            Ok(Some(ServerNotification::ToolListChangedNotification(_))) => ServerChange::Tools,
            Ok(Some(ServerNotification::ResourceListChangedNotification(_))) => ServerChange::Resources,
            Ok(Some(ServerNotification::ResourceUpdatedNotification(n))) => ServerChange::ResourceUpdated(n.params.uri),
            Ok(Some(_)) => continue,
            ended => {
                if let Err(e) = ended {
                    tracing::warn!("the server's subscriptions/listen stream ended: {e}");
                }
                loop {
                    if peer.is_transport_closed() {
                        return;
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(RELISTEN_MAX);
                    match open(&peer, filter.clone(), limit).await {
                        Ok(again) => {
                            subscription = again;
                            break;
                        }
                        Err(e) => tracing::warn!("subscriptions/listen again failed: {e}"),
                    }
                }
                continue;
            }
        };
        pause = Duration::from_secs(1);
        let _ = changes.send(change);
    }
}

/// What to listen to: the list changes the server says it announces, and updates of `uris` when
/// it offers resource subscriptions. `None` when that is nothing.
fn filter(capabilities: &ServerCapabilities, uris: &[String]) -> Option<SubscriptionFilter> {
    let mut filter = SubscriptionFilter::builder();
    let mut any = false;
    if capabilities.tools.as_ref().and_then(|t| t.list_changed).unwrap_or(false) {
        filter = filter.tools_list_changed();
        any = true;
    }
    let resources = capabilities.resources.as_ref();
    if resources.and_then(|r| r.list_changed).unwrap_or(false) {
        filter = filter.resources_list_changed();
        any = true;
    }
    if !uris.is_empty() && resources.and_then(|r| r.subscribe).unwrap_or(false) {
        filter = filter.resource_subscriptions(uris.iter().cloned());
        any = true;
    }
    any.then(|| filter.build())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn capabilities(value: serde_json::Value) -> ServerCapabilities {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn the_filter_asks_for_what_the_server_offers_and_nothing_else() {
        let none = capabilities(json!({"tools": {}, "resources": {}}));
        assert!(filter(&none, &["ui://a".into()]).is_none());

        let lists = capabilities(json!({"tools": {"listChanged": true}, "resources": {"listChanged": true}}));
        let asked = serde_json::to_value(filter(&lists, &["ui://a".into()]).unwrap()).unwrap();
        assert_eq!(asked, json!({"toolsListChanged": true, "resourcesListChanged": true}));

        let updates = capabilities(json!({"resources": {"subscribe": true}}));
        let asked = serde_json::to_value(filter(&updates, &["ui://a".into(), "ui://b".into()]).unwrap()).unwrap();
        assert_eq!(asked, json!({"resourceSubscriptions": ["ui://a", "ui://b"]}));
        assert!(filter(&updates, &[]).is_none());
    }
}
