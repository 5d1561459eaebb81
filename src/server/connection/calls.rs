//! Requests to the server, each to its final answer: timeouts, progress routes, cancellation,
//! and the `input_required` rounds of a 2026-07-28 server (answered as the same questions of a
//! 2025 server are, then sent again with the answers and the server's `requestState`).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ClientRequest, InputResponses, ReadResourceRequestParams,
    Request, ServerResult,
};
use rmcp::service::PeerRequestOptions;
use rmcp::ServiceError;
use serde_json::{json, Map, Value};

use super::errors::rpc_error;
use super::host_client::MAX_INPUT_ROUNDS;
#[cfg(doc)]
use super::options::{ConnectOptions, IDLE_TIMEOUT, MAX_CALL_DURATION};
use super::options::{CANCEL_GUARD, SEND_TIMEOUT};
use super::Connection;
use crate::bridge::CallControl;
use crate::protocol::jsonrpc::code;
use crate::protocol::RpcError;

impl Connection {
    /// `tools/call`: cancelled after [`IDLE_TIMEOUT`] without progress or [`MAX_CALL_DURATION`] in
    /// all (or the limits given in [`ConnectOptions`]); progress goes to `control.progress`, and
    /// `control.cancelled` cancels it at the server.
    pub async fn call_tool(
        &self,
        name: String,
        arguments: Option<Map<String, Value>>,
        mut control: CallControl,
    ) -> Result<Value, RpcError> {
        let mut params = CallToolRequestParams::new(name);
        if let Some(args) = arguments {
            params = params.with_arguments(args);
        }
        // rmcp adds its progress token and protocol metadata to whatever is here.
        params.meta = control.meta.take().map(rmcp::model::RequestMetaObject::from);
        let request = ClientRequest::CallToolRequest(Request::new(params));
        let result = self.send(request, control).await?;
        serde_json::to_value(result).map_err(|e| RpcError::new(code::INTERNAL_ERROR, e.to_string()))
    }

    /// Another request (`resources/read`, `resources/list`, `resources/templates/list`,
    /// `prompts/list`), from its JSON params.
    ///
    /// Answers to a server's questions (`inputResponses`, `requestState`) come from the
    /// server's `input_required` only: whatever the caller (a View's forwarded request) put in
    /// `params` is dropped.
    pub async fn request(&self, method: &str, mut params: Value) -> Result<Value, RpcError> {
        if let Some(params) = params.as_object_mut() {
            params.remove("inputResponses");
            params.remove("requestState");
        }
        let request: ClientRequest = serde_json::from_value(json!({"method": method, "params": params}))
            .map_err(|e| RpcError::invalid_params(format!("{method}: {e}")))?;
        let result = self.send(request, CallControl::default()).await?;
        serde_json::to_value(result).map_err(|e| RpcError::new(code::INTERNAL_ERROR, e.to_string()))
    }

