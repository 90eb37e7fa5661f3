//! One guard in front of every route of the intake (issue 32): `/` (A2A), `/mcp`, `/metrics`,
//! the card and `/act` pass the same checks, in this order, each refusing before anything
//! costly:
//!
//! 1. the token, on the routes that need one (401, and the connection closed: nothing of its
//!    body is read); the hub agent's or the operator's on `/mcp` (403 for another agent's);
//! 2. the connection claimed for the caller's share ([`super::pools`]): 429 when every one of
//!    its connections on this face is in a request;
//! 3. the declared length (413), the media type of a POST to `/` or `/mcp` (415), the body read
//!    under `[intake] max_body_bytes` and within `body_timeout` (413, 408): a body trickled a
//!    byte a second is cut on every route alike;
//! 4. on `/mcp` and `/metrics`, the token's read budget (429); on `/mcp`, a body that is no
//!    JSON-RPC message is answered a JSON-RPC error (parse error, invalid request) before the
//!    MCP SDK sees it, and the SDK's own refusals leave as problem+json.
//!
//! `/` spends its budget itself, once it knows whether the request reports or reads.
//! Every refusal is `application/problem+json` with the ASC envelope, or a JSON-RPC error with
//! it where the route speaks JSON-RPC.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::guard::{Budget, Caller, Problem};
use super::pools::{Busy, Face, Handle, Holder};
use super::wire::{self, AscError, Dialect, RpcError, code};
use super::{Intake, MCP_PATH};

/// What a route needs of its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    /// `POST /`: A2A JSON-RPC, any known token.
    Rpc,
    /// `/mcp`: the hub agent's or the operator's token.
    Mcp,
    /// `GET /metrics`: any known token (the handler lets the operator's in).
    Metrics,
    /// The card, `/act` (its signed link is its authorization), refusals: no token.
    Open,
}

impl Route {
    fn of(method: &Method, path: &str) -> Route {
        match path {
            "/" if method == Method::POST => Route::Rpc,
            MCP_PATH => Route::Mcp,
            "/metrics" if method == Method::GET => Route::Metrics,
            _ => Route::Open,
        }
    }

    fn face(self) -> Option<Face> {
        match self {
            Route::Rpc | Route::Metrics => Some(Face::A2a),
            Route::Mcp => Some(Face::Mcp),
            Route::Open => None,
        }
    }
}

/// A refusal after which the connection is not kept: its body was not read.
fn closing(response: impl IntoResponse) -> Response {
    let mut response = response.into_response();
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

pub(super) async fn guard(
    State(intake): State<Arc<Intake>>,
    request: Request,
    next: Next,
) -> Response {
    let route = Route::of(request.method(), request.uri().path());
    let handle = request.extensions().get::<Handle>().cloned();
    let caller = match route.face() {
        None => None,
        Some(_) => {
            let Some(caller) = intake
                .options
                .tokens
                .identify(request.headers().get(header::AUTHORIZATION))
            else {
                if route == Route::Rpc {
                    super::count_refused(&intake, "unread", &Problem::unauthorized().asc);
                }
                return closing(Problem::unauthorized());
            };
            if route == Route::Mcp
                && let Caller::Agent(agent) = &caller
                && !intake.options.hubs.contains(agent)
            {
                return closing(Problem::may_not_ask(agent));
            }
            Some(caller)
        }
    };
    let holder = caller
        .clone()
        .zip(route.face())
        .map(|(caller, face)| Holder { caller, face });
    let busy = match handle.map(|h| h.claim(holder)) {
        Some(Ok(busy)) => Some(busy),
        Some(Err(full)) => {
            tracing::debug!(?route, "intake: a token's connections are all in a request");
            return closing(Problem::too_many_connections(full.per_token));
        }
        // Served without the accept loop (a test's router): nothing to claim.
        None => None,
    };
    let refuse = |problem: Problem| {
        if route == Route::Rpc {
            super::count_refused(&intake, "unread", &problem.asc);
        }
        closing(problem)
    };
    let limit = intake.options.limits.max_body_bytes;
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return refuse(Problem::too_large(limit));
    }
    let posted = request.method() == Method::POST;
    if posted
        && matches!(route, Route::Rpc | Route::Mcp)
        && let Some(problem) = not_json(request.headers().get(header::CONTENT_TYPE))
    {
        return refuse(problem);
    }
    let (mut parts, body) = request.into_parts();
    let body = match read_body(body, limit, intake.options.limits.body_timeout).await {
        Ok(body) => body,
        Err(problem) => return refuse(problem),
    };
    if route == Route::Mcp
        && posted
        && let Some(error) = not_json_rpc(&body)
    {
        return error;
    }
    if let (Route::Mcp | Route::Metrics, Some(caller)) = (route, &caller)
        && let Err(problem) = super::spend(&intake, caller, Budget::Reads)
    {
        return problem.into_response();
    }
    if let Some(caller) = caller {
        parts.extensions.insert(caller);
    }
    let response = next.run(Request::from_parts(parts, Body::from(body))).await;
    let response = if route == Route::Mcp {
        mcp_refusal_as_problem(response).await
    } else {
        response
    };
    // The connection stays busy (never closed to make room) until the answer is sent.
    match busy {
        Some(busy) => response.map(|body| Body::new(Held { body, _busy: busy })),
        None => response,
    }
}

