//! Every wire type describes itself as a JSON Schema (2020-12), and that schema is the wire's:
//! what the types write validates against it, and a body is valid exactly when serde reads
//! it (for the bodies below). The schemas are checked by the `jsonschema` crate (Draft
//! 2020-12, formats asserted).

use std::collections::{BTreeMap, BTreeSet};

use abr_protocol::platform_file::{
    ComposeSpec, MediaSpec, PacingName, PacingRange, PacingSpec, PermalinkSpec, PlatformFile,
    ReadbackSpec, SignInSpec, SubmitSpec, ToastSpec, VerifySpec,
};
use abr_protocol::relay::{
    EnrollRequest, Enrollment, EnrollmentRequest, RelayFrame, RelayHello, RelayTokenRequest,
    RelayTokenResponse, RelayedPrincipal, RunnerCredential, RunnerHealth, RunnerInfo,
    RunnersResponse,
};
use abr_protocol::*;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use time::macros::datetime;

/// The schema of `T` as it is read (`serialize: false`) or written.
fn schema_for<T: JsonSchema>(serialize: bool) -> Value {
    let settings = abr_protocol::schema::settings();
    let settings = if serialize {
        settings.for_serialize()
    } else {
        settings.for_deserialize()
    };
    settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// Calls `$f::<T>(name, $arg)` for every wire type `T`.
macro_rules! every_wire_type {
    ($f:ident, $arg:expr) => {{
        every_wire_type!(@ $f, $arg;
            // browse
            ActOutcome, ActResponse, ActionApproval, ActionApprovalState, ActionDecision,
            BrowseAction, BrowseClosed, BrowseOpened, BrowsePause, BrowseRequest, InputRequest,
            ScrollDirection, SuppliedInput,
            // capture and probe
            CaptureCancelResponse, CaptureFinishRequest, CaptureFinishResponse, CaptureRef,
            CaptureStartRequest, CaptureStartResponse, CaptureState, CaptureStatus, ProbeRequest,
            ProbeResponse,
            // errors, health
            DropReason, ErrorBody, ErrorEnvelope, Health, Readiness, ScopeReport,
            // events, guard
            RunEvent, BlockedAction, BlockedBy, CommitClass, CookieFact, FrameInfo, FramePoint,
            FramesResponse, Pause, PauseReason, RunScreenshots, ScreenshotsMode,
            ScreenshotsSetting, SiteDecision, SiteDecisionRequest, SiteEntry, SitesResponse,
            TakeoverAnswer, TakeoverEvent, TakeoverStarted, TakeoverState,
            // lists
            ListParams, Page<TaskRecord>, Page<PostRecord>, Page<TakeoverSummary>,
            Page<StoredSessionInfo>, PendingApprovals, TakeoverSummary,
            // live view
            LiveModifiers, LivePointerAction, LivePointerButton, LiveViewEvent, LiveViewInput,
            // platforms
            PlatformFile, PacingSpec, PacingName, PacingRange, SignInSpec, ComposeSpec,
            MediaSpec, SubmitSpec, VerifySpec, ToastSpec, PermalinkSpec, ReadbackSpec,
            GraphqlOperation, GuardPolicySpec, NetworkPolicySpec, PlatformInfo, PlatformPolicy,
            PlatformsResponse, ReadEndpointSpec, SessionScopeSpec,
            // posts
            AgentPostResult, FailureStage, MediaAttachment, PostContent, PostRecord,
            PostRequest, PostState, Timing, Verification, VerificationEvidence,
            VerificationMethod,
            // keys
            CreatedKey, KeyInfo, KeyRequest, KeysResponse, PrincipalRef, Role,
            // relay and enrollment
            RelayTokenRequest, RelayTokenResponse, RelayedPrincipal, EnrollmentRequest,
            Enrollment, EnrollRequest, RunnerCredential, RunnersResponse, RunnerInfo,
            RunnerHealth, RelayHello, RelayFrame,
            // sessions
            SecretValue, AgentSessionState, Cookie, LocalStorageItem, OriginState, SameSite,
            SessionMetadata, StoreSessionRequest, StoredSession, StoredSessionInfo,
            // snapshots
            Snapshot, SnapshotElement, SnapshotHeading, SnapshotPage, SnapshotQuery,
            // tasks
            Approval, ApprovalLink, ApproveRequest, AssertNotPostedRequest, DomCheck,
            Extraction, HandoffOptions, InputShown, OwnerAssertion, PlanStep, RecheckAnswer,
            RecheckResult, RejectRequest, Risk, Selector, SelectorSpec, StepAction, StepPlan,
            StepResult, TaskAccount, TaskRecord, TaskRequest, TaskState, TaskVerification
        )
    }};
    (@ $f:ident, $arg:expr; $($t:ty),* $(,)?) => {{
        $( $f::<$t>(stringify!($t), $arg); )*
    }};
}

/// The `format`s in `schema` (not looking into the values of `const`, `enum`, `default` and
/// `examples`, which are instances, not schemas).
fn formats(schema: &Value) -> Vec<String> {
    match schema {
        Value::Object(object) => object
            .iter()
            .flat_map(|(key, value)| match (key.as_str(), value) {
                ("format", Value::String(format)) => vec![format.clone()],
                ("const" | "enum" | "default" | "examples", _) => Vec::new(),
                _ => formats(value),
            })
            .collect(),
        Value::Array(items) => items.iter().flat_map(formats).collect(),
        _ => Vec::new(),
    }
}

/// A JSON Schema 2020-12 validator (formats asserted) for the root schema `schema`, whose
/// `$ref`s point into its own `$defs`.
fn validator(schema: &Value) -> jsonschema::Validator {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(schema)
        .unwrap_or_else(|e| panic!("not a usable 2020-12 schema: {e}\n{schema:#}"))
}

/// Whether `value` is valid against the root schema `schema`, or why not.
fn validate(schema: &Value, value: &Value) -> Result<(), Vec<String>> {
    let errors: Vec<String> = validator(schema)
        .iter_errors(value)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

#[test]
fn every_wire_type_has_a_valid_2020_12_schema_with_standard_formats() {
    fn generate<T: JsonSchema>(name: &str, count: &mut usize) {
        for serialize in [false, true] {
            let schema = schema_for::<T>(serialize);
            assert_eq!(
                schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
                "{name}"
            );
            jsonschema::meta::validate(&schema)
                .unwrap_or_else(|e| panic!("{name}: not a valid 2020-12 schema: {e}"));
            // Every `$ref` resolves.
            validator(&schema);
            for format in formats(&schema) {
                assert!(
                    abr_protocol::schema::is_standard_format(&format),
                    "{name}: format `{format}` is not a JSON Schema 2020-12 format"
                );
            }
        }
        *count += 1;
    }
    let mut count = 0;
    every_wire_type!(generate, &mut count);
    assert!(count >= 140, "{count}");
}

#[test]
fn all_wire_types_share_one_set_of_definitions_without_a_name_clash() {
    // One generator for every type, as an OpenAPI document's components: two types of one
    // name would be told apart by a number (`Verification2`).
    fn register<T: JsonSchema>(_: &str, generator: &mut schemars::SchemaGenerator) {
        let _ = generator.subschema_for::<T>();
    }
    for serialize in [false, true] {
        let settings = abr_protocol::schema::settings();
        let settings = if serialize {
            settings.for_serialize()
        } else {
            settings.for_deserialize()
        };
        let mut generator = settings.into_generator();
        every_wire_type!(register, &mut generator);
        let names: Vec<&String> = generator.definitions().keys().collect();
        assert!(names.len() >= 140, "{names:?}");
        for name in names {
            assert!(
                !name.ends_with(|c: char| c.is_ascii_digit()),
                "two wire types are named alike: {name}"
            );
        }
    }
}

/// `value` as serde writes it validates against `T`'s schema as written and as read (what
/// the runner writes, a client may send back).
fn written_validates<T: Serialize + JsonSchema>(value: &T) -> Value {
    let json = serde_json::to_value(value).unwrap();
    for serialize in [true, false] {
        let schema = schema_for::<T>(serialize);
        if let Err(e) = validate(&schema, &json) {
            panic!(
                "{} ({}): {e:#?}\n{json:#}",
                std::any::type_name::<T>(),
                if serialize { "written" } else { "read" }
            );
        }
    }
    json
}

/// Written by Playwright 1.64 `context.storageState({ indexedDB: true })`, trimmed (the
/// session tests' state).
const PLAYWRIGHT_STATE: &str = r#"{
  "cookies": [
    {"name": "sid", "value": "s3cr3t", "domain": ".example.com", "path": "/",
     "expires": 1798675200.123456, "httpOnly": true, "secure": true, "sameSite": "None",
     "partitionKey": "https://example.com", "_crHasCrossSiteAncestor": false},
    {"name": "pref", "value": "dark", "domain": "app.example.com", "path": "/settings",
     "expires": -1, "httpOnly": false, "secure": false, "sameSite": "Lax"}
  ],
  "origins": [
    {"origin": "https://app.example.com", "localStorage": [{"name": "token", "value": "abc"}],
     "indexedDB": [{"name": "db", "version": 1, "stores": []}]}
  ],
  "credentials": []
}"#;

fn session() -> AgentSessionState {
    let mut state: AgentSessionState = serde_json::from_str(PLAYWRIGHT_STATE).unwrap();
    state.metadata = Some(SessionMetadata::new(
        "demo",
        datetime!(2023-11-14 22:13:20 UTC),
    ));
    state
}

/// Every step type, verification method, extraction kind and selector form, as a client
/// writes them (the task tests' plan, in the camelCase spellings).
fn every_form() -> Value {
    json!({
        "targetUrl": "https://x.example/",
        "steps": [
            {"type": "navigate", "description": "d"},
            {"type": "navigate", "url": "/a/{{id}}", "description": "d", "timeoutMs": 5},
            {"type": "click", "selector": {"role": "button", "name": "Go"}, "description": "d"},
            {"type": "type", "selector": {"css": "#q"}, "value": "v", "submit": true, "description": "d"},
            {"type": "select", "selector": {"text": "Role"}, "value": "admin", "description": "d"},
            {"type": "wait", "url": "/done", "description": "d", "timeoutMs": 7},
            {"type": "extract", "name": "t", "kind": "text", "selector": "#t", "description": "d"},
            {"type": "extract", "name": "a", "kind": "attribute", "selector": "#a", "attribute": "href", "description": "d"},
            {"type": "extract", "name": "b", "kind": "table", "selector": "#b", "description": "d"},
            {"type": "extract", "name": "l", "kind": "list", "selector": "li", "fields": {"x": ".x"}, "description": "d"},
            {"type": "screenshot", "name": "s", "description": "d"},
            {"type": "assert", "selector": "#ok", "text": "OK", "description": "d"}
        ],
        "verification": {"method": "dom_check", "selector": "#ok", "text": "OK"},
        "risk": "high",
        "reasoning": "r",
        "confidence": 0.5,
        "readOnly": true
    })
}

fn principal() -> PrincipalRef {
    PrincipalRef {
        key_id: "key_1".into(),
        name: "ci".into(),
        role: Role::Approver,
    }
}

fn task_record() -> TaskRecord {
    let at = datetime!(2030-01-02 03:04:05.5 +01:00);
    TaskRecord {
        task_id: "task_1".into(),
        state: TaskState::Paused,
        plan_hash: "ab12".into(),
        steps: vec!["Open the page".into(), "Click Post".into()],
        inputs: vec![InputShown {
            name: "password".into(),
            value: None,
            secret: true,
            length: 7,
        }],
        account: Some(TaskAccount {
            profile: None,
            session_id: Some("s1".into()),
            sent_session_sites: Some(vec!["example.com".into()]),
            platform: Some("demo".into()),
            session_platform: None,
        }),
        reasoning: Some("r".into()),
        risk: Risk::Medium,
        proposed_by: Some(principal()),
        approval_rule: "committing_or_risky".into(),
        approval: Some(Approval {
            approved_by: "ci".into(),
            approved_at: at,
            approver: Some(principal()),
            stated_by: Some("Ada".into()),
        }),
        proposal_id: Some("p1".into()),
        step_results: vec![StepResult {
            index: 0,
            action: "navigate".into(),
            ok: false,
            committing: false,
            ms: 12,
            error: Some(ErrorBody::new("timeout", "no page").retryable(true)),
            at: Some(time::OffsetDateTime::UNIX_EPOCH),
            target: Some(abr_protocol::StepTarget {
                role: Some("link".into()),
                name: "Home".into(),
            }),
            url: Some("https://example.com/home".into()),
            typed_chars: Some(3),
        }],
        extracted: BTreeMap::from([("rows".into(), json!([{"a": 1}, null, "x"]))]),
        screenshots: vec!["step-1".into()],
        downloads: vec![
            abr_protocol::DownloadRecord {
                at,
                step: Some(0),
                name: "invoice.pdf".into(),
                size: 9,
                artifact: Some(abr_protocol::ArtifactInfo {
                    id: "art_1".into(),
                    name: "invoice.pdf".into(),
                    media_type: "application/pdf".into(),
                    size: 9,
                    sha256: "0".repeat(64),
                    origin: abr_protocol::ArtifactOrigin::Download,
                    run_id: Some("task_1".into()),
                    created_at: at,
                }),
                error: None,
            },
            abr_protocol::DownloadRecord {
                at,
                step: None,
                name: "big.bin".into(),
                size: 1 << 30,
                artifact: None,
                error: Some(ErrorBody::new("artifact_too_large", "over the cap")),
            },
        ],
        failed_step: Some(1),
        error: Some(ErrorBody::new("blocked_action", "refused")),
        created_at: at,
        finished_at: None,
        started_at: Some(at),
        retry_of: Some("task_0".into()),
        assertion: Some(OwnerAssertion {
            asserted_by: "owner".into(),
            note: None,
            asserted_at: at,
            spent_by: Some("task_1".into()),
        }),
        read_only: true,
        dry_run: false,
        blocked: vec![BlockedAction {
            step: Some(1),
            blocked_by: BlockedBy::ReadOnly,
            class: CommitClass::NetworkWrite,
            verb: None,
            method: Some("POST".into()),
            host: Some("example.com".into()),
        }],
        pause: Some(Pause {
            takeover_id: "tk_1".into(),
            reason: PauseReason::NeedsInput,
            step: Some(1),
            state: TakeoverState::Requested,
            paused_at: at,
            expires_at: at,
            prompt: Some("The code".into()),
            input_ref: Some("e4".into()),
        }),
        takeover_events: vec![TakeoverEvent {
            event: "takeover_required".into(),
            run_id: "task_1".into(),
            takeover_id: "tk_1".into(),
            reason: PauseReason::NeedsInput,
            state: TakeoverState::Requested,
            at,
            by: Some("Ada".into()),
        }],
        replay: Some(RunScreenshots {
            screenshots: ScreenshotsMode::Off,
            reason: Some("tenant_setting".into()),
        }),
        session_check: Some(vec![CookieFact {
            name: "sid".into(),
            domain: ".example.com".into(),
            expires: Some(1.5),
            expired: false,
        }]),
        browse: false,
        evidence_expired_at: Some(at),
        preview: Some(abr_protocol::ApprovalPreview {
            image: "/v1/tasks/task_1/screenshots/approval-preview".into(),
            width: 1280,
            height: 720,
            outline: Some(abr_protocol::PreviewBox {
                x: -4,
                y: 10,
                width: 30,
                height: 12,
            }),
        }),
        preview_note: Some("stopped".into()),
    }
}

fn post_result() -> AgentPostResult {
    AgentPostResult {
        ok: true,
        verification: Some(Verification {
            method: VerificationMethod::Readback,
            evidence: VerificationEvidence {
                permalink: Some("https://example.com/p/1".into()),
                post_id: Some("1".into()),
                detail: None,
            },
        }),
        uncertain: false,
        needs_reauth: false,
        failure_stage: None,
        error: None,
        refreshed_session: Some(session()),
        timing: Timing {
            total_ms: 10,
            pacing_ms: 1,
            ..Timing::default()
        },
        post_id: Some("post_1".into()),
    }
}

#[test]
fn what_the_types_write_validates_against_their_schemas() {
    let task = written_validates(&task_record());
    assert_eq!(task["createdAt"], "2030-01-02T03:04:05.5+01:00");
    written_validates(&Page {
        items: vec![task_record()],
        next_cursor: Some("c".into()),
    });

    let post = PostRecord {
        post_id: "post_1".into(),
        platform: "demo".into(),
        state: PostState::Succeeded,
        result: Some(AgentPostResult {
            refreshed_session: None,
            ..post_result()
        }),
        created_at: datetime!(2030-01-01 00:00 UTC),
        finished_at: Some(datetime!(2030-01-01 00:01 UTC)),
        retry_of: None,
        assertion: None,
        recheck: Some(RecheckResult {
            answer: RecheckAnswer::NotFound,
            error: Some(ErrorBody::new("not_found", "no post")),
        }),
    };
    written_validates(&post);
    written_validates(&post_result());

    let request = PostRequest {
        platform: "demo".into(),
        session: session(),
        session_id: None,
        content: PostContent {
            text: "hello".into(),
            link: Some("https://example.com".into()),
            media: vec![MediaAttachment {
                file_name: "a.png".into(),
                mime_type: "image/png".into(),
                data_base64: "iVBORw0KGgo=".into(),
            }],
        },
        workspace_id: Some("w".into()),
        account_id: Some("a".into()),
        scope: Some(SessionScopeSpec {
            cookie_domains: vec!["example.com".into()],
            origins: vec!["https://app.example.com".into()],
        }),
    };
    written_validates(&request);

    let envelope = written_validates(&ErrorEnvelope {
        error: ErrorBody::new(codes::INVALID_REQUEST.code, "bad").retryable(false),
    });
    assert_eq!(envelope["error"]["retryable"], false);

    for action in [
        BrowseAction::Click {
            reference: "e1".into(),
        },
        BrowseAction::Type {
            reference: "e2".into(),
            text: "secret".into(),
            submit: true,
        },
        BrowseAction::Select {
            reference: "e3".into(),
            option: "Admin".into(),
        },
        BrowseAction::Press {
            reference: None,
            key: "Enter".into(),
        },
        BrowseAction::Scroll {
            direction: ScrollDirection::Up,
        },
        BrowseAction::Navigate {
            url: "https://example.com".into(),
        },
        BrowseAction::Back,
    ] {
        let json = written_validates(&action);
        assert_eq!(json["action"], action.kind());
    }

    let state = written_validates(&session());
    assert_eq!(state["cookies"][1]["expires"], -1);
    written_validates(&StoredSession {
        session_id: "s1".into(),
        session: session(),
    });
    written_validates(&CaptureFinishResponse {
        session: session(),
        scope_report: ScopeReport {
            kept_cookies: 1,
            kept_origins: 1,
            dropped: BTreeMap::from([(DropReason::CookieOutOfScope, 2)]),
        },
        stored_as: Some("s1".into()),
    });

    let plan: StepPlan = serde_json::from_value(every_form()).unwrap();
    written_validates(&plan);
    written_validates(&TaskRequest {
        profile: None,
        plan,
        inputs: BTreeMap::from([("password".into(), SecretValue::new("hunter2"))]),
        secret_inputs: vec!["password".into()],
        session: Some(session()),
        session_id: None,
        scope: None,
        platform: Some("demo".into()),
        tenant_id: Some("t".into()),
        proposal_id: None,
        dry_run: true,
        handoff: Some(HandoffOptions { wait_seconds: 60 }),
    });

    for frame in [
        RelayFrame::Hello(RelayHello {
            runner_id: "r".into(),
            host: "h".into(),
            force: false,
            version: "1".into(),
            launch: "terminal".into(),
        }),
        RelayFrame::Refused {
            status: 409,
            error: ErrorBody::new("conflict", "connected"),
        },
        RelayFrame::Request {
            id: 1,
            method: "GET".into(),
            path: "/v1/health".into(),
            headers: vec![("accept".into(), "application/json".into())],
        },
        RelayFrame::Replaced,
    ] {
        written_validates(&frame);
    }
    written_validates(&LiveViewInput::Pointer {
        action: LivePointerAction::Down,
        x: 1.5,
        y: 2.0,
        button: Some(LivePointerButton::Left),
        click_count: Some(2),
        modifiers: LiveModifiers::default(),
    });
    written_validates(&LiveViewEvent::Frame {
        width: 1280,
        height: 800,
    });
    written_validates(&KeyInfo {
        key_id: "key_1".into(),
        name: "ci".into(),
        role: Role::Agent,
        tenant_id: Some("t".into()),
        read_only: false,
        created_at: datetime!(2030-01-01 00:00 UTC),
        expires_at: None,
        revoked_at: Some(datetime!(2030-01-02 00:00 UTC)),
    });
    written_validates(&RunEvent::new(
        "run_ended",
        "t",
        "task_1",
        datetime!(2030-01-01 00:00 UTC),
    ));
}

/// A body is valid against `T`'s schema (as read) exactly when serde reads it.
fn agrees<T: DeserializeOwned + JsonSchema>(body: Value, accepted: bool) {
    let name = std::any::type_name::<T>();
    let by_serde = serde_json::from_value::<T>(body.clone()).map(|_| ());
    assert_eq!(
        by_serde.is_ok(),
        accepted,
        "serde on {name}: {by_serde:?}\n{body:#}"
    );
    let by_schema = validate(&schema_for::<T>(false), &body);
    assert_eq!(
        by_schema.is_ok(),
        accepted,
        "schema of {name}: {by_schema:?}\n{body:#}"
    );
}

#[test]
fn a_body_is_valid_against_the_schema_exactly_when_serde_reads_it() {
    // Plans: every form, and an unknown or misplaced field at every level.
    let plan = every_form();
    agrees::<StepPlan>(plan.clone(), true);
    let edits: Vec<fn(&mut Value)> = vec![
        |p| p["readonly"] = true.into(),
        |p| p["steps"][0]["force"] = true.into(),
        |p| p["steps"][2]["readOnly"] = true.into(),
        |p| p["steps"][2]["selector"]["nmae"] = "x".into(),
        |p| p["steps"][2]["selector"] = 5.into(),
        |p| p["steps"][2]["selector"] = Value::Null,
        |p| p["steps"][9]["kind"] = "rows".into(),
        |p| p["steps"][10]["fullPage"] = true.into(),
        |p| p["steps"][11]["type"] = "eval".into(),
        |p| {
            p["steps"][11]
                .as_object_mut()
                .unwrap()
                .remove("description")
                .map_or((), drop)
        },
        |p| p["verification"]["strict"] = true.into(),
        |p| p["verification"] = json!({"method": "screenshot"}),
        |p| p["risk"] = "extreme".into(),
        |p| p["confidence"] = "high".into(),
    ];
    for edit in edits {
        let mut body = plan.clone();
        edit(&mut body);
        agrees::<StepPlan>(body, false);
    }
    // Which of `attribute` and `fields` an extract step takes depends on its `kind`: the
    // reader refuses a mismatch (a 422 naming the step); the published schema lists both
    // as optional, a constraint client generators cannot express (a kind-dependent `oneOf`
    // or `if`/`then` made openapi-python-client drop the step's model).
    let by_kind: Vec<fn(&mut Value)> = vec![
        |p| p["steps"][6]["attribute"] = "x".into(),
        |p| p["steps"][7]["fields"] = json!({}),
        |p| {
            p["steps"][7]
                .as_object_mut()
                .unwrap()
                .remove("attribute")
                .map_or((), drop)
        },
        |p| p["steps"][8]["fields"] = json!({"x": ".x"}),
        |p| {
            p["steps"][9]
                .as_object_mut()
                .unwrap()
                .remove("fields")
                .map_or((), drop)
        },
        |p| p["steps"][9]["attribute"] = "x".into(),
    ];
    for edit in by_kind {
        let mut body = plan.clone();
        edit(&mut body);
        assert!(
            serde_json::from_value::<StepPlan>(body.clone()).is_err(),
            "{body:#}"
        );
        assert!(
            validate(&schema_for::<StepPlan>(false), &body).is_ok(),
            "{body:#}"
        );
    }
    // A field a kind does not take, given as null, is read as absent.
    let mut body = plan.clone();
    body["steps"][6]["attribute"] = Value::Null;
    body["steps"][7]["fields"] = Value::Null;
    agrees::<StepPlan>(body, true);
    agrees::<TaskVerification>(
        json!({"method": "api_callback", "url": "https://o.example/"}),
        true,
    );
    agrees::<TaskVerification>(json!({"method": "dom_check"}), true);
    agrees::<Selector>(json!("#a"), true);
    agrees::<Selector>(json!({"role": "button", "name": "Go"}), true);
    agrees::<Selector>(json!(["#a"]), false);

    agrees::<TaskRequest>(json!({"plan": plan, "inputs": {"code": "1234"}}), true);
    agrees::<TaskRequest>(json!({"plan": plan, "inputs": {"code": 1234}}), false);
    agrees::<TaskRequest>(json!({"plan": plan, "dryrun": true}), false);
    agrees::<TaskRequest>(
        json!({"plan": plan, "handoff": {"waitSeconds": 5, "x": 1}}),
        false,
    );
    agrees::<TaskRequest>(json!({"plan": plan, "handoff": {"waitSeconds": -5}}), false);

    // Posts.
    let post = json!({"platform": "p", "sessionId": "s1", "content": {"text": "hi",
        "media": [{"fileName": "a.png", "mimeType": "image/png", "dataBase64": ""}]}});
    agrees::<PostRequest>(post.clone(), true);
    let edits: Vec<fn(&mut Value)> = vec![
        |p| p["dryRun"] = true.into(),
        |p| p["content"]["draft"] = true.into(),
        |p| p["content"]["media"][0]["alt"] = "x".into(),
        |p| {
            p.as_object_mut()
                .unwrap()
                .remove("content")
                .map_or((), drop)
        },
        |p| p["session"] = json!({"cookies": {}}),
    ];
    for edit in edits {
        let mut body = post.clone();
        edit(&mut body);
        agrees::<PostRequest>(body, false);
    }

    // Sessions: Playwright's file, and what serde refuses in it.
    let state: Value = serde_json::from_str(PLAYWRIGHT_STATE).unwrap();
    agrees::<AgentSessionState>(state, true);
    agrees::<AgentSessionState>(
        json!({"cookies": [{"name": "a", "value": "b", "domain": "x.com"}]}),
        true,
    );
    agrees::<AgentSessionState>(
        json!({"metadata": {"formatVersion": 1, "capturedAt": "2023-11-14T22:13:20Z", "next": 1}}),
        true,
    );
    for bad in [
        json!({"cookies": [{"name": "a", "value": "b", "domain": "x.com", "sameSite": "lax"}]}),
        json!({"cookies": [{"name": "a", "value": 1, "domain": "x.com"}]}),
        json!({"cookies": [{"name": "a", "value": "b", "domain": "x.com", "expires": "never"}]}),
        json!({"cookies": {}}),
        json!({"metadata": {"formatVersion": 1, "capturedAt": "yesterday"}}),
    ] {
        agrees::<AgentSessionState>(bad, false);
    }

    // Browse actions, by their tag.
    agrees::<BrowseAction>(json!({"action": "click", "ref": "e1"}), true);
    agrees::<BrowseAction>(json!({"action": "scroll"}), true);
    agrees::<BrowseAction>(json!({"action": "back"}), true);
    agrees::<BrowseAction>(json!({"action": "type", "ref": "e1", "text": "x"}), true);
    agrees::<BrowseAction>(json!({"action": "eval"}), false);
    agrees::<BrowseAction>(
        json!({"action": "click", "ref": "e1", "force": true}),
        false,
    );
    agrees::<BrowseAction>(json!({"action": "scroll", "direction": "left"}), false);
    agrees::<BrowseAction>(json!({"ref": "e1"}), false);

    // Captures: the finish request is read flat and strict.
    let finish = json!({"captureId": "c", "workspaceId": "w", "accountId": "a", "storeAs": "s"});
    agrees::<CaptureFinishRequest>(finish, true);
    agrees::<CaptureFinishRequest>(
        json!({"captureId": "c", "workspaceId": "w", "accountId": "a", "keep": 1}),
        false,
    );
    agrees::<CaptureRef>(
        json!({"captureId": "c", "workspaceId": "w", "accountId": "a", "storeAs": "s"}),
        false,
    );

    // Scope reports: the keys are drop reasons.
    let report = |dropped: Value| json!({"keptCookies": 1, "keptOrigins": 0, "dropped": dropped});
    agrees::<ScopeReport>(report(json!({"cookieOutOfScope": 2})), true);
    agrees::<ScopeReport>(report(json!({"cookie_out_of_scope": 2})), false);
    agrees::<ScopeReport>(report(json!({"originInvalid": -1})), false);

    // Keys: the expiry is an RFC 3339 date-time.
    let key = |expires: &str| json!({"name": "ci", "role": "agent", "expiresAt": expires});
    agrees::<KeyRequest>(key("2030-01-01T00:00:00Z"), true);
    agrees::<KeyRequest>(key("2030-01-01"), false);
    agrees::<KeyRequest>(json!({"name": "x", "role": "root"}), false);
    agrees::<KeyRequest>(json!({"name": "x", "role": "agent", "admin": true}), false);

    // The live view's inputs.
    agrees::<LiveViewInput>(
        json!({"type": "pointer", "action": "down", "x": 1, "y": 2, "clickCount": 2, "modifiers": {"ctrl": true}}),
        true,
    );
    agrees::<LiveViewInput>(
        json!({"type": "pointer", "action": "down", "x": 1, "y": 2, "clickCount": 256}),
        false,
    );
    agrees::<LiveViewInput>(
        json!({"type": "key", "key": "a", "modifiers": {"hyper": true}}),
        false,
    );
    agrees::<LiveViewInput>(json!({"type": "eval"}), false);

    // Platform files: a policy key it does not know is refused unless its value is empty.
    let file = |policy: Value| {
        json!({"id": "p", "startUrl": "https://p.example/", "policy": policy,
            "pacing": {"minMs": 1, "maxMs": 2},
            "signIn": {"steps": [{"type": "navigate", "url": "https://p.example/", "description": "d"}],
                "signedOutUrl": "/login"},
            "compose": {"steps": []}, "submit": {"steps": []}, "verify": {"toast": {"selector": ".t"}}})
    };
    agrees::<PlatformFile>(
        file(json!({"readOnly": true, "allowUnattended": false})),
        true,
    );
    agrees::<PlatformFile>(
        file(json!({"session": {"cookieDomains": ["p.example"]}, "network": {"reads": []}})),
        true,
    );
    agrees::<PlatformFile>(
        file(json!({"readonly": false, "other": [], "more": {}, "x": null})),
        true,
    );
    agrees::<PlatformFile>(file(json!({"readonly": true})), false);
    agrees::<PlatformFile>(file(json!({"readOnly": true, "screenshot": 0})), false);
    agrees::<PlatformFile>(
        file(json!({"session": {"cookieDomains": ["p.example"], "origin": ["x"]}})),
        false,
    );
    let mut body = file(json!({}));
    body["pacing"] = "runner".into();
    agrees::<PlatformFile>(body.clone(), true);
    body["pacing"] = "sometimes".into();
    agrees::<PlatformFile>(body, false);

    // Queries.
    agrees::<SnapshotQuery>(json!({"from": 2, "limit": 10, "hrefs": true}), true);
    agrees::<SnapshotQuery>(json!({"from": -1}), false);
    agrees::<SnapshotQuery>(json!({"page": 2}), false);
    agrees::<ListParams>(json!({"state": "succeeded", "limit": 5}), true);
}

#[test]
fn a_secret_is_a_plain_string_in_every_schema() {
    for serialize in [false, true] {
        let schema = schema_for::<SecretValue>(serialize);
        let mut bare = schema.as_object().unwrap().clone();
        bare.remove("$schema");
        bare.remove("title");
        assert_eq!(Value::Object(bare), json!({"type": "string"}));
        // Inlined where it is used: the field's description and nothing else of a value.
        let token = &schema_for::<CreatedKey>(serialize)["properties"]["token"];
        assert_eq!(token["type"], "string");
        let keys: BTreeSet<&str> = token
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(keys, BTreeSet::from(["description", "type"]));
    }
}
