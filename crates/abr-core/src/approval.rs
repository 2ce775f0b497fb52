//! [`ApprovalRule`]: which tasks wait for a person's approval.

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
