//! The demo agents' reporting client: one simulated agent reporting to the hub's intake over
//! the real A2A wire (docs/reporting.md), in the dialect that agent speaks, with its own bearer
//! token. Reports go as a structured data part or as the lenient text form; the Pulse plane's
//! agents put either under `content`, as they do on the wire.
//!
//! It is a client of the intake like any agent's: it learns nothing from a reply but whether
//! the report was applied or which JSON-RPC error it got (the intake is the queue's judge).

use std::time::Duration;

use serde_json::{Value, json};

use crate::a2a::{RpcOutcome, Wire};

/// A report sent again after a transport failure or a 5xx waits this long first; the same
/// `messageId` makes the retry safe (the intake applies a report once).
const RETRY_PAUSE: Duration = Duration::from_secs(1);
/// How many times one report is tried before the demo gives up on it (and says so).
const ATTEMPTS: usize = 3;
/// One report's HTTP deadline: the intake answers after its commit, well within this.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// What one report carries: a data part (`{"report": ...}`) or one line of the text form.
#[derive(Debug, Clone)]
pub enum Body {
    Data(Value),
    Text(String),
}

/// How the intake answered a report.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Applied: the JSON-RPC result (a Task, or a Message for a heartbeat).
    Applied(Value),
    /// A JSON-RPC error, by code (e.g. -32099: another agent already owns the task).
    Refused(i64),
}

/// One agent reporting to the intake at `url`.
pub struct Reporter {
    pub name: &'static str,
    wire: Wire,
    url: String,
    /// Its report token: sent as the bearer, never logged or written.
    token: String,
    http: reqwest::Client,
}

impl Reporter {
    pub fn new(
        name: &'static str,
        wire: Wire,
        url: &str,
        token: String,
        http: reqwest::Client,
    ) -> Reporter {
        Reporter {
            name,
            wire,
            url: url.to_string(),
            token,
            http,
        }
    }

    /// The dialect it reports in.
    pub fn wire(&self) -> Wire {
        self.wire
    }

    /// The JSON-RPC request for `body` in this agent's dialect, on `task_id` when given (the
    /// message's A2A `taskId`).
    pub fn request(&self, message_id: &str, task_id: Option<&str>, body: &Body) -> Value {
        let context_id = format!("demo-{}", self.name);
        let text = match body {
            Body::Text(text) => text.as_str(),
            Body::Data(_) => "",
        };
        let mut request = self
            .wire
            .send_message(message_id, message_id, &context_id, text);
        let message = &mut request["params"]["message"];
        if let Body::Data(data) = body {
            let part = match self.wire {
                Wire::V1 => json!({ "data": data }),
                Wire::V03 | Wire::V03Content => json!({ "kind": "data", "data": data }),
            };
            // The Pulse plane's v0.3 carries its parts under `content` too.
            let key = if self.wire == Wire::V03Content {
                "content"
            } else {
                "parts"
            };
            message[key] = json!([part]);
        }
        if let Some(task_id) = task_id {
            message["taskId"] = json!(task_id);
            // A message naming a task is in the task's context (A2A §3.4.3): inferred when
            // none is sent, refused when another is.
            if let Some(m) = message.as_object_mut() {
                m.remove("contextId");
            }
        }
        request
    }

    /// Sends one report and returns the intake's answer; a transport failure or a 5xx is
    /// tried again with the same `messageId`. Err names the agent and what failed (never the
    /// token).
    pub async fn report(&self, task_id: Option<&str>, body: &Body) -> Result<Answer, String> {
        let message_id = uuid::Uuid::new_v4().to_string();
        let request = self.request(&message_id, task_id, body);
        let mut last = String::new();
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(RETRY_PAUSE).await;
            }
            match self.send(&request).await {
                Ok(answer) => return Ok(answer),
                Err((why, retry)) => {
                    last = why;
                    if !retry {
                        break;
                    }
                }
            }
        }
        Err(format!("{}: report not delivered: {last}", self.name))
    }

    /// One POST: the answer, or why not and whether sending it again may help.
    async fn send(&self, request: &Value) -> Result<Answer, (String, bool)> {
        let mut post = self
            .http
            .post(&self.url)
            .bearer_auth(&self.token)
            .timeout(REQUEST_TIMEOUT)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(request.to_string());
        for (name, value) in self.wire.headers() {
            post = post.header(*name, *value);
        }
        let response = post.send().await.map_err(|e| (e.to_string(), true))?;
        let status = response.status();
        if !status.is_success() {
            return Err((format!("HTTP {status}"), status.is_server_error()));
        }
        let bytes = response
            .bytes()
            .await
            .map_err(|e| (format!("the reply broke off: {e}"), true))?;
        let reply: Value = serde_json::from_slice(&bytes)
            .map_err(|e| (format!("the reply is not JSON: {e}"), false))?;
        match RpcOutcome::parse(&reply).map_err(|e| (e, false))? {
            RpcOutcome::Result(result) => Ok(Answer::Applied(result)),
            RpcOutcome::Error { code } => Ok(Answer::Refused(code)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reporter(wire: Wire) -> Reporter {
        Reporter::new(
            "sol",
            wire,
            "http://127.0.0.1:1/",
            "t".into(),
            reqwest::Client::new(),
        )
    }

    #[test]
    fn each_dialect_carries_data_and_text_where_its_peers_read_them() {
        let data = Body::Data(json!({"report": "heartbeat"}));
        let v1 = reporter(Wire::V1).request("m1", Some("q_1"), &data);
        assert_eq!(v1["method"], "SendMessage");
        assert_eq!(
            v1["params"]["message"]["parts"][0]["data"]["report"],
            "heartbeat"
        );
        assert_eq!(v1["params"]["message"]["taskId"], "q_1");
        assert_eq!(v1["params"]["message"]["messageId"], "m1");

        let v03 = reporter(Wire::V03).request("m2", None, &data);
        assert_eq!(v03["method"], "message/send");
        assert_eq!(v03["params"]["message"]["parts"][0]["kind"], "data");
        assert!(v03["params"]["message"].get("taskId").is_none());

        let pulse = reporter(Wire::V03Content).request("m3", None, &data);
        let message = &pulse["params"]["message"];
        assert_eq!(message["content"][0]["data"]["report"], "heartbeat");
        assert!(message.get("parts").is_none(), "{message}");

        let text = Body::Text("DONE q_1".into());
        let pulse = reporter(Wire::V03Content).request("m4", None, &text);
        assert_eq!(pulse["params"]["message"]["content"], "DONE q_1");
        let v03 = reporter(Wire::V03).request("m5", None, &text);
        assert_eq!(v03["params"]["message"]["parts"][0]["text"], "DONE q_1");
    }
}
