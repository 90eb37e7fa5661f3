//! TLS certificates watched (issue 44): an expired certificate used to be "ok" and served
//! without a word. Here a certificate's dates are read (`x509-parser`) and judged against the
//! rules' renewal window, from a PEM file on this host (`[serve] tls_cert`) or from what a peer
//! presents in a TLS handshake (rustls, the ring provider the tree already has).
//!
//! The handshake records the peer's leaf certificate even when it does not verify, so that an
//! expired or self-signed certificate is still judged by its dates; whether it verifies (against
//! the roots the probes' HTTPS client trusts, webpki-roots) is said apart. Nothing is sent but
//! the handshake and its close: the peer's application never sees a request.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use fleetdash_model::human_age;
use fleetdash_model::{Asc, Band};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, SignatureScheme};
use tokio::io::AsyncWriteExt;

use crate::net::ProbeFailure;

/// When a certificate begins and ends (its `notBefore` and `notAfter`, both inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validity {
    pub not_before: DateTime<Utc>,
    pub not_after: DateTime<Utc>,
}

impl Validity {
    /// The dates of the DER certificate `der`.
    pub fn of_der(der: &[u8]) -> Result<Validity, String> {
        let (_, cert) = x509_parser::parse_x509_certificate(der)
            .map_err(|e| format!("not an X.509 certificate ({e})"))?;
        let at = |t: i64| {
            DateTime::from_timestamp(t, 0).ok_or_else(|| format!("a date out of range ({t})"))
        };
        Ok(Validity {
            not_before: at(cert.validity().not_before.timestamp())?,
            not_after: at(cert.validity().not_after.timestamp())?,
        })
    }

    /// The dates of the first certificate of the PEM file `path` (the server's own: a chain
    /// comes server first). Blocking: it reads the file.
    pub fn of_pem_file(path: &Path) -> Result<Validity, String> {
        let shown = path.display();
        let first = CertificateDer::pem_file_iter(path)
            .map_err(|e| format!("{shown}: {e}"))?
            .next()
            .ok_or_else(|| format!("{shown}: no PEM certificate in it"))?
            .map_err(|e| format!("{shown}: {e}"))?;
        Validity::of_der(&first).map_err(|e| format!("{shown}: {e}"))
    }

    /// A moment inside the certificate's dates, to ask whether it verifies apart from them.
    fn inside(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        if self.not_before <= now && now <= self.not_after {
            now
        } else {
            self.not_before + (self.not_after - self.not_before) / 2
        }
    }
}

/// Where a certificate stands at a moment, by its dates and the renewal window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Valid, its end further than the renewal window.
    Valid,
    /// Valid, its end within the renewal window: due for renewal.
    Expiring,
    /// Past its end: clients refuse it.
    Expired,
    /// Before its beginning: clients refuse it (or this host's clock is behind).
    NotYetValid,
}

/// A certificate judged: its standing and the words saying it, with its date.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    pub standing: Standing,
    pub validity: Validity,
    /// "in 9 d 3 h, on 9 Dec 2026 10:00 UTC (renewal window 14 d, rules certificates.renew_within_seconds)".
    pub detail: String,
}

/// Judges `validity` at `now`: amber once its end is within `renew_within_s`, red past its end
/// or before its beginning.
pub fn judge(validity: Validity, now: DateTime<Utc>, renew_within_s: u64) -> Judged {
    let date = |t: DateTime<Utc>| t.format("%-d %b %Y %H:%M UTC").to_string();
    let span = |a: DateTime<Utc>, b: DateTime<Utc>| human_age((b - a).num_seconds().max(0) as u64);
    let (standing, detail) = if now < validity.not_before {
        (
            Standing::NotYetValid,
            format!(
                "valid from {}, in {} (is this host's clock right?)",
                date(validity.not_before),
                span(now, validity.not_before)
            ),
        )
    } else if now > validity.not_after {
        (
            Standing::Expired,
            format!(
                "{} ago, on {}",
                span(validity.not_after, now),
                date(validity.not_after)
            ),
        )
    } else if (validity.not_after - now).num_seconds() <= renew_within_s as i64 {
        (
            Standing::Expiring,
            format!(
                "in {}, on {} (renewal window {}, rules certificates.renew_within_seconds)",
                span(now, validity.not_after),
                date(validity.not_after),
                human_age(renew_within_s)
            ),
        )
    } else {
        (
            Standing::Valid,
            format!(
                "until {}, in {}",
                date(validity.not_after),
                span(now, validity.not_after)
            ),
        )
    };
    Judged {
        standing,
        validity,
        detail,
    }
}

