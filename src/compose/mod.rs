//! Composers: one per XR kind, each a pure function from the observed XR (and
//! the resources Crossplane fetched for it) to the resources it wants, the XR
//! status it reports and the conditions and results that explain it.

use crate::compose::composition::Composer;

/// The composer for an XR kind. Dispatch is on the kind alone, not the API
/// group, so XRs of other groups (dot-inference's) compose unchanged.
pub(crate) fn composer_for(kind: &str) -> Option<Composer> {
    let composers: &[(&str, Composer)] = &[
        (
            crate::xr::llm_inference::KIND,
            kinds::llm_inference::compose,
        ),
        (crate::xr::model::KIND, kinds::model::compose),
        (crate::xr::agent_pool::KIND, kinds::agent_pool::compose),
    ];
    composers.iter().find(|(k, _)| *k == kind).map(|(_, c)| *c)
}

/// The status fields written to an XR of another API group: only those
/// dot-inference's XRD (`inference.devopstoolkit.ai`) declares. Crossplane
/// applies an XR's status with a typed server-side apply patch, and one
/// field its schema does not declare fails the whole patch ("field not
/// declared in schema"), conditions included; the plan and the endpoint
/// reach such an XR through the `Sized` and `Serving` conditions instead.
/// `None` for this function's own XRs, whose schemas declare every field.
pub(crate) fn status_fields_for(api_version: &str) -> Option<&'static [&'static str]> {
    (crate::request::api_group(api_version) != crate::xr::GROUP).then_some(&["ready"])
}

/// The kinds this function composes, for error messages.
pub(crate) const KINDS: &[&str] = &["LLMInference", "Model", "AgentPool"];

pub(crate) mod annotations;
pub(crate) mod composition;
pub(crate) mod kinds;
pub(crate) mod last_applied;
pub(crate) mod observed_condition;
pub(crate) mod pod_problem;
pub(crate) mod remote_claim;
pub(crate) mod resources;
pub(crate) mod rollout;
pub mod spec_digest;
pub(crate) mod steps;
