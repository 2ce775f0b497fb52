//! Traces, as a collector sees them: the runner's real OTLP exporter (HTTP, protobuf) posts
//! to an in-process collector that decodes what it receives. A task from its create to its
//! end is one trace (the caller's `traceparent` continued) with its run's phases and each
//! step; a call relayed from a hub to a runner is one trace across both; no span carries
//! the bearer token or a typed value.
//!
//! The spans of this test only: its subscriber is the thread's default, on a
//! current-thread runtime where every task of the hub, the runner and the link runs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use abr_core::approval::ApprovalRule;
use abr_core::testing::FakeProvider;
use abr_service::relay::link::{self, LinkOptions, Shutdown};
use abr_service::relay::{Hub, HubSettings};
use abr_service::traces::{TraceSettings, Traces};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::Method;
use common::fake::*;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, any_value};
use prost::Message as _;
use secrecy::SecretString;
use serde_json::{Value, json};

use crate::common;

/// One span as the collector received it.
#[derive(Debug, Clone)]
struct Seen {
    trace: String,
    id: String,
    parent: String,
    name: String,
    attributes: BTreeMap<String, String>,
    /// The resource's `service.instance.id` (the replica).
    instance: String,
}

impl Seen {
    fn attr(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }
}

fn text(value: Option<&AnyValue>) -> String {
    match value.and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

type Spans = Arc<Mutex<Vec<Seen>>>;

/// `POST /v1/traces`: OTLP/HTTP protobuf, decoded and kept.
async fn collect(State(spans): State<Spans>, body: Bytes) -> axum::http::StatusCode {
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return axum::http::StatusCode::BAD_REQUEST;
    };
    let mut kept = spans.lock().unwrap();
    for resource in request.resource_spans {
        let instance = resource
            .resource
            .iter()
            .flat_map(|r| &r.attributes)
            .find(|kv| kv.key == "service.instance.id")
            .map(|kv| text(kv.value.as_ref()))
            .unwrap_or_default();
        for scope in resource.scope_spans {
            for span in scope.spans {
                kept.push(Seen {
                    trace: hex(&span.trace_id),
                    id: hex(&span.span_id),
                    parent: hex(&span.parent_span_id),
                    name: span.name,
                    attributes: span
                        .attributes
                        .iter()
                        .map(|kv| (kv.key.clone(), text(kv.value.as_ref())))
                        .collect(),
                    instance: instance.clone(),
                });
            }
        }
    }
    axum::http::StatusCode::OK
}

struct Collector {
    spans: Spans,
    traces: Traces,
}

impl Collector {
    async fn start() -> Self {
        let spans = Spans::default();
        let app = axum::Router::new()
            .route("/v1/traces", axum::routing::post(collect))
            .with_state(Arc::clone(&spans));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let endpoint = url::Url::parse(&format!("http://{addr}/v1/traces")).unwrap();
        let traces = Traces::start(&TraceSettings::to(endpoint), "replica-test").unwrap();
        Self { spans, traces }
    }

    /// The spans received once `done` holds of them (the exporter flushed until then).
    async fn until(&self, what: &str, done: impl Fn(&[Seen]) -> bool) -> Vec<Seen> {
        for _ in 0..100 {
            let traces = self.traces.clone();
            // Blocking: on its own thread, while this runtime serves the collector.
            tokio::task::spawn_blocking(move || traces.flush())
                .await
                .unwrap();
            let spans = self.spans.lock().unwrap().clone();
            if done(&spans) {
                return spans;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "the collector never saw {what}: {:#?}",
            self.spans.lock().unwrap()
        );
    }
}

fn in_trace<'a>(spans: &'a [Seen], trace: &str) -> Vec<&'a Seen> {
    spans.iter().filter(|s| s.trace == trace).collect()
}

fn named<'a>(spans: &[&'a Seen], name: &str) -> Vec<&'a Seen> {
    spans.iter().copied().filter(|s| s.name == name).collect()
}

const TYPED: &str = "CANARY-typed-7731@example.com";

fn plan() -> Value {
    json!({
        "plan": {
            "targetUrl": "https://fake.example/admin/users",
            "steps": [
                {"type": "type", "selector": "#email", "value": "{{email}}", "description": "Enter the email"},
                {"type": "click", "selector": {"role": "button", "name": "Submit"}, "description": "Submit"}
            ],
            "verification": {"method": "dom_check", "text": "Saved"},
            "risk": "medium"
        },
        "inputs": {"email": TYPED}
    })
}

