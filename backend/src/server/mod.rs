//! `fleetdash serve`: the page and the collector's output behind HTTP basic auth, for running
//! without nginx (and for the demo). Same layout and the same headers as the production nginx
//! config (`nginx/fleetdash.conf`): the page at `/`, the collector's output at `/api/`.
//!
//! - The page is the one built into the binary ([`crate::page`], answered by [`embedded`]), or
//!   a built `dist/` folder when `[serve] dist_dir` (or the demo's `--dist-dir`) names one.
//! - Every path needs the password; refusals (404) only come after it. Checking it never stalls
//!   the server, and a client that keeps guessing is slowed down ([`auth`]).
//! - From output_dir only `status.json`, `snapshot.html` and `report.html` (the last report) are served; the writer's `.fleetdash-tmp-*`
//!   files and anything else there are unreachable. Dotfiles of the page are refused too.
//! - `index.html`, `status.json`, `snapshot.html`: `Cache-Control: no-cache` with an ETag, so a
//!   reload revalidates (304 on `If-None-Match`) and never shows an old snapshot.
//! - trunk's hashed assets: `Cache-Control: public, max-age=31536000, immutable`; the web app
//!   manifest's icons (not hashed): `max-age=86400` ([`ICON_CACHE`]); the manifest: `no-cache`.
//! - gzip for HTML, JS, CSS, JSON and WASM when the client accepts it: the page's pre-compressed
//!   `.gz` files when the build shipped them (nginx: `gzip_static`), else on the fly; the ETag
//!   of a compressed answer is made weak (`W/"..."`), as nginx does. The page's `.br` files
//!   (nginx: `brotli_static`) go to a client that takes brotli, `br;q=0` being a no (issue 35);
//!   nothing is compressed to brotli on the fly.
//! - `POST /act?t=...`: a phone's action button ([`actions`]); the signed link is its own
//!   authorization (the ntfy app sends no password), so it is the one path without the login.
//! - Answers go out at once ([`no_delay`]): no ~40 ms Nagle/delayed-ACK wait on a kept-alive
//!   connection, as nginx's `tcp_nodelay on`.
//! - Every answer carries the page's guard ([`headers`]): its Content-Security-Policy (with the
//!   hash of the served page's inline script), `nosniff`, `no-referrer`; over TLS ([`tls`],
//!   `[serve] tls_cert`/`tls_key`) HSTS too. Plain HTTP off loopback is refused unless the
//!   operator says `plain_http_on_network = true` ([`ServeOptions::listening_on`]).

pub mod actions;
pub mod auth;
mod embedded;
mod first;
pub mod headers;
mod htpasswd;
mod refusals;
pub mod tls;

pub use auth::{AuthLimits, Authenticator, Verdict};
pub use htpasswd::Htpasswd;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use axum::Router;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{Extensions, HeaderMap, HeaderValue, StatusCode, Version, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;
use tower_http::compression::CompressionLayer;
use tower_http::services::{ServeDir, ServeFile};

use crate::config::{Config, ConfigError, ConfigErrors};
use crate::page;
use crate::write::{snapshot_html, status_json};

pub const DEFAULT_LISTEN: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 8080);

/// Hashed assets never change under their name.
pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// The page and the snapshot change: browsers may keep them but must revalidate.
pub const NO_CACHE: &str = "no-cache";

/// The manifest's icons (issue 46) keep their names across builds, so they cannot be immutable;
/// a phone's browser fetches them on each visit to judge the page installable: kept a day
/// without asking (a new icon shows a day late at most). Not `public`: they are answers to a
/// request with credentials, for the browser's own cache only. The manifest itself revalidates
/// like index.html, whose build it belongs to.
pub const ICON_CACHE: &str = "max-age=86400";

/// What is worth compressing (nginx: text/html plus `gzip_types`), and from which size.
const GZIP_TYPES: &[&str] = &[
    "text/html",
    "application/javascript",
    "text/javascript",
    "text/css",
    "application/json",
    "application/wasm",
];
const GZIP_MIN_LENGTH: u64 = 256;

