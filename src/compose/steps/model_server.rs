//! The model server of an XR on the runtime chosen for it (`runtime`):
//! the operator's VLLMRuntime, or a Deployment with its Service and weights
//! claim, or a LeaderWorkerSet with its Service. Every runtime serves
//! behind a Service named like the runtime on port 80, so the endpoint is
//! the same whichever one serves. Each manifest comes with the
//! composition-resource name it is composed under; the first one is the
//! workload whose readiness means serving.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use serde_json::{Map, Value};

use crate::compose::composition::{ComposeRequest, Composition, Manifest, Refusal};
use crate::compose::last_applied;
use crate::compose::resources::disruption_budget::disruption_budget;
use crate::compose::resources::labels::{labels, selector_labels};
use crate::compose::resources::leader_worker_set::{LwsParams, leader_labels, leader_worker_set};
use crate::compose::resources::model_server_autoscaler::Workload;
use crate::compose::resources::placement::Placement;
use crate::compose::resources::replacement::whole_node_reason;
use crate::compose::resources::vllm_deployment::{DeploymentParams, vllm_deployment};
use crate::compose::resources::vllm_pod::{PodParams, resources};
use crate::compose::resources::vllm_runtime::{RuntimeParams, vllm_runtime};
use crate::compose::resources::vllm_service::vllm_service;
use crate::compose::resources::weights_volume::weights_claim;
use crate::compose::steps::model_facts::ModelFacts;
use crate::compose::steps::runtime::{self, OperatorCannotGive, Runtime, ServerChoice};
use crate::compose::steps::serving::{self, ServingState};
use crate::input::{Image, cuda_12_build_on_blackwell_ultra};
use crate::manifests::leader_worker_set::{LeaderWorkerSet, NAME_LABEL};
use crate::manifests::vllm_runtime::VLLMRuntime;
use crate::names;
use crate::request::{Observed, int_at, manifest_of};
use crate::sizing::Plan;
use crate::xr::shared_fields::{API_KEY_KEY, PullSecrets, RuntimeChoice, SecretKeyRef};

/// Longest LeaderWorkerSet name: its controller names the workers'
/// StatefulSets `<name>-<group>`, whose pods carry the label
/// `controller-revision-hash: <statefulset>-<10 characters>`, at most 63
/// characters, and the pods `<name>-<group>-<worker>`.
const LWS_NAME_MAX: usize = 45;

/// What a kind asks of its model server, beyond the plan.
pub(crate) struct Serve<'a> {
    /// How to choose its runtime; its replicas are the server's.
    pub(crate) choice: ServerChoice<'a>,
    pub(crate) keys: ServerKeys,
    pub(crate) name: &'a str,
    /// What `vllm serve` loads: a Hugging Face id or a path.
    pub(crate) model_url: &'a str,
    /// The Model served, when the kind names one.
    pub(crate) facts: Option<&'a ModelFacts>,
    /// (Secret name, key) of the Hugging Face token.
    pub(crate) hf_token: Option<(&'a str, &'a str)>,
    /// The user's `vllm serve` arguments: after the plan's and the Model's.
    pub(crate) extra_args: &'a [String],
    /// The user's image, if any; else the platform's per runtime and vendor.
    pub(crate) image: Option<&'a Image>,
    /// Labels that never change for the XR, for the operator's selector.
    pub(crate) labels: Option<&'a BTreeMap<String, String>>,
    pub(crate) placement: &'a Placement,
    /// (min, max) replicas when an autoscaler sets them: the workload then
    /// leaves its count to it.
    pub(crate) autoscaled: Option<(i32, i32)>,
    /// The Secrets the pods pull their images with.
    pub(crate) pull_secrets: &'a PullSecrets,
    /// The API key clients must send.
    pub(crate) api_key: Option<ApiKey<'a>>,
}

/// An API key the model server requires, read from a Secret.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ApiKey<'a> {
    /// The XR's field that names the Secret, for what is said about it.
    pub(crate) field: &'static str,
    pub(crate) secret: &'a str,
    pub(crate) key: &'a str,
}

impl<'a> ApiKey<'a> {
    /// The key `reference` names at `field`.
    pub(crate) fn of(field: &'static str, reference: &'a SecretKeyRef) -> Self {
        let (secret, key) = reference.name_and_key(API_KEY_KEY);
        Self { field, secret, key }
    }
}