    /// One request to its final answer: a 2026-07-28 server may first answer `input_required`
    /// (multi round-trip requests), asking elicitation, sampling or roots inside its result; the
    /// host answers them as it answers the same requests of a 2025 server, and sends the request
    /// again with the answers and the server's `requestState`, for [`MAX_INPUT_ROUNDS`] at most.
    async fn send(&self, request: ClientRequest, control: CallControl) -> Result<ServerResult, RpcError> {
        let CallControl { progress, cancelled, .. } = control;
        // One cancellation for all rounds: the View cancels the call, not one round of it.
        let cancelled = async move {
            match cancelled {
                Some(rx) => rx.await.ok(),
                None => std::future::pending().await,
            }
        }
        .boxed()
        .shared();
        let was_cancelled = |reason: Option<Option<String>>| {
            let reason = reason.flatten().unwrap_or_else(|| "by the View".into());
            RpcError::new(code::UNAVAILABLE, format!("cancelled: {reason}"))
        };
        let mut request = request;
        let mut state_only = 0;
        for _ in 0..MAX_INPUT_ROUNDS {
            let result = self.send_once(request.clone(), progress.clone(), cancelled.clone()).await?;
            let ServerResult::InputRequiredResult(asked) = result else { return Ok(result) };
            let asks = asked.input_requests.as_ref().is_some_and(|r| !r.is_empty());
            if !asks && asked.request_state.is_none() {
                return Err(RpcError::new(code::UNAVAILABLE, "the server asked for input without saying what"));
            }
            let state = asked.request_state.clone();
            let answers = tokio::select! {
                // A cancel that came with the answers wins: nothing is sent for a cancelled call.
                biased;
                reason = cancelled.clone() => return Err(was_cancelled(reason)),
                () = self.gone() => {
                    return Err(RpcError::new(code::UNAVAILABLE, "the connection ended while the server's question was open"));
                }
                answers = self.client.answer_input(asked) => answers.map_err(|e| rpc_error(ServiceError::McpError(e)))?,
            };
            if let Some(reason) = cancelled.peek() {
                return Err(was_cancelled(reason.clone()));
            }
            if asks {
                state_only = 0;
            } else {
                tokio::time::sleep(state_only_pause(state_only)).await;
                state_only += 1;
            }
            request = with_input(&request, answers, state)?;
        }
        Err(RpcError::new(
            code::UNAVAILABLE,
            format!("the server still asked for input after {MAX_INPUT_ROUNDS} rounds; the request was given up"),
        ))
    }

    async fn send_once(
        &self,
        request: ClientRequest,
        progress: Option<tokio::sync::mpsc::UnboundedSender<Value>>,
        cancelled: impl Future<Output = Option<Option<String>>>,
    ) -> Result<ServerResult, RpcError> {
        let mut options = PeerRequestOptions::with_timeout(self.options.idle_timeout).reset_timeout_on_progress();
        options.max_total_timeout = Some(self.options.max_call_duration);
        let handle =
            match tokio::time::timeout(SEND_TIMEOUT, self.peer.send_cancellable_request(request, options)).await {
                Ok(Ok(h)) => h,
                Ok(Err(e)) => return Err(self.explain(e).await),
                Err(_) => {
                    let limit = SEND_TIMEOUT.as_secs();
                    let message = format!("the request could not be handed to the transport within {limit} s");
                    return Err(RpcError::new(code::UNAVAILABLE, message));
                }
            };
        let sent = tokio::time::Instant::now();
        let (id, peer) = (handle.id.clone(), handle.peer.clone());
        let key = serde_json::to_string(&handle.progress_token).unwrap_or_default();
        if let Some(route) = progress {
            self.progress.lock().unwrap_or_else(|e| e.into_inner()).insert(key.clone(), route);
        }
        // rmcp enforces both limits, but its own cancel on a timeout is a write without one.
        let limit = self.options.max_call_duration + SEND_TIMEOUT;
        let outcome = tokio::select! {
            r = tokio::time::timeout(limit, handle.await_response()) => match r {
                Ok(Ok(result)) => Ok(result),
                Ok(Err(e)) => Err(self.explain(e).await),
                Err(_) => Err(rpc_error(ServiceError::Timeout { timeout: self.options.max_call_duration })),
            },
            reason = cancelled => {
                tokio::time::sleep_until(sent + CANCEL_GUARD).await;
                let reason = reason.flatten();
                let cancel = peer.notify_cancelled(CancelledNotificationParam::new(Some(id), reason.clone()));
                let _ = tokio::time::timeout(SEND_TIMEOUT, cancel).await;
                Err(RpcError::new(code::UNAVAILABLE, format!("cancelled: {}", reason.unwrap_or_else(|| "by the View".into()))))
            }
        };
        self.progress.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
        outcome
    }