pub struct ServeOptions {
    pub output_dir: PathBuf,
    /// A built page to serve instead of the one built into the binary.
    pub dist_dir: Option<PathBuf>,
    /// The htpasswd's users, checked without stalling the server.
    pub auth: Arc<Authenticator>,
    /// `/metrics`: the series status.json gives (docs/metrics.md), behind the same auth.
    pub metrics: Arc<crate::metrics::Source>,
    /// `/act`: the phone's action links, done in this config's state_dir.
    pub actions: Arc<crate::alerting::phone::PhoneActions>,
    /// The Content-Security-Policy of the page served (its inline script's hash).
    pub policy: HeaderValue,
    /// HTTPS with this certificate and key, read when the options were built.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// `[serve] plain_http_on_network`: the operator's word that plain HTTP off loopback is meant.
    pub plain_http_on_network: bool,
}

impl ServeOptions {
    /// The options `config` gives. A missing or unusable htpasswd is a configuration error like
    /// any other (exit 2), naming the config's field or the htpasswd's own line.
    pub fn from_config(
        config: &Config,
        rules: &crate::config::Rules,
    ) -> Result<ServeOptions, ConfigErrors> {
        let field_error = |message: String| {
            ConfigErrors(vec![ConfigError {
                file: config.path.clone(),
                line: None,
                field: "serve.htpasswd".into(),
                message,
            }])
        };
        let path = config.serve.htpasswd.as_ref().ok_or_else(|| {
            field_error(
                "not set; serve never runs without auth (create one with `htpasswd -B -c FILE USER`)"
                    .into(),
            )
        })?;
        let text = std::fs::read_to_string(path)
            .map_err(|e| field_error(format!("cannot read {}: {e}", path.display())))?;
        let htpasswd = Htpasswd::parse(path, &text).map_err(|e| ConfigErrors(vec![e]))?;
        // A dist_dir without a page is a mistake to say, not a reason to serve another page.
        let policy = match &config.serve.dist_dir {
            None => embedded::policy().clone(),
            Some(dist) => match std::fs::read_to_string(dist.join(crate::page::INDEX)) {
                // Read now (start and SIGHUP): a page rebuilt into dist_dir needs a reload.
                Ok(index) => headers::policy_header(&index),
                Err(e) => {
                    return Err(ConfigErrors(vec![ConfigError {
                        file: config.path.clone(),
                        line: None,
                        field: "serve.dist_dir".into(),
                        message: format!(
                            "{} has no index.html ({e}): build the page into it \
                             (scripts/build-frontend, or `fleetdash page export DIR`), or \
                             remove dist_dir to serve the page built into fleetdash",
                            dist.display()
                        ),
                    }]));
                }
            },
        };

        let tls = match &config.serve.tls {
            None => None,
            Some(files) => Some(tls::load(&files.cert, &files.key).map_err(|e| {
                ConfigErrors(vec![ConfigError {
                    file: config.path.clone(),
                    line: None,
                    field: format!("serve.{}", e.key),
                    message: e.message,
                }])
            })?),
        };
        Ok(ServeOptions {
            policy,
            tls,
            plain_http_on_network: config.serve.plain_http_on_network,
            output_dir: config.output_dir.clone(),
            dist_dir: config.serve.dist_dir.clone(),
            auth: Arc::new(Authenticator::new(htpasswd)),
            metrics: Arc::new(crate::metrics::Source::of_snapshot(config)),
            actions: Arc::new(crate::alerting::phone::PhoneActions::new(
                config,
                &rules.alerts,
                config.gate(),
            )),
        })
    }
}

