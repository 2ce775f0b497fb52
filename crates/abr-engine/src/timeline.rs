//! A run's action timeline ([`RunTimeline`]), built from what the runner already keeps: a
//! task's or a browse session's record and request (a plan step's description, never its
//! values), a post's record, and the run's frames' metadata. Nothing here reads a value: a
//! typed value is the count its step result kept, an input, a cookie, a token and
//! extracted data are not in any source it reads. Once the run's evidence expired, the
//! page's facts (the elements' names and the pages) are left out with the frames.

use abr_core::store::{StoredTask, wire_name};
use abr_protocol::{
    FrameInfo, OwnerAssertion, PostRecord, RunKind, RunTimeline, TimelineEntry, TimelineEvent,
    TimelineEvent as E,
};

/// The timeline of a task or a browse session.
pub(crate) fn of_task(task: &StoredTask, frames: &[FrameInfo]) -> RunTimeline {
    let record = &task.record;
    let kind = if record.browse {
        RunKind::Browse
    } else {
        RunKind::Task
    };
    let expired = record.evidence_expired_at.is_some();
    let mut entries = Vec::new();
    let mut created = TimelineEntry::new(record.created_at, E::Created);
    created.by = record.proposed_by.as_ref().map(|p| p.key_id.clone());
    entries.push(created);
    if let Some(approval) = &record.approval {
        let mut approved = TimelineEntry::new(approval.approved_at, E::Approved);
        approved.by = Some(approval.approved_by.clone());
        entries.push(approved);
    }
    if let Some(started) = record.started_at {
        entries.push(TimelineEntry::new(started, E::Started));
    }
    let plan = &task.request.plan.steps;
    for result in &record.step_results {
        // A record kept before API 1.2 has no time per step: its steps sit at its start.
        let at = result.at.or(record.started_at).unwrap_or(record.created_at);
        let mut step = TimelineEntry::new(at, E::Step);
        step.step = Some(result.index);
        step.action = Some(result.action.clone());
        if record.browse {
            // The runner's words for the action (an element's ref, role and name; never a
            // value), one per action in order.
            step.description = record.steps.get(result.index).cloned();
        } else if let Some(planned) = plan.get(result.index) {
            step.description = Some(planned.description.trim().to_owned());
            step.stage.clone_from(&planned.stage);
        }
        // Gone from the record with the evidence (the sweep removes them); a record read
        // between its expiry and the sweep shows none either. A browse action's words name
        // its element: page facts too, left out of the timeline with them (the record keeps
        // its `steps`, as a task's record keeps the words its approver read).
        if expired {
            if record.browse {
                step.description = None;
            }
        } else {
            step.target.clone_from(&result.target);
            step.url.clone_from(&result.url);
        }
        step.typed_chars = result.typed_chars;
        step.ms = Some(result.ms);
        step.ok = Some(result.ok);
        step.committing = Some(result.committing);
        step.error.clone_from(&result.error);
        entries.push(step);
    }
    for download in &record.downloads {
        let mut entry = TimelineEntry::new(download.at, E::Download);
        entry.step = download.step;
        // The file's name is the site's words: gone with the evidence.
        entry.description = Some(if expired {
            format!("{} bytes", download.size)
        } else {
            format!("{}, {} bytes", download.name, download.size)
        });
        entry.artifact = download.artifact.as_ref().map(|a| a.id.clone());
        entry.error.clone_from(&download.error);
        entries.push(entry);
    }
    for blocked in &record.blocked {
        // A refusal belongs to its step (at its start); one before any step, to the start.
        let at = blocked
            .step
            .and_then(|i| record.step_results.iter().find(|r| r.index == i))
            .and_then(|r| r.at)
            .or(record.started_at)
            .unwrap_or(record.created_at);
        let mut refused = TimelineEntry::new(at, E::Refused);
        refused.step = blocked.step;
        refused.refused = Some(blocked.clone());
        entries.push(refused);
    }
    for moved in &record.takeover_events {
        let mut takeover = TimelineEntry::new(moved.at, E::Takeover);
        takeover.reason = Some(moved.reason);
        takeover.takeover_id = Some(moved.takeover_id.clone());
        takeover.state = Some(wire_name(&moved.state));
        takeover.by.clone_from(&moved.by);
        if let Some(pause) = record
            .pause
            .as_ref()
            .filter(|p| p.takeover_id == moved.takeover_id)
        {
            takeover.step = pause.step;
        }
        entries.push(takeover);
    }
    if !expired {
        entries.extend(frames.iter().map(frame));
    }
    if let Some(finished) = record.finished_at {
        let mut ended = TimelineEntry::new(finished, E::Ended);
        ended.state = Some(wire_name(&record.state));
        ended.step = record.failed_step;
        ended.error.clone_from(&record.error);
        entries.push(ended);
    }
    entries.extend(record.assertion.as_ref().map(asserted));
    in_order(&mut entries);
    RunTimeline {
        run_id: record.task_id.clone(),
        kind,
        state: wire_name(&record.state),
        platform: task.request.platform.clone(),
        read_only: record.read_only,
        created_at: record.created_at,
        finished_at: record.finished_at,
        evidence_expired_at: record.evidence_expired_at,
        entries,
    }
}

