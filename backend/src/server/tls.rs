//! `fleetdash serve` over HTTPS (`[serve] tls_cert`, `tls_key`; issue 32), so that basic auth
//! never crosses a network in the clear.
//!
//! - The certificate chain and its key are read from PEM files when the options are built: at
//!   start, and again at SIGHUP. A certificate rotated in place is served from the next
//!   connection on; a pair that does not load is refused like any broken config (its error
//!   names the field and the file), and the running pair stays. The key's bytes are never put
//!   into an error or a log line, only its path.
//! - rustls with the ring provider the tree already has (reqwest's); HTTP/1.1, as plain `serve`.
//! - Connections are taken by a loop of its own rather than `axum::serve`, because the
//!   handshake comes after the accept: each runs in its connection's task, within
//!   [`HANDSHAKE_TIMEOUT`], so a client that stalls it stalls only itself, and a shutdown (a
//!   reload) does not wait for it. Otherwise what `axum::serve` does for plain HTTP: TCP_NODELAY,
//!   the peer's address for the login throttle ([`super::auth`]), and at shutdown no new
//!   connection while the open ones finish their request.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use rustls::ServerConfig;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

/// How long a client has to finish the TLS handshake once connected.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a certificate or key did not load: the `[serve]` key at fault and what to do.
#[derive(Debug)]
pub struct TlsError {
    /// `tls_cert` or `tls_key`.
    pub key: &'static str,
    pub message: String,
}

/// The server's TLS settings from a PEM certificate chain (the server's certificate first,
/// then its intermediates) and its PEM private key (PKCS#8, PKCS#1 or SEC1). Blocking: it
/// reads both files.
pub fn load(cert_file: &Path, key_file: &Path) -> Result<Arc<ServerConfig>, TlsError> {
    let chain = certificates(cert_file)?;
    let key = private_key(key_file)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError {
            key: "tls_cert",
            message: format!("no TLS version to offer: {e}"),
        })?;
    let mut config = builder
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| TlsError {
            key: "tls_key",
            message: format!(
                "{} cannot serve {} ({e}): give the private key of that certificate",
                key_file.display(),
                cert_file.display()
            ),
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn certificates(file: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let failed = |why: String| TlsError {
        key: "tls_cert",
        message: format!(
            "{}: {why}; it must hold the server's certificate in PEM (-----BEGIN \
             CERTIFICATE-----), then its intermediates",
            file.display()
        ),
    };
    let chain = CertificateDer::pem_file_iter(file)
        .map_err(|e| failed(pem_problem(e)))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| failed(pem_problem(e)))?;
    if chain.is_empty() {
        return Err(failed("no certificate in it".into()));
    }
    Ok(chain)
}

fn private_key(file: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(file).map_err(|e| TlsError {
        key: "tls_key",
        message: format!(
            "{}: {}; it must hold the certificate's private key in PEM (-----BEGIN PRIVATE \
             KEY-----, RSA PRIVATE KEY or EC PRIVATE KEY), readable by the service's user",
            file.display(),
            pem_problem(e)
        ),
    })
}

/// What went wrong reading a PEM file, in words that never quote the file: a key file's lines
/// are the key.
fn pem_problem(e: pem::Error) -> String {
    match e {
        pem::Error::Io(e) => format!("cannot read it: {e}"),
        pem::Error::NoItemsFound => "no PEM section of the kind needed in it".into(),
        pem::Error::MissingSectionEnd { .. } => "a PEM section has no END line".into(),
        pem::Error::IllegalSectionStart { .. } => "a BEGIN line is malformed".into(),
        pem::Error::Base64Decode(_) => "a PEM section is not valid base64".into(),
        _ => "not readable as PEM".into(),
    }
}

/// Serves `app` over TLS on `listener` until `shutdown`; then waits for the open connections
/// to finish their request.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    tls: Arc<ServerConfig>,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let acceptor = TlsAcceptor::from(tls);
    let tracker = TaskTracker::new();
    loop {
        let (tcp, peer): (tokio::net::TcpStream, SocketAddr) = tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors or a connection reset before it was taken: the loop
                    // goes on, after a breath so that it does not spin.
                    tracing::warn!("serve: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // As nginx's tcp_nodelay and plain serve's (super::no_delay).
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY not set on a connection: {e}");
        }
        let (acceptor, app, shutdown) = (acceptor.clone(), app.clone(), shutdown.clone());
        tracker.spawn(async move {
            let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp));
            let stream = tokio::select! {
                done = handshake => match done {
                    Ok(Ok(stream)) => stream,
                    Ok(Err(e)) => {
                        tracing::debug!(%peer, "serve: a TLS handshake failed: {e}");
                        return;
                    }
                    Err(_) => {
                        tracing::debug!(%peer, "serve: a TLS handshake took too long");
                        return;
                    }
                },
                _ = shutdown.cancelled() => return,
            };
            // The peer's address, as `into_make_service_with_connect_info` gives it.
            let app = app.map_request(move |mut request: axum::http::Request<Incoming>| {
                request.extensions_mut().insert(ConnectInfo(peer));
                request
            });
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new());
            let connection =
                http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app));
            tokio::pin!(connection);
            let finished = tokio::select! {
                finished = connection.as_mut() => finished,
                _ = shutdown.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(e) = finished {
                tracing::debug!(%peer, "serve: a connection ended: {e}");
            }
        });
    }
    tracker.close();
    tracker.wait().await;
    Ok(())
}