/// What [`serve`] built: the runtime chosen and how the server stands.
pub(crate) struct Served {
    pub(crate) runtime: Runtime,
    pub(crate) state: ServingState,
    /// The workload that holds the replicas, for an autoscaler.
    pub(crate) workload: Workload,
    /// The labels of the server's pods.
    pub(crate) pod_labels: BTreeMap<String, String>,
    /// The replicas the server runs: with an autoscaler, the observed
    /// count (its floor before the workload exists).
    pub(crate) replicas: i32,
    /// The labels of the pods that serve the API (a LeaderWorkerSet's
    /// leaders; every pod of the other runtimes).
    pub(crate) serving_pod_labels: BTreeMap<String, String>,
}

/// The model server: the runtime that can serve the plan, its weights
/// volume and its resources, placed, with their readiness, and how it
/// stands. What the Model asks for that has no effect, or that is only
/// informative, goes to `notes`; what deserves attention is returned
/// beside it, as warnings.
pub(crate) fn serve(
    req: &ComposeRequest,
    s: &Serve,
    plan: &mut Plan,
    out: &mut Composition,
    notes: &mut Vec<String>,
) -> Result<(Served, Vec<String>), Refusal> {
    let storage_keys = s.facts.and_then(|f| f.storage_secret.as_deref());
    let (runtime, cache) = runtime::choose_with_volume(
        &s.choice,
        OperatorCannotGive::of(
            s.api_key.map(|k| k.field),
            s.pull_secrets,
            storage_keys,
            runtime::PodSetting::first_of(req.settings),
        ),
        plan,
        &req.settings.weights_cache,
    )?;
    if let Some(f) = s.facts {
        notes.extend(f.notes.iter().cloned());
        notes.extend(f.cache_not_applied());
    }
    let mut warnings = cache.warnings.clone();
    let mut serve_args = s.facts.map(|f| f.serve_args(plan)).unwrap_or_default();
    serve_args.extend(s.extra_args.iter().cloned());
    let mut pod_args = s.facts.map(|f| f.load_args.clone()).unwrap_or_default();
    pod_args.extend(s.extra_args.iter().cloned());
    let (key, count_path) = workload_field(runtime, s.keys);
    let observed = req.observed.get(key);
    let observed_count = observed
        .as_ref()
        .and_then(manifest_of)
        .and_then(|m| int_at(m, count_path))
        .and_then(|c| i32::try_from(c).ok());
    let (replicas, running) = match s.autoscaled {
        None => (Some(s.choice.replicas), s.choice.replicas),
        // The autoscaler's count stays out of the workload: Crossplane
        // applies what the function returns with server-side apply, so a
        // count composed from a read taken before the autoscaler scaled
        // would scale it back. A new workload starts at its kind's default,
        // one replica, and the autoscaler brings it to its floor. A count
        // Crossplane applied before autoscaling was turned on stays applied
        // (within the range) until the autoscaler first scales, which takes
        // it over: left out while Crossplane owns it, it would drop to one.
        Some((min, max)) => {
            let handed_over = observed
                .as_ref()
                .and_then(|o| last_applied::applied_count(o, count_path))
                .map(|r| r.clamp(min, max));
            (
                handed_over,
                handed_over.or(observed_count).unwrap_or(min.max(1)),
            )
        }
    };
    let most_replicas = s.autoscaled.map_or(s.choice.replicas, |(_, max)| max);
    let server = model_server(&ServerSpec {
        runtime,
        keys: s.keys,
        params: RuntimeParams {
            name: s.name,
            namespace: s.placement.namespace(),
            model_url: s.model_url,
            plan,
            image: &req.settings.image,
            replicas,
            hf_token: s.hf_token,
            extra_args: &serve_args,
            settings: req.settings,
            weights_cache: cache.cache.as_ref(),
            labels: s.labels,
            pull_secrets: &s.pull_secrets.names,
        },
        image: s.image,
        pod_args: &pod_args,
        api_key: s.api_key.map(|k| (k.secret, k.key)),
        storage_keys,
        most_replicas,
        xr_kind: &req.xr.kind,
        xr_name: &req.xr.name,
        existing: Existing::observed(&req.observed, s.keys),
    });
    plan.reasons.extend(server.reasons);
    warnings.extend(server.warnings);
    // The workload's observed state says how the server stands.
    let (workload_key, manifest) = server.workload_manifest;
    debug_assert_eq!(
        workload_key, key,
        "the workload is composed under its runtime's key"
    );
    let mut rollout = out.add_observed(key, s.placement.place(manifest), observed.as_ref());
    // Serving what was asked means serving on the autoscaler's floor, not
    // on the one replica a new workload starts with before it scales.
    if let (Some((min, _)), Some(count)) = (s.autoscaled, observed_count) {
        rollout = rollout.with_floor(count.into(), min.into());
        out.set_rollout(key, &rollout);
    }
    for (key, manifest) in server.resources {
        out.add(key, s.placement.place(manifest), &req.observed);
    }
    // Drains and node upgrades then evict one pod at a time, so the other
    // replicas serve while the evicted one reloads its model (minutes for a
    // large one). A LeaderWorkerSet group restarts whole when one of its
    // pods goes, and its pods count unavailable until it is back, so one
    // group at a time.
    if most_replicas > 1 {
        let budget = disruption_budget(
            s.name,
            s.placement.namespace(),
            labels(&req.xr.kind, &req.xr.name, "model-server"),
            server.pod_labels.clone(),
        );
        out.add(
            s.keys.disruption_budget,
            s.placement.place(budget),
            &req.observed,
        );
    }
    let state = serving::observe(
        req,
        serving::Workload {
            key,
            observed: observed.as_ref(),
            layout: &plan.layout_summary(),
            rollout,
        },
        s.placement,
        &server.pod_labels,
        out,
    );
    let served = Served {
        runtime,
        state,
        serving_pod_labels: server.serving_pod_labels,
        workload: server.workload,
        pod_labels: server.pod_labels,
        replicas: running,
    };
    Ok((served, warnings))
}

