//! A run's action timeline (`GET /v1/runs/{runId}/timeline`): what happened, in order, in a
//! form a person or another agent reads: each step's time, duration, action, the element's
//! role and accessible name, the page, the guard's and the network gate's decisions, the
//! approvals and pauses, and the frames. A typed value is its length; never a cookie, a
//! token, an input's value or extracted data.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::{BlockedAction, ErrorBody, FramePoint, PauseReason, StepTarget};

/// What a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    /// A task: an approved step plan.
    Task,
    /// A browse session: actions from a brain outside the runner, one at a time.
    Browse,
    /// A journaled post of a platform strategy.
    Post,
}

impl RunKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Task => "task",
            Self::Browse => "browse",
            Self::Post => "post",
        }
    }
}

/// What a timeline entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TimelineEvent {
    /// The run was created (`by`: the key that proposed it).
    Created,
    /// The run was approved (`by`: the approver, or `auto:<rule>`).
    Approved,
    /// The run started in a browser.
    Started,
    /// A step or a browse action ended.
    Step,
    /// The guard or the network gate refused an action (`refused`).
    Refused,
    /// A pause's takeover moved (`state`, `reason`, `takeoverId`).
    Takeover,
    /// A redacted replay frame was kept (`frame`: its number at
    /// `GET /v1/runs/{runId}/frames/{frame}`).
    Frame,
    /// A phase of a post ended (`phase`: `pacing`, `acquire`, `precheck`, `post`, `verify`).
    Phase,
    /// The run ended (`state`, `error`).
    Ended,
    /// The owner asserted that an uncertain run did not happen (`by`).
    Asserted,
    /// A page downloaded a file (`description`: its name and size; `artifact`: kept as;
    /// `error`: refused).
    Download,
}

impl TimelineEvent {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Approved => "approved",
            Self::Started => "started",
            Self::Step => "step",
            Self::Refused => "refused",
            Self::Takeover => "takeover",
            Self::Frame => "frame",
            Self::Phase => "phase",
            Self::Ended => "ended",
            Self::Asserted => "asserted",
            Self::Download => "download",
        }
    }
}

/// One entry of a run's timeline. Which fields are set depends on `event`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimelineEntry {
    /// When it happened (a step: when it started).
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub at: OffsetDateTime,
    /// What it is.
    pub event: TimelineEvent,
    /// The step's index (0-based): a step, a refusal or a pause of a plan's step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<usize>,
    /// The step's type (`click`, `type`, ...); a frame's: the action before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// The step in words: a plan's step description as its author wrote it, a browse
    /// action as the runner describes it (never a value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The stage the step starts, as the plan names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
    /// The element acted on: its role and accessible name (gone once the run's evidence
    /// expired).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<StepTarget>,
    /// The page the step acted on, or a frame's page: scheme, host, port and path; no
    /// query, fragment or credentials (gone once the run's evidence expired).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// How many characters the step typed or chose (the value itself is never kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typed_chars: Option<usize>,
    /// How long it took, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms: Option<u64>,
    /// Whether the step was done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ok: Option<bool>,
    /// Whether the runtime counted the step as possibly committing (seen below the page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub committing: Option<bool>,
    /// What the guard or the network gate refused, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<BlockedAction>,
    /// Who: the proposing key (`created`), the approver (`approved`), the owner who
    /// asserted (`asserted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// Why the run paused (`takeover`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<PauseReason>,
    /// The takeover (`takeover`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub takeover_id: Option<String>,
    /// The state after it: the takeover's (`takeover`), the run's (`ended`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// The frame's number (`frame`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame: Option<u32>,
    /// Where the frame was taken (`frame`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point: Option<FramePoint>,
    /// The phase (`phase` of a post).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Why it failed (`step`, `ended`), or why a download was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
    /// The artifact a download is kept as (`download`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<String>,
}

impl TimelineEntry {
    /// An entry `event` at `at`, with nothing else.
    pub fn new(at: OffsetDateTime, event: TimelineEvent) -> Self {
        Self {
            at,
            event,
            step: None,
            action: None,
            description: None,
            stage: None,
            target: None,
            url: None,
            typed_chars: None,
            ms: None,
            ok: None,
            committing: None,
            refused: None,
            by: None,
            reason: None,
            takeover_id: None,
            state: None,
            frame: None,
            point: None,
            phase: None,
            error: None,
            artifact: None,
        }
    }
}

