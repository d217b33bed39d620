//! Helper of the Crossplane stage (`tests/crossplane/run`); test-only.
//!
//! `crossplane beta validate` validates against CRDs and XRDs only: it has no
//! schemas for Kubernetes' own kinds and reports them as missing. This
//! program gives it some, and prepares render output for it:
//!
//! ```sh
//! # one CRD-shaped file per Kubernetes kind the function composes, with the
//! # structural schema of its k8s-openapi type (src/schema.rs)
//! cargo run --locked --example crossplane-support -- crds OUT_DIR
//! # the documents of a `crossplane render` output to validate: every one but
//! # Results (and the XR with --without-xr), plus the manifest each
//! # provider-kubernetes Object wraps, which the Object's CRD leaves open
//! cargo run --locked --example crossplane-support -- validation-input RENDER.yaml [--without-xr]
//! # exit 0 when the XR of a render output has the condition Ready=True,
//! # otherwise print its conditions and exit 1
//! cargo run --locked --example crossplane-support -- ready RENDER.yaml
//! # what the API server returns once Crossplane applied the composed
//! # resources of a first render: each as rendered, with what an overlay
//! # document of the same composition-resource name adds (the name the
//! # server generated, its uid and generation, the controllers' status)
//! cargo run --locked --example crossplane-support -- observed RENDER.yaml OVERLAYS.yaml
//! ```

use std::path::Path;

use anyhow::{Context, Result, bail};
use function_inference::schema::structural_schema;
use k8s_openapi::api::{apps, autoscaling, core, networking, policy, rbac};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// A CustomResourceDefinition for a built-in kind: `group` is empty for the
/// core group.
fn crd<T: JsonSchema>(group: &str, version: &str, kind: &str, plural: &str) -> Value {
    let mut schema = structural_schema::<T>();
    // The API server validates metadata as ObjectMeta itself; a CRD may only
    // say it is an object (as every CRD does).
    if let Some(props) = schema["properties"].as_object_mut() {
        props.insert("metadata".into(), json!({"type": "object"}));
    }
    let name = if group.is_empty() {
        format!("{plural}.core")
    } else {
        format!("{plural}.{group}")
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": plural},
            "scope": "Namespaced",
            "versions": [{
                "name": version,
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": schema},
            }],
        },
    })
}

fn write_crds(dir: &Path) -> Result<()> {
    let crds = [
        crd::<core::v1::ConfigMap>("", "v1", "ConfigMap", "configmaps"),
        crd::<core::v1::Secret>("", "v1", "Secret", "secrets"),
        crd::<core::v1::Service>("", "v1", "Service", "services"),
        crd::<core::v1::PersistentVolumeClaim>(
            "",
            "v1",
            "PersistentVolumeClaim",
            "persistentvolumeclaims",
        ),
        crd::<apps::v1::Deployment>("apps", "v1", "Deployment", "deployments"),
        crd::<networking::v1::Ingress>("networking.k8s.io", "v1", "Ingress", "ingresses"),
        crd::<autoscaling::v2::HorizontalPodAutoscaler>(
            "autoscaling",
            "v2",
            "HorizontalPodAutoscaler",
            "horizontalpodautoscalers",
        ),
        crd::<policy::v1::PodDisruptionBudget>(
            "policy",
            "v1",
            "PodDisruptionBudget",
            "poddisruptionbudgets",
        ),
        crd::<core::v1::ServiceAccount>("", "v1", "ServiceAccount", "serviceaccounts"),
        crd::<rbac::v1::Role>("rbac.authorization.k8s.io", "v1", "Role", "roles"),
        crd::<rbac::v1::RoleBinding>(
            "rbac.authorization.k8s.io",
            "v1",
            "RoleBinding",
            "rolebindings",
        ),
    ];
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for crd in crds {
        let file = dir.join(format!(
            "{}.yaml",
            crd["metadata"]["name"].as_str().unwrap()
        ));
        std::fs::write(&file, function_inference::yaml::to_string(&crd)?)
            .with_context(|| format!("writing {}", file.display()))?;
    }
    Ok(())
}

