//! The report intake (spec 003 §1.2, §4): the A2A server the fleet's agents report to, served
//! by `fleetdash run` and `fleetdash demo` when `[intake] listen` is set. Its own listener,
//! loopback by default, not behind the dashboard's nginx. Each report becomes a work-queue
//! row ([`crate::queue`]); the reply is sent only after the queue's `apply` returned, that is
//! after the report is durable.
//!
//! - [`wire`]: JSON-RPC in both dialects (and the Pulse plane's `content`), replies, errors.
//! - [`report`]: one message's report, from a data part or the lenient text form.
//! - [`guard`]: each agent's bearer token, the per-agent rate limit, problem+json refusals.
//! - [`ask`]: a question instead of a report (issue 25): the hub agent or the operator asks
//!   `status`, and the answer is the glance in words and data, from the snapshot; also
//!   `changes since`, `queue` and `report` (the report of a period, issue 45).
//! - [`card`]: the intake's agent card; its skills are the report kinds and the questions.
//! - [`listen`]: the accept loop: a header deadline, connections bounded per peer and in all.
//!
//! Order of the checks, each refusing before anything costly: the token (401), the declared
//! length (413), the body under a size ceiling (413) and a deadline (408), the JSON-RPC request
//! (its error in the caller's dialect), then the caller's budget for what it asks (429): a
//! report spends the agent's report budget, anything else (a read, a malformed request) the
//! token's read budget, so a busy reader never starves its agent's reports. Bad input writes
//! nothing: the queue is only called with a report that read cleanly.
//!
//! Who sees what: an agent's token reads the tasks the agent owns, is tagged on or assigned;
//! the operator's token (`[intake] operator_token_*`) reads every task and reports nothing.

pub mod admission;
pub mod ask;
pub mod card;
pub mod guard;
pub mod listen;
pub mod pools;
pub mod report;
pub mod wire;

use std::collections::HashSet;
use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use chrono::Utc;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::config::{Config, IntakeConfig};
use crate::queue::{Refusal, Report, ReportKind, Reporter, WireState, WorkQueue};
use crate::redact::RedactionGate;
use guard::{Budget, Caller, Problem, RateLimit, Tokens};
use wire::{Call, Dialect, Params, RpcError, code};

/// The header (or query parameter) a v1.0 client sends.
pub const VERSION_HEADER: &str = "a2a-version";

/// What the intake needs besides the queue.
pub struct IntakeOptions {
    pub tokens: Tokens,
    /// Every agent of the registry (owners, tagged agents must be among them).
    pub agents: HashSet<String>,
    pub limits: IntakeConfig,
    pub gate: RedactionGate,
    /// `fleetdash run`'s metrics: the intake counts the reports it accepts and refuses, and
    /// serves `/metrics` to the operator's token. `None`: neither.
    pub metrics: Option<Arc<crate::metrics::Source>>,
    /// The agents marked `role = "hub"`: their report tokens may also ask ([`ask`]).
    pub hubs: HashSet<String>,
    /// `status.json` as `fleetdash run` writes it: what questions are answered from. `None`:
    /// every question is answered "no snapshot".
    pub snapshot: Option<std::path::PathBuf>,
    /// The state_dir whose transitions log answers `changes since ...`.
    pub state_dir: Option<std::path::PathBuf>,
    /// The rules the queue is judged by, for `queue` (as `fleetdash tasks` judges it).
    pub queue_rules: crate::queue::QueueRules,
    /// What `report` is built from (the config's files and rules). `None`: every `report` is
    /// answered that there is none.
    pub report: Option<crate::answers::report::Reports>,
    /// `/mcp`: the fleet's answers as MCP tools over Streamable HTTP, for the operator's
    /// token and the hub agent's. `None`: not served.
    pub mcp: Option<crate::mcp::FleetTools>,
    /// `POST /act`: the phone's action links ([`crate::server::actions`]), for an install whose
    /// nginx passes `/act` here (the package's does). `None`: not served.
    pub actions: Option<Arc<crate::alerting::phone::PhoneActions>>,
}