/// The object named `name` that holds a runtime's replicas (its scale
/// subresource), and the names of its pods that serve.
fn workload(runtime: Runtime, name: &str) -> Workload {
    // Pods of a Deployment (the operator's too): <name>-<hash>-<hash>; a
    // LeaderWorkerSet's leaders: <name>-<group>.
    let replica_set_pods = format!("{name}-[a-z0-9]+-[a-z0-9]+");
    match runtime {
        Runtime::Operator => Workload {
            api_version: VLLMRuntime::API_VERSION,
            kind: VLLMRuntime::KIND,
            name: name.to_string(),
            serving_pods: replica_set_pods,
        },
        Runtime::Deployment => Workload {
            api_version: "apps/v1",
            kind: "Deployment",
            name: name.to_string(),
            serving_pods: replica_set_pods,
        },
        Runtime::LeaderWorkerSet => Workload {
            api_version: LeaderWorkerSet::API_VERSION,
            kind: LeaderWorkerSet::KIND,
            name: name.to_string(),
            serving_pods: format!("{name}-[0-9]+"),
        },
    }
}

/// The composition-resource name of a runtime's workload, and where in it
/// the replica count is.
fn workload_field(runtime: Runtime, keys: ServerKeys) -> (&'static str, &'static [&'static str]) {
    match runtime {
        Runtime::Operator => (keys.vllm_runtime, &["spec", "deploymentConfig", "replicas"]),
        Runtime::Deployment => (keys.deployment, &["spec", "replicas"]),
        Runtime::LeaderWorkerSet => (keys.leader_worker_set, &["spec", "replicas"]),
    }
}

/// The composition-resource names of a model server, per kind.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ServerKeys {
    pub(crate) vllm_runtime: &'static str,
    pub(crate) deployment: &'static str,
    pub(crate) service: &'static str,
    pub(crate) weights: &'static str,
    pub(crate) leader_worker_set: &'static str,
    /// With more than one replica.
    pub(crate) disruption_budget: &'static str,
}

