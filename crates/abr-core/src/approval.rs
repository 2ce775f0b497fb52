//! [`ApprovalRule`]: which tasks wait for a person's approval; [`PlanPreviews`]: whose
//! waiting plans get a dry-run preview for the approver.

use std::collections::BTreeSet;

use abr_protocol::Risk;

use crate::plan::ValidPlan;

/// Which tasks wait for `approve` (an operator setting; the effective rule is recorded on
/// every task as `approvalRule`, and a task approved by the rule records
/// `approvedBy: "auto:<rule>"`, so relaxing it is never silent).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ApprovalRule {
    /// Every task waits for approval (the seed's rule; the default).
    #[default]
    All,
    /// Only plans with a step that may commit or a declared risk of medium or high wait;
    /// plans that only read, at low risk, run at once. Whether a step may commit is the
    /// commit rule's answer ([`commit_class`](crate::guard::commit::commit_class), asked without
    /// element facts: every click, Enter, select and upload may), never the plan's: its own
    /// `risk` can only add a wait, so `risk: low` on a plan that clicks still waits.
    CommittingOrRisky,
    /// No task waits (trusted orchestrators).
    Off,
}

impl ApprovalRule {
    /// The name recorded on tasks and read from settings: `all`, `committing_or_risky`,
    /// `off`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::All => "all",
            Self::CommittingOrRisky => "committing_or_risky",
            Self::Off => "off",
        }
    }

    /// Whether `plan` waits for a person's approval under this rule.
    pub fn requires_approval(self, plan: &ValidPlan) -> bool {
        match self {
            Self::All => true,
            // The rule decides; a declared risk only ever adds a wait.
            Self::CommittingOrRisky => {
                plan.has_committing_step() || plan.plan().risk >= Risk::Medium
            }
            Self::Off => false,
        }
    }

    /// The `approvedBy` of a task this rule let through: `auto:<rule>`.
    pub fn auto_approver(self) -> String {
        format!("auto:{}", self.as_str())
    }
}

impl std::fmt::Display for ApprovalRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A setting that names no approval rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown approval rule: use all, committing_or_risky or off")]
pub struct UnknownApprovalRule;

impl std::str::FromStr for ApprovalRule {
    type Err = UnknownApprovalRule;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "all" => Ok(Self::All),
            "committing_or_risky" => Ok(Self::CommittingOrRisky),
            "off" => Ok(Self::Off),
            _ => Err(UnknownApprovalRule),
        }
    }
}

/// Whose plans waiting for approval get a preview: a dry run of the plan up to its first
/// committing step (nothing can be written), and a redacted frame there (an operator
/// setting, `ABR_PLAN_PREVIEWS`; off by default: a preview opens a browser for every plan
/// proposed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum PlanPreviews {
    /// No tenant's (the default).
    #[default]
    Off,
    /// Every tenant's.
    All,
    /// These tenants'.
    Tenants(BTreeSet<String>),
}

impl PlanPreviews {
    /// Whether `tenant`'s plans get one.
    pub fn for_tenant(&self, tenant: &str) -> bool {
        match self {
            Self::Off => false,
            Self::All => true,
            Self::Tenants(tenants) => tenants.contains(tenant),
        }
    }
}

/// A setting that names no plan previews.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("plan previews: use off, all, or a comma-separated list of tenant ids")]
pub struct InvalidPlanPreviews;

impl std::str::FromStr for PlanPreviews {
    type Err = InvalidPlanPreviews;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "" | "off" => Ok(Self::Off),
            "all" => Ok(Self::All),
            list => {
                let mut tenants = BTreeSet::new();
                for tenant in list.split(',').map(str::trim) {
                    crate::tenant::check("tenant", Some(tenant))
                        .map_err(|_| InvalidPlanPreviews)?;
                    tenants.insert(tenant.to_owned());
                }
                Ok(Self::Tenants(tenants))
            }
        }
    }
}

#[cfg(test)]
mod previews {
    use super::*;

    #[test]
    fn previews_are_off_by_default_and_per_tenant_when_listed() {
        assert!(!PlanPreviews::default().for_tenant("acme"));
        assert!("all".parse::<PlanPreviews>().unwrap().for_tenant("acme"));
        let listed: PlanPreviews = "acme, beta".parse().unwrap();
        assert!(listed.for_tenant("acme") && listed.for_tenant("beta"));
        assert!(!listed.for_tenant("gamma"));
        assert_eq!("off".parse::<PlanPreviews>(), Ok(PlanPreviews::Off));
        assert_eq!(
            "acme,,beta".parse::<PlanPreviews>(),
            Err(InvalidPlanPreviews)
        );
    }
}
