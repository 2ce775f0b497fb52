//! Guard rails: replay frames (`/v1/runs/{runId}/frames`), a run's action timeline
//! (`/v1/runs/{runId}/timeline`), the screenshots switch
//! (`/v1/settings/screenshots`), site decisions (`/v1/sites`), named profiles' consent
//! (`/v1/profiles`) and takeovers of a paused task
//! (`/v1/tasks/{id}/takeover`).
//!
//! Every call names its tenant (`x-tenant-id`): another tenant's run, frame, site decision
//! or task is a 404, like an unknown one. Ids and domains travel as one percent-encoded
//! path segment each.

use abr_protocol::{
    FramesResponse, ProfileConsentRequest, ProfileEntry, ProfilesResponse, RunTimeline,
    ScreenshotsSetting, SiteDecision, SiteDecisionRequest, SiteEntry, SitesResponse,
    TakeoverAnswer, TakeoverStarted,
};
use reqwest::Method;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};

use crate::client::AgentRunnerClient;
use crate::error::{ClientError, Operation};
use crate::tasks::{header_value, json_body, non_empty};

/// The [`Operation`] each call reports in its transport and decode errors.
mod op {
    use super::Operation;

    pub(super) const FRAMES: Operation = Operation::Frames;
    pub(super) const FRAME: Operation = Operation::Frame;
    pub(super) const TIMELINE: Operation = Operation::Timeline;
    pub(super) const SCREENSHOTS_SETTING: Operation = Operation::ScreenshotsSetting;
    pub(super) const SET_SCREENSHOTS: Operation = Operation::SetScreenshots;
    pub(super) const SITES: Operation = Operation::Sites;
    pub(super) const DECIDE_SITE: Operation = Operation::DecideSite;
    pub(super) const REMOVE_SITE: Operation = Operation::RemoveSite;
    pub(super) const PROFILES: Operation = Operation::Profiles;
    pub(super) const DECIDE_PROFILE_CONSENT: Operation = Operation::DecideProfileConsent;
    pub(super) const TAKE_OVER: Operation = Operation::TakeOver;
    pub(super) const RESUME_TAKEOVER: Operation = Operation::ResumeTakeover;
    pub(super) const END_TAKEOVER: Operation = Operation::EndTakeover;
}

impl AgentRunnerClient {
    /// `GET /v1/runs/{runId}/frames`: the replay frames' metadata of a run (a task id or a
    /// post id) and whether the run took frames at all
    /// ([`screenshots`](FramesResponse::screenshots), fixed when it started). A run with no
    /// recorded setting, or another tenant's, is a 404 `frame_not_found`. A read.
    pub async fn frames(&self, tenant: &str, run_id: &str) -> Result<FramesResponse, ClientError> {
        non_empty("run id", run_id)?;
        let builder =
            self.tenant_request(Method::GET, tenant, &["v1", "runs", run_id, "frames"])?;
        self.send(op::FRAMES, builder).await
    }

    /// `GET /v1/runs/{runId}/frames/{seq}`: one frame (`seq` from
    /// [`frames`](Self::frames), 1-based) as JPEG bytes. An answer that is not `image/jpeg`
    /// is a [`ClientError::Decode`]. A missing frame, or another tenant's, is a 404
    /// `frame_not_found`. A read.
    pub async fn frame(
        &self,
        tenant: &str,
        run_id: &str,
        seq: u32,
    ) -> Result<Vec<u8>, ClientError> {
        non_empty("run id", run_id)?;
        if seq == 0 {
            return Err(ClientError::argument("frame numbers start at 1"));
        }
        let seq = seq.to_string();
        let builder =
            self.tenant_request(Method::GET, tenant, &["v1", "runs", run_id, "frames", &seq])?;
        self.jpeg(op::FRAME, builder).await
    }

    /// A JPEG answer: an answer that is not `image/jpeg` is a [`ClientError::Decode`].
    pub(crate) async fn jpeg(
        &self,
        operation: Operation,
        builder: reqwest::RequestBuilder,
    ) -> Result<Vec<u8>, ClientError> {
        let builder = builder.header(ACCEPT, HeaderValue::from_static("image/jpeg"));
        let (body, head) = self.send_raw(operation, builder).await?;
        let content_type = head
            .headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if !is_jpeg_type(content_type) {
            return Err(ClientError::Decode {
                operation,
                status: head.status.as_u16(),
                message: "the answer is not image/jpeg".to_owned(),
            });
        }
        Ok(body)
    }