/// A model server to compose.
pub(crate) struct ServerSpec<'a> {
    pub(crate) runtime: Runtime,
    pub(crate) keys: ServerKeys,
    /// The VLLMRuntime's parameters; the other runtimes read the same
    /// plan, model, replicas, token, settings and weights volume.
    pub(crate) params: RuntimeParams<'a>,
    /// The user's image, if any; else the platform's per runtime and vendor.
    pub(crate) image: Option<&'a Image>,
    /// Arguments after the plan's for the runtimes that build their own
    /// command line: the Model's load arguments, then the user's.
    pub(crate) pod_args: &'a [String],
    /// The XR, for the standard labels.
    pub(crate) xr_kind: &'a str,
    pub(crate) xr_name: &'a str,
    /// What exists already: fields the API server will not change are
    /// taken from it.
    pub(crate) existing: Existing,
    /// (Secret name, key) of the API key the serving container requires.
    pub(crate) api_key: Option<(&'a str, &'a str)>,
    /// The Secret whose keys every vLLM container reads the weights' bucket with.
    pub(crate) storage_keys: Option<&'a str>,
    /// The most replicas that may run: the fixed count, or the autoscaler's
    /// maximum.
    pub(crate) most_replicas: i32,
}

/// The model server's objects as observed (for a remote cluster, as
/// provider-kubernetes observed them there), where they exist.
#[derive(Debug, Default)]
pub(crate) struct Existing {
    pub(crate) claim: Option<Map<String, Value>>,
    pub(crate) deployment: Option<Map<String, Value>>,
}

impl Existing {
    /// The observed objects composed under `keys`.
    pub(crate) fn observed(observed: &Observed, keys: ServerKeys) -> Self {
        Self {
            claim: observed.manifest(keys.weights),
            deployment: observed.manifest(keys.deployment),
        }
    }
}