impl IntakeOptions {
    /// From the registry: each agent's report token is read now. An agent whose token cannot
    /// be read cannot report (401) and is named in the returned warnings; two agents with one
    /// token are an error.
    pub fn from_config(
        config: &Config,
        rules: &crate::config::Rules,
        gate: RedactionGate,
    ) -> anyhow::Result<(IntakeOptions, Vec<String>)> {
        let mut warnings = Vec::new();
        let mut pairs = Vec::new();
        for agent in &config.agents {
            match crate::config::read_token(agent.report_token.as_ref()) {
                Ok(Some(token)) => pairs.push((agent.name.clone(), token)),
                Ok(None) => {}
                Err(failure) => warnings.push(format!(
                    "agent {}: cannot report to the intake: report {}",
                    agent.name, failure.reason
                )),
            }
        }
        let mut tokens = Tokens::new(pairs).map_err(anyhow::Error::msg)?;
        match crate::config::read_token(config.intake.operator_token.as_ref()) {
            Ok(Some(token)) => tokens = tokens.with_operator(&token).map_err(anyhow::Error::msg)?,
            Ok(None) => {}
            Err(failure) => warnings.push(format!(
                "the operator cannot read the queue: operator {}",
                failure.reason
            )),
        }
        if tokens.is_empty() {
            warnings.push(
                "no agent has a readable report token (report_token_env / report_token_file): \
                 every report will be refused"
                    .into(),
            );
        }
        Ok((
            IntakeOptions {
                tokens,
                agents: config.agents.iter().map(|a| a.name.clone()).collect(),
                limits: config.intake.clone(),
                gate,
                metrics: None,
                actions: None,
                hubs: config
                    .agents
                    .iter()
                    .filter(|a| a.hub)
                    .map(|a| a.name.clone())
                    .collect(),
                snapshot: Some(config.output_dir.join(crate::write::status_json::FILE_NAME)),
                state_dir: Some(config.state_dir.clone()),
                queue_rules: crate::queue::QueueRules::of(rules),
                report: Some(crate::answers::report::Reports::new(config, rules)),
                mcp: Some(crate::mcp::FleetTools::new(config, rules)),
            },
            warnings,
        ))
    }
}

struct Intake {
    queue: Arc<WorkQueue>,
    options: IntakeOptions,
    reports: RateLimit,
    reads: RateLimit,
    /// (v1.0, hybrid)
    card: (card::Rendered, card::Rendered),
}

/// The intake's routes for a listener reachable at `url`.
pub fn router(queue: Arc<WorkQueue>, options: IntakeOptions, url: &str) -> Router {
    let intake = Arc::new(Intake {
        queue,
        reports: RateLimit::new(options.limits.rate_per_minute),
        reads: RateLimit::new(options.limits.read_rate_per_minute),
        card: card::rendered(url),
        options,
    });
    let actions = intake.options.actions.clone();
    let mcp = intake.options.mcp.clone();
    let router = Router::new()
        .route("/.well-known/agent-card.json", get(agent_card))
        .route("/metrics", get(metrics))
        .route(
            "/",
            axum::routing::post(rpc).fallback(|| async { Problem::method_not_allowed() }),
        )
        .fallback(|| async { Problem::not_found() });
    let router = match mcp {
        Some(tools) => {
            let service = crate::mcp::streamable_http(tools, CancellationToken::new());
            router.route_service(
                MCP_PATH,
                tower::ServiceBuilder::new()
                    .layer(axum::middleware::from_fn(mcp_role))
                    .service(service),
            )
        }
        None => router,
    };
    let router = match actions {
        Some(desk) => router.route(
            crate::server::actions::PATH,
            axum::routing::post(move |query| crate::server::actions::act(desk.clone(), query))
                .fallback(|| async { Problem::method_not_allowed() }),
        ),
        None => router,
    };
    router
        .layer(axum::middleware::from_fn_with_state(
            intake.clone(),
            admission::guard,
        ))
        .with_state(intake)
}

