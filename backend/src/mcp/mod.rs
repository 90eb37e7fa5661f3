//! `fleetdash mcp` (issue 25): the fleet's answers ([`crate::answers`]) as MCP tools, on the
//! official Rust SDK (rmcp), over stdio for an agent on this host (`fleetdash mcp --config
//! FILE`), and over Streamable HTTP at the intake's `/mcp` ([`streamable_http`], behind the
//! intake's tokens).
//!
//! - Tools: `fleet_status` (the glance: verdict, needs-you lines, every non-green element, the
//!   snapshot's age), `needs_you` (the needs-you lines alone), `explain` (one element by key:
//!   band, reason, dependencies, hold, last day), `changes_since` (band changes after a moment,
//!   from the transitions log), `work_queue` (the queue as `fleetdash tasks` words it),
//!   `report` (the report of a period, as the morning report says it). Each answers with the
//!   words as text and the same as structured content.
//! - For the operator only ([`McpRole`]): `silence` and `assign_task`, with the CLI's semantics
//!   (`fleetdash silence add`, `fleetdash task assign`), recorded the same way.
//! - Resources: `fleet://status.json` (the snapshot) and `fleet://glance.txt` (its words).
//! - Errors as seed 000 binds ASC to MCP: an unknown tool or a malformed call stays a JSON-RPC
//!   protocol error (rmcp's router); a tool that fails (no snapshot, a stale one, a time it
//!   cannot read) is a successful response with `isError: true`, its words, and the ASC
//!   envelope as a resource of MIME type `application/agent-status+json`.
//! - The read tools read the snapshot and the transitions log as files, the queue through its
//!   read-only reader (`fleetdash run` may hold its one writer).

use std::path::PathBuf;

use chrono::Utc;
use fleetdash_model::Asc;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{
    ErrorData as McpError, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router,
};
use serde_json::{Value, json};

use crate::answers::{self, Answer};
use crate::clock::Clocked;
use crate::config::{Config, Rules};
use crate::queue::QueueRules;
use crate::redact::RedactionGate;

/// The ASC envelope's media type (seed 000's MCP binding).
pub const ASC_MIME: &str = "application/agent-status+json";

/// Who is asking: the hub agent reads; the operator also assigns and silences. Over HTTP the
/// intake's guard puts it in the request (from the bearer token); over stdio it is the
/// command's (`--operator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpRole {
    Hub,
    Operator,
}

