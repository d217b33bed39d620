//! The conditions every kind that sizes a model server reports: `Sized`
//! (the plan, and whether it has warnings) and `Serving`; and how a
//! condition that no longer applies is withdrawn.

use crate::compose::composition::ComposeRequest;
use crate::protocol::server::Condition;
use crate::response::condition;

pub(crate) const SIZED: &str = "Sized";
pub(crate) const SERVING: &str = "Serving";

/// `Sized` True, reason `SizedWithWarnings` when the plan has warnings.
pub(crate) fn sized(warnings: &[String], message: String) -> Condition {
    let reason = if warnings.is_empty() {
        "Sized"
    } else {
        "SizedWithWarnings"
    };
    condition(SIZED, true, reason, message)
}

/// `Serving` True, reason `Available`.
pub(crate) fn serving(message: String) -> Condition {
    condition(SERVING, true, "Available", message)
}

/// `Serving` False: not yet, for `reason`.
pub(crate) fn not_serving(reason: &str, message: impl Into<String>) -> Condition {
    condition(SERVING, false, reason, message)
}

/// `replacement` when the XR shows a condition of its type that the answer
/// no longer gives: Crossplane keeps a condition a function stops
/// returning, so one that no longer applies is replaced, not left stale.
pub(crate) fn withdrawn(req: &ComposeRequest, replacement: Condition) -> Option<Condition> {
    req.xr
        .condition(&replacement.r#type)
        .is_some()
        .then_some(replacement)
}