fn no_secret_in(spans: &[Seen]) {
    for span in spans {
        for (key, value) in &span.attributes {
            for secret in [TYPED, FAKE_TOKEN, "fake-token"] {
                assert!(
                    !value.contains(secret),
                    "{key}={value} on {} carries a secret",
                    span.name
                );
            }
        }
    }
}

/// The caller's trace id.
const CALLER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

#[tokio::test]
async fn a_task_is_one_trace_from_create_to_end_and_a_relayed_call_spans_hub_and_runner() {
    let collector = Collector::start().await;
    let subscriber = abr_service::logging::subscriber_with_traces(
        "info",
        std::io::sink,
        Some(&collector.traces),
    );
    let _default = tracing::subscriber::set_default(subscriber);

    // A task on a runner of its own, its create carrying the caller's trace.
    let stack = fake_stack_with(FakeProvider::new(), |c| {
        c.tasks.approval = ApprovalRule::Off
    });
    let created = request_as(
        &stack.app,
        FAKE_TOKEN,
        Method::POST,
        "/v1/tasks",
        &[
            ("x-tenant-id", "tenant-a"),
            (
                "traceparent",
                &format!("00-{CALLER_TRACE}-00f067aa0ba902b7-01"),
            ),
        ],
        Some(&plan()),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.json()["taskId"].as_str().unwrap().to_owned();
    let ended = request_as(
        &stack.app,
        FAKE_TOKEN,
        Method::GET,
        &format!("/v1/tasks/{id}?waitSecs=20"),
        &[("x-tenant-id", "tenant-a")],
        None,
    )
    .await;
    // The fake page never shows "Saved": the committed run ends uncertain, as it should.
    let state = ended.json()["state"].as_str().unwrap().to_owned();
    assert_eq!(state, "uncertain", "{}", ended.body);

    let spans = collector
        .until("the task's run", |spans| {
            spans
                .iter()
                .any(|s| s.trace == CALLER_TRACE && s.name == "task run")
        })
        .await;
    let trace = in_trace(&spans, CALLER_TRACE);
    let create = named(&trace, "POST /v1/tasks");
    assert_eq!(create.len(), 1, "{trace:#?}");
    let create = create[0];
    assert_eq!(
        create.parent, "00f067aa0ba902b7",
        "the caller's span is its parent"
    );
    assert_eq!(create.attr("tenant"), Some("tenant-a"));
    assert_eq!(create.attr("http.response.status_code"), Some("201"));
    assert_eq!(create.instance, "replica-test");
    assert!(
        trace
            .iter()
            .any(|s| s.name == "task.insert" && s.parent == create.id),
        "the create's store call is its child: {trace:#?}"
    );
    let run = named(&trace, "task run");
    assert_eq!(run.len(), 1, "{trace:#?}");
    let run = run[0];
    assert_eq!(run.parent, create.id, "the run is the create's child");
    assert_eq!(run.attr("task_id"), Some(id.as_str()));
    assert_eq!(run.attr("tenant"), Some("tenant-a"));
    assert_eq!(run.attr("state"), Some(state.as_str()));
    let children = |name: &str| {
        trace
            .iter()
            .filter(|s| s.parent == run.id && s.name == name)
            .count()
    };
    assert_eq!(children("acquire"), 1, "{trace:#?}");
    assert_eq!(children("verify"), 1, "{trace:#?}");
    assert_eq!(children("release"), 1, "{trace:#?}");
    for (index, action) in [(0, "type"), (1, "click")] {
        let step = trace
            .iter()
            .find(|s| s.name == format!("step {index} {action}"))
            .unwrap_or_else(|| panic!("no step {index}: {trace:#?}"));
        assert_eq!(step.parent, run.id);
        assert_eq!(step.attr("action"), Some(action));
        assert_eq!(step.attr("ok"), Some("true"));
    }
    assert!(
        trace
            .iter()
            .any(|s| s.name == "task.update" && s.attr("op") == Some("task.update")),
        "the store's calls are spans of the trace: {trace:#?}"
    );
    // The long poll is a trace of its own (no traceparent).
    assert!(
        spans
            .iter()
            .any(|s| s.name == "GET /v1/tasks/{id}" && s.trace != CALLER_TRACE)
    );

    // A browse session: its open and each action carry its id and tenant.
    let opened = request_as(
        &stack.app,
        FAKE_TOKEN,
        Method::POST,
        "/v1/browse",
        &[("x-tenant-id", "tenant-a")],
        Some(&json!({"url": "https://fake.example/"})),
    )
    .await;
    assert_eq!(opened.status, 201, "{}", opened.body);
    let browse_id = opened.json()["browseId"].as_str().unwrap().to_owned();
    let acted = request_as(
        &stack.app,
        FAKE_TOKEN,
        Method::POST,
        &format!("/v1/browse/{browse_id}/act"),
        &[("x-tenant-id", "tenant-a")],
        Some(&json!({"action": "back"})),
    )
    .await;
    assert_eq!(acted.status, 200, "{}", acted.body);
    let spans = collector
        .until("the browse session's spans", |spans| {
            spans.iter().any(|s| s.name == "browse back")
        })
        .await;
    for name in ["browse open", "browse back"] {
        let span = spans
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no {name}: {spans:#?}"));
        assert_eq!(span.attr("browse_id"), Some(browse_id.as_str()), "{span:?}");
        assert_eq!(span.attr("tenant"), Some("tenant-a"), "{span:?}");
        let request = spans.iter().find(|s| s.id == span.parent).unwrap();
        assert!(request.name.starts_with("POST /v1/browse"), "{request:?}");
    }

    // A call relayed by a hub to a runner: one trace across both.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hub_addr: SocketAddr = listener.local_addr().unwrap();
    let hub_stack = fake_stack();
    let hub = Hub::new(HubSettings {
        offline_wait: Duration::from_millis(300),
        ..HubSettings::default()
    });
    let hub_app = abr_service::http::app_with_relay(Arc::clone(&hub_stack.runner), hub.clone());
    let served = tokio::spawn(async move {
        let _ = axum::serve(listener, hub_app).await;
    });
    let runner = fake_stack_with(FakeProvider::new(), |c| {
        c.tasks.approval = ApprovalRule::Off
    });
    let options = LinkOptions::new(
        url::Url::parse(&format!("http://{hub_addr}")).unwrap(),
        SecretString::from(FAKE_TOKEN.to_owned()),
        "laptop".into(),
        "laptop.local".into(),
    );
    let (stop, stopped) = tokio::sync::watch::channel(Shutdown::Running);
    let linked = tokio::spawn(link::run(runner.app.clone(), options, stopped));
    for _ in 0..200 {
        if hub.connected("laptop").is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(hub.connected("laptop").is_some(), "the runner never linked");
    let relayed = reqwest::Client::new()
        .post(format!("http://{hub_addr}/v1/tasks"))
        .bearer_auth(FAKE_TOKEN)
        .header("x-tenant-id", "tenant-b")
        .header("x-abr-runner", "laptop")
        .json(&plan())
        .send()
        .await
        .unwrap();
    assert_eq!(relayed.status(), 201);
    let relayed_id = relayed.json::<Value>().await.unwrap()["taskId"]
        .as_str()
        .unwrap()
        .to_owned();

    let spans = collector
        .until("the relayed task's run", |spans| {
            spans
                .iter()
                .any(|s| s.name == "task run" && s.attr("task_id") == Some(relayed_id.as_str()))
        })
        .await;
    let run = spans
        .iter()
        .find(|s| s.name == "task run" && s.attr("task_id") == Some(relayed_id.as_str()))
        .unwrap();
    let trace = in_trace(&spans, &run.trace);
    let requests = named(&trace, "POST /v1/tasks");
    assert_eq!(requests.len(), 2, "the hub's and the runner's: {trace:#?}");
    let hop = named(&trace, "relay forward");
    assert_eq!(hop.len(), 1, "{trace:#?}");
    let hop = hop[0];
    assert_eq!(hop.attr("runner"), Some("laptop"));
    let on_hub = requests.iter().find(|s| s.id == hop.parent).unwrap();
    let on_runner = requests.iter().find(|s| s.parent == hop.id).unwrap();
    assert!(on_hub.parent.is_empty(), "the hub's call is the root");
    assert_eq!(on_runner.attr("tenant"), Some("tenant-b"));
    assert_eq!(
        run.parent, on_runner.id,
        "the run is the relayed call's child"
    );
    assert!(
        trace
            .iter()
            .any(|s| s.parent == run.id && s.name == "step 1 click"),
        "{trace:#?}"
    );
    no_secret_in(&spans);

    let _ = stop.send(Shutdown::Now);
    linked.abort();
    served.abort();
    let traces = collector.traces.clone();
    tokio::task::spawn_blocking(move || traces.shutdown())
        .await
        .unwrap();
}