/// The intake of `fleetdash run` / `demo`: listening, served by its own task.
pub struct Running {
    pub addr: std::net::SocketAddr,
    pub task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

/// Starts the intake when `[intake] listen` is set (`None` otherwise): binds, says where on
/// stderr (`fleetdash: intake listening on http://ADDR/`), and serves `queue` until `shutdown`.
pub async fn start(
    config: &Config,
    rules: &crate::config::Rules,
    queue: Arc<WorkQueue>,
    metrics: Option<Arc<crate::metrics::Source>>,
    shutdown: CancellationToken,
) -> anyhow::Result<Option<Running>> {
    let Some(listen) = config.intake.listen else {
        return Ok(None);
    };
    let gate = config.gate();
    let (mut options, warnings) = IntakeOptions::from_config(config, rules, gate.clone())?;
    options.metrics = metrics;
    options.actions = Some(Arc::new(
        crate::alerting::phone::PhoneActions::new(config, &rules.alerts, gate)
            .with_clock(queue.clock()),
    ));
    for warning in warnings {
        tracing::warn!("intake: {warning}");
    }
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| {
            format!("the intake cannot listen on {listen} (`[intake] listen` in the config)")
        })?;
    let addr = listener.local_addr().context("local address")?;
    eprintln!("fleetdash: intake listening on http://{addr}/");
    let task = tokio::spawn(serve(listener, queue, options, shutdown));
    Ok(Some(Running { addr, task }))
}

/// Serves the intake on `listener` until `shutdown`.
pub async fn serve(
    listener: tokio::net::TcpListener,
    queue: Arc<WorkQueue>,
    options: IntakeOptions,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let url = format!(
        "http://{}/",
        listener.local_addr().context("local address")?
    );
    let bounds = listen::Bounds {
        header_timeout: options.limits.header_timeout,
        pools: pools::Limits {
            unauthenticated: options.limits.max_unauthenticated_connections,
            per_token: options.limits.max_connections_per_token,
            total: options.limits.max_connections,
        },
    };
    let app = router(queue, options, &url);
    listen::serve(listener, app, bounds, shutdown)
        .await
        .context("the intake server failed")
}

/// The card in the shape the client asks for: v1.0's with `A2A-Version: 1.x`, else the
/// hybrid (`Vary: A2A-Version`, so a cache keeps them apart).
async fn agent_card(State(intake): State<Arc<Intake>>, headers: HeaderMap) -> Response {
    let asked = headers.get(VERSION_HEADER).and_then(|v| v.to_str().ok());
    let card::Rendered { body, etag } = match Dialect::from_header(asked) {
        Ok(Dialect::V1) => &intake.card.0,
        _ => &intake.card.1,
    };
    let cached = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| {
            tags.split(',')
                .any(|t| t.trim().trim_start_matches("W/") == etag || t.trim() == "*")
        });
    let common = [
        (header::CACHE_CONTROL, card::CACHE_CONTROL.to_string()),
        (header::ETAG, etag.clone()),
        (header::VARY, "A2A-Version".to_string()),
    ];
    if cached {
        return (StatusCode::NOT_MODIFIED, common).into_response();
    }
    (
        common,
        [(header::CONTENT_TYPE, "application/json".to_string())],
        body.clone(),
    )
        .into_response()
}

fn json_reply(value: Value) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        value.to_string(),
    )
        .into_response()
}

fn rpc_error(id: &Value, dialect: Dialect, e: RpcError) -> Response {
    json_reply(wire::error(id, dialect, &e))
}

/// The dialect a request asks for: the header, else the query parameter the spec allows.
fn version_of(request: &Request) -> Option<String> {
    if let Some(v) = request.headers().get(VERSION_HEADER) {
        return Some(v.to_str().unwrap_or("?").to_string());
    }
    request.uri().query().and_then(|q| {
        url::form_urlencoded::parse(q.as_bytes())
            .find(|(k, _)| k.eq_ignore_ascii_case(VERSION_HEADER))
            .map(|(_, v)| v.into_owned())
    })
}

