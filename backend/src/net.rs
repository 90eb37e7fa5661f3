//! Bounded HTTP for probes: every request has a deadline and a response-size ceiling, and every
//! failure comes back as a [`ProbeFailure`] with an Agent Status Code and a short reason.
//!
//! A hung or hostile peer must cost one timeout and a bounded buffer, never a stuck pass or an
//! unbounded allocation. Reasons never include the request URL, which could carry credentials.

use std::error::Error as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use fleetdash_model::Asc;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

/// Why a probe failed, classified for machines ([`Asc`]) and worded for the operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeFailure {
    pub asc: Asc,
    pub reason: String,
    /// The peer sent an HTTP status line before things went wrong (oversized or stalled body):
    /// it is up, just not answering well.
    pub answered: bool,
}

impl ProbeFailure {
    pub fn new(asc: Asc, reason: impl Into<String>) -> Self {
        ProbeFailure {
            asc,
            reason: reason.into(),
            answered: false,
        }
    }

    fn after_answer(self) -> Self {
        ProbeFailure {
            answered: true,
            ..self
        }
    }

    /// The same failure with a prefix saying which probe it was ("card: ...").
    pub fn context(self, what: &str) -> Self {
        ProbeFailure {
            reason: format!("{what}: {}", self.reason),
            ..self
        }
    }
}

/// An HTTP answer of any status, with a body no larger than the ceiling.
#[derive(Debug)]
pub struct HttpReply {
    pub status: u16,
    pub body: Vec<u8>,
    pub elapsed: Duration,
}

impl HttpReply {
    /// 401 and 403 are the peer refusing us; everything else is for the caller to judge.
    pub fn permission_failure(&self) -> Option<ProbeFailure> {
        matches!(self.status, 401 | 403).then(|| {
            ProbeFailure::new(
                Asc::PERMISSION_DENIED,
                format!("HTTP {} (check the agent's token)", self.status),
            )
        })
    }

    pub fn json(&self) -> Result<Value, ProbeFailure> {
        serde_json::from_slice(&self.body).map_err(|e| {
            ProbeFailure::new(
                Asc::INTEGRITY_CHECK_FAILED,
                format!("reply is not valid JSON ({e})"),
            )
        })
    }
}

#[derive(Clone)]
pub struct ProbeClient {
    client: reqwest::Client,
    timeout: Duration,
    max_bytes: usize,
}

impl ProbeClient {
    pub fn new(timeout: Duration, max_bytes: usize) -> Self {
        let client = reqwest::Client::builder()
            .user_agent(concat!("fleetdash/", env!("CARGO_PKG_VERSION")))
            // Fleet endpoints are loopback tunnels; an inherited proxy setting would misroute them.
            .no_proxy()
            .redirect(reqwest::redirect::Policy::limited(3))
            .connect_timeout(timeout)
            .build()
            .expect("the HTTP client builds with static settings");
        ProbeClient {
            client,
            timeout,
            max_bytes,
        }
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    pub async fn get(
        &self,
        url: url::Url,
        bearer: Option<&str>,
    ) -> Result<HttpReply, ProbeFailure> {
        let mut req = self.client.get(url);
        if let Some(token) = bearer {
            // Replace, never append: credentials in the endpoint URL already gave the request a
            // Basic Authorization header, and a request may carry only one (RFC 9110 §11.6.2).
            let value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                ProbeFailure::new(
                    Asc::FAILED_PRECONDITION,
                    "the configured token is not a valid header value",
                )
            })?;
            req = req.headers(HeaderMap::from_iter([(AUTHORIZATION, value)]));
        }
        self.send(req).await
    }

    pub async fn post_json(
        &self,
        url: url::Url,
        headers: &[(&'static str, &'static str)],
        body: &Value,
        bearer: Option<&str>,
    ) -> Result<HttpReply, ProbeFailure> {
        let mut map = HeaderMap::new();
        map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for (name, value) in headers {
            map.insert(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        if let Some(token) = bearer {
            let value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                ProbeFailure::new(
                    Asc::FAILED_PRECONDITION,
                    "the configured token is not a valid header value",
                )
            })?;
            map.insert(AUTHORIZATION, value);
        }
        let req = self.client.post(url).headers(map).body(body.to_string());
        self.send(req).await
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> Result<HttpReply, ProbeFailure> {
        let started = Instant::now();
        let answered = AtomicBool::new(false);
        let exchange = async {
            let mut resp = req.send().await.map_err(classify)?;
            answered.store(true, Ordering::Relaxed);
            let status = resp.status().as_u16();
            if resp
                .content_length()
                .is_some_and(|n| n > self.max_bytes as u64)
            {
                return Err(self.too_large());
            }
            let mut body = Vec::new();
            while let Some(chunk) = resp.chunk().await.map_err(classify)? {
                if body.len() + chunk.len() > self.max_bytes {
                    return Err(self.too_large());
                }
                body.extend_from_slice(&chunk);
            }
            Ok(HttpReply {
                status,
                body,
                elapsed: started.elapsed(),
            })
        };
        let result = match tokio::time::timeout(self.timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(timed_out(self.timeout)),
        };
        match result {
            Err(failure) if answered.load(Ordering::Relaxed) => Err(failure.after_answer()),
            other => other,
        }
    }

    fn too_large(&self) -> ProbeFailure {
        ProbeFailure::new(
            Asc::INTEGRITY_CHECK_FAILED,
            format!("reply larger than {} bytes, refused", self.max_bytes),
        )
    }
}

fn timed_out(limit: Duration) -> ProbeFailure {
    ProbeFailure::new(
        Asc::TIMEOUT,
        format!("no answer within {}", humantime::format_duration(limit)),
    )
}

/// Turns a transport error into words an operator can act on.
fn classify(err: reqwest::Error) -> ProbeFailure {
    let err = err.without_url();
    if err.is_timeout() {
        return ProbeFailure::new(Asc::TIMEOUT, "timed out");
    }
    let mut source = err.source();
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            let reason = match io.kind() {
                ConnectionRefused => "connection refused",
                ConnectionReset => "connection reset by peer",
                ConnectionAborted => "connection aborted",
                UnexpectedEof => "connection closed before a complete reply",
                _ => "",
            };
            if !reason.is_empty() {
                return ProbeFailure::new(Asc::DEPENDENCY_UNAVAILABLE, reason);
            }
        }
        source = s.source();
    }
    let mut words = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        words = format!("{words}: {s}");
        source = s.source();
    }
    if err.is_connect() {
        return ProbeFailure::new(
            Asc::DEPENDENCY_UNAVAILABLE,
            format!("cannot connect ({words})"),
        );
    }
    if err.is_body() || err.is_decode() {
        return ProbeFailure::new(
            Asc::INTEGRITY_CHECK_FAILED,
            format!("broken reply ({words})"),
        );
    }
    ProbeFailure::new(Asc::DEPENDENCY_UNAVAILABLE, words)
}
