//! The page built into the binary ([`crate::page`]), answered as `ServeDir` answers for a
//! built `dist/` and nginx for an exported one: the type from the name, a strong ETag per
//! representation with a 304 on `If-None-Match`, the pre-compressed `.gz` to a client that
//! accepts gzip (`Vary: Accept-Encoding`, its own ETag), GET and HEAD only. Auth, caching headers
//! and the refusal of dotfiles and `/api/` are the router's, the same for both.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::page::{self, GZ, INDEX};

/// The embedded page's Content-Security-Policy ([`super::headers`]), worked out once.
pub fn policy() -> &'static HeaderValue {
    static POLICY: std::sync::LazyLock<HeaderValue> = std::sync::LazyLock::new(|| {
        let index = page::file(INDEX).expect("the page has an index.html").bytes;
        super::headers::policy_header(&String::from_utf8_lossy(index))
    });
    &POLICY
}

/// Answers `request` from the embedded page (`/` is `index.html`).
pub async fn serve(request: Request) -> Response {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut refused = super::refusals::method_not_allowed().into_response();
        refused
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return refused;
    }
    let path = request.uri().path();
    let name = match path {
        "/" => Some(INDEX.to_string()),
        _ => super::percent_decode(path)
            .and_then(|p| p.strip_prefix('/').map(str::to_string))
            .filter(|n| !n.is_empty() && !n.contains('/')),
    };
    let Some(plain) = name.as_deref().and_then(page::file) else {
        return super::not_found();
    };
    let headers = request.headers();
    let gz_name = format!("{}{GZ}", plain.name);
    let gz = page::file(&gz_name).filter(|_| accepts_gzip(headers));
    let chosen = gz.unwrap_or(plain);
    let etag = page::etag(chosen.name).expect("every embedded file has a tag");

    let mut response = if if_none_match(headers, etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let content_type = mime_guess::from_path(plain.name).first_or_octet_stream();
        let mut response = Body::from(chosen.bytes).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_str(content_type.as_ref()).expect("a MIME type is a header value"),
        );
        if gz.is_some() {
            response
                .headers_mut()
                .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        }
        response
    };
    let out = response.headers_mut();
    out.insert(
        header::ETAG,
        HeaderValue::from_str(etag).expect("a quoted hex tag"),
    );
    if page::file(&gz_name).is_some() {
        // Which representation depends on the request's Accept-Encoding: caches must know.
        out.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    response
}

/// Whether the client takes gzip: `gzip` (or, when gzip is not named, `*`) with a q above 0.
fn accepts_gzip(headers: &HeaderMap) -> bool {
    let mut gzip = None;
    let mut any = None;
    for item in headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
    {
        let mut parts = item.split(';');
        let coding = parts.next().unwrap_or_default().trim();
        let q = parts
            .find_map(|p| p.trim().strip_prefix("q="))
            .map_or(Some(1.0), |q| q.trim().parse::<f32>().ok())
            .unwrap_or(0.0);
        if coding.eq_ignore_ascii_case("gzip") {
            gzip = Some(q);
        } else if coding == "*" {
            any = Some(q);
        }
    }
    gzip.or(any).is_some_and(|q| q > 0.0)
}

/// Whether `If-None-Match` names `etag` (compared weakly, as RFC 9110 says for it) or is `*`.
fn if_none_match(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == etag)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(name: header::HeaderName, value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(name, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn gzip_is_taken_only_with_a_q_above_zero() {
        for (value, takes) in [
            ("gzip", true),
            ("gzip, deflate, br", true),
            ("br;q=1.0, GZIP;q=0.5", true),
            ("*", true),
            ("gzip;q=0", false),
            ("gzip;q=0.0, *", false),
            ("*;q=0", false),
            ("br", false),
            ("identity", false),
            ("gzip;q=nonsense", false),
        ] {
            assert_eq!(
                accepts_gzip(&with(header::ACCEPT_ENCODING, value)),
                takes,
                "{value}"
            );
        }
        assert!(!accepts_gzip(&HeaderMap::new()));
    }

    #[test]
    fn if_none_match_compares_weakly_and_takes_lists() {
        let tag = "\"0123abcd\"";
        for (value, matches) in [
            ("\"0123abcd\"", true),
            ("W/\"0123abcd\"", true),
            ("\"other\", \"0123abcd\"", true),
            ("*", true),
            ("\"other\"", false),
            ("0123abcd", false),
        ] {
            assert_eq!(
                if_none_match(&with(header::IF_NONE_MATCH, value), tag),
                matches,
                "{value}"
            );
        }
    }
}
