//! A local HTTP receiver that records every request as a real alert service would receive it
//! (path, headers, body, when), and can answer 500 or hang instead: the far end of the alert
//! channels in tests (ntfy, a webhook, Alertmanager's own webhook receiver).
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use chrono::{DateTime, Utc};

/// How the receiver answers.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Mode {
    Ok,
    Fail500,
    /// 403: the request itself refused (a wrong token), never worth another try.
    Refuse403,
    Hang,
    /// Keeps the request (as `Ok` does), then never answers: a sender killed mid-send.
    RecordThenHang,
}

/// One POST as the receiver got it.
#[derive(Clone, Debug)]
pub struct Got {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
    /// When it arrived (for the latency figure: transition to POST).
    pub at: DateTime<Utc>,
}

#[derive(Clone)]
pub struct Receiver {
    mode: Arc<Mutex<Mode>>,
    got: Arc<Mutex<Vec<Got>>>,
    pub addr: SocketAddr,
}

impl Receiver {
    pub async fn start(mode: Mode) -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        Receiver::serve(listener, mode)
    }

    pub fn serve(listener: tokio::net::TcpListener, mode: Mode) -> Receiver {
        let r = Receiver {
            mode: Arc::new(Mutex::new(mode)),
            got: Arc::default(),
            addr: listener.local_addr().unwrap(),
        };
        let app = Router::new().fallback(record).with_state(r.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        r
    }

    pub fn url(&self, path: &str) -> url::Url {
        format!("http://{}{path}", self.addr).parse().unwrap()
    }

    pub fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    pub fn got(&self) -> Vec<Got> {
        self.got.lock().unwrap().clone()
    }
}

async fn record(
    State(r): State<Receiver>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> impl IntoResponse {
    let mode = *r.mode.lock().unwrap();
    match mode {
        Mode::Hang => {
            tokio::time::sleep(std::time::Duration::from_secs(60)).await;
            StatusCode::OK
        }
        Mode::Fail500 => StatusCode::INTERNAL_SERVER_ERROR,
        Mode::Refuse403 => StatusCode::FORBIDDEN,
        Mode::RecordThenHang => {
            r.got.lock().unwrap().push(Got {
                path: uri.path().to_string(),
                headers,
                body: body.to_vec(),
                at: Utc::now(),
            });
            tokio::time::sleep(std::time::Duration::from_secs(60)).await;
            StatusCode::OK
        }
        Mode::Ok => {
            r.got.lock().unwrap().push(Got {
                path: uri.path().to_string(),
                headers,
                body: body.to_vec(),
                at: Utc::now(),
            });
            StatusCode::OK
        }
    }
}
