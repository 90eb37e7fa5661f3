//! The headers that guard the page on every answer (issue 32), defined once: `fleetdash serve`
//! sends them, and the production nginx block (`nginx/fleetdash.conf`) sends the same, tied to
//! them by a test here.
//!
//! The Content-Security-Policy lets the page run and nothing else: its own scripts, styles and
//! fetches; its inline scripts (trunk's module script, which starts the wasm, the service
//! worker's registration and the first HTML's age, issue 46) by their SHA-256, read off the page's `index.html`, so a rebuilt page
//! carries its own; its service worker (`sw.js`) by `'self'` (`worker-src` falls back to
//! `script-src`); the wasm by `'wasm-unsafe-eval'`
//! (compiling WebAssembly is an eval to CSP); no framing, no `<base>`, no form posts. Styles
//! allow `'unsafe-inline'`: the history strips set a `style="--n:.."` attribute (the page and
//! snapshot.html) and snapshot.html has its own `<style>`; a style attribute can only be allowed
//! this way. Images: the page's own, and the `data:` favicon it draws in its band's colour. The
//! web app manifest (issue 46): the page's own (`manifest-src`; its icons are `img-src`).

use axum::http::HeaderValue;
use base64::Engine;

/// `X-Content-Type-Options`: a file is only ever what its Content-Type says.
pub const NOSNIFF: &str = "nosniff";

/// `Referrer-Policy`: no link followed from the page tells where it came from.
pub const NO_REFERRER: &str = "no-referrer";

/// `Strict-Transport-Security`, sent only over TLS: a year of HTTPS only for this host.
pub const HSTS: &str = "max-age=31536000";

/// The page's Content-Security-Policy, for the page whose entry point is `index_html`.
pub fn content_security_policy(index_html: &str) -> String {
    let scripts: String = inline_scripts(index_html)
        .into_iter()
        .map(|script| format!(" {}", sha256_source(script)))
        .collect();
    format!(
        "default-src 'none'; script-src 'self'{scripts} 'wasm-unsafe-eval'; \
         style-src 'self' 'unsafe-inline'; img-src 'self' data:; manifest-src 'self'; \
         connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
}

/// The policy as a header value. The page is our own build: a policy that is no header value
/// (a byte outside visible ASCII) would be a bug of this module, not of the page.
pub fn policy_header(index_html: &str) -> HeaderValue {
    HeaderValue::from_str(&content_security_policy(index_html))
        .expect("a CSP of quoted base64 hashes is a header value")
}

/// The text of each `<script>` element without `src` in `html`: what a browser hashes.
fn inline_scripts(html: &str) -> Vec<&str> {
    let mut scripts = Vec::new();
    let mut rest = html;
    while let Some(open) = rest.find("<script") {
        let element = &rest[open..];
        let Some(tag_end) = element.find('>') else {
            break;
        };
        let body = &element[tag_end + 1..];
        let Some(close) = body.find("</script>") else {
            break;
        };
        let attributes = &element[..tag_end];
        if !attributes.contains(" src=") {
            scripts.push(&body[..close]);
        }
        rest = &body[close..];
    }
    scripts
}

/// `'sha256-<base64>'`, the CSP source that allows exactly `script`.
fn sha256_source(script: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, script.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page;

    fn embedded_index() -> &'static str {
        std::str::from_utf8(page::file(page::INDEX).unwrap().bytes).unwrap()
    }

    /// The production nginx block sends this module's headers, with the policy of the page it
    /// serves (the committed page/, which `fleetdash page export` writes for it), on every
    /// answer (`always`: the 401 and 404 too), once, at server level, so that no location
    /// (and none added later) loses them: nginx drops the server's `add_header`s in a location
    /// that has its own.
    #[test]
    fn the_nginx_block_sends_the_same_headers_for_the_page_it_serves() {
        let conf = include_str!("../../../nginx/fleetdash.conf");
        let policy = content_security_policy(embedded_index());
        let lines: Vec<&str> = conf.lines().map(str::trim).collect();
        for wanted in [
            format!("add_header Content-Security-Policy \"{policy}\" always;"),
            format!("add_header X-Content-Type-Options \"{NOSNIFF}\" always;"),
            format!("add_header Referrer-Policy \"{NO_REFERRER}\" always;"),
        ] {
            let found = lines.iter().filter(|l| **l == wanted).count();
            assert_eq!(
                found, 1,
                "nginx/fleetdash.conf must have, once:\n    {wanted}\n(after rebuilding the \
                 page: scripts/build-frontend --update rewrites the script's hash)"
            );
        }
        let mut depth = 0usize;
        for line in &lines {
            if line.starts_with("add_header") {
                assert_eq!(
                    depth, 1,
                    "an add_header inside a location drops the server's: {line}"
                );
            }
            depth += line.matches('{').count();
            depth -= line.matches('}').count();
        }
        assert!(
            !conf.contains("Strict-Transport-Security"),
            "the block is plain HTTP on loopback: HSTS is the TLS proxy's"
        );
    }

    #[test]
    fn the_policy_hashes_each_inline_script_and_no_loaded_one() {
        let html = "<head><script type=module>init()</script>\
                    <script src=/a-0123456789abcdef.js></script>\
                    <script>\nlet b = 1;\n</script></head>";
        assert_eq!(inline_scripts(html), ["init()", "\nlet b = 1;\n"]);
        let policy = content_security_policy(html);
        // echo -n 'init()' | openssl dgst -sha256 -binary | base64
        assert!(
            policy.contains(
                "script-src 'self' 'sha256-w4ujnOpjBoH2vcasx+reJRUwYivG8Q3afx/XevGJod8=' 'sha256-"
            ),
            "{policy}"
        );
        assert_eq!(policy.matches("'sha256-").count(), 2, "{policy}");
        assert!(!policy.contains("'unsafe-eval'"));
        assert!(content_security_policy("<p>no script</p>").contains("script-src 'self' 'wasm"));
    }

    /// trunk's, which starts the wasm, the service worker's registration and the first HTML's
    /// age (issue 46).
    #[test]
    fn the_embedded_page_has_three_inline_scripts_and_its_policy_is_a_header() {
        let scripts = inline_scripts(embedded_index());
        assert_eq!(scripts.len(), 3, "{scripts:?}");
        assert!(scripts[1].contains("serviceWorker"), "{scripts:?}");
        assert!(
            scripts[2].contains("getElementById(\"first\")"),
            "{scripts:?}"
        );
        let value = policy_header(embedded_index());
        assert!(value.to_str().unwrap().contains("'wasm-unsafe-eval'"));
    }
}