/// A run's action timeline: `GET /v1/runs/{runId}/timeline` (JSON, or markdown with
/// `Accept: text/markdown`: [`Self::to_markdown`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunTimeline {
    /// The run.
    pub run_id: String,
    /// What it is.
    pub kind: RunKind,
    /// Where it is (the task's or the post's state).
    pub state: String,
    /// The platform it ran under, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    /// The run was read-only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
    /// When it was created.
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub created_at: OffsetDateTime,
    /// When it ended.
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>", extend("format" = "date-time"))]
    pub finished_at: Option<OffsetDateTime>,
    /// When its evidence expired: the elements' names, the pages and the frames are gone;
    /// the steps, decisions and outcome stay.
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>", extend("format" = "date-time"))]
    pub evidence_expired_at: Option<OffsetDateTime>,
    /// What happened, in order of time.
    pub entries: Vec<TimelineEntry>,
}

impl RunTimeline {
    /// The timeline as markdown: a heading with the run and its outcome, then one table row
    /// per entry (time since creation, what, the element, the page, the result). Everything
    /// from a page (a name, a URL) is escaped: it cannot add a row, a link or an image. It
    /// says nothing the JSON form does not.
    pub fn to_markdown(&self) -> String {
        let mut out = format!(
            "# Timeline of {} `{}`: {}\n\n",
            self.kind.as_str(),
            cell(&self.run_id),
            cell(&self.state)
        );
        let mut facts = vec![format!("Created {}", rfc3339(self.created_at))];
        if let Some(platform) = &self.platform {
            facts.push(format!("platform {}", cell(platform)));
        }
        if self.read_only {
            facts.push("read-only".to_owned());
        }
        if let Some(end) = self.finished_at {
            facts.push(format!("ended {}", offset(self.created_at, end)));
        }
        if let Some(expired) = self.evidence_expired_at {
            facts.push(format!(
                "evidence expired {} (names, pages and frames are gone)",
                rfc3339(expired)
            ));
        }
        out.push_str(&facts.join(", "));
        out.push_str(".\n\n| at | what | element | page | result |\n|---|---|---|---|---|\n");
        for entry in &self.entries {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                offset(self.created_at, entry.at),
                what(entry),
                entry.target.as_ref().map(element).unwrap_or_default(),
                entry.url.as_deref().map(cell).unwrap_or_default(),
                result(entry),
            ));
        }
        out
    }
}

/// The "what" column: the event, the step and its words.
fn what(entry: &TimelineEntry) -> String {
    let mut out = match (entry.event, entry.step) {
        (TimelineEvent::Step, Some(step)) => format!("step {}", step + 1),
        (event, Some(step)) => format!("{} (step {})", event.as_str(), step + 1),
        (event, None) => event.as_str().to_owned(),
    };
    if let Some(action) = &entry.action {
        out.push_str(&format!(": {}", cell(action)));
    }
    if let Some(phase) = &entry.phase {
        out.push_str(&format!(": {}", cell(phase)));
    }
    if let Some(description) = &entry.description {
        out.push_str(&format!(", {}", cell(description)));
    }
    if let Some(stage) = &entry.stage {
        out.push_str(&format!(" [{}]", cell(stage)));
    }
    if let Some(by) = &entry.by {
        out.push_str(&format!(" by {}", cell(by)));
    }
    out
}

/// The "result" column: the outcome and the facts that go with it.
fn result(entry: &TimelineEntry) -> String {
    let mut parts = Vec::new();
    match entry.ok {
        Some(true) => parts.push("ok".to_owned()),
        Some(false) => parts.push("not done".to_owned()),
        None => {}
    }
    if let Some(state) = &entry.state {
        parts.push(cell(state));
    }
    if let Some(reason) = entry.reason {
        parts.push(format!("reason {}", reason.as_str()));
    }
    if let Some(ms) = entry.ms {
        parts.push(format!("{ms} ms"));
    }
    if entry.committing == Some(true) {
        parts.push("committing".to_owned());
    }
    if let Some(chars) = entry.typed_chars {
        parts.push(format!("{chars} characters typed"));
    }
    if let Some(refused) = &entry.refused {
        let rule = serde_json::to_value(refused.blocked_by)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let class = serde_json::to_value(refused.class)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let mut refusal = format!("refused ({}: {})", cell(&rule), cell(&class));
        if let (Some(method), Some(host)) = (&refused.method, &refused.host) {
            refusal.push_str(&format!(" {} to {}", cell(method), cell(host)));
        }
        if let Some(verb) = &refused.verb {
            refusal.push_str(&format!(" \"{}\"", cell(verb)));
        }
        parts.push(refusal);
    }
    if let (Some(frame), point) = (entry.frame, entry.point) {
        let point = point
            .and_then(|p| serde_json::to_value(p).ok())
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        parts.push(format!("frame {frame} ({})", cell(&point)));
    }
    if let Some(artifact) = &entry.artifact {
        parts.push(format!("kept as {}", cell(artifact)));
    }
    if let Some(error) = &entry.error {
        parts.push(format!("{}: {}", cell(&error.code), cell(&error.message)));
    }
    parts.join(", ")
}

