//! Builder fixtures for the three XR kinds, in the style of
//! kube-rs/controller-rs: start from a name, state only what a test is
//! about, and `build()` the XR as Crossplane sends it.
//!
//! ```ignore
//! let xr = LlmInference::new("chat")
//!     .model("Qwen/Qwen2.5-1.5B-Instruct")
//!     .gpu_type("L4")
//!     .field("maxModelLen", json!(8192))
//!     .build();
//! ```
//!
//! Every XR lives in the namespace `team-a` unless told otherwise; `uid` and
//! `status` appear only when set, so a fixture sends exactly what its test
//! states.

use serde_json::{Value, json};

pub const API_VERSION: &str = "infer.dev/v1alpha1";

/// The model most LLMInference fixtures serve: small, in the catalog, one L4.
pub const QWEN: &str = "Qwen/Qwen2.5-1.5B-Instruct";

/// What every kind's builder holds.
#[derive(Clone, Debug)]
struct Xr {
    kind: &'static str,
    name: String,
    namespace: String,
    uid: Option<String>,
    spec: Value,
    status: Option<Value>,
}

impl Xr {
    fn new(kind: &'static str, name: &str) -> Self {
        Self {
            kind,
            name: name.into(),
            namespace: "team-a".into(),
            uid: None,
            spec: json!({}),
            status: None,
        }
    }

    fn set(&mut self, field: &str, value: Value) {
        let kind = self.kind;
        self.spec
            .as_object_mut()
            .unwrap_or_else(|| panic!("the {kind} spec is not an object"))
            .insert(field.into(), value);
    }

    fn build(self) -> Value {
        let mut metadata = json!({"name": self.name, "namespace": self.namespace});
        if let Some(uid) = self.uid {
            metadata["uid"] = json!(uid);
        }
        let mut xr = json!({
            "apiVersion": API_VERSION, "kind": self.kind,
            "metadata": metadata, "spec": self.spec,
        });
        if let Some(status) = self.status {
            xr["status"] = status;
        }
        xr
    }
}

/// The methods every kind's builder has.
macro_rules! xr_builder {
    ($builder:ident, $kind:literal) => {
        #[doc = concat!("A ", $kind, " under construction.")]
        #[derive(Clone, Debug)]
        pub struct $builder(Xr);

        impl $builder {
            #[doc = concat!("A ", $kind, " named `name` in `team-a`, with an empty spec.")]
            pub fn new(name: &str) -> Self {
                Self(Xr::new($kind, name))
            }

            pub fn namespace(mut self, namespace: &str) -> Self {
                self.0.namespace = namespace.into();
                self
            }

            pub fn uid(mut self, uid: &str) -> Self {
                self.0.uid = Some(uid.into());
                self
            }

            /// The whole spec, replaced: any JSON, also one that is no object.
            pub fn spec(mut self, spec: Value) -> Self {
                self.0.spec = spec;
                self
            }

            /// One spec field, set (or replaced) on what is there.
            pub fn field(mut self, field: &str, value: Value) -> Self {
                self.0.set(field, value);
                self
            }

            /// The status Crossplane observed (the function's earlier answer).
            pub fn status(mut self, status: Value) -> Self {
                self.0.status = Some(status);
                self
            }

            pub fn build(self) -> Value {
                self.0.build()
            }
        }
    };
}

xr_builder!(LlmInference, "LLMInference");
xr_builder!(Model, "Model");
xr_builder!(AgentPool, "AgentPool");

impl LlmInference {
    /// `spec.model`: a Hugging Face model id.
    pub fn model(self, id: &str) -> Self {
        self.field("model", json!(id))
    }

    /// `spec.modelRef`: a Model in the same namespace.
    pub fn model_ref(self, name: &str) -> Self {
        self.field("modelRef", json!({"name": name}))
    }

    pub fn gpu(self, count: u64) -> Self {
        self.field("gpu", json!(count))
    }

    pub fn gpu_type(self, gpu_type: &str) -> Self {
        self.field("gpuType", json!(gpu_type))
    }

    pub fn runtime(self, runtime: &str) -> Self {
        self.field("runtime", json!(runtime))
    }

    /// [`QWEN`] on one GPU.
    pub fn qwen(name: &str) -> Self {
        Self::new(name).model(QWEN).gpu(1)
    }
}

impl Model {
    pub fn weights_uri(self, uri: &str) -> Self {
        self.field("weightsURI", json!(uri))
    }
}

impl AgentPool {
    /// `spec.agentClass.modelRef`: the Model the pool's agents talk to.
    pub fn model_ref(mut self, name: &str) -> Self {
        let spec = self
            .0
            .spec
            .as_object_mut()
            .expect("an AgentPool spec object");
        let class = spec.entry("agentClass").or_insert_with(|| json!({}));
        class["modelRef"] = json!({"name": name});
        self
    }

    /// `reviewers`: one agent of the Model `model` on one L4, the least
    /// spec that composes every resource of a pool.
    pub fn one_agent(model: &str) -> Self {
        Self::new("reviewers")
            .spec(json!({
                "image": "ghcr.io/example/agent-runtime:1.0",
                "minReplicas": 1, "maxReplicas": 1,
                "gpuRequirements": {"type": "L4"},
            }))
            .field("agentClass", json!({"maxContextLength": 8192}))
            .model_ref(model)
    }
}
