//! `POST /act?t=<token>`: a phone's action button (issue 24). The token is checked and done by
//! [`PhoneActions`] on a blocking thread (a lock, fsync); the answer is a small JSON saying
//! what was done, or a refusal as problem+json with the ASC envelope (403 for a forged,
//! expired, used or garbled link; 409 for an ack of what recovered since: nothing changed). The token itself is never logged.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::Query;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::refusals;
use crate::alerting::phone::{PhoneActions, Refused};

pub const PATH: &str = "/act";

pub async fn act(
    desk: Arc<PhoneActions>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let token = query.get("t").cloned().unwrap_or_default();
    let done = tokio::task::spawn_blocking(move || desk.act_now(&token)).await;
    match done {
        Ok(Ok(Ok(done))) => {
            tracing::info!(element = %done.key, action = done.action.as_str(), "done from the phone: {}", done.words);
            axum::Json(json!({
                "done": done.words,
                "element": done.key,
                "action": done.action.as_str(),
            }))
            .into_response()
        }
        Ok(Ok(Err(refused @ Refused::NothingOpen { .. }))) => {
            refusals::action_moot(refused.words()).into_response()
        }
        Ok(Ok(Err(refused @ Refused::OutOfRange))) => {
            tracing::warn!("an action link refused: {}", refused.words());
            refusals::action_out_of_range(refused.words()).into_response()
        }
        Ok(Ok(Err(refused))) => {
            let why = refused.words();
            let level_is_warn = !matches!(refused, Refused::Expired { .. } | Refused::Used);
            if level_is_warn {
                tracing::warn!("an action link refused: {why}");
            } else {
                tracing::info!("an action link refused: {why}");
            }
            refusals::action_refused(why).into_response()
        }
        Ok(Err(e)) => {
            tracing::error!("an action from the phone not recorded: {e:#}");
            refusals::action_failed(format!("{e:#}")).into_response()
        }
        Err(e) => refusals::action_failed(format!("the action task failed: {e}")).into_response(),
    }
}
