//! Bounded HTTP for probes: every request has a deadline and a response-size ceiling, and every
//! failure comes back as a [`ProbeFailure`] with an Agent Status Code and a short reason.
//!
//! A hung or hostile peer must cost one timeout and a bounded buffer, never a stuck pass or an
//! unbounded allocation. Reasons never include the request URL, which could carry credentials.
//!
//! A URL's `user:password` never reaches the HTTP client: the client logs the URLs it connects
//! to (`FLEETDASH_LOG=debug`), so the credentials are taken out here and travel only in the
//! Authorization header.

use std::error::Error as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use base64::Engine;
use fleetdash_model::Asc;
use percent_encoding::percent_decode_str;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

/// Why a probe failed, classified for machines ([`Asc`]) and worded for the operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeFailure {
    pub asc: Asc,
    pub reason: String,
    /// The peer sent an HTTP status line before things went wrong (oversized or stalled body,
    /// redirects that lead nowhere): it is up, just not answering well.
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

/// Redirects followed for one request; one more is "too many".
pub const MAX_REDIRECTS: usize = 3;

/// Why a chain of redirects was not followed to its end. The peer answered (it is up), but its
/// answers lead nowhere: a misconfiguration its operator has to fix.
#[derive(Debug)]
struct RedirectStopped {
    /// The status of the last redirect.
    status: u16,
    /// Redirects answered so far, this one included.
    redirects: usize,
    /// The last one led back to an address already requested.
    looped: bool,
}

impl std::fmt::Display for RedirectStopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // No address in the words: the peer chose them, and they may carry credentials.
        if self.looped {
            write!(
                f,
                "HTTP {}: redirect loop (back to an address already requested after {} redirect{})",
                self.status,
                self.redirects,
                if self.redirects == 1 { "" } else { "s" }
            )
        } else {
            write!(
                f,
                "HTTP {}: more than {MAX_REDIRECTS} redirects",
                self.status
            )
        }
    }
}

impl std::error::Error for RedirectStopped {}

/// Follows up to [`MAX_REDIRECTS`] redirects and stops at the first that leads back to an
/// address already requested.
fn redirect_policy() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        // `previous` holds every address requested so far, the one that redirected included.
        let requested = attempt.previous();
        let looped = requested.contains(attempt.url());
        if looped || requested.len() > MAX_REDIRECTS {
            let stopped = RedirectStopped {
                status: attempt.status().as_u16(),
                redirects: requested.len(),
                looped,
            };
            attempt.error(stopped)
        } else {
            attempt.follow()
        }
    })
}

/// An HTTP answer of any status, with a body no larger than the ceiling.
#[derive(Debug)]
pub struct HttpReply {
    pub status: u16,
    /// The `Date` header as sent (the peer's clock; `fleetdash doctor` compares it with ours).
    pub date: Option<String>,
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
            .redirect(redirect_policy())
            .connect_timeout(timeout)
            // No idle keep-alive connections (issue 35). A peer is asked a few times a pass, a
            // pass a minute or less often, so a kept connection saves little more than a connect,
            // and each holds about 30 KiB in hyper (read and write buffers, dispatch channel):
            // reqwest's default keeps every one, per host, for 90 s after its last use. At 1,000
            // agents that is thousands of sockets between passes. In agents_pass (one host), the
            // pool let idle sockets pile up beside those in use (540 to 660 open at once, 514 to
            // 528 without) and the RSS grow from pass to pass (FLEETDASH_BENCH_PASSES=6).
            .pool_max_idle_per_host(0)
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

    /// A GET of `url`; credentials in the URL go as Basic auth, unless a bearer token is given.
    pub async fn get(
        &self,
        url: url::Url,
        bearer: Option<&str>,
    ) -> Result<HttpReply, ProbeFailure> {
        let (url, authorization) = authorize(url, bearer)?;
        let mut map = HeaderMap::new();
        if let Some(value) = authorization {
            map.insert(AUTHORIZATION, value);
        }
        self.send(self.client.get(url).headers(map)).await
    }