async fn rpc(State(intake): State<Arc<Intake>>, request: Request) -> Response {
    // The guard ([`admission`]) identified the caller and read the body within its bounds.
    let Some(caller) = request.extensions().get::<Caller>().cloned() else {
        return refused(&intake, "unread", Problem::unauthorized());
    };
    let version = version_of(&request);
    let body = match axum::body::to_bytes(request.into_body(), usize::MAX).await {
        Ok(body) => body,
        Err(_) => return refused(&intake, "unread", Problem::unreadable()),
    };
    let call = wire::read_call(version.as_deref(), &body);
    let budget = match &call {
        // A question (issue 25) reads: it must not use up the hub agent's reports.
        Ok(Call {
            params: Params::Send(inbound),
            ..
        }) if ask::asked(&inbound.parts, Utc::now()).is_some() => Budget::Reads,
        Ok(Call {
            params: Params::Send(_) | Params::Cancel { .. },
            ..
        }) => Budget::Reports,
        _ => Budget::Reads,
    };
    if let Err(problem) = spend(&intake, &caller, budget) {
        // A read over its budget is no report refused.
        return match budget {
            Budget::Reports => refused(&intake, "unread", problem),
            Budget::Reads => problem.into_response(),
        };
    }
    match call {
        // A notification that reports is applied (durably, once per messageId, as any
        // report) and never answered (JSON-RPC 2.0 §4.1); one that reads has nothing to do.
        Ok(call) if call.notification => {
            let reports = budget == Budget::Reports;
            let status = if reports {
                answer(&intake, caller.clone(), call).await.status()
            } else {
                StatusCode::NO_CONTENT
            };
            tracing::debug!(
                caller = caller.name(),
                reports,
                %status,
                "intake: a notification, not answered"
            );
            StatusCode::NO_CONTENT.into_response()
        }
        Ok(call) => answer(&intake, caller, call).await,
        Err(refused) if refused.notification => {
            tracing::debug!(
                caller = caller.name(),
                error = refused.error.message,
                "intake: a notification refused, not answered"
            );
            StatusCode::NO_CONTENT.into_response()
        }
        Err(refused) => rpc_error(&refused.id, refused.dialect, refused.error),
    }
}

/// One request's token from the caller's budget for it; past it, 429 saying which.
fn spend(intake: &Intake, caller: &Caller, budget: Budget) -> Result<(), Problem> {
    let limit = match budget {
        Budget::Reports => &intake.reports,
        Budget::Reads => &intake.reads,
    };
    limit.take(caller).map_err(|wait| {
        tracing::debug!(caller = caller.name(), ?budget, "intake: rate limited");
        Problem::rate_limited(budget, wait)
    })
}

