//! Browse sessions (`/v1/browse`): a guarded browser driven one action at a time by a
//! brain outside ABR. Open one on a URL (optionally with a platform's policy and a stored
//! session, read-only or as a dry run), read the page as a [`Snapshot`] of elements with
//! references, act on a reference, close it.
//!
//! Every call names its tenant (`x-tenant-id`): another tenant's session is a 404
//! `browse_not_found`, like a closed one. What happens on the page is the answer's
//! [`ActOutcome`](abr_protocol::ActOutcome) (`refused` by the guard, `paused` for a person,
//! `failed`), not an error.
//!
//! Under the runner's approval rule, a committing action answers `paused` with the
//! [`ActionApproval`] it waits for; an approver's client decides it
//! ([`AgentRunnerClient::browse_decide`]) and the brain sends the action again.

use abr_protocol::{
    ActResponse, ActionApproval, ActionDecision, ApprovalLink, BrowseAction, BrowseClosed,
    BrowseOpened, BrowsePause, BrowseRequest, InputRequest, Snapshot, SnapshotQuery, SuppliedInput,
    TakeoverAnswer,
};
use reqwest::Method;

use crate::client::AgentRunnerClient;
use crate::error::{ClientError, Operation};
use crate::tasks::{json_body, non_empty};

impl AgentRunnerClient {
    /// `POST /v1/browse`: opens a session and its first page (`first` says what became of
    /// it, with the first snapshot). Acts: a repeat opens a second session.
    pub async fn browse_open(
        &self,
        tenant: &str,
        request: &BrowseRequest,
    ) -> Result<BrowseOpened, ClientError> {
        let builder = self.tenant_request(Method::POST, tenant, &["v1", "browse"])?;
        let builder = json_body(Operation::BrowseOpen, builder, request)?;
        self.send(Operation::BrowseOpen, builder).await
    }

    /// `GET /v1/browse/{id}/snapshot`: the page now (its first page of elements, the
    /// default budget). A read.
    pub async fn browse_snapshot(&self, tenant: &str, id: &str) -> Result<Snapshot, ClientError> {
        self.browse_snapshot_with(tenant, id, &SnapshotQuery::default())
            .await
    }

    /// `GET /v1/browse/{id}/snapshot?…`: the page now, the page of elements and the budget
    /// `query` asks for (`Snapshot::page` says what was left out). A read.
    pub async fn browse_snapshot_with(
        &self,
        tenant: &str,
        id: &str,
        query: &SnapshotQuery,
    ) -> Result<Snapshot, ClientError> {
        non_empty("browse id", id)?;
        let builder = self
            .tenant_request(Method::GET, tenant, &["v1", "browse", id, "snapshot"])?
            .query(query);
        self.send(Operation::BrowseSnapshot, builder).await
    }

    /// `POST /v1/browse/{id}/act`: one action on a reference of the last snapshot. Acts:
    /// resend only after reading the page again (a click may have happened).
    pub async fn browse_act(
        &self,
        tenant: &str,
        id: &str,
        action: &BrowseAction,
    ) -> Result<ActResponse, ClientError> {
        non_empty("browse id", id)?;
        let builder = self.tenant_request(Method::POST, tenant, &["v1", "browse", id, "act"])?;
        let builder = json_body(Operation::BrowseAct, builder, action)?;
        self.send(Operation::BrowseAct, builder).await
    }

    /// `POST /v1/browse/{id}/input-request`: the brain asks a person for a value it must not
    /// invent, for the field `request.reference`; the session waits (`paused`,
    /// `needs_input`) until a person supplies it. Answers the pause (its `takeoverId`). Acts:
    /// a second request while one waits is `409 takeover_pending`.
    pub async fn browse_request_input(
        &self,
        tenant: &str,
        id: &str,
        request: &InputRequest,
    ) -> Result<BrowsePause, ClientError> {
        non_empty("browse id", id)?;
        let builder =
            self.tenant_request(Method::POST, tenant, &["v1", "browse", id, "input-request"])?;
        let builder = json_body(Operation::BrowseRequestInput, builder, request)?;
        self.send(Operation::BrowseRequestInput, builder).await
    }

    /// `POST /v1/tasks/{id}/takeover/input`: a person's value for a browse session's
    /// `needs_input` pause (an approver's or operator's key): typed into the field, never
    /// echoed; the takeover resumes. Acts once.
    pub async fn supply_input(
        &self,
        tenant: &str,
        id: &str,
        input: &SuppliedInput,
    ) -> Result<TakeoverAnswer, ClientError> {
        non_empty("task id", id)?;
        let builder = self.tenant_request(
            Method::POST,
            tenant,
            &["v1", "tasks", id, "takeover", "input"],
        )?;
        let builder = json_body(Operation::SupplyInput, builder, input)?;
        self.send(Operation::SupplyInput, builder).await
    }

    /// `DELETE /v1/browse/{id}`: closes the session (its browser released, its record
    /// `closed`); a second close is a 404.
    pub async fn browse_close(&self, tenant: &str, id: &str) -> Result<BrowseClosed, ClientError> {
        non_empty("browse id", id)?;
        let builder = self.tenant_request(Method::DELETE, tenant, &["v1", "browse", id])?;
        self.send(Operation::BrowseClose, builder).await
    }

    /// `GET /v1/browse/{id}/approval`: the committing action the session waits on (409
    /// `action_not_pending` when none). A read.
    pub async fn browse_approval(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<ActionApproval, ClientError> {
        non_empty("browse id", id)?;
        let builder =
            self.tenant_request(Method::GET, tenant, &["v1", "browse", id, "approval"])?;
        self.send(Operation::BrowseApproval, builder).await
    }

    /// `GET /v1/browse/{id}/approval/preview`: the waiting action's preview as JPEG bytes (a
    /// redacted frame of the page when it was asked for; its outline is in
    /// [`ActionApproval::preview`]). A 404 `preview_not_found` when none was kept (its
    /// `previewNote` says why); 409 `action_not_pending` when no action waits. A read.
    pub async fn browse_approval_preview(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<Vec<u8>, ClientError> {
        non_empty("browse id", id)?;
        let builder = self.tenant_request(
            Method::GET,
            tenant,
            &["v1", "browse", id, "approval", "preview"],
        )?;
        self.jpeg(Operation::BrowseApprovalPreview, builder).await
    }

    /// `POST /v1/browse/{id}/approval-link`: a one-time link for a person without a key to
    /// approve or reject the action the session waits on, as this approver.
    pub async fn browse_approval_link(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<ApprovalLink, ClientError> {
        non_empty("browse id", id)?;
        let builder =
            self.tenant_request(Method::POST, tenant, &["v1", "browse", id, "approval-link"])?;
        self.send(Operation::ApprovalLink, builder).await
    }

    /// `POST /v1/browse/{id}/approve` (`approve`) or `/reject`, with an approver's key (not
    /// the one that opened the session). Acts once: a second decision is a 409
    /// `action_not_pending`.
    pub async fn browse_decide(
        &self,
        tenant: &str,
        id: &str,
        decision: &ActionDecision,
        approve: bool,
    ) -> Result<ActionApproval, ClientError> {
        non_empty("browse id", id)?;
        let verb = if approve { "approve" } else { "reject" };
        let builder = self.tenant_request(Method::POST, tenant, &["v1", "browse", id, verb])?;
        let builder = json_body(Operation::DecideBrowseAction, builder, decision)?;
        self.send(Operation::DecideBrowseAction, builder).await
    }
}
