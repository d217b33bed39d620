//! The generated files of the packages: the step input's CRD
//! (`package/function/input/`) and the XRDs of the Configuration package
//! (`package/configuration/`). A test compares them with the files in the
//! repo; `UPDATE_PACKAGE=1 cargo test --test package_files` rewrites them.

use schemars::JsonSchema;
use serde_json::{Value, json};

use crate::input::{self, Input};
use crate::schema::structural_schema;
use crate::xr::{self, agent_pool, llm_inference, model};

/// One generated file: its path in the repo and its YAML.
pub struct GeneratedFile {
    pub path: &'static str,
    pub yaml: String,
}

/// Every generated file.
pub fn files() -> Vec<GeneratedFile> {
    vec![
        file(
            "package/function/input/inference.fn.crossplane.io_inputs.yaml",
            input_crd(),
        ),
        file(
            "package/configuration/llminference-definition.yaml",
            llm_inference_xrd(),
        ),
        file("package/configuration/model-definition.yaml", model_xrd()),
        file(
            "package/configuration/agentpool-definition.yaml",
            agent_pool_xrd(),
        ),
    ]
}

fn file(path: &'static str, doc: Value) -> GeneratedFile {
    let body = crate::yaml::to_string(&doc).unwrap_or_default();
    GeneratedFile {
        path,
        yaml: format!(
            "# Generated from the Rust types by src/package.rs: do not edit.\n---\n{body}"
        ),
    }
}

/// The CRD describing the step input (never installed; tools read it).
pub(crate) fn input_crd() -> Value {
    let mut schema = structural_schema::<Input>();
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        // Written as a Kubernetes object: metadata is the standard one.
        props.insert("metadata".into(), json!({"type": "object"}));
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("inputs.{}", input::GROUP)},
        "spec": {
            "group": input::GROUP,
            "names": {"kind": input::KIND, "listKind": "InputList", "plural": "inputs", "singular": "input",
                      "categories": ["crossplane"]},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1beta1",
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": schema},
            }],
        },
    })
}

/// A printer column of an XRD. Crossplane appends SYNCED, READY,
/// COMPOSITION, COMPOSITIONREVISION and AGE to the CRD it derives, so an XRD
/// declares only its own.
struct Column {
    name: &'static str,
    type_: &'static str,
    json_path: &'static str,
}

/// An XRD of `kind`; `description` is what `kubectl explain` shows for
/// the kind itself (Crossplane copies it into the CRD it derives).
fn xrd<Spec: JsonSchema, Status: JsonSchema>(
    kind: &str,
    plural: &str,
    description: &str,
    columns: &[Column],
) -> Value {
    let spec = structural_schema::<Spec>();
    let status = structural_schema::<Status>();
    let columns: Vec<Value> = columns
        .iter()
        .map(|c| json!({"name": c.name, "type": c.type_, "jsonPath": c.json_path}))
        .collect();
    json!({
        "apiVersion": "apiextensions.crossplane.io/v2",
        "kind": "CompositeResourceDefinition",
        "metadata": {"name": format!("{plural}.{}", xr::GROUP)},
        "spec": {
            "group": xr::GROUP,
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "categories": ["crossplane", "inference"]},
            // The package's own Composition (named like the XRD), unless an
            // XR picks another: with a second Composition for the kind (a
            // platform's variant), Crossplane would otherwise pick at random.
            "defaultCompositionRef": {"name": format!("{plural}.{}", xr::GROUP)},
            "versions": [{
                "name": xr::VERSION,
                "served": true,
                "referenceable": true,
                "schema": {"openAPIV3Schema": {
                    "description": description,
                    "type": "object",
                    "properties": {"spec": spec, "status": status},
                    "required": ["spec"],
                }},
                "additionalPrinterColumns": columns,
            }],
        },
    })
}

/// The LLMInference XRD.
pub fn llm_inference_xrd() -> Value {
    xrd::<llm_inference::LlmInferenceSpec, llm_inference::LlmInferenceStatus>(
        llm_inference::KIND,
        "llminferences",
        "One model served by vLLM. From the model and the GPU type the function derives the GPU \
         count, tensor and pipeline parallelism, MIG slice, dtype, context length, CPU, memory and \
         probes, composes the model server and its endpoint, and explains each decision in \
         status.plan.",
        &[
            Column {
                name: "MODEL",
                type_: "string",
                json_path: ".status.model",
            },
            Column {
                name: "GPU-TYPE",
                type_: "string",
                json_path: ".status.gpuType",
            },
            Column {
                name: "GPUS",
                type_: "integer",
                json_path: ".status.gpuCount",
            },
            // What serves it: auto's choice, or the platform's default.
            Column {
                name: "RUNTIME",
                type_: "string",
                json_path: ".status.runtime",
            },
        ],
    )
}

/// The Model XRD.
pub(crate) fn model_xrd() -> Value {
    xrd::<model::ModelSpec, model::ModelStatus>(
        model::KIND,
        "models",
        "A set of weights that LLMInferences and AgentPools name with modelRef: where the weights \
         are, their precision and architecture. The function sizes it on every GPU type the \
         platform offers, reports where it can be served, and writes its model card and plans to \
         the ConfigMap <name>-model.",
        &[
            Column {
                name: "MODEL",
                type_: "string",
                json_path: ".status.modelId",
            },
            Column {
                name: "PHASE",
                type_: "string",
                json_path: ".status.phase",
            },
            // As derived from the parameters and precision: spec.size is
            // optional, and a declared size can be wrong (a warning says so).
            Column {
                name: "WEIGHTS-GIB",
                type_: "number",
                json_path: ".status.size.derivedGiB",
            },
            Column {
                name: "SERVEABLE-ON",
                type_: "string",
                json_path: ".status.serveableOn",
            },
        ],
    )
}

/// The AgentPool XRD.
pub(crate) fn agent_pool_xrd() -> Value {
    xrd::<agent_pool::AgentPoolSpec, agent_pool::AgentPoolStatus>(
        agent_pool::KIND,
        "agentpools",
        "A fleet of agent replicas served by a Model: the agents' Deployment, configuration, \
         autoscaler, disruption budget and Service, and a vLLM model server sized for the Model \
         and the agents' load.",
        &[
            Column {
                name: "MODEL",
                type_: "string",
                json_path: ".spec.agentClass.modelRef.name",
            },
            Column {
                name: "PHASE",
                type_: "string",
                json_path: ".status.phase",
            },
            Column {
                name: "GPU-TYPE",
                type_: "string",
                json_path: ".status.gpuType",
            },
            // The agents' counts as decided (defaults and prewarmPercent
            // applied), not as written: a spec that leaves them out shows them.
            Column {
                name: "WARM",
                type_: "integer",
                json_path: ".status.agents.warmReplicas",
            },
            Column {
                name: "MAX",
                type_: "integer",
                json_path: ".status.agents.maxReplicas",
            },
        ],
    )
}