async fn answer(intake: &Intake, caller: Caller, call: Call) -> Response {
    let Call {
        id,
        dialect,
        params,
        ..
    } = call;
    let queue = &intake.queue;
    // An agent reads the tasks it owns, is tagged on or assigned; another agent's task is
    // "not found" to it, as one that does not exist (nothing says it is there).
    let sees = |row: &crate::queue::TaskRow| match &caller {
        Caller::Agent(agent) => row.visible_to(agent),
        Caller::Operator => true,
    };
    // Only an agent reports (a cancel is a report): the operator's token reads.
    let reporter = || match &caller {
        Caller::Agent(agent) => Some(agent.clone()),
        Caller::Operator => None,
    };
    match params {
        Params::Send(inbound) => {
            match ask::asked(&inbound.parts, Utc::now()) {
                Some(Ok(query)) => {
                    return asked(intake, &caller, query, &id, dialect, &inbound).await;
                }
                Some(Err(why)) => {
                    return rpc_error(&id, dialect, RpcError::invalid_params(why));
                }
                None => {}
            }
            let Some(agent) = reporter() else {
                return Problem::reads_only().into_response();
            };
            let received_at = Utc::now();
            let read = {
                let is_agent = |name: &str| intake.options.agents.contains(name);
                let cx = report::Context {
                    received_at,
                    task_id: inbound.task_id.as_deref(),
                    is_agent: &is_agent,
                    gate: &intake.options.gate,
                };
                report::read(&inbound.parts, &cx)
            };
            let kind = match read {
                Ok(kind) => kind,
                Err(why) => {
                    count_refused(intake, "unread", &guard::INVALID_REQUEST);
                    return rpc_error(&id, dialect, RpcError::invalid_report(why));
                }
            };
            // A2A §3.4.3: a message naming a task (its taskId) in another context is refused;
            // a task's context never changes. A report naming its task only in its content
            // comes from the reporter's own session (spec 003 §5.4), whose context is its own.
            if let (Some(task_id), Some(context_id)) = (&inbound.task_id, &inbound.context_id) {
                match queue.get(task_id).await {
                    Ok(Some(row)) if sees(&row) && row.context() != context_id.as_str() => {
                        return rpc_error(
                            &id,
                            dialect,
                            RpcError::invalid_params(format!(
                                "contextId: task {} is in context {}, not {} (A2A §3.4.3: a \
                                 message naming a task carries its context, or none)",
                                row.id,
                                row.context(),
                                crate::text::clean(context_id, 80)
                            )),
                        );
                    }
                    Ok(_) => {}
                    Err(why) => return store_failed(&why),
                }
            }
            let report = Report {
                from: Reporter::Agent(agent.clone()),
                message_id: inbound.message_id.clone(),
                context_id: inbound.context_id.clone(),
                received_at,
                kind,
            };
            apply(intake, &agent, report, &id, dialect, false, |row| {
                wire::send_result(dialect, row, &inbound)
            })
            .await
        }
        Params::Get { id: task_id } => match queue.get(&task_id).await {
            Ok(Some(row)) if sees(&row) => json_reply(wire::ok(&id, wire::task(dialect, &row))),
            Ok(_) => rpc_error(&id, dialect, not_found(&task_id)),
            Err(why) => store_failed(&why),
        },
        Params::List(q) => match queue.list().await {
            Ok(rows) => {
                let mine: Vec<_> = rows.into_iter().filter(|r| sees(r)).collect();
                json_reply(wire::ok(&id, wire::list_result(&mine, &q)))
            }
            Err(why) => store_failed(&why),
        },
        Params::Cancel { id: task_id } => {
            let Some(agent) = reporter() else {
                return Problem::reads_only().into_response();
            };
            // An agent cancels a task by reporting it CANCELED: the same rules as a
            // completion (its owner or a tagged agent), once per task.
            let row = match queue.get(&task_id).await {
                Ok(Some(row)) if sees(&row) => row,
                Ok(_) => return rpc_error(&id, dialect, not_found(&task_id)),
                Err(why) => return store_failed(&why),
            };
            if row.state.is_terminal() {
                return rpc_error(
                    &id,
                    dialect,
                    RpcError::new(
                        code::TASK_NOT_CANCELABLE,
                        format!("task {task_id} is already {}", row.state.as_str()),
                    ),
                );
            }
            // A cancel is an event of its own: its id is one no report of the agent's can have
            // taken (a messageId the agent chose, "cancel-<task>" say, must never turn it into
            // a duplicate answered with nothing).
            let report = Report {
                from: Reporter::Agent(agent.clone()),
                message_id: format!("cancel:{task_id}:{}", uuid::Uuid::new_v4().simple()),
                context_id: None,
                received_at: Utc::now(),
                kind: ReportKind::Completion {
                    task_id: task_id.clone(),
                    state: WireState::Canceled,
                },
            };
            // Always the Task (the SDKs read the result as one), never null.
            apply(intake, &agent, report, &id, dialect, true, |applied| {
                wire::task(dialect, applied.unwrap_or(&row))
            })
            .await
        }
    }
}

fn not_found(task_id: &str) -> RpcError {
    RpcError::new(
        code::TASK_NOT_FOUND,
        format!("task {task_id} is not in the work queue"),
    )
}