/// The fleet as MCP tools, for one config.
#[derive(Clone)]
pub struct FleetTools {
    snapshot: PathBuf,
    state_dir: PathBuf,
    queue_db: Option<PathBuf>,
    queue_rules: QueueRules,
    deps: std::sync::Arc<crate::deps::Deps>,
    gate: RedactionGate,
    /// The role of a caller whose request carries none (stdio).
    stdio_role: McpRole,
    queue_config: Option<(PathBuf, QueueRules)>,
    reports: answers::report::Reports,
    // Read by the code #[tool_handler] writes.
    #[allow(dead_code)]
    tool_router: ToolRouter<Self>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct Key {
    /// The element's stable key, as fleet_status's elements and the transitions log name it:
    /// "agent:min", "host:lab", "host:lab/tunnel:lab-heart", "queue:q_1a2b".
    pub key: String,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct SilenceArgs {
    /// Each `field=value`: host=lab, agent=min, kind=cron, name=nginx, key=host:lab/tunnel:t.
    pub matchers: Vec<String>,
    /// How long: "2h", "45m".
    pub length: String,
    /// Why, shown on the page beside the element ("disk swap").
    pub reason: Option<String>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct AssignArgs {
    /// What is to be done.
    pub title: String,
    /// The agent that owns it; without it, the first tagged agent to ACK owns it.
    pub to: Option<String>,
    /// Agents the task is also for.
    pub tags: Option<Vec<String>>,
    /// Due this long from now: "2h", "45m".
    pub deadline: Option<String>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct Since {
    /// A time of day in UTC ("14:00": the last one at or before now), or an RFC 3339 moment
    /// ("2026-12-02T14:00:00Z").
    pub since: String,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct ReportSince {
    /// Since when: a time of day in UTC ("07:30": the last one at or before now) or an RFC
    /// 3339 moment. Without it, since the last scheduled report ended, else the last 24 h.
    pub since: Option<String>,
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

impl FleetTools {
    /// The caller's role: the one the intake's guard put in an HTTP request (none there: the
    /// hub's, the least), else stdio's.
    fn role(&self, context: &RequestContext<RoleServer>) -> McpRole {
        match context.extensions.get::<axum::http::request::Parts>() {
            Some(parts) => parts
                .extensions
                .get::<McpRole>()
                .copied()
                .unwrap_or(McpRole::Hub),
            None => self.stdio_role,
        }
    }

    /// `None` for the operator; for anyone else, the refusal.
    fn operator_only(
        &self,
        context: &RequestContext<RoleServer>,
        what: &str,
    ) -> Option<CallToolResult> {
        (self.role(context) != McpRole::Operator).then(|| {
            failed(
                format!(
                    "only the operator {what}: over HTTP with [intake] operator_token_*, over \
                     stdio with `fleetdash mcp --operator`"
                ),
                &Asc::PERMISSION_DENIED,
                true,
                None,
            )
        })
    }

    /// The snapshot, or the failure that says why there is none.
    async fn snapshot(
        &self,
    ) -> Result<Result<fleetdash_model::Snapshot, CallToolResult>, McpError> {
        let path = self.snapshot.clone();
        Ok(blocking(move || answers::read_snapshot(&path))
            .await?
            .map_err(|why| {
                failed(
                    answers::status(Err(&why), Utc::now()).text,
                    &Asc::DEPENDENCY_UNAVAILABLE,
                    false,
                    None,
                )
            }))
    }
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
            deps: std::sync::Arc::new(crate::deps::Deps::from_config(config)),
            gate: config.gate(),
            stdio_role: McpRole::Hub,
            queue_config: config
                .work_queue
                .as_ref()
                .map(|q| (q.db.clone(), QueueRules::of(rules))),
            reports: answers::report::Reports::new(config, rules),
            tool_router: Self::tool_router(),
        }
    }

    /// The same tools for a caller on stdio with `role`.
    pub fn with_stdio_role(mut self, role: McpRole) -> FleetTools {
        self.stdio_role = role;
        self
    }

    #[tool(
        description = "Operator only: silence alerts, as `fleetdash silence add` does: every \
                       matcher must match (host=lab, agent=min, kind=cron, key=host:lab/tunnel:t), \
                       for a length (\"2h\", \"45m\"), with a reason shown on the page. The \
                       elements stay red on the page; only their alerts are held."
    )]
    async fn silence(
        &self,
        Parameters(SilenceArgs {
            matchers,
            length,
            reason,
        }): Parameters<SilenceArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        if let Some(refused) = self.operator_only(&context, "silences") {
            return Ok(refused);
        }
        let mut parsed = Vec::new();
        for m in &matchers {
            match crate::config::maintenance::Matcher::parse(m) {
                Ok(matcher) => parsed.push(matcher),
                Err(why) => return Ok(failed(why, &crate::problem::INVALID_REQUEST, true, None)),
            }
        }
        let span = humantime::parse_duration(length.trim()).ok();
        if let Some(Err(why)) = span.map(|d| crate::clock::ahead(Utc::now(), d)) {
            return Ok(failed(
                format!("length {length:?}: {why}"),
                &crate::problem::INVALID_REQUEST,
                true,
                None,
            ));
        }
        let length = span
            .and_then(|d| chrono::Duration::from_std(d).ok())
            .filter(|d| *d > chrono::Duration::zero());
        let Some(length) = length else {
            return Ok(failed(
                "length: a duration longer than zero, e.g. \"2h\" or \"45m\"".into(),
                &crate::problem::INVALID_REQUEST,
                true,
                None,
            ));
        };
        let store =
            crate::alerting::silences::SilenceStore::new(&self.state_dir, self.gate.clone());
        let reason = reason.unwrap_or_default();
        let added = blocking(move || store.add(parsed, length, &reason, Utc::now())).await?;
        Ok(match added {
            Ok(silence) => {
                let matchers: Vec<String> =
                    silence.matchers.iter().map(ToString::to_string).collect();
                let mut words = format!(
                    "silenced {} until {} UTC",
                    matchers.join(" "),
                    silence.end.format("%Y-%m-%d %H:%M")
                );
                if !silence.reason.is_empty() {
                    words.push_str(&format!(" ({})", silence.reason));
                }
                words.push_str(&format!(" [id {}]", silence.id));
                let mut result = CallToolResult::success(vec![ContentBlock::text(words)]);
                result.structured_content = Some(json!({
                    "id": silence.id, "matchers": matchers, "start": silence.start,
                    "end": silence.end, "reason": silence.reason,
                }));
                result
            }
            Err(e) => failed(
                format!("{e:#}"),
                &crate::problem::INVALID_REQUEST,
                true,
                None,
            ),
        })
    }

    #[tool(
        description = "Operator only: assign a task, as `fleetdash task assign` does: a title, \
                       an owner (`to`) or agents it is also for (`tags`), a deadline from now \
                       (\"2h\"). Answers the task's line as `fleetdash tasks` shows it."
    )]
    async fn assign_task(
        &self,
        Parameters(AssignArgs {
            title,
            to,
            tags,
            deadline,
        }): Parameters<AssignArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        if let Some(refused) = self.operator_only(&context, "assigns tasks") {
            return Ok(refused);
        }
        let Some((db, rules)) = self.queue_config.clone() else {
            return Ok(failed(
                "this fleetdash has no work queue: [work_queue] db is not set in its config".into(),
                &Asc::FAILED_PRECONDITION,
                true,
                None,
            ));
        };
        let now = Utc::now();
        let deadline = match deadline.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(d) => match humantime::parse_duration(d)
                .map_err(|_| "a duration from now, e.g. \"2h\"".to_string())
                .and_then(|span| crate::clock::ahead(now, span))
            {
                Ok(at) => Some(at),
                Err(why) => {
                    return Ok(failed(
                        format!("deadline {d:?}: {why}"),
                        &crate::problem::INVALID_REQUEST,
                        true,
                        None,
                    ));
                }
            },
        };
        let queue = match crate::queue::WorkQueue::open(&db, rules).await {
            Ok(queue) => queue,
            Err(why) => return Ok(failed(why, &Asc::DEPENDENCY_UNAVAILABLE, false, None)),
        };
        let report = crate::queue::Report {
            from: crate::queue::Reporter::Operator,
            message_id: format!("mcp-{}", uuid::Uuid::new_v4()),
            context_id: None,
            received_at: now,
            kind: crate::queue::ReportKind::Assign(crate::queue::Assignment {
                title: crate::text::clean(
                    &self.gate.redact_str(&title),
                    crate::queue::store::TITLE_MAX_CHARS,
                ),
                owner: to,
                tagged: tags.unwrap_or_default(),
                deadline,
            }),
        };
        let applied = queue.apply(report).await;
        if let Err(e) = queue.close().await {
            tracing::warn!("the work queue did not close cleanly after an MCP assign: {e:#}");
        }
        Ok(match applied {
            Ok(crate::queue::Applied {
                task: Some(task), ..
            }) => {
                let line = crate::queue::judge::line(&task, &rules, &Clocked::wall_only(now));
                let mut result = CallToolResult::success(vec![ContentBlock::text(line)]);
                result.structured_content = Some(json!({
                    "id": task.id, "title": task.title, "owner": task.owner,
                    "tagged": task.tagged, "state": task.state.as_str(),
                }));
                result
            }
            Ok(_) => failed(
                "the queue recorded no task".into(),
                &Asc::INTERNAL_ERROR,
                false,
                None,
            ),
            Err(crate::queue::Refusal::Invalid(why)) => {
                failed(why, &crate::problem::INVALID_REQUEST, true, None)
            }
            Err(crate::queue::Refusal::Store(why)) => {
                failed(why, &Asc::DEPENDENCY_UNAVAILABLE, false, None)
            }
            Err(refusal) => failed(
                format!("the queue refused it: {refusal:?}"),
                &crate::problem::INVALID_REQUEST,
                true,
                None,
            ),
        })
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
        description = "What needs the operator now, alone: the needs-you lines (red first), or \
                       that nothing does. Fails (isError) when there is no snapshot."
    )]
    async fn needs_you(&self) -> Result<CallToolResult, McpError> {
        let snapshot = match self.snapshot().await? {
            Ok(snapshot) => snapshot,
            Err(failure) => return Ok(failure),
        };
        Ok(answered(answers::needs(&snapshot, Utc::now())))
    }

    #[tool(
        description = "One element by its key: band and reason, what it depends on and what \
                       depends on it, whether its alerts are silenced or acknowledged, and its \
                       last day as numbers. Fails (isError, NOT_FOUND) for a key no element has."
    )]
    async fn explain(
        &self,
        Parameters(Key { key }): Parameters<Key>,
    ) -> Result<CallToolResult, McpError> {
        let snapshot = match self.snapshot().await? {
            Ok(snapshot) => snapshot,
            Err(failure) => return Ok(failure),
        };
        Ok(
            match answers::explain(&snapshot, key.trim(), &self.deps, Utc::now()) {
                Some(answer) => answered(answer),
                None => failed(
                    format!(
                        "no element has the key {:?}: fleet_status lists the keys of what is \
                         not green (\"agent:min\", \"host:lab\", \"host:lab/tunnel:t\")",
                        crate::text::clean(&key, 80)
                    ),
                    &Asc::NOT_FOUND,
                    true,
                    None,
                ),
            },
        )
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
        let dir = self.state_dir.clone();
        let log = blocking(move || {
            crate::write::transitions::read_log(&dir).map_err(|e| format!("{e:#}"))
        })
        .await?;
        Ok(match log {
            Ok(log) => answered(answers::changes(Ok(&log), moment)),
            Err(why) => failed(why, &Asc::DEPENDENCY_UNAVAILABLE, false, None),
        })
    }

    #[tool(
        description = "The report of a period, as the operator's morning report says it: the \
                       verdict as its title, what it covers, what needs the operator now, what \
                       went red or amber and came back (flaps merged), red time per element \
                       against the period before, the work queue, fleetdash's own blind spots, \
                       the rest in one line, or an all-clear. `since`: a time of day in UTC or \
                       an RFC 3339 moment; without it, since the last scheduled report ended, \
                       else the last 24 h. Fails (isError) when there is no snapshot."
    )]
    async fn report(
        &self,
        Parameters(ReportSince { since }): Parameters<ReportSince>,
    ) -> Result<CallToolResult, McpError> {
        let now = Utc::now();
        let since = match since.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
            None => None,
            Some(text) => match answers::moment(text, now)
                .and_then(|at| answers::report::check_since(at, now))
            {
                Ok(at) => Some(at),
                Err(why) => return Ok(failed(why, &crate::problem::INVALID_REQUEST, true, None)),
            },
        };
        Ok(match self.reports.build(since, now).await {
            Ok(report) => answered(answers::report::answer(Ok(&report))),
            Err(why) => {
                let answer = answers::report::answer(Err(&why));
                failed(
                    answer.text,
                    &Asc::DEPENDENCY_UNAVAILABLE,
                    false,
                    Some(answer.data),
                )
            }
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
                // Read-only beside `run`: nothing observed here, the wall clock alone.
                answered(answers::queue(
                    Ok(&rows),
                    &self.queue_rules,
                    &Clocked::wall_only(Utc::now()),
                ))
            }
            Err(e) => failed(e, &Asc::DEPENDENCY_UNAVAILABLE, false, None),
        })
    }
}

