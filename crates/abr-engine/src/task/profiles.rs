//! A run on a named browser profile: the owner's consent before anything opens it, the
//! sign-in check before a committing press, and what is recorded of a person's sign-in
//! (cookie names and expiry, never values).

use std::hash::{Hash as _, Hasher as _};

use abr_core::audit::{AuditAction, AuditEvent, AuditOutcome};
use abr_core::context::TaskContext;
use abr_core::error::CoreError;
use abr_core::guard::{
    check_sign_in, profile_folder, profile_name, refreshed_sign_in, sign_in_site, signed_in_cookies,
};
use abr_core::provider::Lease;
use abr_protocol::{Cookie, CookieFact, ProfileSignIn, SiteDecision, TaskRequest};

use crate::error::EngineError;
use crate::step::{Step, guarded};
use crate::task::rails::{RunProfile, cookie_fact};
use crate::task::runner::TaskRunner;

/// The cookies of the page's host (names, domains and expiry) each with a fingerprint of
/// its value, compared in memory to see what a sign-in changed and never kept.
pub(crate) type Jar = Vec<(CookieFact, u64)>;

fn fingerprint(cookie: &Cookie) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    cookie.value.expose().hash(&mut hasher);
    cookie.expires.to_bits().hash(&mut hasher);
    hasher.finish()
}

impl<C: TaskContext> TaskRunner<C> {
    /// The profile `request` names, once its owner allowed it for the tenant: the first
    /// request for a profile nobody decided on records that it was asked (audited once),
    /// and every request until a decision is refused.
    ///
    /// # Errors
    /// A bad name, a profile beside a session, a runner without profiles
    /// ([`CoreError::Unsupported`]), [`CoreError::ProfileConsent`], a store failure.
    pub(super) async fn allowed_profile(
        &self,
        tenant: &str,
        request: &TaskRequest,
    ) -> Result<Option<RunProfile>, EngineError> {
        let Some(name) = request.profile.as_deref() else {
            return Ok(None);
        };
        let name = profile_name(name)?;
        if request.session.is_some() || request.session_id.is_some() {
            return Err(EngineError::from(CoreError::InvalidInput(
                "give `profile` or a session (`session`, `sessionId`), not both: a profile is \
                 its own session"
                    .into(),
            )));
        }
        let store = match &self.profiles {
            Some(store) if self.provider.capabilities().profiles => store,
            _ => {
                return Err(EngineError::from(CoreError::Unsupported {
                    provider: self.provider.name().to_owned(),
                    what: "named profiles (a local runner with ABR_PROFILE_DIR)",
                }));
            }
        };
        let decision = store
            .profile(tenant, name)
            .await?
            .and_then(|entry| entry.decision);
        match decision {
            Some(SiteDecision::Allow) => Ok(Some(RunProfile {
                name: name.to_owned(),
                folder: profile_folder(tenant, name)?,
            })),
            Some(SiteDecision::Deny) => Err(EngineError::from(CoreError::ProfileConsent {
                profile: name.to_owned(),
                refused: true,
            })),
            None => {
                if store.ask(tenant, name, self.clock.now()).await? {
                    let mut event = AuditEvent::new(
                        self.clock.now(),
                        AuditAction::ProfileConsentAsked,
                        AuditOutcome::Denied,
                        abr_core::audit::SETTINGS_PLATFORM,
                    )
                    .tenant(Some(tenant), None);
                    event.profile = Some(name.to_owned());
                    self.audit.emit(event);
                }
                Err(EngineError::from(CoreError::ProfileConsent {
                    profile: name.to_owned(),
                    refused: false,
                }))
            }
        }
    }

    /// The profile's cookies of `host`'s site (any host of its registrable domain: a
    /// sign-in on `login.` counts for `www.`), fingerprinted; empty when they cannot be
    /// read.
    pub(super) async fn profile_jar(&self, lease: &Lease<C>, host: &str) -> Jar {
        let timeout = self.config.export_timeout;
        let Step::Done(cookies) = guarded(timeout, lease.context().cookies()).await else {
            return Vec::new();
        };
        let site = sign_in_site(host);
        let now = self.clock.now().unix_timestamp() as f64;
        cookies
            .iter()
            .filter(|cookie| sign_in_site(&cookie.domain) == site)
            .map(|cookie| (cookie_fact(cookie, now), fingerprint(cookie)))
            .collect()
    }

    /// Whether the profile is signed in to `host`'s site, as recorded: `Err` says why not.
    pub(super) async fn profile_signed_in(
        &self,
        tenant: &str,
        profile: &RunProfile,
        host: &str,
        jar: &Jar,
    ) -> Result<(), String> {
        let Some(store) = &self.profiles else {
            return Err("this runner keeps no profiles".into());
        };
        let entry = store
            .profile(tenant, &profile.name)
            .await
            .map_err(|e| format!("the profile's record could not be read: {e}"))?;
        let site = sign_in_site(host);
        let facts: Vec<CookieFact> = jar.iter().map(|(f, _)| f.clone()).collect();
        let now = self.clock.now().unix_timestamp() as f64;
        check_sign_in(entry.as_ref().and_then(|e| e.sign_in(&site)), &facts, now)
            .map_err(|why| why.to_string())
    }

    /// Records what a person's sign-in during a pause set on `host`'s site (`before`: the
    /// jar when the run paused). Nothing when no cookie outlives it.
    pub(super) async fn record_profile_sign_in(
        &self,
        tenant: &str,
        profile: &RunProfile,
        host: &str,
        before: &Jar,
        after: &Jar,
    ) {
        let Some(store) = &self.profiles else { return };
        let now = self.clock.now();
        let cookies = signed_in_cookies(before, after, now.unix_timestamp() as f64);
        if cookies.is_empty() {
            return;
        }
        let sign_in = ProfileSignIn {
            site: sign_in_site(host),
            cookies,
            recorded_at: now,
        };
        if let Err(e) = store.record_sign_in(tenant, &profile.name, sign_in).await {
            tracing::warn!(error = %e, "a profile's sign-in was not recorded");
        }
    }

    /// After a run on a profile: each recorded sign-in's expiry as the profile has it now
    /// (a site extends a session as it is used).
    pub(super) async fn refresh_profile(
        &self,
        tenant: &str,
        profile: &RunProfile,
        lease: &Lease<C>,
    ) {
        let Some(store) = &self.profiles else { return };
        let Ok(Some(entry)) = store.profile(tenant, &profile.name).await else {
            return;
        };
        if entry.sign_ins.is_empty() {
            return;
        }
        let timeout = self.config.export_timeout;
        let Step::Done(cookies) = guarded(timeout, lease.context().cookies()).await else {
            return;
        };
        let now = self.clock.now();
        let at = now.unix_timestamp() as f64;
        let jar: Vec<CookieFact> = cookies.iter().map(|c| cookie_fact(c, at)).collect();
        for record in &entry.sign_ins {
            if let Some(fresh) = refreshed_sign_in(record, &jar, now)
                && let Err(e) = store.record_sign_in(tenant, &profile.name, fresh).await
            {
                tracing::warn!(error = %e, "a profile's sign-in expiry was not refreshed");
            }
        }
    }
}
