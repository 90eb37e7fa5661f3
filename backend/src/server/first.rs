//! `/`: the first HTML the collector wrote into output_dir with the last snapshot (issue 46,
//! [`first_html`]), the verdict already in it, when it was written from the page this server
//! serves; else the page's own index.html. A first HTML of another page (a build before an
//! upgrade) names assets this server does not have: it is never served.

use std::path::PathBuf;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::write::first_html;

/// The first HTML's file, and the id of the page it must have been written from.
#[derive(Clone)]
pub struct First {
    path: PathBuf,
    page_id: Arc<str>,
}

impl First {
    /// In `output_dir`, for the page whose index.html is `index_html`.
    pub fn new(output_dir: &std::path::Path, index_html: &[u8]) -> First {
        First {
            path: output_dir.join(first_html::FILE_NAME),
            page_id: first_html::page_id(index_html).into(),
        }
    }

    /// The first HTML when there is one of this page (read whole: a few kilobytes), else
    /// `request` back for the page's own index.html. Its ETag is its content's: each write is
    /// a new one, revalidated with `If-None-Match` as every page file is.
    pub async fn answer(&self, request: Request) -> Result<Response, Request> {
        if request.method() != Method::GET && request.method() != Method::HEAD {
            return Err(request);
        }
        let html = match tokio::fs::read_to_string(&self.path).await {
            Ok(html) if first_html::is_for(&html, &self.page_id) => html,
            _ => return Err(request),
        };
        let etag = format!("\"{}\"", first_html::page_id(html.as_bytes()));
        let mut response = if super::embedded::if_none_match(request.headers(), &etag) {
            StatusCode::NOT_MODIFIED.into_response()
        } else {
            let mut response = Body::from(html).into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            );
            response
        };
        response.headers_mut().insert(
            header::ETAG,
            HeaderValue::from_str(&etag).expect("a quoted hex tag"),
        );
        Ok(response)
    }
}
