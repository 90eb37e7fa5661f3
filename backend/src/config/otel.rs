//! `[otel]`: OpenTelemetry output of `fleetdash run` (docs/otel.md), seed 000's binding. Each
//! collection pass becomes a span, each probe a child span with the ASC attributes, sent over
//! OTLP/HTTP (protobuf) to `endpoint`. Off unless the section is written.
//!
//! The token (optional) is sent as `Authorization: Bearer <token>`, or raw in `token_header`
//! when the backend wants its own header (Honeycomb's `x-honeycomb-team`, ...). Like every
//! token it lives in a file or a variable, never in the config, and goes to the gate.

use toml::Spanned;

use super::secrets::TokenSource;
use super::table::Table;
use super::validator::Validator;

/// The OTLP/HTTP path of traces, appended to an endpoint that does not end with it.
pub const TRACES_PATH: &str = "/v1/traces";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtelConfig {
    /// Where spans are POSTed: the configured endpoint with [`TRACES_PATH`].
    pub traces_url: url::Url,
    /// The token sent with every export, when one is configured.
    pub token: Option<TokenSource>,
    /// The header the token goes in; `None`: `Authorization: Bearer <token>`.
    pub token_header: Option<String>,
}

/// Reads `[otel]`; `None` when it is absent (no export at all) or wrong (with its errors).
pub(super) fn read(v: &mut Validator, mut t: Table) -> Option<OtelConfig> {
    if !t.is_present() {
        return None;
    }
    let endpoint = t.required_string(
        v,
        "endpoint",
        "the OTLP/HTTP receiver, e.g. \"http://127.0.0.1:4318\"",
    );
    let token_env = t.string(v, "token_env");
    let token_file = t.string(v, "token_file");
    let token_header = t.string(v, "token_header");
    t.finish(v);
    let token = TokenSource::choose(v, |k| t.field(k), "token", &token_env, &token_file);
    let header = token_header.and_then(|h| {
        let name = h.get_ref().to_ascii_lowercase();
        let ok = reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_ok();
        match (ok, token_env.is_some() || token_file.is_some()) {
            (false, _) => {
                v.error(
                    &h,
                    t.field("token_header"),
                    "expected an HTTP header name, e.g. \"x-honeycomb-team\"",
                );
                None
            }
            (true, false) => {
                v.error(
                    &h,
                    t.field("token_header"),
                    "names where the token goes: give token_file or token_env too",
                );
                None
            }
            (true, true) => Some(name),
        }
    });
    let url = endpoint.and_then(|e| traces_url(v, &e, t.field("endpoint")));
    Some(OtelConfig {
        traces_url: url?,
        token: token.ok()?,
        token_header: header,
    })
}

/// The endpoint as the URL spans are POSTed to: http or https, no credentials, query or
/// fragment (a secret there would travel unguarded), `/v1/traces` appended unless given.
fn traces_url(v: &mut Validator, raw: &Spanned<String>, field: String) -> Option<url::Url> {
    let mut url = match url::Url::parse(raw.get_ref()) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.has_host() => u,
        _ => {
            v.error(
                raw,
                field,
                "expected an http:// or https:// URL, e.g. \"http://127.0.0.1:4318\"",
            );
            return None;
        }
    };
    if !url.username().is_empty() || url.password().is_some() {
        v.error(
            raw,
            field,
            "credentials in the URL are not sent: put the token in a file and name it with \
             token_file (or token_env)",
        );
        return None;
    }
    if url.query().is_some() || url.fragment().is_some() {
        v.error(
            raw,
            field,
            "expected no query or fragment: the receiver's path only",
        );
        return None;
    }
    let path = url.path().trim_end_matches('/').to_string();
    if !path.ends_with(TRACES_PATH) {
        url.set_path(&format!("{path}{TRACES_PATH}"));
    }
    Some(url)
}

#[cfg(test)]
mod tests {
    use crate::config::fixtures::{BASE, errors, parse};
    use crate::config::{Config, TokenSource};

