//! Results and conditions: the only place that builds them, so wording,
//! reasons and severities stay consistent across kinds.

use crate::protocol::wire::{Condition, Result as FnResult, Severity, Status, Target};

/// A FATAL result: Crossplane stops the pipeline and reports `message`.
pub fn fatal(reason: &str, message: impl Into<String>) -> FnResult {
    result(Severity::Fatal, reason, message)
}

/// A WARNING result. Emit only on a transition: results become events.
pub fn warning(reason: &str, message: impl Into<String>) -> FnResult {
    result(Severity::Warning, reason, message)
}

/// Results and conditions target the composite, as Crossplane's SDKs do by
/// default: v2 namespaced XRs have no claim.
const TARGET: Target = Target::Composite;

fn result(severity: Severity, reason: &str, message: impl Into<String>) -> FnResult {
    FnResult {
        severity: severity as i32,
        message: message.into(),
        reason: Some(reason.to_string()),
        target: Some(TARGET as i32),
    }
}

/// A condition on the XR. `reason` is PascalCase and never empty.
pub fn condition(type_: &str, status: bool, reason: &str, message: impl Into<String>) -> Condition {
    Condition {
        r#type: type_.to_string(),
        status: if status {
            Status::ConditionTrue
        } else {
            Status::ConditionFalse
        } as i32,
        reason: reason.to_string(),
        message: Some(message.into()).filter(|m: &String| !m.is_empty()),
        target: Some(TARGET as i32),
    }
}

/// A condition whose truth is not known yet (for example while waiting for a Model).
pub fn condition_unknown(type_: &str, reason: &str, message: impl Into<String>) -> Condition {
    Condition {
        status: Status::ConditionUnknown as i32,
        ..condition(type_, false, reason, message)
    }
}