fn validation_input(render: &Path, without_xr: bool) -> Result<String> {
    let mut out = String::new();
    for (i, doc) in documents(render)?.into_iter().enumerate() {
        if i == 0 && without_xr {
            continue;
        }
        let api_version = doc["apiVersion"].as_str().unwrap_or_default();
        if api_version.starts_with("render.crossplane.io/") {
            continue;
        }
        out.push_str("---\n");
        out.push_str(&function_inference::yaml::to_string(&doc)?);
        let provider_kubernetes = api_version.starts_with("kubernetes.crossplane.io/")
            || api_version.starts_with("kubernetes.m.crossplane.io/");
        let manifest = &doc["spec"]["forProvider"]["manifest"];
        if provider_kubernetes && doc["kind"] == "Object" && manifest.is_object() {
            out.push_str("---\n");
            out.push_str(&function_inference::yaml::to_string(manifest)?);
        }
    }
    Ok(out)
}

fn documents(file: &Path) -> Result<Vec<Value>> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    serde_yaml::Deserializer::from_str(&text)
        .map(|doc| Value::deserialize(doc).with_context(|| format!("parsing {}", file.display())))
        .filter(|doc| !doc.as_ref().is_ok_and(Value::is_null))
        .collect()
}

/// The composition-resource name Crossplane annotates a composed resource with.
fn resource_name(doc: &Value) -> Option<&str> {
    doc["metadata"]["annotations"]["crossplane.io/composition-resource-name"].as_str()
}

/// `into` with `overlay` merged in: objects key by key, anything else replaced.
fn merge(into: &mut Value, overlay: &Value) {
    match (into, overlay) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (a, b) => *a = b.clone(),
    }
}

/// The observed resources of a second reconcile (see the module doc).
fn observed(render: &Path, overlays: &Path) -> Result<String> {
    let rendered = documents(render)?;
    let mut out = String::new();
    for overlay in documents(overlays)? {
        let name = resource_name(&overlay).with_context(|| {
            format!(
                "an overlay without a composition-resource name in {}",
                overlays.display()
            )
        })?;
        let mut object = rendered
            .iter()
            .find(|d| resource_name(d) == Some(name))
            .with_context(|| format!("{} composed no resource {name}", render.display()))?
            .clone();
        merge(&mut object, &overlay);
        out.push_str("---\n");
        out.push_str(&function_inference::yaml::to_string(&object)?);
    }
    Ok(out)
}

/// Whether the XR (the first document of a render output) is Ready.
fn ready(render: &Path) -> Result<bool> {
    let docs = documents(render)?;
    let xr = docs.first().context("an empty render output")?;
    let conditions = xr["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let is_ready = conditions
        .iter()
        .any(|c| c["type"] == "Ready" && c["status"] == "True");
    if !is_ready {
        println!(
            "{} {} is not Ready; its conditions:\n{}",
            xr["kind"].as_str().unwrap_or_default(),
            xr["metadata"]["name"].as_str().unwrap_or_default(),
            serde_yaml::to_string(&conditions)?
        );
    }
    Ok(is_ready)
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["crds", dir] => write_crds(Path::new(dir)),
        ["validation-input", render, rest @ ..] if matches!(rest, [] | ["--without-xr"]) => {
            print!("{}", validation_input(Path::new(render), !rest.is_empty())?);
            Ok(())
        }
        ["observed", render, overlays] => {
            print!("{}", observed(Path::new(render), Path::new(overlays))?);
            Ok(())
        }
        ["ready", render] => {
            if !ready(Path::new(render))? {
                std::process::exit(1);
            }
            Ok(())
        }
        _ => bail!(
            "usage: crossplane-support crds OUT_DIR | validation-input RENDER.yaml [--without-xr] | ready RENDER.yaml | \
             observed RENDER.yaml OVERLAYS.yaml"
        ),
    }
}