/// A request whose `Content-Type` is not JSON (`application/json`, or a `+json` type) is
/// refused before its body is read: JSON-RPC over HTTP is JSON, and a form or text body
/// accepted silently hides a misconfigured client.
fn not_json(content_type: Option<&HeaderValue>) -> Option<Problem> {
    let Some(value) = content_type else {
        return Some(Problem::unsupported_media_type(None));
    };
    let essence = value
        .to_str()
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    (essence != "application/json" && !essence.ends_with("+json"))
        .then(|| Problem::unsupported_media_type(value.to_str().ok()))
}

/// The body, within `limit` bytes and `deadline`.
async fn read_body(body: Body, limit: usize, deadline: Duration) -> Result<Vec<u8>, Problem> {
    match tokio::time::timeout(deadline, axum::body::to_bytes(body, limit)).await {
        Err(_) => Err(Problem::too_slow(deadline)),
        Ok(Ok(bytes)) => Ok(bytes.to_vec()),
        Ok(Err(e)) => {
            let too_large = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
            Err(if too_large {
                Problem::too_large(limit)
            } else {
                Problem::unreadable()
            })
        }
    }
}

/// A JSON-RPC error with the ASC envelope in its data, as the MCP face answers it.
fn rpc_refusal(code: i64, message: String) -> Response {
    let error = RpcError {
        code,
        message,
        asc: Some(AscError {
            asc: super::guard::INVALID_REQUEST,
            terminal: true,
            facts: Vec::new(),
        }),
    };
    (
        StatusCode::BAD_REQUEST,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        wire::error(&Value::Null, Dialect::V03, &error).to_string(),
    )
        .into_response()
}

/// `None` when `body` is a JSON-RPC 2.0 message (or a batch of them, the MCP SDK's to judge);
/// else the JSON-RPC error that says why (JSON-RPC 2.0 §5: parse error, invalid request).
fn not_json_rpc(body: &[u8]) -> Option<Response> {
    let value: Value = match serde_json::from_slice(body) {
        Ok(value) => value,
        Err(e) => {
            return Some(rpc_refusal(
                code::PARSE_ERROR,
                format!("not JSON: {}", crate::text::clean(&e.to_string(), 120)),
            ));
        }
    };
    let message = |m: &Value| m.get("jsonrpc").and_then(Value::as_str) == Some("2.0");
    let fine = match &value {
        Value::Object(_) => message(&value),
        Value::Array(batch) => !batch.is_empty() && batch.iter().all(message),
        _ => false,
    };
    (!fine).then(|| {
        rpc_refusal(
            code::INVALID_REQUEST,
            "a JSON-RPC 2.0 message is an object with \"jsonrpc\": \"2.0\"".into(),
        )
    })
}

/// The MCP SDK refuses in plain text (a wrong Accept header, an unknown session): the same
/// refusal as problem+json with the ASC envelope, its words kept as the detail.
async fn mcp_refusal_as_problem(response: Response) -> Response {
    let status = response.status();
    let plain = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|t| t.starts_with("text/plain"));
    if !(status.is_client_error() || status.is_server_error()) || !plain {
        return response;
    }
    let words = axum::body::to_bytes(response.into_body(), 4096)
        .await
        .map(|b| crate::text::clean(&String::from_utf8_lossy(&b), 300))
        .unwrap_or_default();
    Problem::from_mcp(status, words).into_response()
}

/// An answer's body holding its connection busy until it is sent whole.
struct Held {
    body: Body,
    _busy: Busy,
}

impl http_body::Body for Held {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_json_rpc_message_reaches_the_mcp_sdk() {
        assert!(not_json_rpc(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).is_none());
        assert!(not_json_rpc(br#"[{"jsonrpc":"2.0","method":"x"}]"#).is_none());
        for bad in [&b"{not json"[..], b"[]", b"42", br#"{"id":1,"method":"x"}"#] {
            let answer = not_json_rpc(bad).expect("refused");
            assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
        }
    }

    #[test]
    fn routes_say_what_they_need() {
        assert_eq!(Route::of(&Method::POST, "/"), Route::Rpc);
        assert_eq!(Route::of(&Method::GET, "/"), Route::Open);
        assert_eq!(Route::of(&Method::DELETE, "/mcp"), Route::Mcp);
        assert_eq!(Route::of(&Method::GET, "/metrics"), Route::Metrics);
        assert_eq!(Route::of(&Method::POST, "/act"), Route::Open);
        assert_eq!(Route::Mcp.face(), Some(Face::Mcp));
    }
}
