//! `function-inference render`: what Crossplane would compose for an XR,
//! with no cluster. It builds the `RunFunctionRequest` Crossplane would send,
//! calls the same core the gRPC server calls, answers the function's
//! requirements from `--required` the way Crossplane does, and prints a YAML
//! stream like `crossplane composition render`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::convert::{json_to_struct, struct_to_json};
use crate::function::{COMPOSITION_RESOURCE_NAME, run_function};
use crate::proto::{from_wire, full, to_wire};

/// Crossplane stops asking after this many requirement rounds.
const MAX_REQUIREMENT_ROUNDS: usize = 5;

/// Arguments of `render`.
#[derive(Args, Clone, Debug)]
pub struct RenderArgs {
    /// The composite resource (XR) to render, as YAML.
    pub xr: PathBuf,
    /// Observed composed resources (YAML stream), each annotated with crossplane.io/composition-resource-name.
    #[arg(long)]
    pub observed: Option<PathBuf>,
    /// Resources the function may require, such as a Model for an AgentPool (YAML stream).
    #[arg(long)]
    pub required: Option<PathBuf>,
    /// The step input (kind Input), as YAML.
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// Pipeline context, as a YAML or JSON object.
    #[arg(long)]
    pub context: Option<PathBuf>,
}

/// Why `render` could not run: one line, naming the file and position.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("{path}: {message}")]
    File { path: String, message: String },
    #[error("the function returned a fatal result: {0}")]
    Fatal(String),
    #[error("cannot write output: {0}")]
    Output(#[from] std::io::Error),
}

/// Runs `render`, writing the YAML stream to `out`.
pub fn run(args: &RenderArgs, out: &mut impl Write) -> Result<(), RenderError> {
    let xr = read_one(&args.xr)?;
    let mut req = full::RunFunctionRequest {
        meta: Some(full::RequestMeta {
            tag: "render".into(),
            // Crossplane 2.2 advertises every capability.
            capabilities: (1..=5).collect(),
        }),
        observed: Some(full::State {
            composite: Some(resource(&xr)),
            resources: read_observed(args.observed.as_deref())?,
        }),
        desired: Some(full::State::default()),
        input: args
            .input
            .as_deref()
            .map(read_one)
            .transpose()?
            .map(|v| json_to_struct(&v)),
        context: args
            .context
            .as_deref()
            .map(read_one)
            .transpose()?
            .map(|v| json_to_struct(&v)),
        ..Default::default()
    };
    let required = match &args.required {
        Some(p) => read_stream(p)?,
        None => Vec::new(),
    };

    let mut rsp = call(&req, &args.xr)?;
    for _ in 0..MAX_REQUIREMENT_ROUNDS {
        let wanted = rsp.requirements.clone().unwrap_or_default().resources;
        let answered: BTreeMap<_, _> = wanted
            .iter()
            .map(|(key, selector)| {
                (
                    key.clone(),
                    full::Resources {
                        items: select(&required, selector),
                    },
                )
            })
            .collect();
        if answered == req.required_resources {
            break;
        }
        req.required_resources = answered;
        rsp = call(&req, &args.xr)?;
    }
    write_stream(&xr, &rsp, out)?;
    if let Some(fatal) = rsp
        .results
        .iter()
        .find(|r| r.severity == full::Severity::Fatal as i32)
    {
        return Err(RenderError::Fatal(fatal.message.clone()));
    }
    Ok(())
}

fn call(
    req: &full::RunFunctionRequest,
    xr_path: &Path,
) -> Result<full::RunFunctionResponse, RenderError> {
    from_wire(&run_function(to_wire(req))).map_err(|e| RenderError::File {
        path: xr_path.display().to_string(),
        message: format!("bad response: {e}"),
    })
}

fn resource(object: &Map<String, Value>) -> full::Resource {
    full::Resource {
        resource: Some(json_to_struct(object)),
        ..Default::default()
    }
}

fn file_error(path: &Path, message: impl std::fmt::Display) -> RenderError {
    RenderError::File {
        path: path.display().to_string(),
        message: message.to_string(),
    }
}