fn store_failed(why: &str) -> Response {
    tracing::error!("intake: the work queue failed: {why}");
    Problem::not_stored().into_response()
}

/// Applies `report` (`cancel`: a CancelTask's); answers only once the queue returned (durable),
/// with `result` of the row.
async fn apply(
    intake: &Intake,
    agent: &str,
    report: Report,
    id: &Value,
    dialect: Dialect,
    cancel: bool,
    result: impl FnOnce(Option<&crate::queue::TaskRow>) -> Value,
) -> Response {
    let kind = kind_name(&report.kind);
    let outcome = intake.queue.apply(report).await;
    if let Some(live) = intake.options.metrics.as_ref().and_then(|m| m.live()) {
        match &outcome {
            Ok(_) => live.accepted(kind),
            Err(refusal) => live.refused(kind, &refusal_asc(refusal)),
        }
    }
    match outcome {
        Ok(applied) => {
            tracing::debug!(
                agent,
                kind,
                duplicate = applied.duplicate,
                task = applied.task.as_ref().map(|t| t.id.as_str()),
                "intake: report applied"
            );
            json_reply(wire::ok(id, result(applied.task.as_ref())))
        }
        Err(Refusal::UnknownTask(task_id)) => rpc_error(id, dialect, not_found(&task_id)),
        Err(Refusal::NotYours { task_id }) => Problem::not_yours(&task_id).into_response(),
        Err(Refusal::AlreadyOwned { task_id, owner }) => rpc_error(
            id,
            dialect,
            RpcError {
                code: code::ALREADY_OWNED,
                message: format!(
                    "task {task_id} is owned by {owner}, whose ACK came first (spec 003 §4.2); \
                     this ACK is recorded as yielded"
                ),
                asc: Some(wire::AscError {
                    asc: guard::ABORTED_CONCURRENCY,
                    terminal: true,
                    facts: vec![("owner", owner), ("task_id", task_id)],
                }),
            },
        ),
        // Five cancels of one task at once: the first cancels it, the others lost the race
        // (checked before they were queued, finished by the time they were applied).
        Err(Refusal::Finished { task_id, state }) if cancel => rpc_error(
            id,
            dialect,
            RpcError {
                code: code::TASK_NOT_CANCELABLE,
                message: format!("task {task_id} is already {}", state.as_str()),
                asc: Some(wire::AscError {
                    asc: guard::ABORTED_CONCURRENCY,
                    terminal: true,
                    facts: vec![("state", state.as_str().to_string()), ("task_id", task_id)],
                }),
            },
        ),
        Err(Refusal::Finished { task_id, state }) => rpc_error(
            id,
            dialect,
            RpcError::invalid_params(format!(
                "task {task_id} is already finished ({})",
                state.as_str()
            )),
        ),
        Err(Refusal::Invalid(why)) => rpc_error(id, dialect, RpcError::invalid_params(why)),
        Err(Refusal::Store(why)) => store_failed(&why),
    }
}

/// The ASC each refusal of the queue is answered with (see [`apply`]).
fn refusal_asc(refusal: &Refusal) -> fleetdash_model::Asc {
    match refusal {
        Refusal::UnknownTask(_) => fleetdash_model::Asc::NOT_FOUND,
        Refusal::NotYours { .. } => fleetdash_model::Asc::PERMISSION_DENIED,
        Refusal::AlreadyOwned { .. } => guard::ABORTED_CONCURRENCY,
        Refusal::Invalid(_) | Refusal::Finished { .. } => guard::INVALID_REQUEST,
        Refusal::Store(_) => fleetdash_model::Asc::INTERNAL_ERROR,
    }
}

/// A refused report counted (when the run keeps metrics), then answered.
fn refused(intake: &Intake, kind: &str, problem: Problem) -> Response {
    count_refused(intake, kind, &problem.asc);
    problem.into_response()
}

fn count_refused(intake: &Intake, kind: &str, asc: &fleetdash_model::Asc) {
    if let Some(live) = intake.options.metrics.as_ref().and_then(|m| m.live()) {
        live.refused(kind, asc);
    }
}