    /// `GET /v1/runs/{runId}/timeline`: what a run (a task, a browse session or a post) did,
    /// in order: each step's time, action, element (role and name), page and decisions,
    /// the pauses, approvals and frames. A typed value is its length only. Another
    /// tenant's run, or an unknown one, is a 404 `run_not_found`. A read.
    pub async fn timeline(&self, tenant: &str, run_id: &str) -> Result<RunTimeline, ClientError> {
        non_empty("run id", run_id)?;
        let builder =
            self.tenant_request(Method::GET, tenant, &["v1", "runs", run_id, "timeline"])?;
        self.send(op::TIMELINE, builder).await
    }

    /// [`timeline`](Self::timeline) as markdown (`Accept: text/markdown`): a table for a
    /// person or a model. An answer that is not `text/markdown` is a
    /// [`ClientError::Decode`].
    pub async fn timeline_markdown(
        &self,
        tenant: &str,
        run_id: &str,
    ) -> Result<String, ClientError> {
        non_empty("run id", run_id)?;
        let builder = self
            .tenant_request(Method::GET, tenant, &["v1", "runs", run_id, "timeline"])?
            .header(ACCEPT, HeaderValue::from_static("text/markdown"));
        let (body, head) = self.send_raw(op::TIMELINE, builder).await?;
        let markdown = head
            .headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/markdown"));
        let text = String::from_utf8(body).ok().filter(|_| markdown);
        text.ok_or(ClientError::Decode {
            operation: op::TIMELINE,
            status: head.status.as_u16(),
            message: "the answer is not UTF-8 text/markdown".to_owned(),
        })
    }

    /// `GET /v1/settings/screenshots`: whether the tenant's runs take replay frames
    /// (default: yes). A read.
    pub async fn screenshots_setting(
        &self,
        tenant: &str,
    ) -> Result<ScreenshotsSetting, ClientError> {
        let builder =
            self.tenant_request(Method::GET, tenant, &["v1", "settings", "screenshots"])?;
        self.send(op::SCREENSHOTS_SETTING, builder).await
    }

    /// `PUT /v1/settings/screenshots`: switches the tenant's replay frames on or off for
    /// the runs that start from now on (a run going keeps its setting). The change is
    /// audited as made by `changed_by` (sent as `x-actor`). Answers the new setting; the
    /// same call twice leaves the same state.
    pub async fn set_screenshots(
        &self,
        tenant: &str,
        enabled: bool,
        changed_by: &str,
    ) -> Result<ScreenshotsSetting, ClientError> {
        let actor = header_value("x-actor", changed_by)?;
        let builder = self
            .tenant_request(Method::PUT, tenant, &["v1", "settings", "screenshots"])?
            .header("x-actor", actor);
        let builder = json_body(
            op::SET_SCREENSHOTS,
            builder,
            &ScreenshotsSetting { enabled },
        )?;
        self.send(op::SET_SCREENSHOTS, builder).await
    }

    /// `GET /v1/sites`: the tenant's site decisions, sorted by domain. A read.
    pub async fn sites(&self, tenant: &str) -> Result<SitesResponse, ClientError> {
        let builder = self.tenant_request(Method::GET, tenant, &["v1", "sites"])?;
        self.send(op::SITES, builder).await
    }

    /// `GET /v1/profiles`: the tenant's named browser profiles (consent asked or decided,
    /// sign-ins recorded by cookie name and expiry), sorted by name. A read.
    pub async fn profiles(&self, tenant: &str) -> Result<ProfilesResponse, ClientError> {
        let builder = self.tenant_request(Method::GET, tenant, &["v1", "profiles"])?;
        self.send(op::PROFILES, builder).await
    }