/// The timeline of a journaled post: its phases as its timing measured them (one after
/// the other from its creation), its frames and its end.
pub(crate) fn of_post(record: &PostRecord, frames: &[FrameInfo]) -> RunTimeline {
    let mut entries = vec![TimelineEntry::new(record.created_at, E::Created)];
    if let Some(result) = &record.result {
        let t = &result.timing;
        let mut at = record.created_at;
        for (phase, ms) in [
            ("pacing", t.pacing_ms),
            ("acquire", t.acquire_ms),
            ("precheck", t.precheck_ms),
            ("post", t.post_ms),
            ("verify", t.verify_ms),
        ] {
            if ms == 0 {
                continue;
            }
            let mut entry = TimelineEntry::new(at, E::Phase);
            entry.phase = Some(phase.to_owned());
            entry.ms = Some(ms);
            entries.push(entry);
            // A duration no clock can add (a damaged record) ends the phases, never a panic.
            let Some(next) = i64::try_from(ms)
                .ok()
                .and_then(|ms| at.checked_add(time::Duration::milliseconds(ms)))
            else {
                break;
            };
            at = next;
        }
    }
    entries.extend(frames.iter().map(frame));
    if let Some(finished) = record.finished_at {
        let mut ended = TimelineEntry::new(finished, E::Ended);
        ended.state = Some(wire_name(&record.state));
        if let Some(result) = &record.result {
            ended.ok = Some(result.ok);
            ended.phase = result.failure_stage.as_ref().map(wire_name);
            ended.error.clone_from(&result.error);
        }
        entries.push(ended);
    }
    entries.extend(record.assertion.as_ref().map(asserted));
    in_order(&mut entries);
    RunTimeline {
        run_id: record.post_id.clone(),
        kind: RunKind::Post,
        state: wire_name(&record.state),
        platform: Some(record.platform.clone()),
        read_only: false,
        created_at: record.created_at,
        finished_at: record.finished_at,
        evidence_expired_at: None,
        entries,
    }
}

/// An owner's assertion that an uncertain run did not happen, as an entry.
fn asserted(assertion: &OwnerAssertion) -> TimelineEntry {
    let mut entry = TimelineEntry::new(assertion.asserted_at, E::Asserted);
    entry.by = Some(assertion.asserted_by.clone());
    entry
}

/// A frame's entry: its number, where it was taken, the action before it and its page.
fn frame(info: &FrameInfo) -> TimelineEntry {
    let mut entry = TimelineEntry::new(info.taken_at, E::Frame);
    entry.frame = Some(info.seq);
    entry.point = Some(info.point);
    entry.action = Some(info.action.clone());
    entry.url = Some(info.url.clone()).filter(|u| !u.is_empty());
    entry
}

