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

use super::input_file;
use crate::protocol::resource::{json_to_struct, struct_to_json};
use crate::protocol::{fnv1, from_server, to_server};
use crate::request::{COMPOSITION_RESOURCE_NAME, at, str_at};
use crate::run::run_function;
use crate::served_kinds::CRD_KIND;

/// Crossplane stops asking after this many requirement rounds.
const MAX_REQUIREMENT_ROUNDS: usize = 5;

/// Arguments of `render`.
#[derive(Args, Clone, Debug)]
pub struct RenderArgs {
    /// The composite resource (XR) to render, as YAML; `-` reads it from standard input, as any file here.
    pub xr: PathBuf,
    /// Observed composed resources (YAML stream, or the List `kubectl get -o yaml` prints), each annotated with
    /// crossplane.io/composition-resource-name.
    #[arg(long)]
    pub observed: Option<PathBuf>,
    /// Resources the function may require, such as a Model for an AgentPool, or the CustomResourceDefinitions
    /// the cluster has, to check that it serves the custom kinds composed (YAML stream).
    #[arg(long)]
    pub required: Option<PathBuf>,
    /// The step input (kind Input), as YAML; or a Composition, whose step that runs this function gives it.
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

/// Runs `render`, writing the YAML stream to `out` and, to `warnings`, a
/// line for each resource the function required that `--required` lacks.
pub fn run(
    args: &RenderArgs,
    out: &mut impl Write,
    warnings: &mut impl Write,
) -> Result<(), RenderError> {
    input_file::stdin_once([
        ("the XR", Some(args.xr.as_path())),
        ("--observed", args.observed.as_deref()),
        ("--required", args.required.as_deref()),
        ("--input", args.input.as_deref()),
        ("--context", args.context.as_deref()),
    ])
    .map_err(|message| file_error(Path::new("-"), message))?;
    let xr = read_one(&args.xr)?;
    let mut req = fnv1::RunFunctionRequest {
        meta: Some(fnv1::RequestMeta {
            tag: "render".into(),
            // Crossplane 2.2 advertises every capability.
            capabilities: (1..=5).collect(),
        }),
        observed: Some(fnv1::State {
            composite: Some(resource(&xr)),
            resources: read_observed(args.observed.as_deref())?,
        }),
        desired: Some(fnv1::State::default()),
        input: args
            .input
            .as_deref()
            .map(|path| read_input(path, &xr))
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

    // With no cluster, which kinds are served is unknown unless --required
    // holds CustomResourceDefinitions: until then those questions stay
    // unanswered, and the function composes as if the kinds were served.
    let knows_crds = required
        .iter()
        .any(|o| o.get("kind").and_then(Value::as_str) == Some(CRD_KIND));
    let answerable = |selector: &fnv1::ResourceSelector| knows_crds || selector.kind != CRD_KIND;
    let mut rsp = call(&req, &args.xr)?;
    for _ in 0..MAX_REQUIREMENT_ROUNDS {
        let wanted = rsp.requirements.clone().unwrap_or_default().resources;
        let answered: BTreeMap<_, _> = wanted
            .iter()
            .filter(|(_, selector)| answerable(selector))
            .map(|(key, selector)| {
                (
                    key.clone(),
                    fnv1::Resources {
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
    for (key, selector) in rsp.requirements.iter().flat_map(|r| &r.resources) {
        if answerable(selector)
            && select(&required, selector).is_empty()
            && let Some(missing) = unmet(key, selector, &required, args.required.as_deref())
        {
            writeln!(warnings, "function-inference render: warning: {missing}")?;
        }
    }
    if let Some(fatal) = rsp
        .results
        .iter()
        .find(|r| r.severity == fnv1::Severity::Fatal as i32)
    {
        return Err(RenderError::Fatal(fatal.message.clone()));
    }
    Ok(())
}

fn call(
    req: &fnv1::RunFunctionRequest,
    xr_path: &Path,
) -> Result<fnv1::RunFunctionResponse, RenderError> {
    from_server(&run_function(to_server(req)).response).map_err(|e| RenderError::File {
        path: input_file::shown(xr_path),
        message: format!("bad response: {e}"),
    })
}

fn resource(object: &Map<String, Value>) -> fnv1::Resource {
    fnv1::Resource {
        resource: Some(json_to_struct(object)),
        ..Default::default()
    }
}

/// The step input `path` holds: an Input, or the input of the step of a
/// Composition that runs this function, so that render composes with the
/// platform's defaults as the cluster would.
fn read_input(path: &Path, xr: &Map<String, Value>) -> Result<Map<String, Value>, RenderError> {
    let doc = read_one(path)?;
    if str_at(&doc, &["kind"]) != "Composition" {
        return Ok(doc);
    }
    let composes = str_at(&doc, &["spec", "compositeTypeRef", "kind"]);
    let xr_kind = str_at(xr, &["kind"]);
    if !composes.is_empty() && composes != xr_kind {
        return Err(file_error(
            path,
            format!(
                "this Composition composes {composes}, and the XR's kind is {xr_kind}: pass a Composition of {xr_kind}"
            ),
        ));
    }
    let ours = |input: &&Map<String, Value>| {
        str_at(input, &["apiVersion"]) == crate::input::API_VERSION
            && str_at(input, &["kind"]) == crate::input::KIND
    };
    let inputs: Vec<&Map<String, Value>> = at(&doc, &["spec", "pipeline"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|step| step.get("input").and_then(Value::as_object))
        .filter(ours)
        .collect();
    match inputs.as_slice() {
        [input] => Ok((*input).clone()),
        [] => Err(file_error(
            path,
            format!(
                "no step of this Composition's pipeline has a function-inference input (apiVersion {}, kind Input)",
                crate::input::API_VERSION
            ),
        )),
        more => Err(file_error(
            path,
            format!(
                "{} steps of this Composition's pipeline have a function-inference input: pass the one to render with, \
                 in a file of its own",
                more.len()
            ),
        )),
    }
}

fn file_error(path: &Path, message: impl std::fmt::Display) -> RenderError {
    RenderError::File {
        path: input_file::shown(path),
        message: message.to_string(),
    }
}

fn yaml_error(path: &Path, e: serde_yaml::Error) -> RenderError {
    let message = e.to_string();
    match e.location() {
        // serde_yaml's message often ends with its own " at line L column C".
        Some(at) => RenderError::File {
            path: format!("{}:{}:{}", input_file::shown(path), at.line(), at.column()),
            message: message
                .split(" at line ")
                .next()
                .unwrap_or(&message)
                .to_string(),
        },
        None => file_error(path, message),
    }
}

/// Deepest nesting of flow collections (`[ ]`, `{ }`, so JSON too).
/// serde_yaml refuses nesting past 128 levels, but only after libyaml has
/// read the whole document, which takes time quadratic in the depth
/// (100,000 `[` take seconds, 16 MiB of them hours); counting first keeps a
/// bad file's error quick. No Kubernetes object nests anywhere near this.
pub(crate) const MAX_FLOW_DEPTH: usize = 128;

fn read_text(path: &Path) -> Result<String, RenderError> {
    let text = input_file::read_text(path, "a YAML or JSON file of Kubernetes objects")
        .map_err(|message| file_error(path, message))?;
    if let Some(line) = flow_too_deep(&text) {
        return Err(RenderError::File {
            path: format!("{}:{line}", input_file::shown(path)),
            message: format!(
                "[ ] and {{ }} nest deeper than {MAX_FLOW_DEPTH} levels, more than YAML is read to"
            ),
        });
    }
    Ok(text)
}

/// The line where flow collections first nest deeper than [`MAX_FLOW_DEPTH`],
/// if they do. A scan, not a parse: it skips quoted scalars, comments and
/// block scalars (`|`, `>`), and counts every other bracket. It may count a
/// bracket inside a plain scalar (`a[0`), which could refuse only a file
/// with over a hundred such unbalanced brackets; it never misses one that
/// libyaml would nest, which is what keeps the time bounded.
fn flow_too_deep(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote: Option<u8> = None;
    // Lines indented more than this belong to a block scalar.
    let mut block_scalar: Option<usize> = None;
    for (n, line) in text.split('\n').enumerate() {
        let b = line.as_bytes();
        let indent = b.iter().take_while(|&&c| c == b' ').count();
        if let Some(parent) = block_scalar {
            if indent > parent || line.trim().is_empty() {
                continue;
            }
            block_scalar = None;
        }
        // The last byte that was not white space ('\n' at the start of a
        // line), and whether white space followed it: a quote or a block
        // scalar starts a node only there.
        let mut prev = b'\n';
        let mut gap = false;
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if let Some(q) = quote {
                match c {
                    b'\\' if q == b'"' => i += 1,
                    b'\'' if q == b'\'' && b.get(i + 1) == Some(&b'\'') => i += 1,
                    _ if c == q => {
                        quote = None;
                        prev = c;
                        gap = false;
                    }
                    _ => {}
                }
                i += 1;
                continue;
            }
            let node_start = prev == b'\n'
                || (depth > 0 && matches!(prev, b'[' | b'{' | b',' | b':'))
                || (gap && matches!(prev, b':' | b'-' | b'?'));
            match c {
                b' ' | b'\t' | b'\r' => {
                    gap = true;
                    i += 1;
                    continue;
                }
                b'#' if i == 0 || matches!(b[i - 1], b' ' | b'\t') => break,
                b'"' | b'\'' if node_start => quote = Some(c),
                b'|' | b'>' if depth == 0 && node_start => {
                    block_scalar = Some(indent);
                    break;
                }
                b'[' | b'{' => {
                    depth += 1;
                    if depth > MAX_FLOW_DEPTH {
                        return Some(n + 1);
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
            prev = c;
            gap = false;
            i += 1;
        }
    }
    None
}

/// A JSON value read from YAML that refuses a key given twice in one
/// mapping. serde_json's own `Value` silently keeps the last of the two and
/// serde_yaml 0.9 has no option to refuse them, so the check sits here; it
/// runs while serde_yaml reads the key, so the error carries the line and
/// column of the second one.
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> serde::de::Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a YAML value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    // A whole number beyond 64 bits is read as the API server's JSON
    // decoder reads it, as a float, so that the field's own check answers.
    fn visit_i128<E: serde::de::Error>(self, v: i128) -> Result<Value, E> {
        self.visit_f64(v as f64)
    }
    fn visit_u128<E: serde::de::Error>(self, v: u128) -> Result<Value, E> {
        self.visit_f64(v as f64)
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // As serde_json does: .nan and .inf have no JSON number.
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Strict::deserialize(d).map(|s| s.0)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key_seed(NewKey(&out))? {
            let Strict(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// A mapping key that is not yet in the mapping.
struct NewKey<'a>(&'a Map<String, Value>);

impl<'de> serde::de::DeserializeSeed<'de> for NewKey<'_> {
    type Value = String;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_string(self)
    }
}

impl<'de> serde::de::Visitor<'de> for NewKey<'_> {
    type Value = String;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string key")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<String, E> {
        if self.0.contains_key(v) {
            return Err(E::custom(format_args!(
                "duplicate key {v:?}; YAML would keep only the last value, so remove one"
            )));
        }
        Ok(v.to_owned())
    }
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

/// Reads a YAML stream of objects, skipping empty documents. A `v1` `List`,
/// what `kubectl get -o yaml` prints for several objects, stands for its
/// items.
fn read_stream(path: &Path) -> Result<Vec<Map<String, Value>>, RenderError> {
    let text = read_text(path)?;
    let mut out = Vec::new();
    for (i, doc) in serde_yaml::Deserializer::from_str(&text).enumerate() {
        let Strict(value) = Strict::deserialize(doc).map_err(|e| yaml_error(path, e))?;
        match value {
            Value::Null => {}
            Value::Object(m) if is_list(&m) => out.extend(list_items(path, i, m)?),
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

fn is_list(object: &Map<String, Value>) -> bool {
    str_at(object, &["apiVersion"]) == "v1" && str_at(object, &["kind"]) == "List"
}

/// The items of document `i`, a `List`: each must be an object.
fn list_items(
    path: &Path,
    i: usize,
    mut list: Map<String, Value>,
) -> Result<Vec<Map<String, Value>>, RenderError> {
    let not_objects = |what: &str| {
        file_error(
            path,
            format!("document {} is a List whose items {what}", i + 1),
        )
    };
    match list.remove("items") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .into_iter()
            .enumerate()
            .map(|(n, item)| match item {
                Value::Object(m) => Ok(m),
                other => Err(not_objects(&format!(
                    "include a {} (item {}), not an object",
                    type_name(&other),
                    n + 1
                ))),
            })
            .collect(),
        Some(other) => Err(not_objects(&format!(
            "are a {}, not a list of objects",
            type_name(&other)
        ))),
    }
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

fn read_observed(path: Option<&Path>) -> Result<BTreeMap<String, fnv1::Resource>, RenderError> {
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
    selector: &fnv1::ResourceSelector,
) -> Vec<fnv1::Resource> {
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
            Some(fnv1::resource_selector::Match::MatchName(n)) => {
                meta(o, "name")
                    .and_then(|v| v.as_str().map(String::from))
                    .as_deref()
                    == Some(n)
            }
            Some(fnv1::resource_selector::Match::MatchLabels(l)) => {
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

/// The warning for a resource the function required by name that no file
/// gives: the function then composes as if it did not exist, which in a
/// cluster is true and here more likely a file left out or a namespace not
/// set. (A label selector may rightly match nothing, such as the pods of a
/// server not started yet: no warning.)
fn unmet(
    key: &str,
    selector: &fnv1::ResourceSelector,
    candidates: &[Map<String, Value>],
    required: Option<&Path>,
) -> Option<String> {
    let Some(fnv1::resource_selector::Match::MatchName(name)) = &selector.r#match else {
        return None;
    };
    let kind = &selector.kind;
    let wanted = match &selector.namespace {
        Some(ns) => format!("{kind} {ns}/{name} (`{key}`)"),
        None => format!("{kind} {name} (`{key}`)"),
    };
    let Some(path) = required else {
        return Some(format!(
            "the function requires {wanted}, and no --required file was given: it rendered as if \
             there were none; pass a file that holds it with --required"
        ));
    };
    let mut message = format!(
        "the function requires {wanted}, which {} does not hold: it rendered as if there were none",
        input_file::shown(path)
    );
    // The same kind and name elsewhere is what the author meant.
    if let Some(near) = candidates
        .iter()
        .find(|o| str_at(o, &["kind"]) == kind && str_at(o, &["metadata", "name"]) == name)
    {
        let api_version = str_at(near, &["apiVersion"]);
        let found = if api_version != selector.api_version {
            format!("as apiVersion {api_version}, not {}", selector.api_version)
        } else {
            match str_at(near, &["metadata", "namespace"]) {
                "" => "with no metadata.namespace".to_string(),
                ns => format!("in namespace {ns}"),
            }
        };
        message.push_str(&format!("; it holds {kind} {name} {found}"));
    }
    Some(message)
}

fn write_stream(
    xr: &Map<String, Value>,
    rsp: &fnv1::RunFunctionResponse,
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
    let conditions: Vec<Value> = ready_condition(rsp)
        .into_iter()
        .chain(rsp.conditions.iter().map(condition_json))
        .collect();
    if !conditions.is_empty()
        && let Some(s) = status.as_object_mut()
    {
        s.insert("conditions".into(), Value::Array(conditions));
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
        let severity = fnv1::Severity::try_from(r.severity).unwrap_or(fnv1::Severity::Unspecified);
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

/// The XR's `Ready` condition as Crossplane derives it from the answer
/// (its XR reconciler and `crossplane render` alike): `Creating` while the
/// function says the XR is not ready, or says nothing and a composed
/// resource is not ready (the first three by name); `Available` otherwise.
/// None after a FATAL, on which Crossplane keeps the XR's last `Ready`.
fn ready_condition(rsp: &fnv1::RunFunctionResponse) -> Option<Value> {
    if rsp
        .results
        .iter()
        .any(|r| r.severity == fnv1::Severity::Fatal as i32)
    {
        return None;
    }
    let desired = rsp.desired.as_ref();
    let unready: Vec<&str> = desired
        .into_iter()
        .flat_map(|d| &d.resources)
        .filter(|(_, r)| r.ready != fnv1::Ready::True as i32)
        .map(|(name, _)| name.as_str())
        .collect();
    let xr_ready = desired
        .and_then(|d| d.composite.as_ref())
        .map_or(fnv1::Ready::Unspecified as i32, |c| c.ready);
    Some(if xr_ready == fnv1::Ready::False as i32 {
        json!({"type": "Ready", "status": "False", "reason": "Creating"})
    } else if xr_ready == fnv1::Ready::Unspecified as i32 && !unready.is_empty() {
        let names = match unready.as_slice() {
            [first @ .., last] if unready.len() == 3 => format!("{}, and {last}", first.join(", ")),
            [first, second, third, rest @ ..] if !rest.is_empty() => {
                format!("{first}, {second}, {third}, and {} more", rest.len())
            }
            names => names.join(", "),
        };
        json!({"type": "Ready", "status": "False", "reason": "Creating",
               "message": format!("Unready resources: {names}")})
    } else {
        json!({"type": "Ready", "status": "True", "reason": "Available"})
    })
}

fn condition_json(c: &fnv1::Condition) -> Value {
    let status = match fnv1::Status::try_from(c.status) {
        Ok(fnv1::Status::ConditionTrue) => "True",
        Ok(fnv1::Status::ConditionFalse) => "False",
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
    let text = crate::yaml::to_string(v).map_err(std::io::Error::other)?;
    write!(out, "---\n{text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_is_derived_as_crossplane_derives_it() {
        let answer = |xr_ready: fnv1::Ready, resources: &[(&str, fnv1::Ready)], fatal: bool| {
            let mut rsp = fnv1::RunFunctionResponse {
                desired: Some(fnv1::State {
                    composite: Some(fnv1::Resource {
                        ready: xr_ready as i32,
                        ..Default::default()
                    }),
                    resources: resources
                        .iter()
                        .map(|(name, ready)| {
                            (
                                name.to_string(),
                                fnv1::Resource {
                                    ready: *ready as i32,
                                    ..Default::default()
                                },
                            )
                        })
                        .collect(),
                }),
                ..Default::default()
            };
            if fatal {
                rsp.results.push(fnv1::Result {
                    severity: fnv1::Severity::Fatal as i32,
                    ..Default::default()
                });
            }
            ready_condition(&rsp)
        };
        use fnv1::Ready::{False, True, Unspecified};
        let creating = |message: &str| {
            Some(
                json!({"type": "Ready", "status": "False", "reason": "Creating",
                        "message": format!("Unready resources: {message}")}),
            )
        };
        let available = Some(json!({"type": "Ready", "status": "True", "reason": "Available"}));
        assert_eq!(answer(Unspecified, &[("a", True)], false), available);
        assert_eq!(answer(Unspecified, &[], false), available);
        // crossplane-runtime's StableNAndSomeMore(3, names).
        assert_eq!(
            answer(Unspecified, &[("b", False), ("a", Unspecified)], false),
            creating("a, b")
        );
        assert_eq!(
            answer(
                Unspecified,
                &[("c", False), ("b", False), ("a", False)],
                false
            ),
            creating("a, b, and c")
        );
        assert_eq!(
            answer(
                Unspecified,
                &[
                    ("a", False),
                    ("b", False),
                    ("c", False),
                    ("d", False),
                    ("e", True)
                ],
                false
            ),
            creating("a, b, c, and 1 more")
        );
        // The function's word on the XR comes first; a FATAL keeps the last Ready.
        assert_eq!(
            answer(False, &[("a", True)], false),
            Some(json!({"type": "Ready", "status": "False", "reason": "Creating"}))
        );
        assert_eq!(answer(True, &[("a", False)], false), available);
        assert_eq!(answer(Unspecified, &[("a", False)], true), None);
    }

    #[test]
    fn flow_depth_counts_only_what_libyaml_would_nest() {
        let deep = |open: &str| open.repeat(MAX_FLOW_DEPTH + 1);
        let cases = [
            ("flow sequences", deep("["), Some(1)),
            ("flow mappings", deep("{a: "), Some(1)),
            ("JSON", deep("{\"a\":"), Some(1)),
            (
                "after a block key",
                format!("a: b\nc: {}", deep("[")),
                Some(2),
            ),
            ("at the limit", "[".repeat(MAX_FLOW_DEPTH), None),
            ("balanced, many times", "[[]]".repeat(10_000), None),
            (
                "in a double-quoted scalar",
                format!("a: \"{}\"", deep("[")),
                None,
            ),
            (
                "in a single-quoted scalar",
                format!("a: '{}'", deep("[")),
                None,
            ),
            (
                "quote with an escaped quote",
                format!("a: 'it''s {}'", deep("[")),
                None,
            ),
            (
                "in JSON strings",
                format!("{{\"a\":\"{}\"}}", deep("[")),
                None,
            ),
            ("in a comment", format!("a: b # {}", deep("[")), None),
            (
                "in a block scalar",
                format!("a: |\n  {}\n  more\nb: c", deep("[")),
                None,
            ),
            (
                "after a block scalar ends",
                format!("a: >-\n  x\nb: {}", deep("[")),
                Some(3),
            ),
            (
                "an apostrophe is not a quote",
                format!("a: don't\nb: {}", deep("[")),
                Some(2),
            ),
        ];
        for (reason, text, want) in cases {
            assert_eq!(flow_too_deep(&text), want, "{reason}");
        }
    }
}