fn yaml_error(path: &Path, e: serde_yaml::Error) -> RenderError {
    let message = e.to_string();
    match e.location() {
        // serde_yaml's message often ends with its own " at line L column C".
        Some(at) => RenderError::File {
            path: format!("{}:{}:{}", path.display(), at.line(), at.column()),
            message: message
                .split(" at line ")
                .next()
                .unwrap_or(&message)
                .to_string(),
        },
        None => file_error(path, message),
    }
}

fn read_text(path: &Path) -> Result<String, RenderError> {
    std::fs::read_to_string(path).map_err(|e| file_error(path, e))
}

/// Reads a file holding exactly one YAML (or JSON) object.
fn read_one(path: &Path) -> Result<Map<String, Value>, RenderError> {
    let docs = read_stream(path)?;
    match <[Map<String, Value>; 1]>::try_from(docs) {
        Ok([one]) => Ok(one),
        Err(docs) => Err(file_error(
            path,
            format!("expected one YAML object, found {}", docs.len()),
        )),
    }
}

/// Reads a YAML stream of objects, skipping empty documents.
fn read_stream(path: &Path) -> Result<Vec<Map<String, Value>>, RenderError> {
    let text = read_text(path)?;
    let mut out = Vec::new();
    for (i, doc) in serde_yaml::Deserializer::from_str(&text).enumerate() {
        let value = Value::deserialize(doc).map_err(|e| yaml_error(path, e))?;
        match value {
            Value::Null => {}
            Value::Object(m) => out.push(m),
            other => {
                return Err(file_error(
                    path,
                    format!(
                        "document {} is a {}, not an object",
                        i + 1,
                        type_name(&other)
                    ),
                ));
            }
        }
    }
    Ok(out)
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "object",
    }
}

fn read_observed(path: Option<&Path>) -> Result<BTreeMap<String, full::Resource>, RenderError> {
    let Some(path) = path else {
        return Ok(BTreeMap::new());
    };
    let mut out = BTreeMap::new();
    for (i, object) in read_stream(path)?.into_iter().enumerate() {
        let name = object
            .get("metadata")
            .and_then(|m| m.get("annotations"))
            .and_then(|a| a.get(COMPOSITION_RESOURCE_NAME))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                file_error(
                    path,
                    format!(
                        "document {} has no metadata.annotations[{COMPOSITION_RESOURCE_NAME:?}]",
                        i + 1
                    ),
                )
            })?
            .to_string();
        out.insert(name, resource(&object));
    }
    Ok(out)
}

/// The resources that match `selector`, as Crossplane would look them up.
fn select(
    candidates: &[Map<String, Value>],
    selector: &full::ResourceSelector,
) -> Vec<full::Resource> {
    let meta = |o: &Map<String, Value>, key: &str| -> Option<Value> {
        o.get("metadata")?.get(key).cloned()
    };
    candidates
        .iter()
        .filter(|o| {
            o.get("apiVersion").and_then(Value::as_str) == Some(selector.api_version.as_str())
        })
        .filter(|o| o.get("kind").and_then(Value::as_str) == Some(selector.kind.as_str()))
        .filter(|o| match &selector.namespace {
            Some(ns) => {
                meta(o, "namespace")
                    .and_then(|v| v.as_str().map(String::from))
                    .as_deref()
                    == Some(ns)
            }
            None => true,
        })
        .filter(|o| match &selector.r#match {
            Some(full::resource_selector::Match::MatchName(n)) => {
                meta(o, "name")
                    .and_then(|v| v.as_str().map(String::from))
                    .as_deref()
                    == Some(n)
            }
            Some(full::resource_selector::Match::MatchLabels(l)) => {
                let labels = meta(o, "labels").unwrap_or(Value::Null);
                l.labels
                    .iter()
                    .all(|(k, v)| labels.get(k).and_then(Value::as_str) == Some(v))
            }
            None => false,
        })
        .map(resource)
        .collect()
}