/// Sorted by time; at the same instant, in the order the run lives them (a step before
/// its refusal, a refusal before the end).
fn in_order(entries: &mut [TimelineEntry]) {
    entries.sort_by_key(|e| (e.at, rank(e.event)));
}

fn rank(event: TimelineEvent) -> u8 {
    match event {
        E::Created => 0,
        E::Approved => 1,
        E::Started => 2,
        E::Phase => 3,
        E::Step => 4,
        E::Refused => 5,
        E::Download => 6,
        E::Takeover => 7,
        E::Frame => 8,
        E::Ended => 9,
        E::Asserted => 10,
    }
}

#[cfg(test)]
mod tests {
    use abr_core::testing::store::{sample_post, sample_task};
    use abr_protocol::{FramePoint, PostState, StepResult, StepTarget, TaskState};
    use time::OffsetDateTime;

    use super::*;

    fn browse_with_a_step(expired: bool) -> (StoredTask, Vec<FrameInfo>) {
        let at = OffsetDateTime::UNIX_EPOCH + time::Duration::seconds(5);
        let mut task = sample_task("t", "task_b", TaskState::Closed);
        task.record.browse = true;
        task.record.steps = vec!["click e3 (button \"Pay Ada\")".into()];
        task.record.step_results = vec![StepResult {
            index: 0,
            action: "click".into(),
            ok: true,
            committing: false,
            ms: 40,
            error: None,
            at: Some(at),
            target: Some(StepTarget {
                role: Some("button".into()),
                name: "Pay Ada".into(),
            }),
            url: Some("https://shop.example/cart".into()),
            typed_chars: None,
        }];
        task.record.finished_at = Some(at + time::Duration::seconds(1));
        task.record.evidence_expired_at = expired.then_some(at + time::Duration::days(30));
        let frames = vec![FrameInfo {
            seq: 1,
            point: FramePoint::Click,
            url: "https://shop.example/cart".into(),
            domain: "shop.example".into(),
            action: "click".into(),
            bytes: 100,
            taken_at: at,
            same_as: None,
        }];
        (task, frames)
    }

    #[test]
    fn once_the_evidence_expired_no_page_fact_is_left_in_the_timeline() {
        let (task, frames) = browse_with_a_step(false);
        let kept = serde_json::to_string(&of_task(&task, &frames)).unwrap_or_default();
        assert!(
            kept.contains("Pay Ada") && kept.contains("shop.example"),
            "{kept}"
        );
        let (task, frames) = browse_with_a_step(true);
        let timeline = of_task(&task, &frames);
        let expired = serde_json::to_string(&timeline).unwrap_or_default();
        let markdown = timeline.to_markdown();
        for fact in ["Pay Ada", "shop.example"] {
            assert!(!expired.contains(fact), "{fact} in {expired}");
            assert!(!markdown.contains(fact), "{fact} in {markdown}");
        }
        // The step, its timing and outcome stay.
        let step = timeline.entries.iter().find(|e| e.event == E::Step);
        assert_eq!(
            step.map(|s| (s.action.as_deref(), s.ms, s.ok)),
            Some((Some("click"), Some(40), Some(true)))
        );
    }

    #[test]
    fn a_posts_damaged_timing_ends_its_phases_without_a_panic() {
        let mut post = sample_post("t", "post_x", PostState::Succeeded).record;
        if let Some(result) = &mut post.result {
            result.timing.acquire_ms = u64::MAX;
            result.timing.post_ms = 20;
        }
        let timeline = of_post(&post, &[]);
        let phases: Vec<_> = timeline
            .entries
            .iter()
            .filter_map(|e| e.phase.as_deref())
            .collect();
        assert_eq!(phases, ["acquire"]);
    }
}
