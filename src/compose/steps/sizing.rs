//! Sizing an XR's model server: what the XR asks (a MIG slice, a GPU type
//! or none) and where its GPU type comes from, the same for every kind.

use crate::compose::composition::Refusal;
use crate::input::Settings;
use crate::sizing::{
    self, AMD_DEVICE_ID_LABEL, EKS_AUTO_MODE_GPU_LABELS, GKE_ACCELERATOR_LABEL, GPU_PRODUCT_LABEL,
    INSTANCE_TYPE_LABEL, KARPENTER_GPU_LABELS, MigChoice, Plan, SizingError, SizingRequest,
};

/// `spec.migProfile` as a choice: whole GPUs unless asked, since a MIG
/// slice only schedules where nodes are partitioned.
pub(crate) fn mig_choice(profile: Option<&str>) -> Result<MigChoice, Refusal> {
    profile.map_or(Ok(MigChoice::None), |m| {
        m.parse::<MigChoice>()
            .map_err(|e| Refusal::new("InvalidSpec", format!("spec.migProfile: {e}")))
    })
}

/// The plan for `request`: on the GPU type the XR named in `field`
/// (`named`), else, when the platform lets the function choose, on the
/// cheapest of `offered`, else on the platform's default type.
pub(crate) fn plan(
    request: &SizingRequest,
    field: &'static str,
    named: bool,
    offered: &[String],
    settings: &Settings,
) -> Result<Plan, SizingError> {
    if !named && settings.choose_gpu_type {
        return sizing::cheapest(request, offered, &settings.gpu_prices);
    }
    let mut plan = sizing::size(request)?;
    plan.warnings.extend(not_offered(
        &plan,
        gpu_type_field(field, named, settings),
        settings,
    ));
    Ok(plan)
}

/// Warns of a plan on a GPU type outside the list the platform gave: its
/// pods wait unless the cluster has such nodes all the same.
fn not_offered(plan: &Plan, field: &str, settings: &Settings) -> Option<String> {
    let listed = settings.offered_gpu_types_field?;
    let offered = &settings.offered_gpu_types;
    if offered
        .iter()
        .any(|o| sizing::gpu(o).is_ok_and(|g| g.name == plan.gpu.name))
    {
        return None;
    }
    let instead = if settings.choose_gpu_type {
        format!(", or leave {field} unset for the cheapest offered type that serves the model")
    } else {
        String::new()
    };
    Some(format!(
        "{field} is {}, which the platform does not offer ({listed}: {}): its pods wait unless the \
         cluster has {} nodes all the same; name an offered type{instead}",
        plan.gpu.name,
        offered.join(", "),
        plan.gpu.name
    ))
}

/// Refuses to let the function choose an XR's GPU type where the platform
/// turned node affinity off: nothing would keep the server on the type
/// chosen for it, and a plan for one type may start on GPUs of another.
pub(crate) fn check_choice_held(
    field: &str,
    named: bool,
    settings: &Settings,
) -> Result<(), Refusal> {
    if named || !settings.choose_gpu_type || settings.gpu_node_selector {
        return Ok(());
    }
    let (eks, karpenter) = (EKS_AUTO_MODE_GPU_LABELS.name, KARPENTER_GPU_LABELS.name);
    Err(Refusal::new(
        "InvalidInput",
        format!(
            "input.defaults.gpuNodeSelector is false, and the function chooses this XR's GPU type \
             from the offered ones (input.defaults.offeredGpuTypes or gpuPrices): without node \
             affinity nothing keeps the server on the type chosen for it, and a plan for one type \
             may start on GPUs of another; leave gpuNodeSelector unset or true (GPU nodes need the \
             {GPU_PRODUCT_LABEL}, {GKE_ACCELERATOR_LABEL}, {eks}, {karpenter} or \
             {AMD_DEVICE_ID_LABEL} label, or on AKS a GPU VM size as {INSTANCE_TYPE_LABEL}), set \
             input.defaults.gpuType, \
             or name the GPU type in {field}"
        ),
    ))
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