    /// `resources/read`, bounded by the request timeout.
    /// A 2026-07-28 server may ask for input first (`input_required`): the host answers it as it
    /// answers a server's own questions, and reads again.
    pub async fn read_resource(&self, uri: String) -> Result<Value, RpcError> {
        let request = ClientRequest::ReadResourceRequest(Request::new(ReadResourceRequestParams::new(uri)));
        let timeout = self.options.request_timeout;
        let result = match tokio::time::timeout(timeout, self.send(request, CallControl::default())).await {
            Err(_) => return Err(rpc_error(ServiceError::Timeout { timeout })),
            Ok(answer) => answer?,
        };
        serde_json::to_value(result).map_err(|e| RpcError::new(code::INTERNAL_ERROR, e.to_string()))
    }

    /// `resources/read` of a View's UI resource, whose result is kept for the next View of the
    /// same resource ([`Connection::kept_ui_resource`]).
    pub(crate) async fn read_ui_resource(&self, uri: String) -> Result<Value, RpcError> {
        let since = self.ui_cache.since();
        match self.read_resource(uri.clone()).await {
            Ok(read) => {
                self.ui_cache.keep(&uri, &read, since);
                Ok(read)
            }
            Err(e) => {
                self.ui_cache.release(&uri);
                Err(e)
            }
        }
    }

    /// What the last [`Connection::read_ui_resource`] of `uri` returned, unless the server said
    /// since that the resource changed, or the copy was too large to keep (see `ui_cache.rs`);
    /// with `true` when the caller is to read it again (one caller at a time).
    pub(crate) fn kept_ui_resource(&self, uri: &str) -> Option<(Arc<Value>, bool)> {
        self.ui_cache.get(uri)
    }

    /// Resolves once the connection is closed (shut down, or its transport ended): a question the
    /// server asked inside a result is withdrawn then.
    async fn gone(&self) {
        while !self.peer.is_transport_closed() && !*self.closed.borrow() {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

/// `request` again, with the answers to what the server asked and its `requestState` echoed
/// (as it came: the host never reads it).
fn with_input(
    request: &ClientRequest,
    answers: InputResponses,
    state: Option<String>,
) -> Result<ClientRequest, RpcError> {
    let internal = |e: serde_json::Error| RpcError::new(code::INTERNAL_ERROR, e.to_string());
    let mut value = serde_json::to_value(request).map_err(internal)?;
    let Some(params) = value.get_mut("params").and_then(Value::as_object_mut) else {
        return Err(cannot_carry(request));
    };
    params.remove("inputResponses");
    params.remove("requestState");
    if !answers.is_empty() {
        params.insert("inputResponses".into(), serde_json::to_value(answers).map_err(internal)?);
    }
    if let Some(state) = state {
        params.insert("requestState".into(), Value::String(state));
    }
    let again: ClientRequest = serde_json::from_value(value).map_err(internal)?;
    // A request whose params have no such fields (a listing) drops them: say so, rather than
    // asking the person the same question round after round.
    let kept = serde_json::to_value(&again).map_err(internal)?;
    let has = |key: &str| kept["params"].get(key).is_some();
    if !(has("inputResponses") || has("requestState")) {
        return Err(cannot_carry(request));
    }
    Ok(again)
}

fn cannot_carry(request: &ClientRequest) -> RpcError {
    let method = serde_json::to_value(request).ok().and_then(|v| v["method"].as_str().map(str::to_owned));
    RpcError::new(
        code::UNAVAILABLE,
        format!(
            "the server asked for input on `{}`, which cannot carry answers (only tools/call, resources/read and prompts/get can)",
            method.unwrap_or_default()
        ),
    )
}

/// How long to wait before sending again a request whose server asked for nothing but its
/// `requestState` back (it is not ready yet): 50 ms, doubling, at most 250 ms (as rmcp does).
fn state_only_pause(rounds: usize) -> Duration {
    Duration::from_millis((50u64 << rounds.min(3)).min(250))
}
