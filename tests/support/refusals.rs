//! The one table shape for refusals, of every kind and of the step input:
//! each [`Refusal`] row changes one place of a valid request and states the
//! result expected; [`Refusals`] sends each row and checks what every
//! refusal must do.
//!
//! ```ignore
//! Refusals::of(LlmInference::new("bad").model(QWEN).build()).check(vec![
//!     refusal("gpu zero", "spec.gpu", json!(0), fatal("InvalidSpec", "spec.gpu is 0; ...")),
//!     refusal("spec null", "spec", Value::Null, fatal("InvalidSpec", "spec must be an object; it is null")),
//!     refusal("image missing", "spec.image", Remove, fatal("InvalidSpec", "spec: image is required")),
//!     refusal("min above max", "spec", Merge(json!({"minReplicas": 8, "maxReplicas": 4})), fatal(...)),
//!     refusal("ttl zero", "input.ttl", json!("0s"), fatal("InvalidInput", "invalid step input: ...")),
//! ]);
//! ```

use function_inference::protocol::fnv1;
use serde_json::{Value, json};

use super::{INPUT_API_VERSION, call, earlier_desired, meta, object, request, resource};

/// What a row does at its place.
#[derive(Clone, Debug)]
pub enum Change {
    /// Sets the value there, replacing what was (`spec` replaces the whole spec).
    Set(Value),
    /// Merges an object into what is there, field by field (JSON merge
    /// patch without its `null`), so one row can change several fields.
    Merge(Value),
    /// Removes the field.
    Remove,
}

// Not every test file writes these; each compiles support on its own.
#[allow(unused_imports)]
pub use Change::{Merge, Remove};

impl From<Value> for Change {
    fn from(v: Value) -> Self {
        Change::Set(v)
    }
}

/// One refused request: what is wrong with it, where, and the result expected.
#[derive(Clone, Debug)]
pub struct Refusal {
    pub name: &'static str,
    /// A dotted path into the XR (`spec`, `spec.gpu`, `metadata.name`) or,
    /// under `input.`, into the step input.
    pub at: &'static str,
    pub change: Change,
    pub want: fnv1::Result,
    /// True for a row refused before the requirements are known: it
    /// answers none, whatever the table's.
    pub requires_nothing: bool,
}

impl Refusal {
    /// The row is refused before the function reads what it requires (an
    /// AgentPool whose spec does not decode names no Model): it answers no
    /// requirements.
    pub fn requiring_nothing(mut self) -> Self {
        self.requires_nothing = true;
        self
    }
}

/// A row of a refusal table.
pub fn refusal(
    name: &'static str,
    at: &'static str,
    change: impl Into<Change>,
    want: fnv1::Result,
) -> Refusal {
    Refusal {
        name,
        at,
        change: change.into(),
        want,
        requires_nothing: false,
    }
}

/// Sets (or removes) the field at a dotted path, making the objects on the way.
pub fn set(v: &mut Value, path: &str, change: Change) {
    let parts: Vec<&str> = path.split('.').collect();
    let (last, parents) = parts.split_last().unwrap();
    let mut cur = v;
    for p in parents {
        cur = &mut cur[*p];
    }
    match change {
        Change::Set(x) => cur[*last] = x,
        Change::Merge(patch) => merge(&mut cur[*last], &patch),
        Change::Remove => {
            cur.as_object_mut().unwrap().remove(*last);
        }
    }
}

/// Merges `patch` into `into`: objects field by field, anything else replaced.
pub fn merge(into: &mut Value, patch: &Value) {
    match (into, patch) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v.clone(),
    }
}

/// The request every row of a table changes, and what a refusal of it keeps.
pub struct Refusals {
    tag: &'static str,
    xr: Value,
    model: Option<Value>,
    desired: fnv1::State,
    /// The requirements every refusal answers, unless its row says otherwise.
    requirements: Option<fnv1::Requirements>,
}

impl Refusals {
    /// Refusals of changes to `xr`, a valid XR, sent with tag `bad` after an
    /// earlier step that desired [`earlier_desired`].
    pub fn of(xr: Value) -> Self {
        Self {
            tag: "bad",
            xr,
            model: None,
            desired: earlier_desired(),
            requirements: None,
        }
    }

    pub fn tag(mut self, tag: &'static str) -> Self {
        self.tag = tag;
        self
    }

    /// Sends `model` as Crossplane's answer to the `model` requirement.
    pub fn with_model(mut self, model: Value) -> Self {
        self.model = Some(model);
        self
    }

    /// The desired state of the earlier steps, sent along and kept.
    pub fn after(mut self, desired: fnv1::State) -> Self {
        self.desired = desired;
        self
    }

    /// The requirements every refusal still answers (an AgentPool's Model)
    /// unless its row is [`Refusal::requiring_nothing`]; without this, none.
    pub fn requiring(mut self, requirements: Option<fnv1::Requirements>) -> Self {
        self.requirements = requirements;
        self
    }

    /// The request of one row.
    pub fn request(&self, row: &Refusal) -> fnv1::RunFunctionRequest {
        let mut xr = self.xr.clone();
        let mut input = None;
        match row.at.strip_prefix("input.") {
            Some(path) => {
                let mut v = json!({"apiVersion": INPUT_API_VERSION, "kind": "Input"});
                set(&mut v, path, row.change.clone());
                input = Some(object(v));
            }
            None => set(&mut xr, row.at, row.change.clone()),
        }
        let mut req = request(self.tag, xr);
        req.input = input;
        req.desired = Some(self.desired.clone());
        if let Some(model) = &self.model {
            req.required_resources.insert(
                "model".into(),
                fnv1::Resources {
                    items: vec![resource(model.clone())],
                },
            );
        }
        req
    }

    /// Sends each row and checks: the result expected is there; a FATAL is
    /// the whole answer (the tag, the earlier steps' desired state
    /// unchanged, so Crossplane applies nothing new and deletes nothing,
    /// and the requirements that still hold); a warning keeps every earlier
    /// resource; the message names the field and echoes no long value.
    pub fn check(&self, rows: Vec<Refusal>) {
        for row in rows {
            let name = row.name;
            let want = row.want.clone();
            let rsp = call(&self.request(&row));
            assert!(
                rsp.results.contains(&want),
                "case {name:?}: want {want:?}, got {:?}",
                rsp.results
            );
            let root = row.at.split('.').next().unwrap();
            let names_the_field = match root {
                "input" => want.message.contains("input."),
                root => want.message.starts_with(root),
            };
            assert!(
                names_the_field,
                "case {name:?}: the message names the field: {}",
                want.message
            );
            assert!(
                want.message.len() < 400,
                "case {name:?}: long values are not echoed: {}",
                want.message
            );
            if want.severity == fnv1::Severity::Fatal as i32 {
                assert_eq!(
                    rsp,
                    fnv1::RunFunctionResponse {
                        meta: meta(self.tag, 60),
                        desired: Some(self.desired.clone()),
                        results: vec![want],
                        requirements: if row.requires_nothing {
                            None
                        } else {
                            self.requirements.clone()
                        },
                        ..Default::default()
                    },
                    "case {name:?}: a refusal composes nothing and keeps the earlier steps' desired state"
                );
            } else {
                let desired = rsp.desired.unwrap();
                for (k, r) in &self.desired.resources {
                    assert_eq!(desired.resources.get(k), Some(r), "case {name:?}: {k} kept");
                }
            }
        }
    }
}