/// `GET /metrics`: the operator's token only (an agent's token reads its own tasks, not the
/// fleet's counts); 404 when this intake keeps no metrics.
async fn metrics(State(intake): State<Arc<Intake>>, request: Request) -> Response {
    let Some(source) = intake.options.metrics.clone() else {
        return Problem::not_found().into_response();
    };
    match request.extensions().get::<Caller>() {
        Some(Caller::Operator) => crate::metrics::answer(source).await,
        Some(Caller::Agent(_)) => Problem::metrics_operator_only().into_response(),
        None => Problem::unauthorized().into_response(),
    }
}

fn kind_name(kind: &ReportKind) -> &'static str {
    match kind {
        ReportKind::Heartbeat { .. } => "heartbeat",
        ReportKind::Completion { .. } => "completion",
        ReportKind::Blocker { .. } => "blocker",
        ReportKind::Ack { .. } => "ack",
        ReportKind::Assign(_) => "assign",
    }
}

/// Where the MCP face is served on the intake's listener.
pub const MCP_PATH: &str = "/mcp";

/// The MCP tools read who asks from the request: the operator also assigns and silences. The
/// guard ([`admission`]) let only the operator's token and the hub agent's through.
async fn mcp_role(request: Request, next: axum::middleware::Next) -> Response {
    let role = match request.extensions().get::<Caller>() {
        Some(Caller::Operator) => crate::mcp::McpRole::Operator,
        _ => crate::mcp::McpRole::Hub,
    };
    let mut request = request;
    request.extensions_mut().insert(role);
    next.run(request).await
}

/// A question (issue 25): the hub agent's or the operator's, answered from the snapshot.
async fn asked(
    intake: &Intake,
    caller: &Caller,
    query: ask::Query,
    id: &Value,
    dialect: Dialect,
    inbound: &wire::Inbound,
) -> Response {
    let may_ask = match caller {
        Caller::Operator => true,
        Caller::Agent(agent) => intake.options.hubs.contains(agent),
    };
    if !may_ask {
        count_refused(intake, "unread", &fleetdash_model::Asc::PERMISSION_DENIED);
        return Problem::may_not_ask(caller.name()).into_response();
    }
    let now = Utc::now();
    let answer = match query {
        ask::Query::Status => {
            let snapshot = match intake.options.snapshot.clone() {
                Some(path) => {
                    tokio::task::spawn_blocking(move || crate::answers::read_snapshot(&path))
                        .await
                        .unwrap_or_else(|e| Err(format!("the snapshot could not be read: {e}")))
                }
                None => Err("this intake was started without a snapshot to answer from".into()),
            };
            crate::answers::status(snapshot.as_ref().map_err(String::as_str), now)
        }
        ask::Query::Changes { since } => {
            let log = match intake.options.state_dir.clone() {
                Some(dir) => tokio::task::spawn_blocking(move || {
                    crate::write::transitions::read_log(&dir).map_err(|e| format!("{e:#}"))
                })
                .await
                .unwrap_or_else(|e| Err(format!("the transitions log could not be read: {e}"))),
                None => Err("this intake was started without a transitions log".into()),
            };
            crate::answers::changes(log.as_deref().map_err(String::as_str), since)
        }
        ask::Query::Queue => {
            let rows = intake.queue.list().await;
            crate::answers::queue(
                rows.as_deref().map_err(String::as_str),
                &intake.options.queue_rules,
                &intake.queue.clocked(),
            )
        }
        ask::Query::Report { since } => match &intake.options.report {
            Some(reports) => {
                let built = reports.build(since, now).await;
                crate::answers::report::answer(built.as_ref().map_err(String::as_str))
            }
            None => crate::answers::report::answer(Err(
                "this intake was started without the files a report is built from",
            )),
        },
    };
    tracing::debug!(
        caller = caller.name(),
        ?query,
        "intake: a question answered"
    );
    json_reply(wire::ok(
        id,
        wire::answer_result(dialect, inbound, &answer.text, answer.data),
    ))
}
