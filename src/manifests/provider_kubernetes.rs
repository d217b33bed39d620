//! `Object` (`kubernetes.m.crossplane.io/v1alpha1`), provider-kubernetes'
//! namespaced managed resource that applies one manifest to a (usually
//! remote) cluster.
//!
//! Written from `tests/data/crds/kubernetes.m.crossplane.io_objects.yaml`
//! (provider-kubernetes v1.2). The legacy cluster-scoped
//! `kubernetes.crossplane.io/v1alpha2` Object differs (`deletionPolicy`, no
//! `kind` in `providerConfigRef`) and is not modelled.
//!
//! Readiness matters most here: by default an Object is Ready as soon as its
//! manifest is applied, which says nothing about whether the wrapped
//! VLLMRuntime serves. Choose a [`Readiness`] deliberately.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

/// A manifest applied by provider-kubernetes through a ProviderConfig. `M`
/// is the manifest's type: a composer's typed object, or JSON when read.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Object<M = serde_json::Value> {
    pub(crate) api_version: String,
    pub(crate) kind: String,
    #[serde(default)]
    pub(crate) metadata: ObjectMeta,
    pub(crate) spec: ObjectSpec<M>,
    /// Written by the provider; a composer never sets it.
    pub status: Option<ObjectStatus>,
}

impl<M> Object<M> {
    pub const API_VERSION: &str = "kubernetes.m.crossplane.io/v1alpha1";
    pub const KIND: &str = "Object";

    /// An Object named `name` with apiVersion and kind set.
    pub fn new(name: impl Into<String>, spec: ObjectSpec<M>) -> Self {
        Self {
            api_version: Self::API_VERSION.to_owned(),
            kind: Self::KIND.to_owned(),
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            spec,
            status: None,
        }
    }
}

/// Not derived: the default carries the right apiVersion and kind.
impl Default for Object {
    fn default() -> Self {
        Self {
            api_version: Self::API_VERSION.to_owned(),
            kind: Self::KIND.to_owned(),
            metadata: ObjectMeta::default(),
            spec: ObjectSpec::default(),
            status: None,
        }
    }
}

/// `spec`.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ObjectSpec<M = serde_json::Value> {
    /// Values copied from the applied object into the connection secret.
    pub connection_details: Option<Vec<ConnectionDetail>>,
    pub for_provider: ObjectParameters<M>,
    /// What Crossplane may do; the CRD defaults it to `["*"]`.
    pub management_policies: Option<Vec<ManagementAction>>,
    /// The CRD defaults it to the ClusterProviderConfig `default`.
    pub provider_config_ref: Option<ProviderConfigReference>,
    /// Unset means `SuccessfulCreate`: Ready once applied.
    pub readiness: Option<Readiness>,
    pub references: Option<Vec<Reference>>,
    /// Alpha: ignored unless the provider runs with the `watches` feature.
    pub watch: Option<bool>,
    pub write_connection_secret_to_ref: Option<LocalSecretReference>,
}

impl<M> ObjectSpec<M> {
    /// A spec that applies `manifest` and leaves everything else unset.
    pub fn for_manifest(manifest: M) -> Self {
        Self {
            connection_details: None,
            for_provider: ObjectParameters {
                deletion_propagation_policy: None,
                manifest,
            },
            management_policies: None,
            provider_config_ref: None,
            readiness: None,
            references: None,
            watch: None,
            write_connection_secret_to_ref: None,
        }
    }
}

/// `spec.forProvider`.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ObjectParameters<M = serde_json::Value> {
    pub deletion_propagation_policy: Option<DeletionPropagationPolicy>,
    /// The whole Kubernetes object to apply (apiVersion, kind, metadata, ...).
    pub manifest: M,
}

/// `spec.forProvider.deletionPropagationPolicy`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DeletionPropagationPolicy {
    Orphan,
    /// The CRD's default.
    #[default]
    Background,
    Foreground,
}

/// `spec.managementPolicies[]`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ManagementAction {
    Observe,
    Create,
    Update,
    Delete,
    LateInitialize,
    /// `*`: every action.
    #[serde(rename = "*")]
    All,
}

/// `spec.providerConfigRef`: which cluster to apply to.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct ProviderConfigReference {
    /// `ProviderConfig` (namespaced, in the Object's namespace) or
    /// `ClusterProviderConfig`. The CRD types it as a free string.
    pub(crate) kind: String,
    pub(crate) name: String,
}

impl ProviderConfigReference {
    /// A namespaced `ProviderConfig` in the Object's own namespace.
    pub fn provider_config(name: impl Into<String>) -> Self {
        Self {
            kind: "ProviderConfig".to_owned(),
            name: name.into(),
        }
    }

    /// A cluster-scoped `ClusterProviderConfig`.
    pub(crate) fn cluster_provider_config(name: impl Into<String>) -> Self {
        Self {
            kind: "ClusterProviderConfig".to_owned(),
            name: name.into(),
        }
    }
}

