//! The function holds to every limit its schemas state (a number's range, a
//! string's length and pattern, a list's size), in the XRs and in the step
//! input: `render` and hand-built requests reach it without an API server,
//! and no API server checks a Composition's input. Each limit, broken on an
//! example, must be a FATAL that names the field (and the limit, where it is
//! a number); a new field with a limit is covered without a new row.

mod support;

use serde_json::{Value, json};
use support::models::with_model;
use support::*;

/// A valid element of each list with a limit (`{i}` numbers the copies),
/// and a valid object for parents the examples lack.
const SAMPLES: &[(&str, &str)] = &[
    ("spec.imagePullSecrets[]", r#"{"name": "pull-{i}"}"#),
    ("spec.extraArgs[]", r#""--max-num-seqs={i}""#),
    ("spec.env[]", r#"{"name": "E{i}", "value": "v"}"#),
    (
        "spec.agentClass.toolPermissions[]",
        r#"{"name": "tool-{i}"}"#,
    ),
    (
        "spec.agentClass.guardrails[]",
        r#"{"type": "guard-{i}", "action": "log"}"#,
    ),
    (
        "spec.autoscaling.metrics[]",
        r#"{"type": "cpu", "target": "70%"}"#,
    ),
    ("spec.cachePolicy.preloadNodes[]", r#""node-{i}""#),
    ("spec.gateway", r#"{"name": "inference-gateway"}"#),
    (
        "spec.shardSpec",
        r#"{"strategy": "tensor-parallel", "count": 2}"#,
    ),
    ("spec.agentClass.memoryConfig", r#"{"type": "redis"}"#),
    ("spec.autoscaling", r#"{"maxReplicas": 4}"#),
    ("spec.modelServerAutoscaling", r#"{"maxReplicas": 4}"#),
    (
        "input.defaults.imagePullSecrets[]",
        r#"{"name": "pull-{i}"}"#,
    ),
    (
        "input.defaults.modelServerTolerations[]",
        r#"{"key": "sku-{i}", "operator": "Exists", "effect": "NoSchedule"}"#,
    ),
    (
        "input.defaults.inferenceGateway",
        r#"{"name": "inference-gateway"}"#,
    ),
    // Strings whose valid values have a shape: a too-long one keeps it.
    ("spec.model", r#""meta-llama/Llama-3.1-8B-Instruct-""#),
    (
        "spec.weightsURI",
        r#""hf://meta-llama/Llama-3.1-8B-Instruct-""#,
    ),
    ("spec.image", r#""ghcr.io/example/agent-runtime:1.0-""#),
    ("spec.revision", r#""main-""#),
    ("spec.autoscaling.metrics[].target", r#""30""#),
    (
        "input.defaults.prometheusAddress",
        r#""http://prometheus.monitoring.svc:9090/""#,
    ),
    ("input.defaults.vllmVersion", r#""0.19.0-""#),
];

/// Limits the function reads otherwise, on purpose.
const EXEMPT: &[(&str, &str)] = &[
    // dot-inference's XRs write "" for no Ingress.
    ("spec.ingressHost", "minLength"),
];

fn sample(path: &str, i: usize) -> Option<Value> {
    SAMPLES
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, s)| serde_json::from_str(&s.replace("{i}", &i.to_string())).unwrap())
}

/// A value that breaks one limit, and what the message must contain
/// besides the field: a list's size, since its entries are valid (a number
/// or string out of range may be refused for what it says instead).
struct Broken {
    field: String,
    keyword: &'static str,
    value: Value,
    limit: Option<String>,
}

/// Every limit below `schema`, at `path` (`spec.a.b[0].c`), with the list
/// element paths written `spec.a.b[]` for the samples.
fn limits(schema: &Value, path: &str, sample_path: &str, out: &mut Vec<Broken>) {
    let number = |v: &Value| v.as_f64().unwrap();
    let mut push = |keyword: &'static str, value: Value, limit: Option<String>| {
        if !EXEMPT.contains(&(path, keyword)) {
            out.push(Broken {
                field: path.to_string(),
                keyword,
                value,
                limit,
            });
        }
    };
    let integer = schema["type"] == "integer";
    if let Some(min) = schema.get("minimum").map(number) {
        let below = if integer {
            json!(min as i64 - 1)
        } else {
            json!(min - 0.5)
        };
        push("minimum", below, None);
    }
    if let Some(max) = schema.get("maximum").map(number) {
        let above = if integer {
            json!(max as i64 + 1)
        } else {
            json!(max + 1.0)
        };
        push("maximum", above, None);
    }
    if schema["type"] == "string" && schema.get("enum").is_none() {
        if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
            // A valid value made too long, so that it cannot be refused
            // for what it says instead of its length.
            let valid = sample(sample_path, 0)
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let pad = if !valid.is_empty() && valid.bytes().all(|b| b.is_ascii_digit()) {
                "0"
            } else {
                "a"
            };
            let long = valid.clone() + &pad.repeat(max as usize + 1 - valid.len());
            push("maxLength", json!(long), Some(max.to_string()));
        }
        if schema.get("minLength").and_then(Value::as_u64) == Some(1) {
            push("minLength", json!(""), None);
        }
        if schema.get("pattern").is_some() {
            push("pattern", json!("!! not this"), None);
        }
    }
    if let Some(max) = schema.get("maxItems").and_then(Value::as_u64) {
        let element = format!("{sample_path}[]");
        let items = (0..=max as usize)
            .map(|i| sample(&element, i).unwrap_or_else(|| panic!("SAMPLES needs {element}")))
            .collect();
        push("maxItems", Value::Array(items), Some(max.to_string()));
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, s) in properties {
            limits(
                s,
                &format!("{path}.{name}"),
                &format!("{sample_path}.{name}"),
                out,
            );
        }
    }
    if let Some(items) = schema.get("items") {
        limits(
            items,
            &format!("{path}[0]"),
            &format!("{sample_path}[]"),
            out,
        );
    }
}

/// Sets `value` at `path` (`spec.a.b[0].c`) in `root`, creating what is
/// missing from the samples.
fn set(root: &mut Value, path: &str, value: Value) {
    let parts: Vec<&str> = path.split('.').collect();
    let mut at = root;
    let mut sample_path = String::new();
    for (n, part) in parts.iter().enumerate() {
        let (name, index) = match part.strip_suffix("[0]") {
            Some(name) => (name, true),
            None => (*part, false),
        };
        sample_path = if sample_path.is_empty() {
            name.to_string()
        } else {
            format!("{sample_path}.{name}")
        };
        let last = n == parts.len() - 1;
        if last && !index {
            at[name] = value;
            return;
        }
        if at.get(name).is_none_or(Value::is_null) {
            at[name] = if index {
                json!([])
            } else {
                sample(&sample_path, 0).unwrap_or_else(|| json!({}))
            };
        }
        at = &mut at[name];
        if index {
            let element = format!("{sample_path}[]");
            if at.as_array().is_none_or(Vec::is_empty) {
                *at = json!([sample(&element, 0).unwrap_or_else(|| json!({}))]);
            }
            if last {
                at[0] = value;
                return;
            }
            at = &mut at[0];
            sample_path = element;
        }
    }
}

/// The FATAL message of `req`, or why there is none.
fn fatal_message(req: &function_inference::protocol::fnv1::RunFunctionRequest) -> String {
    let rsp = call(req);
    match rsp.results.iter().find(|r| r.severity == 1) {
        Some(r) => r.message.clone(),
        None => format!("no FATAL result; results {:?}", rsp.results),
    }
}

fn schema_of(path: &str, property: &str) -> Value {
    let crd = example(path);
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"][property].clone()
}

fn check(broken: &[Broken], request_for: impl Fn(&Broken) -> String) -> Vec<String> {
    broken
        .iter()
        .filter_map(|b| {
            let message = request_for(b);
            let names_field = message.contains(&b.field);
            let names_limit = b
                .limit
                .as_ref()
                .is_none_or(|l| message.contains(l.as_str()));
            (!names_field || !names_limit).then(|| {
                format!(
                    "{} {} ({}): {}",
                    b.field,
                    b.keyword,
                    b.limit.as_deref().unwrap_or("-"),
                    message.chars().take(300).collect::<String>()
                )
            })
        })
        .collect()
}

#[test]
fn every_limit_of_the_xr_schemas_is_a_fatal_naming_the_field() {
    let model = example("examples/configuration/agents/model.yaml");
    let kinds = [
        (
            "llminference",
            example("examples/configuration/llm-inference/llama-70b-deployment.yaml"),
        ),
        (
            "agentpool",
            example("examples/configuration/agents/agentpool.yaml"),
        ),
        ("model", model.clone()),
    ];
    let mut failures = Vec::new();
    let mut checked = 0;
    for (kind, xr) in kinds {
        let schema = schema_of(
            &format!("package/configuration/{kind}-definition.yaml"),
            "spec",
        );
        let mut broken = Vec::new();
        limits(&schema, "spec", "spec", &mut broken);
        checked += broken.len();
        failures.extend(check(&broken, |b| {
            let mut xr = xr.clone();
            set(&mut xr, &b.field, b.value.clone());
            // The pool's budget fixes the server's replicas; autoscaling them is another spec.
            if b.field.starts_with("spec.modelServerAutoscaling") {
                xr["spec"]
                    .as_object_mut()
                    .unwrap()
                    .remove("tokensPerSecondBudget");
            }
            if b.field.starts_with("spec.modelRef") {
                xr["spec"].as_object_mut().unwrap().remove("model");
            }
            if b.field == "spec.agentClass.memoryConfig.connectionString" {
                xr["spec"]["agentClass"]["memoryConfig"]
                    .as_object_mut()
                    .unwrap()
                    .remove("connectionSecretRef");
            }
            let req = request("limits", xr);
            fatal_message(&if kind == "agentpool" {
                with_model(req, vec![model.clone()])
            } else {
                req
            })
        }));
    }
    assert!(checked > 60, "only {checked} limits found");
    assert!(
        failures.is_empty(),
        "limits not held:\n{}",
        failures.join("\n")
    );
}

#[test]
fn every_limit_of_the_input_schema_is_a_fatal_naming_the_field() {
    let schema = schema_of(
        "package/function/input/inference.fn.crossplane.io_inputs.yaml",
        "defaults",
    );
    let mut broken = Vec::new();
    limits(&schema, "input.defaults", "input.defaults", &mut broken);
    assert!(broken.len() > 8, "only {} limits found", broken.len());
    let xr = example("examples/configuration/llm-inference/llama-70b-deployment.yaml");
    let failures = check(&broken, |b| {
        let mut root = json!({"input": {"defaults": {}}});
        set(&mut root, &b.field, b.value.clone());
        let mut req = request("limits", xr.clone());
        req.input = Some(input(root["input"].clone()));
        fatal_message(&req)
    });
    assert!(
        failures.is_empty(),
        "limits not held:\n{}",
        failures.join("\n")
    );
}