    /// `PUT /v1/profiles/{name}/consent`: allows or declines the tenant's runs on a named
    /// browser profile of the runner, replacing an earlier decision; audited with
    /// `decided_by` and the key. Answers the profile as stored.
    pub async fn decide_profile_consent(
        &self,
        tenant: &str,
        profile: &str,
        decision: SiteDecision,
        decided_by: &str,
    ) -> Result<ProfileEntry, ClientError> {
        non_empty("profile", profile)?;
        let builder =
            self.tenant_request(Method::PUT, tenant, &["v1", "profiles", profile, "consent"])?;
        let body = ProfileConsentRequest {
            decision,
            decided_by: decided_by.to_owned(),
        };
        let builder = json_body(op::DECIDE_PROFILE_CONSENT, builder, &body)?;
        self.send(op::DECIDE_PROFILE_CONSENT, builder).await
    }

    /// `PUT /v1/sites/{domain}`: allows or denies a site and its subdomains for the
    /// tenant's jobs, replacing an earlier decision; audited with `decided_by`. `domain` is
    /// a host name or an IPv4 address (no scheme, port, path or wildcard: a 422
    /// `invalid_request` otherwise); the runner stores it in lower case. Answers the entry.
    pub async fn decide_site(
        &self,
        tenant: &str,
        domain: &str,
        decision: SiteDecision,
        decided_by: &str,
    ) -> Result<SiteEntry, ClientError> {
        non_empty("domain", domain)?;
        let builder = self.tenant_request(Method::PUT, tenant, &["v1", "sites", domain])?;
        let body = SiteDecisionRequest {
            decision,
            decided_by: decided_by.to_owned(),
        };
        let builder = json_body(op::DECIDE_SITE, builder, &body)?;
        self.send(op::DECIDE_SITE, builder).await
    }

    /// `DELETE /v1/sites/{domain}`: forgets the tenant's decision (the site is undecided
    /// again). No decision is a 404 `site_not_found` (so a resend after a lost answer is one
    /// too).
    pub async fn remove_site(&self, tenant: &str, domain: &str) -> Result<(), ClientError> {
        non_empty("domain", domain)?;
        let builder = self.tenant_request(Method::DELETE, tenant, &["v1", "sites", domain])?;
        self.send_raw(op::REMOVE_SITE, builder).await.map(drop)
    }

    /// `POST /v1/tasks/{id}/takeover`: a person takes the browser of a task paused for one
    /// (`requested → active`). Answers the live view URL: it carries a token, give it only
    /// to that person. A task that is not paused is a 404 `no_takeover`; a takeover already
    /// over, a 409 `takeover_over`.
    pub async fn take_over(
        &self,
        tenant: &str,
        task_id: &str,
    ) -> Result<TakeoverStarted, ClientError> {
        let builder = self.record_request(Method::POST, tenant, "tasks", task_id, &["takeover"])?;
        self.send(op::TAKE_OVER, builder).await
    }

    /// `POST /v1/tasks/{id}/takeover/resume`: the person hands back; the run continues where
    /// it stopped.
    pub async fn resume_takeover(
        &self,
        tenant: &str,
        task_id: &str,
    ) -> Result<TakeoverAnswer, ClientError> {
        let builder = self.record_request(
            Method::POST,
            tenant,
            "tasks",
            task_id,
            &["takeover", "resume"],
        )?;
        self.send(op::RESUME_TAKEOVER, builder).await
    }

    /// `POST /v1/tasks/{id}/takeover/end`: the run stops without acting.
    pub async fn end_takeover(
        &self,
        tenant: &str,
        task_id: &str,
    ) -> Result<TakeoverAnswer, ClientError> {
        let builder =
            self.record_request(Method::POST, tenant, "tasks", task_id, &["takeover", "end"])?;
        self.send(op::END_TAKEOVER, builder).await
    }
}

/// Whether a `Content-Type` is `image/jpeg` (parameters and case aside).
fn is_jpeg_type(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("image/jpeg"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jpeg_content_types() {
        assert!(is_jpeg_type("image/jpeg"));
        assert!(is_jpeg_type("Image/JPEG; charset=binary"));
        assert!(!is_jpeg_type("image/png"));
        assert!(!is_jpeg_type("text/html"));
        assert!(!is_jpeg_type(""));
    }
}