/// `spec.readiness`: how the Object's Ready condition is computed.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Readiness {
    /// A CEL expression over `object` (the observed manifest). Required, and
    /// non-empty, with `DeriveFromCelQuery` (a CEL rule of the CRD enforces
    /// it).
    pub(crate) cel_query: Option<String>,
    /// Unset means `SuccessfulCreate`.
    pub(crate) policy: Option<ReadinessPolicy>,
}

impl Readiness {
    /// Ready when `query` evaluates to true on the observed object, e.g.
    /// `object.status.availableReplicas >= 1` for a VLLMRuntime, which has no
    /// conditions.
    pub fn cel(query: impl Into<String>) -> Self {
        Self {
            policy: Some(ReadinessPolicy::DeriveFromCelQuery),
            cel_query: Some(query.into()),
        }
    }
}

/// `spec.readiness.policy`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum ReadinessPolicy {
    /// Ready once the manifest is applied. The CRD's default.
    #[default]
    SuccessfulCreate,
    /// Follows the applied object's Ready condition.
    DeriveFromObject,
    /// Ready when every condition of the applied object is True.
    AllTrue,
    /// Ready when `celQuery` holds.
    DeriveFromCelQuery,
}

/// `spec.references[]`: a dependency on another object, optionally copying
/// one of its fields into this Object's manifest.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Reference {
    pub depends_on: Option<DependsOn>,
    pub patches_from: Option<PatchesFrom>,
    /// Where the patched value goes; unset means the same path as
    /// `patchesFrom.fieldPath`.
    pub to_field_path: Option<String>,
}

/// `spec.references[].dependsOn`.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct DependsOn {
    /// The CRD defaults it to `kubernetes.m.crossplane.io/v1alpha1`.
    pub api_version: Option<String>,
    /// The CRD defaults it to `Object`.
    pub kind: Option<String>,
    pub name: String,
    pub namespace: Option<String>,
}

/// `spec.references[].patchesFrom`.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct PatchesFrom {
    pub api_version: Option<String>,
    pub field_path: String,
    pub kind: Option<String>,
    pub name: String,
    pub namespace: Option<String>,
}

/// `spec.connectionDetails[]`: an object reference plus the secret key.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionDetail {
    pub api_version: Option<String>,
    pub field_path: Option<String>,
    pub kind: Option<String>,
    pub name: Option<String>,
    pub namespace: Option<String>,
    pub resource_version: Option<String>,
    pub to_connection_secret_key: Option<String>,
    pub uid: Option<String>,
}

/// `spec.writeConnectionSecretToRef`: a Secret in the Object's namespace.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct LocalSecretReference {
    pub name: String,
}

/// `status`.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ObjectStatus {
    pub at_provider: Option<ObjectObservation>,
    /// `Synced` and `Ready`.
    pub conditions: Option<Vec<Condition>>,
    pub last_handled_reconcile_at: Option<String>,
    pub observed_generation: Option<i64>,
}

/// `status.atProvider`.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ObjectObservation {
    /// The applied object as last observed in the target cluster.
    pub manifest: Option<serde_json::Value>,
}

/// A Crossplane condition.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// An RFC 3339 timestamp.
    pub last_transition_time: String,
    pub message: Option<String>,
    pub observed_generation: Option<i64>,
    pub reason: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    #[serde(rename = "type")]
    pub type_: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn new_sets_api_version_kind_and_name() {
        let o = Object::new("qwen", ObjectSpec::for_manifest(json!({"kind": "X"})));
        assert_eq!(o.api_version, "kubernetes.m.crossplane.io/v1alpha1");
        assert_eq!(o.kind, "Object");
        assert_eq!(o.metadata.name.as_deref(), Some("qwen"));
        assert_eq!(o.spec.for_provider.manifest, json!({"kind": "X"}));
    }

    #[test]
    fn serializes_only_what_was_set() {
        let o = Object::new(
            "qwen",
            ObjectSpec {
                provider_config_ref: Some(ProviderConfigReference::provider_config("gpu")),
                readiness: Some(Readiness::cel("object.status.ready")),
                management_policies: Some(vec![ManagementAction::All]),
                ..ObjectSpec::for_manifest(json!({"apiVersion": "v1", "kind": "ConfigMap"}))
            },
        );
        assert_eq!(
            serde_json::to_value(&o).unwrap(),
            json!({
                "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
                "kind": "Object",
                "metadata": {"name": "qwen"},
                "spec": {
                    "forProvider": {"manifest": {"apiVersion": "v1", "kind": "ConfigMap"}},
                    "managementPolicies": ["*"],
                    "providerConfigRef": {"kind": "ProviderConfig", "name": "gpu"},
                    "readiness": {"policy": "DeriveFromCelQuery", "celQuery": "object.status.ready"}
                }
            })
        );
    }
}
