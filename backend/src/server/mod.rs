//! `fleetdash serve`: the page and `/api/status.json` behind HTTP basic auth, for running
//! without nginx (and for the demo). Same layout as the production nginx config: the page at
//! `/`, the collector's output at `/api/`.

mod htpasswd;

pub use htpasswd::Htpasswd;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use tokio_util::sync::CancellationToken;
use tower_http::services::{ServeDir, ServeFile};
use tower_http::set_header::SetResponseHeaderLayer;

use crate::config::Config;
use crate::write::status_json;

pub const DEFAULT_LISTEN: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 8080);

/// The page served when no built frontend is configured: enough to reach the snapshot.
const PLACEHOLDER_PAGE: &str = include_str!("../../../static/index.html");

pub struct ServeOptions {
    pub output_dir: PathBuf,
    pub dist_dir: Option<PathBuf>,
    pub htpasswd: Htpasswd,
    /// The realm shown in the browser's login prompt.
    pub realm: String,
}

impl ServeOptions {
    pub fn from_config(config: &Config) -> Result<ServeOptions> {
        let path = config.serve.htpasswd.as_ref().with_context(|| {
            format!(
                "{}: [serve] htpasswd is not set; serve never runs without auth (create one with `htpasswd -B -c FILE USER`)",
                config.path.display()
            )
        })?;
        Ok(ServeOptions {
            output_dir: config.output_dir.clone(),
            dist_dir: config.serve.dist_dir.clone(),
            htpasswd: Htpasswd::load(path)?,
            realm: "fleetdash".into(),
        })
    }
}

pub fn router(options: ServeOptions) -> Router {
    let options = Arc::new(options);
    // The snapshot changes every pass: browsers must revalidate, never show a cached one.
    let no_cache = SetResponseHeaderLayer::overriding(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache"),
    );
    let status = ServeFile::new(options.output_dir.join(status_json::FILE_NAME));
    let api = Router::new()
        .route_service("/api/status.json", status)
        .layer(no_cache.clone());
    let page = match &options.dist_dir {
        Some(dist) if dist.join("index.html").is_file() => Router::new().fallback_service(
            ServeDir::new(dist).fallback(ServeFile::new(dist.join("index.html"))),
        ),
        _ => Router::new().fallback(get(|| async { Html(PLACEHOLDER_PAGE) })),
    };
    api.merge(page.layer(no_cache))
        .layer(middleware::from_fn_with_state(
            options.clone(),
            require_basic_auth,
        ))
}

async fn require_basic_auth(
    State(options): State<Arc<ServeOptions>>,
    request: Request,
    next: Next,
) -> Response {
    let authorised = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| options.htpasswd.check(v));
    if authorised {
        return next.run(request).await;
    }
    let challenge = format!("Basic realm=\"{}\", charset=\"UTF-8\"", options.realm);
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, challenge)],
        "401 Unauthorized\n",
    )
        .into_response()
}

pub async fn serve(
    listener: tokio::net::TcpListener,
    options: ServeOptions,
    shutdown: CancellationToken,
) -> Result<()> {
    axum::serve(listener, router(options))
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
        .context("the HTTP server failed")
}