impl Judged {
    pub fn band(&self) -> Band {
        match self.standing {
            Standing::Valid => Band::Green,
            Standing::Expiring => Band::Amber,
            Standing::Expired | Standing::NotYetValid => Band::Red,
        }
    }

    /// The standing in one word, as a check's state: `valid`, `expiring`, `expired`,
    /// `not-yet-valid`.
    pub fn word(&self) -> &'static str {
        match self.standing {
            Standing::Valid => "valid",
            Standing::Expiring => "expiring",
            Standing::Expired => "expired",
            Standing::NotYetValid => "not-yet-valid",
        }
    }

    /// "expired, 3 d ago, on 2 Dec 2026 10:00 UTC": the word, then what it means.
    pub fn words(&self) -> String {
        format!("{}, {}", self.word(), self.detail)
    }
}

/// What a peer presented in a TLS handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presented {
    pub validity: Validity,
    /// Whether the certificate verifies for the peer's name against the probes' roots, its
    /// dates aside (they are judged on their own): why not, when it does not.
    pub verified: Result<(), String>,
}

/// The leaf certificate the `https` peer at `url` presents, within `timeout` (the probe's):
/// a TCP connect and a TLS handshake, nothing sent after it.
pub async fn presented(url: &url::Url, timeout: Duration) -> Result<Presented, ProbeFailure> {
    match tokio::time::timeout(timeout, handshake(url, Utc::now())).await {
        Ok(result) => result,
        Err(_) => Err(ProbeFailure::new(
            Asc::TIMEOUT,
            format!(
                "TLS handshake: no answer within {}",
                humantime::format_duration(timeout)
            ),
        )),
    }
}