impl ServeOptions {
    /// [`ServeOptions::from_config`] for a server on `listen`, refused as `[serve] listen` is
    /// in the config when it would put basic auth on a network in the clear: for `--listen`,
    /// which the config's own check never sees, and at SIGHUP for a config that drops TLS
    /// under a socket already bound off loopback.
    pub fn listening_on(
        config: &Config,
        rules: &crate::config::Rules,
        listen: SocketAddr,
    ) -> Result<ServeOptions, ConfigErrors> {
        let options = ServeOptions::from_config(config, rules)?;
        let refusal = crate::config::plain_http_refusal(
            listen,
            options.tls.is_some(),
            options.plain_http_on_network,
        );
        match refusal {
            None => Ok(options),
            Some(why) => Err(ConfigErrors(vec![ConfigError {
                file: config.path.clone(),
                line: None,
                field: "serve.listen".into(),
                message: why,
            }])),
        }
    }

    /// `https` or `http`, for the address said at start.
    pub fn scheme(&self) -> &'static str {
        if self.tls.is_some() { "https" } else { "http" }
    }
}

pub fn router(options: ServeOptions) -> Router {
    let guard = Guard {
        policy: options.policy.clone(),
        hsts: options.tls.is_some(),
    };
    let options = Arc::new(options);
    let out = &options.output_dir;
    let metrics = options.metrics.clone();
    let desk = options.actions.clone();
    // From output_dir exactly these two files; every other /api/ path ends in the fallback,
    // which refuses it.
    let app = Router::new()
        .route(
            "/metrics",
            axum::routing::get(move || crate::metrics::answer(metrics.clone()))
                .fallback(|| async { refusals::method_not_allowed().into_response() }),
        )
        .route(
            actions::PATH,
            axum::routing::post(move |query| actions::act(desk.clone(), query))
                .fallback(|| async { refusals::action_needs_post().into_response() }),
        )
        .route(
            "/api/status.json",
            any(snapshot_file(out.join(status_json::FILE_NAME))),
        )
        .route(
            "/api/snapshot.html",
            any(snapshot_file(out.join(snapshot_html::FILE_NAME))),
        )
        .route(
            "/api/report.html",
            any(snapshot_file(out.join(crate::report::page::FILE_NAME))),
        );
    // No SPA fallback: an unknown path is a 404, like nginx's `try_files $uri =404`.
    let app = match &options.dist_dir {
        Some(dist) => {
            // The build ships a .gz and a .br beside each file (as nginx's gzip_static and
            // brotli_static serve them); tower-http weighs Accept-Encoding's q-values, brotli
            // first on a tie, as embedded::chosen_encoding does for the page built in.
            let files = ServeDir::new(dist)
                .append_index_html_on_directories(false)
                .precompressed_br()
                .precompressed_gzip();
            let index = ServeFile::new(dist.join(crate::page::INDEX))
                .precompressed_br()
                .precompressed_gzip();
            // A dist folder without an index.html is the fallback's 404 at `/`.
            let shell = std::fs::read(dist.join(crate::page::INDEX)).unwrap_or_default();
            let first = first::First::new(out, &shell);
            app.route(
                "/",
                any(move |request: Request| {
                    let (first, index) = (first.clone(), index.clone());
                    async move {
                        match first.answer(request).await {
                            Ok(response) => response,
                            Err(request) => match index.oneshot(request).await {
                                Ok(response) => response.into_response(),
                                Err(never) => match never {},
                            },
                        }
                    }
                }),
            )
            .fallback(move |request: Request| page_file(files.clone(), request))
        }
        None => {
            let shell = page::file(page::INDEX).map(|f| f.bytes).unwrap_or_default();
            let first = first::First::new(out, shell);
            app.route(
                "/",
                any(move |request: Request| {
                    let first = first.clone();
                    async move {
                        match first.answer(request).await {
                            Ok(response) => response,
                            Err(request) => embedded::serve(request).await,
                        }
                    }
                }),
            )
            .fallback(|request: Request| async move {
                if refused(request.uri().path()) {
                    not_found()
                } else {
                    embedded::serve(request).await
                }
            })
        }
    };
    app.layer(middleware::from_fn(cache_control))
        .layer(middleware::from_fn_with_state(
            options.clone(),
            require_basic_auth,
        ))
        .layer(CompressionLayer::new().compress_when(gzip_worthy))
        .layer(middleware::map_response(weaken_etag_when_encoded))
        .layer(middleware::map_response_with_state(
            Arc::new(guard),
            guard_headers,
        ))
}