    #[test]
    fn no_section_no_export_and_the_traces_path_is_appended_unless_given() {
        assert_eq!(parse("").unwrap().otel, None);
        for (given, url) in [
            ("http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"),
            ("http://127.0.0.1:4318/", "http://127.0.0.1:4318/v1/traces"),
            (
                "https://otlp.example/otlp/v1/traces",
                "https://otlp.example/otlp/v1/traces",
            ),
            (
                "https://otlp.example/otlp/",
                "https://otlp.example/otlp/v1/traces",
            ),
        ] {
            let c = parse(&format!("[otel]\nendpoint = \"{given}\"\n")).unwrap();
            let otel = c.otel.unwrap();
            assert_eq!(otel.traces_url.as_str(), url, "{given}");
            assert_eq!((otel.token, otel.token_header), (None, None));
        }
    }

    #[test]
    fn a_token_comes_from_a_file_or_a_variable_and_may_name_its_header() {
        let c = parse(
            "[otel]\nendpoint = \"http://127.0.0.1:4318\"\ntoken_file = \"otel.token\"\n\
             token_header = \"X-Honeycomb-Team\"\n",
        )
        .unwrap();
        let otel = c.otel.unwrap();
        assert_eq!(
            otel.token,
            Some(TokenSource::File("/etc/otel.token".into()))
        );
        assert_eq!(otel.token_header.as_deref(), Some("x-honeycomb-team"));
    }

    #[test]
    fn the_gate_knows_the_otel_token() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("otel.token"), "otel-secret-24680\n").unwrap();
        let text = format!(
            "{BASE}[otel]\nendpoint = \"http://127.0.0.1:4318\"\ntoken_file = \"otel.token\"\n"
        );
        let c = Config::parse(&dir.path().join("f.toml"), &text).unwrap();
        assert!(c.secrets().contains(&"otel-secret-24680".to_string()));
        assert!(!c.gate().is_clean("Bearer otel-secret-24680"));
    }

    #[test]
    fn every_mistake_is_said_with_file_line_and_field() {
        let cases = [
            ("[otel]\n", "otel.endpoint", "OTLP/HTTP receiver"),
            (
                "[otel]\nendpoint = \"ftp://x\"\n",
                "otel.endpoint",
                "http://",
            ),
            (
                "[otel]\nendpoint = \"http://u:p@127.0.0.1:4318\"\n",
                "otel.endpoint",
                "credentials in the URL",
            ),
            (
                "[otel]\nendpoint = \"http://127.0.0.1:4318/?key=1\"\n",
                "otel.endpoint",
                "no query",
            ),
            (
                "[otel]\nendpoint = \"http://127.0.0.1:4318\"\ntoken_header = \"x-key\"\n",
                "otel.token_header",
                "give token_file",
            ),
            (
                "[otel]\nendpoint = \"http://127.0.0.1:4318\"\ntoken_env = \"T\"\n\
                 token_header = \"bad header\"\n",
                "otel.token_header",
                "HTTP header name",
            ),
            (
                "[otel]\nendpoint = \"http://127.0.0.1:4318\"\ntoken_env = \"T\"\n\
                 token_file = \"t\"\n",
                "otel.token_env",
                "not both",
            ),
            (
                "[otel]\nendpont = \"http://127.0.0.1:4318\"\n",
                "otel.endpont",
                "did you mean `endpoint`",
            ),
        ];
        for (text, field, words) in cases {
            let e = errors(text);
            assert!(
                e.iter().any(|e| e.starts_with("/etc/f.toml:")
                    && e.contains(&format!("{field}:"))
                    && e.contains(words)),
                "{text}: {e:?}"
            );
            // Every error names a line of the section (4 is `[otel]`).
            assert!(e.iter().all(|e| !e.starts_with("/etc/f.toml: ")), "{e:?}");
        }
    }
}
