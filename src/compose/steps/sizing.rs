//! Sizing an XR's model server: what the XR asks (a MIG slice, a GPU type
//! or none) and where its GPU type comes from, the same for every kind.

use crate::compose::composition::Refusal;
use crate::input::Settings;
use crate::sizing::{self, MigChoice, Plan, SizingError, SizingRequest};

/// `spec.migProfile` as a choice: whole GPUs unless asked, since a MIG
/// slice only schedules where nodes are partitioned.
pub(crate) fn mig_choice(profile: Option<&str>) -> Result<MigChoice, Refusal> {
    profile.map_or(Ok(MigChoice::None), |m| {
        m.parse::<MigChoice>()
            .map_err(|e| Refusal::new("InvalidSpec", format!("spec.migProfile: {e}")))
    })
}

/// The plan for `request`: on the GPU type the XR named (`named`), else,
/// when the platform lets the function choose, on the cheapest of
/// `offered`, else on the platform's default type.
pub(crate) fn plan(
    request: &SizingRequest,
    named: bool,
    offered: &[String],
    settings: &Settings,
) -> Result<Plan, SizingError> {
    if !named && settings.choose_gpu_type {
        sizing::cheapest(request, offered, &settings.gpu_prices)
    } else {
        sizing::size(request)
    }
}

/// The field an XR's GPU type comes from: its own `field` when it named
/// one, else the platform's.
pub(crate) fn gpu_type_field(
    field: &'static str,
    named: bool,
    settings: &Settings,
) -> &'static str {
    if named {
        field
    } else if settings.choose_gpu_type {
        "input.defaults.offeredGpuTypes"
    } else {
        "input.defaults.gpuType"
    }
}