fn write_stream(
    xr: &Map<String, Value>,
    rsp: &full::RunFunctionResponse,
    out: &mut impl Write,
) -> std::io::Result<()> {
    let xr_name = xr
        .get("metadata")
        .and_then(|m| m.get("name"))
        .cloned()
        .unwrap_or(Value::Null);
    // As the core does: an XR file without a namespace stands for "default".
    let xr_namespace = xr
        .get("metadata")
        .and_then(|m| m.get("namespace"))
        .cloned()
        .or_else(|| Some(json!("default")));
    let desired = rsp.desired.clone().unwrap_or_default();

    let mut composite = Map::new();
    composite.insert(
        "apiVersion".into(),
        xr.get("apiVersion").cloned().unwrap_or(Value::Null),
    );
    composite.insert(
        "kind".into(),
        xr.get("kind").cloned().unwrap_or(Value::Null),
    );
    composite.insert(
        "metadata".into(),
        xr.get("metadata").cloned().unwrap_or_else(|| json!({})),
    );
    let mut status = desired
        .composite
        .as_ref()
        .and_then(|c| c.resource.as_ref())
        .map(struct_to_json)
        .and_then(|c| c.get("status").cloned())
        .unwrap_or_else(|| json!({}));
    if !rsp.conditions.is_empty()
        && let Some(s) = status.as_object_mut()
    {
        s.insert(
            "conditions".into(),
            Value::Array(rsp.conditions.iter().map(condition_json).collect()),
        );
    }
    composite.insert("status".into(), status);
    write_doc(out, &Value::Object(composite))?;

    for (name, r) in &desired.resources {
        let mut object = r.resource.as_ref().map(struct_to_json).unwrap_or_default();
        let md = object.entry("metadata").or_insert_with(|| json!({}));
        if let Some(md) = md.as_object_mut() {
            let annotations = md.entry("annotations").or_insert_with(|| json!({}));
            if let Some(a) = annotations.as_object_mut() {
                a.insert(
                    COMPOSITION_RESOURCE_NAME.into(),
                    Value::String(name.clone()),
                );
            }
            let labels = md.entry("labels").or_insert_with(|| json!({}));
            if let Some(l) = labels.as_object_mut() {
                l.insert("crossplane.io/composite".into(), xr_name.clone());
            }
            // Crossplane forces a namespaced XR's namespace onto what it composes.
            if let Some(ns) = &xr_namespace {
                md.insert("namespace".into(), ns.clone());
            }
        }
        write_doc(out, &Value::Object(object))?;
    }
    for r in &rsp.results {
        let severity = full::Severity::try_from(r.severity).unwrap_or(full::Severity::Unspecified);
        let mut doc = Map::new();
        doc.insert("apiVersion".into(), json!("render.crossplane.io/v1beta1"));
        doc.insert("kind".into(), json!("Result"));
        doc.insert("severity".into(), json!(severity.as_str_name()));
        if let Some(reason) = &r.reason {
            doc.insert("reason".into(), json!(reason));
        }
        doc.insert("message".into(), json!(r.message));
        doc.insert("step".into(), json!("function-inference"));
        write_doc(out, &Value::Object(doc))?;
    }
    Ok(())
}

fn condition_json(c: &full::Condition) -> Value {
    let status = match full::Status::try_from(c.status) {
        Ok(full::Status::ConditionTrue) => "True",
        Ok(full::Status::ConditionFalse) => "False",
        _ => "Unknown",
    };
    let mut m = Map::new();
    m.insert("type".into(), json!(c.r#type));
    m.insert("status".into(), json!(status));
    m.insert("reason".into(), json!(c.reason));
    if let Some(msg) = &c.message {
        m.insert("message".into(), json!(msg));
    }
    Value::Object(m)
}

fn write_doc(out: &mut impl Write, v: &Value) -> std::io::Result<()> {
    let text = serde_yaml::to_string(v).map_err(std::io::Error::other)?;
    write!(out, "---\n{text}")
}
