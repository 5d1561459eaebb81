//! A server as a View's bridge sees it: calls go through the server set, so a failed server is
//! restarted when a View needs it.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::ServerSet;
use crate::bridge::{BoxFuture, CallControl, ServerPort};
use crate::error::{Error, Result};
use crate::protocol::jsonrpc::code;
use crate::protocol::RpcError;
use crate::server::connection::auth_challenge_of;

impl ServerSet {
    /// A [`ServerPort`] for a View of `name`: every call goes to the server's current connection,
    /// restarting it on demand, so a View outlives a crash of its server.
    pub fn port(self: &Arc<Self>, name: &str) -> Arc<dyn ServerPort> {
        Arc::new(ServerSetPort { set: self.clone(), server: name.to_owned() })
    }
}

struct ServerSetPort {
    set: Arc<ServerSet>,
    server: String,
}

fn unavailable(e: Error) -> RpcError {
    RpcError::new(code::UNAVAILABLE, e.to_string())
}

impl ServerPort for ServerSetPort {
    fn call_tool(
        &self,
        name: String,
        arguments: Option<Map<String, Value>>,
        control: CallControl,
    ) -> BoxFuture<Result<Value, RpcError>> {
        let (set, server) = (self.set.clone(), self.server.clone());
        Box::pin(async move {
            let conn = set.connection(&server).await.map_err(unavailable)?;
            let CallControl { progress, cancelled, meta } = control;
            let again = CallControl { progress: progress.clone(), cancelled: None, meta: meta.clone() };
            let first =
                conn.call_tool(name.clone(), arguments.clone(), CallControl { progress, cancelled, meta }).await;
            // Refused for want of sign-in (an expired session, step-up): sign in, then once more.
            let Some(challenge) = first.as_ref().err().and_then(auth_challenge_of).map(str::to_owned) else {
                return first;
            };
            set.needs_sign_in(&server, &challenge).await;
            let conn = set.connection(&server).await.map_err(unavailable)?;
            conn.call_tool(name, arguments, again).await
        })
    }

    fn request(&self, method: &str, params: Value) -> BoxFuture<Result<Value, RpcError>> {
        let (set, server, method) = (self.set.clone(), self.server.clone(), method.to_owned());
        Box::pin(async move {
            let conn = set.connection(&server).await.map_err(unavailable)?;
            conn.request(&method, params).await
        })
    }

    fn tool(&self, name: &str) -> Option<Value> {
        // A failed server's last known tools: the call itself restarts it.
        let known = self.set.with_entry(&self.server, |e| e.connection.clone().or_else(|| e.last.clone()));
        known.flatten().and_then(|c| c.tool(name))
    }

    fn listed_tool(&self, name: &str) -> Option<crate::ui_resource::ListedTool> {
        let known = self.set.with_entry(&self.server, |e| e.connection.clone().or_else(|| e.last.clone()));
        known.flatten().and_then(|c| c.listed_tool(name))
    }
}