/// The headers every answer carries, refusals included ([`headers`]).
struct Guard {
    policy: HeaderValue,
    /// Over TLS: Strict-Transport-Security.
    hsts: bool,
}

async fn guard_headers(State(guard): State<Arc<Guard>>, mut response: Response) -> Response {
    let out = response.headers_mut();
    out.insert(header::CONTENT_SECURITY_POLICY, guard.policy.clone());
    out.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static(headers::NOSNIFF),
    );
    out.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static(headers::NO_REFERRER),
    );
    if guard.hsts {
        out.insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static(headers::HSTS),
        );
    }
    response
}

fn not_found() -> Response {
    refusals::not_found().into_response()
}

/// One of the collector's files, or 503 with what to do while the collector has not written it.
fn snapshot_file(
    path: PathBuf,
) -> impl Fn(Request) -> std::pin::Pin<Box<dyn Future<Output = Response> + Send>> + Clone {
    let file = ServeFile::new(&path);
    move |request: Request| {
        let file = file.clone();
        let path = path.clone();
        Box::pin(async move {
            let response = match file.oneshot(request).await {
                Ok(response) => response.into_response(),
                Err(never) => match never {},
            };
            match response.status() {
                StatusCode::NOT_FOUND if !path.exists() => {
                    let name = path.file_name().unwrap_or_default().to_string_lossy();
                    refusals::no_snapshot(&name).into_response()
                }
                StatusCode::METHOD_NOT_ALLOWED => refusals::method_not_allowed().into_response(),
                _ => response,
            }
        })
    }
}

/// Whether a path is no page file's, whatever the page holds: under /api/, or a dotfile
/// (checked on the decoded path, as ServeDir decodes it).
fn refused(path: &str) -> bool {
    path.starts_with("/api/")
        || percent_decode(path).is_none_or(|p| p.split('/').any(|s| s.starts_with('.')))
}

/// A file of the dist folder, unless [`refused`].
async fn page_file(files: ServeDir, request: Request) -> Response {
    if refused(request.uri().path()) {
        return not_found();
    }
    match files.oneshot(request).await {
        Ok(response) => response.into_response(),
        Err(never) => match never {},
    }
}

/// The path as ServeDir reads it: the same crate, the same call (a path that does not decode to
/// UTF-8 is one ServeDir refuses too).
fn percent_decode(path: &str) -> Option<String> {
    percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .ok()
        .map(|p| p.into_owned())
}

/// `Cache-Control` on what was served (and on its 304s), as nginx's `add_header` does.
async fn cache_control(request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let value = if path.starts_with("/api/") {
        NO_CACHE
    } else if page::is_hashed_asset(path) {
        IMMUTABLE
    } else if page::is_icon(path) {
        ICON_CACHE
    } else {
        NO_CACHE
    };
    let mut response = next.run(request).await;
    let status = response.status();
    if status.is_success() || status == StatusCode::NOT_MODIFIED {
        response
            .headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static(value));
    }
    response
}

fn gzip_worthy(_: StatusCode, _: Version, headers: &HeaderMap, _: &Extensions) -> bool {
    let essence = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase());
    let big_enough = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .is_none_or(|len| len >= GZIP_MIN_LENGTH);
    big_enough && essence.is_some_and(|e| GZIP_TYPES.contains(&e.as_str()))
}

/// A compressed answer is another representation than the file: its ETag may only be weak.
/// If-None-Match compares weakly, so a revalidation with it still gets its 304.
async fn weaken_etag_when_encoded(mut response: Response) -> Response {
    if !response.headers().contains_key(header::CONTENT_ENCODING) {
        return response;
    }
    let weak = response
        .headers()
        .get(header::ETAG)
        .and_then(|v| v.to_str().ok())
        .filter(|tag| !tag.starts_with("W/"))
        .and_then(|tag| HeaderValue::from_str(&format!("W/{tag}")).ok());
    if let Some(weak) = weak {
        response.headers_mut().insert(header::ETAG, weak);
    }
    response
}