    /// A POST of `body` as JSON to `url`, with `headers`; credentials as for [`Self::get`].
    pub async fn post_json(
        &self,
        url: url::Url,
        headers: &[(&'static str, &'static str)],
        body: &Value,
        bearer: Option<&str>,
    ) -> Result<HttpReply, ProbeFailure> {
        let (url, authorization) = authorize(url, bearer)?;
        let mut map = HeaderMap::new();
        map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for (name, value) in headers {
            map.insert(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        if let Some(value) = authorization {
            map.insert(AUTHORIZATION, value);
        }
        let req = self.client.post(url).headers(map).body(body.to_string());
        self.send(req).await
    }

    /// A POST of `body` with `headers` built at run time (an alert's title and tags), else as
    /// [`Self::post_json`].
    pub async fn post(
        &self,
        url: url::Url,
        mut headers: HeaderMap,
        body: Vec<u8>,
        bearer: Option<&str>,
    ) -> Result<HttpReply, ProbeFailure> {
        let (url, authorization) = authorize(url, bearer)?;
        if let Some(value) = authorization {
            headers.insert(AUTHORIZATION, value);
        }
        self.send(self.client.post(url).headers(headers).body(body))
            .await
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> Result<HttpReply, ProbeFailure> {
        let started = Instant::now();
        let answered = AtomicBool::new(false);
        let exchange = async {
            let mut resp = req.send().await.map_err(classify)?;
            answered.store(true, Ordering::Relaxed);
            let status = resp.status().as_u16();
            let date = resp
                .headers()
                .get(reqwest::header::DATE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
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
                date,
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

/// The URL without its `user:password`, and the one Authorization header value of the request:
/// the bearer token when there is one (a request carries a single Authorization, RFC 9110
/// §11.6.2), else the URL's credentials as Basic auth (RFC 7617).
fn authorize(
    url: url::Url,
    bearer: Option<&str>,
) -> Result<(url::Url, Option<HeaderValue>), ProbeFailure> {
    let (url, basic) = split_credentials(url)?;
    let value = match bearer {
        Some(token) => Some(
            HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                ProbeFailure::new(
                    Asc::FAILED_PRECONDITION,
                    "the configured token is not a valid header value",
                )
            })?,
        ),
        None => basic,
    };
    Ok((
        url,
        value.map(|mut v| {
            // Kept out of the HTTP client's debug output of headers.
            v.set_sensitive(true);
            v
        }),
    ))
}

/// Takes `user:password` out of `url` and returns it as a Basic credential. The user and
/// password are percent-decoded to bytes, whatever they decode to (reqwest's own extraction gives
/// up on bytes that are not UTF-8 and then connects, and logs, with the userinfo in the URL).
pub fn split_credentials(
    mut url: url::Url,
) -> Result<(url::Url, Option<HeaderValue>), ProbeFailure> {
    if url.username().is_empty() && url.password().is_none() {
        return Ok((url, None));
    }
    let mut pair: Vec<u8> = percent_decode_str(url.username()).collect();
    pair.push(b':');
    pair.extend(percent_decode_str(url.password().unwrap_or("")));
    let stripped = url.set_username("").is_ok() && url.set_password(None).is_ok();
    if !stripped || !url.username().is_empty() || url.password().is_some() {
        return Err(ProbeFailure::new(
            Asc::FAILED_PRECONDITION,
            "the URL's user:password cannot be taken out of it; refused to send it",
        ));
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
    let value =
        HeaderValue::from_str(&format!("Basic {encoded}")).expect("base64 is a valid header value");
    Ok((url, Some(value)))
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
    if let Some(stopped) = err
        .source()
        .and_then(|s| s.downcast_ref::<RedirectStopped>())
    {
        // Redirects are answers: the peer is up, and misconfigured.
        return ProbeFailure::new(Asc::FAILED_PRECONDITION, stopped.to_string()).after_answer();
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(value: &HeaderValue) -> Vec<u8> {
        let text = value.to_str().unwrap();
        let encoded = text.strip_prefix("Basic ").expect("a Basic credential");
        base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap()
    }

    #[test]
    fn credentials_leave_the_url_for_a_basic_header() {
        let url = url::Url::parse("http://ad%20min:p%40ss:w@127.0.0.1:9/metrics?x=1").unwrap();
        let (url, basic) = split_credentials(url).unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:9/metrics?x=1");
        assert_eq!(decoded(&basic.unwrap()), b"ad min:p@ss:w");
    }

    #[test]
    fn credentials_that_are_not_utf8_leave_the_url_too() {
        let url = url::Url::parse("http://ad%FFmin:pw@127.0.0.1:9/").unwrap();
        let (url, basic) = split_credentials(url).unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:9/");
        assert_eq!(decoded(&basic.unwrap()), b"ad\xffmin:pw");
    }

    #[test]
    fn a_user_without_password_and_a_url_without_credentials() {
        let (url, basic) = split_credentials(url::Url::parse("http://u@h/").unwrap()).unwrap();
        assert_eq!(
            (url.as_str(), decoded(&basic.unwrap())),
            ("http://h/", b"u:".to_vec())
        );
        let (url, basic) = split_credentials(url::Url::parse("http://h:1/p").unwrap()).unwrap();
        assert_eq!((url.as_str(), basic), ("http://h:1/p", None));
    }

    #[test]
    fn a_bearer_token_replaces_the_url_credentials() {
        let url = url::Url::parse("http://u:pw@h/").unwrap();
        let (url, value) = authorize(url, Some("tok")).unwrap();
        assert_eq!(url.as_str(), "http://h/");
        let value = value.unwrap();
        assert_eq!(value.to_str().unwrap(), "Bearer tok");
        assert!(value.is_sensitive());
        let (_, value) = authorize(url::Url::parse("http://u:pw@h/").unwrap(), None).unwrap();
        assert!(value.unwrap().is_sensitive());
    }

    /// `/hop/N` redirects to `/hop/N-1`; `/hop/0` answers 200.
    async fn redirect_chain() -> (url::Url, tokio::task::JoinHandle<()>) {
        use axum::extract::Path;
        use axum::http::{StatusCode, header};
        use axum::response::IntoResponse;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = url::Url::parse(&format!("http://{}/", listener.local_addr().unwrap())).unwrap();
        let app = axum::Router::new().route(
            "/hop/{n}",
            axum::routing::get(|Path(n): Path<u32>| async move {
                match n {
                    0 => "arrived".into_response(),
                    n => (
                        StatusCode::MOVED_PERMANENTLY,
                        [(header::LOCATION, format!("/hop/{}", n - 1))],
                    )
                        .into_response(),
                }
            }),
        );
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        (base, server)
    }

    #[tokio::test]
    async fn redirects_are_followed_up_to_the_limit_and_past_it_are_an_answer() {
        let (base, server) = redirect_chain().await;
        let client = ProbeClient::new(Duration::from_secs(5), 1 << 20);
        let hops = u32::try_from(MAX_REDIRECTS).unwrap();
        let reply = client
            .get(base.join(&format!("hop/{hops}")).unwrap(), None)
            .await
            .unwrap();
        assert_eq!(
            (reply.status, reply.body.as_slice()),
            (200, &b"arrived"[..])
        );
        let failure = client
            .get(base.join(&format!("hop/{}", hops + 1)).unwrap(), None)
            .await
            .unwrap_err();
        server.abort();
        assert!(failure.answered, "{failure:?}");
        assert_eq!(failure.asc, Asc::FAILED_PRECONDITION);
        assert_eq!(
            failure.reason,
            format!("HTTP 301: more than {MAX_REDIRECTS} redirects")
        );
    }
}
