//! `fleetdash mcp` (issue 25): the fleet's answers ([`crate::answers`]) as MCP tools, on the
//! official Rust SDK (rmcp), over stdio for an agent on this host (`fleetdash mcp --config
//! FILE`: the agent runs it, as its operator would run the CLI).
//!
//! - Tools: `fleet_status` (the glance: verdict, needs-you lines, every non-green element, the
//!   snapshot's age), `changes_since` (band changes after a moment, from the transitions log),
//!   `work_queue` (the queue as `fleetdash tasks` words it). Each answers with the words as text
//!   and the same as structured content.
//! - Errors as seed 000 binds ASC to MCP: an unknown tool or a malformed call stays a JSON-RPC
//!   protocol error (rmcp's router); a tool that fails (no snapshot, a stale one, a time it
//!   cannot read) is a successful response with `isError: true`, its words, and the ASC
//!   envelope as a resource of MIME type `application/agent-status+json`.
//! - Read-only: the snapshot and the transitions log as files, the queue through its read-only
//!   reader (`fleetdash run` may hold its one writer). Nothing here writes.

use std::path::PathBuf;

use chrono::Utc;
use fleetdash_model::Asc;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, ResourceContents, ServerCapabilities,
    ServerConfig,
};
use rmcp::{
    ErrorData as McpError, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router,
};
use serde_json::{Value, json};

use crate::answers::{self, Answer};
use crate::config::{Config, Rules};
use crate::queue::QueueRules;
use crate::redact::RedactionGate;

/// The ASC envelope's media type (seed 000's MCP binding).
pub const ASC_MIME: &str = "application/agent-status+json";

/// The fleet as MCP tools, for one config.
#[derive(Clone)]
pub struct FleetTools {
    snapshot: PathBuf,
    state_dir: PathBuf,
    queue_db: Option<PathBuf>,
    queue_rules: QueueRules,
    gate: RedactionGate,
    // Read by the code #[tool_handler] writes.
    #[allow(dead_code)]
    tool_router: ToolRouter<Self>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct Since {
    /// A time of day in UTC ("14:00": the last one at or before now), or an RFC 3339 moment
    /// ("2026-12-02T14:00:00Z").
    pub since: String,
}

/// A tool's failure: its words and the ASC envelope, `isError: true`.
fn failed(words: String, asc: &Asc, terminal: bool, data: Option<Value>) -> CallToolResult {
    let envelope = json!({"code": asc.code, "name": asc.name, "scope": "tool_call",
                          "terminal": terminal});
    let mut result = CallToolResult::error(vec![
        ContentBlock::text(words),
        ContentBlock::resource(ResourceContents::TextResourceContents {
            uri: format!("urn:agent-status:{}", asc.name),
            mime_type: Some(ASC_MIME.into()),
            text: envelope.to_string(),
            meta: None,
        }),
    ]);
    result.structured_content = data;
    result
}

fn answered(answer: Answer) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(answer.text)]);
    result.structured_content = Some(answer.data);
    result
}

/// The blocking part of a tool, off the async runtime (file reads, SQLite).
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, McpError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| McpError::internal_error(format!("a tool's task failed: {e}"), None))
}

#[tool_router]
impl FleetTools {
    pub fn new(config: &Config, rules: &Rules) -> FleetTools {
        FleetTools {
            snapshot: config.output_dir.join(crate::write::status_json::FILE_NAME),
            state_dir: config.state_dir.clone(),
            queue_db: config.work_queue.as_ref().map(|q| q.db.clone()),
            queue_rules: QueueRules::of(rules),
            gate: config.gate(),
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        description = "How the fleet is, now: the verdict, every line that needs the operator \
                       (red first), every element that is not green with its stable key, band \
                       and Agent Status Code, and the snapshot's age. Fails (isError) when there \
                       is no snapshot or it is stale, still saying what it last knew."
    )]
    async fn fleet_status(&self) -> Result<CallToolResult, McpError> {
        let path = self.snapshot.clone();
        let read = blocking(move || answers::read_snapshot(&path)).await?;
        let now = Utc::now();
        Ok(match read {
            Err(why) => failed(
                answers::status(Err(&why), now).text,
                &Asc::DEPENDENCY_UNAVAILABLE,
                false,
                None,
            ),
            Ok(snapshot) => {
                let answer = answers::status(Ok(&snapshot), now);
                if answer.data["stale"] == true {
                    let data = Some(answer.data.clone());
                    failed(answer.text, &Asc::DEPENDENCY_UNAVAILABLE, false, data)
                } else {
                    answered(answer)
                }
            }
        })
    }

    #[tool(
        description = "What changed since a moment: every band change after it, newest first, \
                       from fleetdash's transitions log (at most 200, the rest counted)."
    )]
    async fn changes_since(
        &self,
        Parameters(Since { since }): Parameters<Since>,
    ) -> Result<CallToolResult, McpError> {
        let moment = match answers::moment(&since, Utc::now()) {
            Ok(moment) => moment,
            Err(why) => return Ok(failed(why, &crate::problem::INVALID_REQUEST, true, None)),
        };
        let (dir, gate) = (self.state_dir.clone(), self.gate.clone());
        let log = blocking(move || {
            crate::write::transitions::TransitionLog::new(&dir, gate)
                .read()
                .map_err(|e| format!("{e:#}"))
        })
        .await?;
        Ok(match log {
            Ok(log) => answered(answers::changes(Ok(&log), moment)),
            Err(why) => failed(why, &Asc::DEPENDENCY_UNAVAILABLE, false, None),
        })
    }

    #[tool(
        description = "The work queue as `fleetdash tasks` shows it: each task's owner, ACK, \
                       state, band and reason, red first (at most 200, the rest counted)."
    )]
    async fn work_queue(&self) -> Result<CallToolResult, McpError> {
        let Some(db) = self.queue_db.clone() else {
            return Ok(failed(
                "this fleetdash has no work queue: [work_queue] db is not set in its config".into(),
                &Asc::FAILED_PRECONDITION,
                true,
                None,
            ));
        };
        let rows = blocking(move || crate::queue::rows::read_only(&db)).await?;
        Ok(match rows {
            Ok(view) => {
                let rows: Vec<_> = view.tasks.into_iter().filter_map(Result::ok).collect();
                answered(answers::queue(Ok(&rows), &self.queue_rules, Utc::now()))
            }
            Err(e) => failed(e, &Asc::DEPENDENCY_UNAVAILABLE, false, None),
        })
    }
}

#[tool_handler]
impl ServerHandler for FleetTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("fleetdash", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "fleetdash: how an A2A agent fleet is, in the words its operator reads on the \
             dashboard. Ask fleet_status first; changes_since and work_queue say more.",
            )
    }
}

/// `fleetdash mcp --config FILE`: serves the tools on stdin/stdout until the client closes.
pub async fn serve_stdio(config: &Config, rules: &Rules) -> anyhow::Result<()> {
    let service = FleetTools::new(config, rules)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| anyhow::anyhow!("MCP over stdio could not start: {e}"))?;
    service
        .waiting()
        .await
        .map_err(|e| anyhow::anyhow!("MCP over stdio stopped: {e}"))?;
    Ok(())
}