async fn require_basic_auth(
    State(options): State<Arc<ServeOptions>>,
    request: Request,
    next: Next,
) -> Response {
    if request.uri().path() == actions::PATH {
        return next.run(request).await;
    }
    // The peer address, when the server was started with it (`serve`); throttling is per address.
    let client = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0.ip());
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match options.auth.check(client, authorization).await {
        Verdict::Allowed => next.run(request).await,
        Verdict::Refused => refusals::unauthorized().into_response(),
        Verdict::Throttled { retry_after } => {
            tokio::time::sleep(options.auth.hold_for(retry_after)).await;
            refusals::throttled(retry_after).into_response()
        }
        Verdict::Busy { retry_after } => {
            tokio::time::sleep(options.auth.hold_for(retry_after)).await;
            refusals::busy(retry_after).into_response()
        }
    }
}

/// A listener whose connections have Nagle's algorithm off (TCP_NODELAY), as nginx's default
/// `tcp_nodelay on`. Without it, an answer written in two pieces (headers, then a small body:
/// status.json gzipped is ~2 KB) on a kept-alive connection waits for the client's delayed ACK,
/// ~40 ms on Linux, on every poll of the page (measured by the page_verdict bench).
pub type NoDelay = axum::serve::TapIo<tokio::net::TcpListener, fn(&mut tokio::net::TcpStream)>;

pub fn no_delay(listener: tokio::net::TcpListener) -> NoDelay {
    use axum::serve::ListenerExt;
    listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY not set on a connection: {e}");
        }
    })
}

pub async fn serve(
    listener: tokio::net::TcpListener,
    options: ServeOptions,
    shutdown: CancellationToken,
) -> Result<()> {
    if let Some(config) = options.tls.clone() {
        return tls::serve(listener, router(options), config, shutdown)
            .await
            .context("the HTTPS server failed");
    }
    let app = router(options).into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(no_delay(listener), app)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
        .context("the HTTP server failed")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::{HASHED_ASSET, ICON};

    /// Was: accepted connections kept Nagle's algorithm, and a poll on a kept-alive connection
    /// waited ~40 ms for the client's delayed ACK (the page_verdict bench's status.json fetch:
    /// ~44 ms against ~4 ms on a fresh connection).
    #[tokio::test]
    async fn accepted_connections_answer_at_once() {
        use axum::serve::Listener;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut listener = no_delay(listener);
        let _client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (accepted, _) = listener.accept().await;
        assert!(
            accepted.nodelay().unwrap(),
            "TCP_NODELAY on the accepted socket"
        );
    }

    /// The production nginx config and this server must agree on what is immutable.
    #[test]
    fn nginx_config_uses_the_same_asset_pattern_and_headers() {
        let conf = include_str!("../../../nginx/fleetdash.conf");
        assert!(
            conf.contains(&format!("\"~{HASHED_ASSET}\" \"{IMMUTABLE}\";")),
            "nginx/fleetdash.conf's Cache-Control map lost the HASHED_ASSET pattern"
        );
        assert!(
            conf.contains(&format!("\"~{ICON}\" \"{ICON_CACHE}\";")),
            "nginx/fleetdash.conf's Cache-Control map lost the ICON pattern"
        );
        assert!(conf.contains(&format!("default \"{NO_CACHE}\";")));
        assert!(conf.contains("add_header Cache-Control $fleetdash_cache_control;"));
        assert!(conf.contains(&format!("gzip_min_length {GZIP_MIN_LENGTH};")));
    }

    #[test]
    fn percent_decoding_finds_hidden_dotfiles() {
        assert_eq!(
            percent_decode("/%2egit/config").as_deref(),
            Some("/.git/config")
        );
        assert_eq!(percent_decode("/%ff"), None);
        // A broken escape stays as typed, as ServeDir reads it (it then finds no such file).
        assert_eq!(percent_decode("/a%2").as_deref(), Some("/a%2"));
        assert_eq!(percent_decode("/plain").as_deref(), Some("/plain"));
    }
}