#[tool_handler]
impl ServerHandler for FleetTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("fleetdash", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "fleetdash: how an A2A agent fleet is, in the words its operator reads on the \
             dashboard. Ask fleet_status first; needs_you, explain, changes_since and \
             work_queue say more; report says what a period did, as the morning report does. \
             Resources: fleet://status.json (the snapshot) and fleet://glance.txt (its words).",
        )
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new(STATUS_URI, "status.json").with_mime_type("application/json"),
            Resource::new(GLANCE_URI, "glance.txt").with_mime_type("text/plain"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let path = self.snapshot.clone();
        let (text, mime) = match request.uri.as_str() {
            STATUS_URI => {
                let bytes = blocking(move || std::fs::read(&path)).await?.map_err(|e| {
                    McpError::resource_not_found(format!("no snapshot to read: {e}"), None)
                })?;
                (
                    String::from_utf8_lossy(&bytes).into_owned(),
                    "application/json",
                )
            }
            GLANCE_URI => {
                let read = blocking(move || answers::read_snapshot(&path)).await?;
                let answer = answers::status(read.as_ref().map_err(String::as_str), Utc::now());
                (answer.text, "text/plain")
            }
            uri => {
                return Err(McpError::resource_not_found(
                    format!("no resource at {uri}: {STATUS_URI} and {GLANCE_URI} are"),
                    None,
                ));
            }
        };
        Ok(
            ReadResourceResult::new(vec![ResourceContents::TextResourceContents {
                uri: request.uri,
                mime_type: Some(mime.into()),
                text,
                meta: None,
            }])
            .into(),
        )
    }
}