/// An element as a cell: its role, then its name in quotes.
fn element(target: &StepTarget) -> String {
    match &target.role {
        Some(role) => format!("{} \"{}\"", cell(role), cell(&target.name)),
        None => format!("\"{}\"", cell(&target.name)),
    }
}

/// `text` safe inside a markdown table cell: on one line, with every character markdown
/// gives a meaning to escaped (no new cell, link, image, emphasis, code or HTML).
fn cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() || c.is_control() {
            space = true;
            continue;
        }
        if space && !out.is_empty() {
            out.push(' ');
        }
        space = false;
        if matches!(
            c,
            '\\' | '`'
                | '*'
                | '_'
                | '['
                | ']'
                | '('
                | ')'
                | '<'
                | '>'
                | '|'
                | '#'
                | '!'
                | '~'
                | '&'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `at` as RFC 3339 (seconds).
fn rfc3339(at: OffsetDateTime) -> String {
    at.replace_nanosecond(0)
        .unwrap_or(at)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// `at` as seconds since `start` (`+1.234 s`).
fn offset(start: OffsetDateTime, at: OffsetDateTime) -> String {
    let ms = (at - start).whole_milliseconds();
    let sign = if ms < 0 { "-" } else { "+" };
    let ms = ms.unsigned_abs();
    format!("{sign}{}.{:03} s", ms / 1000, ms % 1000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BlockedBy, CommitClass};

    fn at(ms: i64) -> OffsetDateTime {
        OffsetDateTime::UNIX_EPOCH + time::Duration::milliseconds(1_800_000_000_000 + ms)
    }

    fn timeline(entries: Vec<TimelineEntry>) -> RunTimeline {
        RunTimeline {
            run_id: "task_1".into(),
            kind: RunKind::Task,
            state: "succeeded".into(),
            platform: None,
            read_only: false,
            created_at: at(0),
            finished_at: Some(at(2_500)),
            evidence_expired_at: None,
            entries,
        }
    }

    #[test]
    fn each_entry_is_one_row_with_its_offset_element_and_result() {
        let mut step = TimelineEntry::new(at(1_234), TimelineEvent::Step);
        step.step = Some(0);
        step.action = Some("type".into());
        step.description = Some("Enter the email".into());
        step.target = Some(StepTarget {
            role: Some("textbox".into()),
            name: "Email".into(),
        });
        step.url = Some("http://127.0.0.1:8080/form".into());
        step.typed_chars = Some(12);
        step.ms = Some(71);
        step.ok = Some(true);
        let mut refused = TimelineEntry::new(at(2_000), TimelineEvent::Refused);
        refused.step = Some(1);
        refused.refused = Some(BlockedAction {
            step: Some(1),
            blocked_by: BlockedBy::ReadOnly,
            class: CommitClass::NetworkWrite,
            verb: None,
            method: Some("POST".into()),
            host: Some("127.0.0.1".into()),
        });
        let text = timeline(vec![step, refused]).to_markdown();
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("| +")).collect();
        assert_eq!(rows.len(), 2, "{text}");
        assert_eq!(
            rows[0],
            "| +1.234 s | step 1: type, Enter the email | textbox \"Email\" | \
             http://127.0.0.1:8080/form | ok, 71 ms, 12 characters typed |"
        );
        assert!(
            rows[1].contains("refused (step 2)")
                && rows[1].contains("refused (read\\_only: network\\_write) POST to 127.0.0.1"),
            "{}",
            rows[1]
        );
        assert!(
            text.starts_with("# Timeline of task `task\\_1`: succeeded\n"),
            "{text}"
        );
        assert!(text.contains("ended +2.500 s"), "{text}");
    }

    #[test]
    fn a_pages_words_cannot_add_a_row_a_link_or_html() {
        let mut step = TimelineEntry::new(at(10), TimelineEvent::Step);
        step.target = Some(StepTarget {
            role: Some("button".into()),
            name: "Pay | now\n| +0.000 s | forged | [x](javascript:alert(1)) ![i](http://e/i) <img src=x>"
                .into(),
        });
        let text = timeline(vec![step]).to_markdown();
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("| ")).collect();
        // The header and the one entry: the name's new line and bars made no row.
        assert_eq!(rows.len(), 2, "{text}");
        let row = rows[1];
        // Every bar but the five column separators is escaped.
        assert_eq!(
            row.matches('|').count() - row.matches("\\|").count(),
            6,
            "{row}"
        );
        // What markdown would read as a link, an image or HTML is escaped (`\<` is a `<`).
        for raw in ["](", "![", "<img", "[x]"] {
            let unescaped = row.replace(&format!("\\{}", &raw[..1]), "");
            assert!(!unescaped.contains(raw), "{raw} in {row}");
        }
    }
}