async fn handshake(url: &url::Url, now: DateTime<Utc>) -> Result<Presented, ProbeFailure> {
    let port = url.port_or_known_default().unwrap_or(443);
    let (name, tcp) = match url.host() {
        Some(url::Host::Domain(d)) => (
            ServerName::try_from(d.to_string()),
            tokio::net::TcpStream::connect((d, port)).await,
        ),
        Some(url::Host::Ipv4(ip)) => (
            Ok(ServerName::from(std::net::IpAddr::V4(ip))),
            tokio::net::TcpStream::connect((ip, port)).await,
        ),
        Some(url::Host::Ipv6(ip)) => (
            Ok(ServerName::from(std::net::IpAddr::V6(ip))),
            tokio::net::TcpStream::connect((ip, port)).await,
        ),
        None => {
            return Err(ProbeFailure::new(
                Asc::FAILED_PRECONDITION,
                "no host in the address",
            ));
        }
    };
    let name = name.map_err(|e| ProbeFailure::new(Asc::FAILED_PRECONDITION, e.to_string()))?;
    let tcp = tcp.map_err(|e| {
        let asc = if e.kind() == std::io::ErrorKind::ConnectionRefused {
            Asc::DEPENDENCY_UNAVAILABLE
        } else {
            Asc::RETRYABLE_ERROR
        };
        ProbeFailure::new(asc, format!("connect: {e}"))
    })?;
    let recorder = Arc::new(Recorder::new(now));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ProbeFailure::new(Asc::INTERNAL_ERROR, e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(recorder.clone())
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let done = connector.connect(name, tcp).await;
    // The certificate is what is judged: a handshake that failed after it (a signature, a
    // cipher) still told it.
    let seen = recorder.seen.lock().expect("not poisoned").take();
    match (done, seen) {
        (Ok(mut stream), Some(seen)) => {
            let _ = stream.shutdown().await;
            seen
        }
        (Err(_), Some(seen)) => seen,
        (Ok(_), None) => Err(ProbeFailure::new(
            Asc::INTEGRITY_CHECK_FAILED,
            "TLS handshake: the peer presented no certificate",
        )),
        (Err(e), None) => Err(ProbeFailure::new(
            Asc::DEPENDENCY_UNAVAILABLE,
            format!("TLS handshake: {e} (is it https?)"),
        )),
    }
}

/// A verifier that keeps the leaf the peer presented and lets the handshake finish whatever
/// it is: the dates are judged by [`judge`], the chain and the name by webpki, each said.
#[derive(Debug)]
struct Recorder {
    webpki: Arc<WebPkiServerVerifier>,
    now: DateTime<Utc>,
    seen: Mutex<Option<Result<Presented, ProbeFailure>>>,
}

impl Recorder {
    fn new(now: DateTime<Utc>) -> Recorder {
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .expect("the bundled roots make a verifier");
        Recorder {
            webpki,
            now,
            seen: Mutex::new(None),
        }
    }
}

impl ServerCertVerifier for Recorder {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let seen = Validity::of_der(end_entity)
            .map_err(|e| ProbeFailure::new(Asc::INTEGRITY_CHECK_FAILED, e))
            .map(|validity| {
                // Asked at a moment inside its dates, so that "expired" is said once, by the
                // dates, and this says what else is wrong with it.
                let at = validity.inside(self.now).timestamp().max(0) as u64;
                let verified = self
                    .webpki
                    .verify_server_cert(
                        end_entity,
                        intermediates,
                        server_name,
                        ocsp_response,
                        UnixTime::since_unix_epoch(Duration::from_secs(at)),
                    )
                    .map(|_| ())
                    .map_err(|e| unverified(&e));
                Presented { validity, verified }
            });
        *self.seen.lock().expect("not poisoned") = Some(seen);
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// Why a certificate does not verify, in the operator's words.
fn unverified(e: &rustls::Error) -> String {
    match e {
        rustls::Error::InvalidCertificate(c) => match c {
            CertificateError::UnknownIssuer => {
                "its issuer is unknown (self-signed, or a private CA): fleetdash's HTTPS probes \
                 trust the public web's roots only"
                    .into()
            }
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                "it is not valid for the name in the address".into()
            }
            CertificateError::Revoked => "it is revoked".into(),
            CertificateError::BadSignature => "its signature does not verify".into(),
            other => format!("{other:?}"),
        },
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().expect("an RFC 3339 instant")
    }

    fn year() -> Validity {
        Validity {
            not_before: t("2026-01-01T00:00:00Z"),
            not_after: t("2026-12-31T12:00:00Z"),
        }
    }

    const FOURTEEN_DAYS: u64 = 14 * 86400;

    #[test]
    fn a_certificate_is_green_then_amber_inside_the_window_then_red_past_its_end() {
        let v = year();
        let green = judge(v, t("2026-11-30T12:00:00Z"), FOURTEEN_DAYS);
        assert_eq!((green.band(), green.word()), (Band::Green, "valid"));
        assert_eq!(green.detail, "until 31 Dec 2026 12:00 UTC, in 31 d");

        // Exactly 14 days before its end: inside the window.
        let edge = judge(v, t("2026-12-17T12:00:00Z"), FOURTEEN_DAYS);
        assert_eq!(edge.band(), Band::Amber);
        let amber = judge(v, t("2026-12-22T09:00:00Z"), FOURTEEN_DAYS);
        assert_eq!(amber.standing, Standing::Expiring);
        assert_eq!(
            amber.words(),
            "expiring, in 9 d 3 h, on 31 Dec 2026 12:00 UTC (renewal window 14 d, rules \
             certificates.renew_within_seconds)"
        );
        // Its last second still counts as valid (RFC 5280: notAfter is inclusive).
        assert_eq!(
            judge(v, v.not_after, FOURTEEN_DAYS).standing,
            Standing::Expiring
        );

        let red = judge(v, t("2027-01-03T12:00:00Z"), FOURTEEN_DAYS);
        assert_eq!((red.band(), red.word()), (Band::Red, "expired"));
        assert_eq!(red.words(), "expired, 3 d ago, on 31 Dec 2026 12:00 UTC");

        let early = judge(v, t("2025-12-30T00:00:00Z"), FOURTEEN_DAYS);
        assert_eq!((early.band(), early.word()), (Band::Red, "not-yet-valid"));
        assert!(
            early
                .detail
                .starts_with("valid from 1 Jan 2026 00:00 UTC, in 2 d"),
            "{}",
            early.detail
        );
        // The window is the rule's: a day's window leaves the same moment green.
        assert_eq!(
            judge(v, t("2026-12-22T09:00:00Z"), 86400).band(),
            Band::Green
        );
    }

    #[test]
    fn the_dates_of_a_pem_file_are_its_first_certificates() {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        params.not_before = rcgen::date_time_ymd(2026, 3, 1);
        params.not_after = rcgen::date_time_ymd(2026, 6, 1);
        let cert = params.self_signed(&key).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cert.pem");
        std::fs::write(&path, cert.pem()).unwrap();
        let v = Validity::of_pem_file(&path).unwrap();
        assert_eq!(v.not_before, t("2026-03-01T00:00:00Z"));
        assert_eq!(v.not_after, t("2026-06-01T00:00:00Z"));
        std::fs::write(&path, "not a certificate").unwrap();
        let why = Validity::of_pem_file(&path).unwrap_err();
        assert!(why.contains("no PEM certificate"), "{why}");
        assert!(why.contains("cert.pem"), "{why}");
    }
}