/// The snapshot as a resource, as `fleetdash run` wrote it (through the redaction gate).
pub const STATUS_URI: &str = "fleet://status.json";
/// The glance's words, as `fleet_status` says them.
pub const GLANCE_URI: &str = "fleet://glance.txt";

/// The tools over Streamable HTTP, for the intake's listener at `/mcp` (its guard checks the
/// bearer token first): stateless, each answer a JSON body, any `Host` (the intake's own
/// `listen` decides who can reach it, and a token is required anyway).
pub fn streamable_http(
    tools: FleetTools,
    stop: tokio_util::sync::CancellationToken,
) -> rmcp::transport::streamable_http_server::StreamableHttpService<
    FleetTools,
    rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
> {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let mut config = StreamableHttpServerConfig::default();
    config.legacy_session_mode = false;
    config.json_response = true;
    config.allowed_hosts = Vec::new();
    config.cancellation_token = stop;
    StreamableHttpService::new(move || Ok(tools.clone()), Default::default(), config)
}

/// `fleetdash mcp --config FILE`: serves the tools on stdin/stdout until the client closes.
pub async fn serve_stdio(config: &Config, rules: &Rules, role: McpRole) -> anyhow::Result<()> {
    let service = FleetTools::new(config, rules)
        .with_stdio_role(role)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| anyhow::anyhow!("MCP over stdio could not start: {e}"))?;
    service
        .waiting()
        .await
        .map_err(|e| anyhow::anyhow!("MCP over stdio stopped: {e}"))?;
    Ok(())
}
