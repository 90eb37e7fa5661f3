//! The page built into the binary ([`crate::page`]), answered as `ServeDir` answers for a
//! built `dist/` and nginx for an exported one: the type from the name, a strong ETag per
//! representation with a 304 on `If-None-Match`, the pre-compressed `.br` to a client that
//! accepts brotli, else the `.gz` to one that accepts gzip ([`chosen_encoding`]; `Vary:
//! Accept-Encoding`, each its own ETag and length), GET and HEAD only. Auth, caching headers
//! and the refusal of dotfiles and `/api/` are the router's, the same for both.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::page::{self, BR, GZ, INDEX};

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
    let br_name = format!("{}{BR}", plain.name);
    let gz_name = format!("{}{GZ}", plain.name);
    let (br, gz) = (page::file(&br_name), page::file(&gz_name));
    let encoding = chosen_encoding(headers, br.is_some(), gz.is_some());
    let (chosen, coding) = match encoding {
        Encoding::Br => (br.expect("chosen only when there"), Some("br")),
        Encoding::Gzip => (gz.expect("chosen only when there"), Some("gzip")),
        Encoding::Identity => (plain, None),
    };
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
        if let Some(coding) = coding {
            response
                .headers_mut()
                .insert(header::CONTENT_ENCODING, HeaderValue::from_static(coding));
        }
        response
    };
    let out = response.headers_mut();
    out.insert(
        header::ETAG,
        HeaderValue::from_str(etag).expect("a quoted hex tag"),
    );
    if br.is_some() || gz.is_some() {
        // Which representation depends on the request's Accept-Encoding: caches must know.
        out.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    response
}

/// A representation of a page file: which of its copies is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Encoding {
    Br,
    Gzip,
    Identity,
}

/// The one place `serve` picks the encoding of a page file (issue 35), as nginx's
/// `brotli_static` and `gzip_static` would: of the pre-compressed copies there are (`br`,
/// `gzip`), the one the client's `Accept-Encoding` weighs highest, brotli on a tie (it is the
/// smaller); a coding the header does not name has the weight of `*`, or none; a weight of 0
/// (`br;q=0`) or one that does not parse is a no. Neither taken: the file itself.
fn chosen_encoding(headers: &HeaderMap, has_br: bool, has_gzip: bool) -> Encoding {
    let mut br = None;
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
            .filter(|q| (0.0..=1.0).contains(q))
            .unwrap_or(0.0);
        if coding.eq_ignore_ascii_case("br") {
            br = Some(q);
        } else if coding.eq_ignore_ascii_case("gzip") {
            gzip = Some(q);
        } else if coding == "*" {
            any = Some(q);
        }
    }
    let weight = |named: Option<f32>, there: bool| {
        if there {
            named.or(any).unwrap_or(0.0)
        } else {
            0.0
        }
    };
    let (br, gzip) = (weight(br, has_br), weight(gzip, has_gzip));
    if br > 0.0 && br >= gzip {
        Encoding::Br
    } else if gzip > 0.0 {
        Encoding::Gzip
    } else {
        Encoding::Identity
    }
}

/// Whether `If-None-Match` names `etag` (compared weakly, as RFC 9110 says for it) or is `*`.
pub(super) fn if_none_match(headers: &HeaderMap, etag: &str) -> bool {
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

    /// With both copies there: brotli when it weighs above 0 and no less than gzip, else gzip
    /// above 0, else the file itself.
    #[test]
    fn the_encoding_follows_the_weights_of_accept_encoding() {
        use Encoding::{Br, Gzip, Identity};
        for (value, chosen) in [
            ("gzip, deflate, br", Br),
            ("br", Br),
            ("gzip", Gzip),
            ("br;q=0, gzip", Gzip),
            ("br;q=0.0, gzip;q=0.5", Gzip),
            ("br;q=0.4, gzip;q=0.5", Gzip),
            ("br;q=0.5, gzip;q=0.5", Br),
            ("br;q=1.0, GZIP;q=0.5", Br),
            ("BR;q=0.1", Br),
            ("*", Br),
            ("gzip, *;q=0", Gzip),
            ("br;q=0, *", Gzip),
            ("gzip;q=0, br;q=0", Identity),
            ("gzip;q=0.0, *", Br),
            ("*;q=0", Identity),
            ("deflate", Identity),
            ("identity", Identity),
            ("gzip;q=nonsense", Identity),
            ("br;q=2, gzip", Gzip),
        ] {
            assert_eq!(
                chosen_encoding(&with(header::ACCEPT_ENCODING, value), true, true),
                chosen,
                "{value}"
            );
        }
        assert_eq!(chosen_encoding(&HeaderMap::new(), true, true), Identity);
    }

    /// A copy that is not there is never chosen: gzip alone keeps today's answers.
    #[test]
    fn only_the_copies_there_are_chosen() {
        use Encoding::{Gzip, Identity};
        for (value, chosen) in [
            ("gzip, deflate, br", Gzip),
            ("br;q=1.0, GZIP;q=0.5", Gzip),
            ("*", Gzip),
            ("br", Identity),
            ("gzip;q=0", Identity),
        ] {
            assert_eq!(
                chosen_encoding(&with(header::ACCEPT_ENCODING, value), false, true),
                chosen,
                "{value}"
            );
        }
        assert_eq!(
            chosen_encoding(&with(header::ACCEPT_ENCODING, "gzip"), true, false),
            Identity
        );
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
