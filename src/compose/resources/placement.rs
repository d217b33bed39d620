//! Where composed manifests go: straight into the XR's namespace, or wrapped
//! in a provider-kubernetes `Object` for a cluster reached through a
//! ProviderConfig. Each wrapped kind gets a readiness policy under which the
//! Object's Ready means the workload really serves.

use crate::compose::composition::Manifest;
use crate::compose::remote_claim::OWNER_ANNOTATION;
use crate::input::ProviderConfigKind;
use crate::manifests::provider_kubernetes::{
    Object, ObjectSpec, ProviderConfigReference, Readiness,
};

/// Where to put composed manifests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// Composed directly; Crossplane forces the XR's namespace on them.
    Native { namespace: String },
    /// Wrapped in provider-kubernetes Objects applied to another (or this) cluster.
    Remote {
        provider_config: String,
        kind: ProviderConfigKind,
        namespace: String,
        /// The XR the objects are for ("LLMInference team-a/mistral"), in
        /// each object's owner annotation: see [`crate::compose::remote_claim`].
        owner: String,
    },
}

impl Placement {
    /// The namespace the workload lives in.
    pub(crate) fn namespace(&self) -> &str {
        match self {
            Self::Native { namespace } | Self::Remote { namespace, .. } => namespace,
        }
    }

    /// The manifest as it should be composed.
    pub(crate) fn place(&self, mut manifest: Manifest) -> Manifest {
        let Self::Remote {
            provider_config,
            kind,
            owner,
            ..
        } = self
        else {
            return manifest;
        };
        manifest.annotate(OWNER_ANNOTATION, owner);
        let readiness = readiness_for(manifest.kind());
        let reference = match kind {
            ProviderConfigKind::ProviderConfig => {
                ProviderConfigReference::provider_config(provider_config.clone())
            }
            ProviderConfigKind::ClusterProviderConfig => {
                ProviderConfigReference::cluster_provider_config(provider_config.clone())
            }
        };
        let object = Object {
            api_version: Object::<Manifest>::API_VERSION.into(),
            kind: Object::<Manifest>::KIND.into(),
            metadata: Default::default(),
            spec: ObjectSpec {
                provider_config_ref: Some(reference),
                readiness,
                ..ObjectSpec::for_manifest(manifest)
            },
            status: None,
        };
        Manifest::new(Object::<Manifest>::KIND, object)
    }
}

/// The readiness policy that makes an Object Ready when its manifest serves
/// its current spec, by the rules of [`crate::compose::rollout`]: the controller
/// has seen the current generation, and every desired replica is updated and
/// available with none of an older spec left.
/// `None` keeps provider-kubernetes' default, SuccessfulCreate: right for
/// objects whose existence is all there is (ConfigMap, Service, Ingress,
/// PersistentVolumeClaim, which may wait for its first pod to bind).
fn readiness_for(kind: &str) -> Option<Readiness> {
    match kind {
        // The operator reports its Deployment's counts and a modelStatus,
        // no generation and no conditions, so DeriveFromObject would never
        // turn Ready.
        "VLLMRuntime" => Some(Readiness::cel(
            "has(object.status) && has(object.status.availableReplicas) && \
             object.status.availableReplicas >= object.spec.deploymentConfig.replicas && \
             (!has(object.status.updatedReplicas) || object.status.updatedReplicas >= object.spec.deploymentConfig.replicas) && \
             (!has(object.status.unavailableReplicas) || object.status.unavailableReplicas == 0) && \
             (!has(object.status.replicas) || object.status.replicas <= object.spec.deploymentConfig.replicas) && \
             (!has(object.status.modelStatus) || object.status.modelStatus == 'Ready')",
        )),
        // Groups whose pods are all ready count as ready replicas.
        "LeaderWorkerSet" => Some(Readiness::cel(
            "has(object.status) && has(object.status.observedGeneration) && \
             object.status.observedGeneration >= object.metadata.generation && \
             has(object.status.updatedReplicas) && object.status.updatedReplicas >= object.spec.replicas && \
             has(object.status.readyReplicas) && object.status.readyReplicas >= object.spec.replicas && \
             (!has(object.status.replicas) || object.status.replicas <= object.status.updatedReplicas)",
        )),
        // A Deployment's conditions are Available/Progressing, not Ready,
        // and Available stays True while an older spec serves.
        "Deployment" => Some(Readiness::cel(
            "has(object.status) && has(object.status.observedGeneration) && \
             object.status.observedGeneration >= object.metadata.generation && \
             has(object.status.updatedReplicas) && object.status.updatedReplicas >= object.spec.replicas && \
             has(object.status.availableReplicas) && object.status.availableReplicas >= object.spec.replicas && \
             (!has(object.status.replicas) || object.status.replicas <= object.status.updatedReplicas)",
        )),
        _ => None,
    }
}