/// The composed model server.
pub(crate) struct ModelServer {
    /// The workload whose readiness means serving, under its
    /// composition-resource name.
    pub(crate) workload_manifest: (&'static str, Manifest),
    /// The rest (its Service, its weights claim), each under its name.
    pub(crate) resources: Vec<(&'static str, Manifest)>,
    /// Sentences for the plan's reasons.
    pub(crate) reasons: Vec<String>,
    /// The labels that select the server's pods (all of them: a
    /// LeaderWorkerSet's workers too).
    pub(crate) pod_labels: BTreeMap<String, String>,
    /// The labels of the pods that serve the API (a LeaderWorkerSet's
    /// leaders; every pod of the other runtimes).
    pub(crate) serving_pod_labels: BTreeMap<String, String>,
    /// The object that holds the replicas.
    pub(crate) workload: Workload,
    /// What the platform or the user should know: a change that cannot
    /// apply to an existing object, a volume about to be deleted.
    pub(crate) warnings: Vec<String>,
}

/// Composes the model server.
pub(crate) fn model_server(s: &ServerSpec) -> ModelServer {
    let p = &s.params;
    let nodes = match s.runtime {
        Runtime::Operator => {
            let params = RuntimeParams {
                image: s.image.unwrap_or(&p.settings.image),
                labels: p.labels,
                ..*p
            };
            // The operator labels its pods app=<runtime name>.
            let pod_labels = BTreeMap::from([("app".to_string(), p.name.to_string())]);
            return ModelServer {
                workload_manifest: (s.keys.vllm_runtime, vllm_runtime(&params)),
                resources: Vec::new(),
                reasons: whole_node_reason(p.plan).into_iter().collect(),
                serving_pod_labels: pod_labels.clone(),
                pod_labels,
                workload: workload(s.runtime, p.name),
                warnings: Vec::new(),
            };
        }
        Runtime::Deployment => 1,
        Runtime::LeaderWorkerSet => p.plan.nodes.max(1),
    };
    let plan = p.plan;
    let (platform_image, about_image) = p.settings.vllm_image_for(plan.gpu, plan.weight_precision);
    let image = s.image.unwrap_or(&platform_image);
    // The platform's image says its release (built in, or vllmVersion); an
    // image of the XR's own does not.
    let vllm_release = match s.image {
        Some(_) => None,
        None => p
            .settings
            .image_release(RuntimeChoice::Deployment, Some(&plan.gpu.name)),
    };
    let pod = PodParams {
        model_url: p.model_url,
        plan,
        image,
        vllm_release: vllm_release.as_deref(),
        hf_token: p.hf_token,
        extra_args: s.pod_args,
        settings: p.settings,
        weights_cache: p.weights_cache,
        pull_secrets: p.pull_secrets,
        api_key: s.api_key,
        storage_keys: s.storage_keys,
        nodes,
    };
    let labels = labels(s.xr_kind, s.xr_name, "model-server");
    let (_, memory) = resources(&pod);
    let mut reasons = vec![format!(
        "Pods: {} image {}; {memory}; startup probe {} s on /health (the load-time estimate), then \
         readiness and liveness on /health.",
        plan.gpu.vendor.to_ascii_uppercase(),
        image.reference(),
        plan.startup_probe_seconds
    )];
    reasons.extend(about_image.filter(|_| s.image.is_none()));
    if let Some((secret, key)) = s.api_key {
        reasons.push(format!(
            "API key: requests under /v1 need Authorization: Bearer with the key {key} of Secret {secret} \
             (VLLM_API_KEY); /health and /metrics stay open for the probes and Prometheus."
        ));
    }
    let mut warnings: Vec<String> =
        cuda_12_build_on_blackwell_ultra(image, plan.gpu, plan.weight_precision)
            .into_iter()
            .collect();
    let built = if s.runtime == Runtime::Deployment {
        deployment_server(s, pod, labels, &mut reasons, &mut warnings)
    } else {
        leader_worker_set_server(s, pod, labels)
    };
    ModelServer {
        workload_manifest: built.workload_manifest,
        resources: built.resources,
        reasons,
        pod_labels: built.pod_labels,
        serving_pod_labels: built.serving_pod_labels,
        workload: workload(s.runtime, &built.workload_name),
        warnings,
    }
}

/// A Deployment, its Service and, with a weights volume, its claim.
fn deployment_server(
    s: &ServerSpec,
    pod: PodParams,
    mut labels: BTreeMap<String, String>,
    reasons: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Built {
    let p = &s.params;
    // The selector never changes for the XR: a Deployment's cannot.
    let mut selector = selector_labels(&labels);
    if let Some(existing) = s.existing.deployment.as_ref().and_then(match_labels)
        && existing != selector
    {
        // Selected pods keep the labels the existing selector asks for.
        labels.extend(existing.clone());
        selector = existing;
    }
    let claim_name = names::dns_subdomain(p.name, "-weights");
    let claim = p.weights_cache.map(|c| {
        let mut claim = weights_claim(&claim_name, c);
        claim.metadata.namespace = Some(p.namespace.to_string());
        claim.metadata.labels = Some(labels.clone());
        if let Some(existing) = &s.existing.claim {
            warnings.extend(keep_fixed_claim_fields(&mut claim, existing));
        }
        claim
    });
    if claim.is_none() && s.existing.claim.is_some() {
        let replicas = p.replicas.map_or_else(
            || "autoscaled replicas".into(),
            |n| crate::sizing::count_of(n, "replica"),
        );
        warnings.push(format!(
            "the weights volume {claim_name} is deleted: {replicas} cannot share its ReadWriteOnce claim and the \
             platform names no ReadWriteMany storage class (input.defaults.weightsCache.sharedStorageClassName), so \
             each pod downloads the checkpoint itself, and one replica downloads it again into a new volume"
        ));
    }
    reasons.extend(whole_node_reason(pod.plan));
    let deployment = vllm_deployment(&DeploymentParams {
        name: p.name,
        namespace: p.namespace,
        replicas: p.replicas,
        labels: labels.clone(),
        selector: selector.clone(),
        weights_claim: claim.as_ref().map(|_| claim_name.as_str()),
        spread: s.most_replicas > 1,
        pod,
    });
    let service = vllm_service(p.name, p.namespace, labels, selector.clone());
    let mut resources = vec![(s.keys.service, Manifest::of(service))];
    if let Some(claim) = claim {
        resources.push((s.keys.weights, Manifest::of(claim)));
    }
    Built {
        workload_manifest: (s.keys.deployment, Manifest::of(deployment)),
        resources,
        pod_labels: selector.clone(),
        serving_pod_labels: selector,
        workload_name: p.name.to_string(),
    }
}

/// What a runtime that builds its own pods made.
struct Built {
    workload_manifest: (&'static str, Manifest),
    /// Its Service and weights claim.
    resources: Vec<(&'static str, Manifest)>,
    /// The labels of all its pods.
    pod_labels: BTreeMap<String, String>,
    /// The labels of the pods that serve the API.
    serving_pod_labels: BTreeMap<String, String>,
    /// The name of the object that holds the replicas.
    workload_name: String,
}

/// A LeaderWorkerSet and the Service that selects its leaders.
fn leader_worker_set_server(
    s: &ServerSpec,
    pod: PodParams,
    labels: BTreeMap<String, String>,
) -> Built {
    let p = &s.params;
    let name = names::short_label(p.name, LWS_NAME_MAX);
    let lws = leader_worker_set(&LwsParams {
        name: &name,
        namespace: p.namespace,
        replicas: p.replicas,
        labels: labels.clone(),
        pod,
    });
    // The Service keeps the runtime's name, whatever the set is called.
    let leaders = leader_labels(&name);
    let service = vllm_service(p.name, p.namespace, labels, leaders.clone());
    let pods = BTreeMap::from([(NAME_LABEL.to_string(), name.clone())]);
    Built {
        workload_manifest: (
            s.keys.leader_worker_set,
            Manifest::new(LeaderWorkerSet::KIND, lws),
        ),
        resources: vec![(s.keys.service, Manifest::of(service))],
        pod_labels: pods,
        serving_pod_labels: leaders,
        workload_name: name,
    }
}

/// A Deployment's `spec.selector.matchLabels`, as observed.
fn match_labels(deployment: &Map<String, Value>) -> Option<BTreeMap<String, String>> {
    let labels = deployment
        .get("spec")?
        .get("selector")?
        .get("matchLabels")?
        .as_object()?;
    labels
        .iter()
        .map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect()
}

/// Keeps what the API server does not let an existing claim change (its
/// storage class and access modes; a smaller size), and says what of the
/// new settings applies only to claims made from now on.
fn keep_fixed_claim_fields(
    claim: &mut PersistentVolumeClaim,
    existing: &Map<String, Value>,
) -> Vec<String> {
    let mut warnings = Vec::new();
    let name = claim.metadata.name.clone().unwrap_or_default();
    let Some(spec) = claim.spec.as_mut() else {
        return warnings;
    };
    let observed = existing.get("spec");
    let observed_class = observed
        .and_then(|s| s.get("storageClassName"))
        .and_then(Value::as_str);
    if let (Some(wanted), Some(class)) = (spec.storage_class_name.as_deref(), observed_class)
        && wanted != class
    {
        warnings.push(format!(
            "input.defaults.weightsCache names storage class {wanted}, but the weights volume {name} exists on {class} \
             and a claim's class cannot change: it stays on {class}; new volumes use {wanted} (delete the claim to move it)"
        ));
        spec.storage_class_name = Some(class.to_string());
    }
    let observed_modes: Option<Vec<String>> = observed
        .and_then(|s| s.get("accessModes"))
        .and_then(Value::as_array)
        .map(|m| {
            m.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        });
    if let Some(modes) = observed_modes.filter(|m| !m.is_empty())
        && spec.access_modes.as_ref() != Some(&modes)
    {
        warnings.push(format!(
            "the weights volume {name} exists with access modes {} and a claim's access modes cannot change: it keeps \
             them; new volumes get {}",
            modes.join(", "),
            spec.access_modes.clone().unwrap_or_default().join(", ")
        ));
        spec.access_modes = Some(modes);
    }
    let observed_size = observed
        .and_then(|s| s.get("resources"))
        .and_then(|r| r.get("requests"))
        .and_then(|r| r.get("storage"))
        .and_then(Value::as_str);
    let requests = spec.resources.as_mut().and_then(|r| r.requests.as_mut());
    if let (Some(observed_size), Some(requests)) = (observed_size, requests)
        && let Some(wanted) = requests.get("storage")
        && let (Ok(o), Ok(w)) = (
            crate::units::parse_quantity(observed_size),
            crate::units::parse_quantity(&wanted.0),
        )
        && w < o
    {
        requests.insert(
            "storage".into(),
            k8s_openapi::apimachinery::pkg::api::resource::Quantity(observed_size.to_string()),
        );
    }
    warnings
}
