//! Every example renders, every composed manifest in it is schema-valid, and
//! the output matches its golden file in `tests/golden/`. Golden files are
//! reviewed like code: after a deliberate change, regenerate them with
//! `UPDATE_GOLDEN=1 cargo test --test examples` and read the diff.

mod support;

use std::path::{Path, PathBuf};

use function_inference::cli::render::{self, RenderArgs};
use serde::Deserialize;
use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Each example XR with the files render needs beside it; the step inputs
/// are written under `inputs`, one directory per test, since the tests run
/// at once and would otherwise rewrite a file another is reading.
fn examples(inputs: &Path) -> Vec<RenderArgs> {
    let mut out = Vec::new();
    for dir in [
        "examples/configuration/llm-inference",
        "examples/configuration/agents",
        "examples/compat/dot-inference",
        "examples/platform/autoscaling-keda",
        "examples/platform/autoscaling-hpa",
        "examples/platform/inference-gateway",
    ] {
        let Ok(entries) = std::fs::read_dir(root().join(dir)) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
        files.sort();
        for xr in files {
            let text = std::fs::read_to_string(&xr).unwrap();
            // Only XRs render; Models given to AgentPools are required resources.
            let kind = serde_yaml::from_str::<serde_yaml::Value>(&text).unwrap()["kind"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if xr.extension().is_none_or(|e| e != "yaml")
                || !matches!(kind.as_str(), "LLMInference" | "AgentPool" | "Model")
            {
                continue;
            }
            let required = xr.with_file_name("model.yaml");
            let uses_model = text.contains("modelRef");
            let input = composition_input(&xr, inputs);
            out.push(RenderArgs {
                xr,
                observed: None,
                required: (uses_model && required.exists()).then_some(required),
                input,
                context: None,
            });
        }
    }
    out
}

/// The step input of the Composition beside a platform example, written
/// to a file for render (the configuration's examples use the defaults).
fn composition_input(xr: &Path, dir: &Path) -> Option<PathBuf> {
    if !xr.starts_with(root().join("examples/platform")) {
        return None;
    }
    let text = std::fs::read_to_string(xr.with_file_name("composition.yaml")).ok()?;
    let composition: Value = serde_yaml::from_str(&text).unwrap();
    let input = &composition["spec"]["pipeline"][0]["input"];
    let name = xr
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, serde_yaml::to_string(input).unwrap()).unwrap();
    Some(path)
}

fn golden_path(xr: &Path) -> PathBuf {
    let rel = xr.strip_prefix(root().join("examples")).unwrap();
    root().join("tests/golden").join(rel)
}

fn render_example(args: &RenderArgs) -> String {
    let mut out = Vec::new();
    render::run(args, &mut out, &mut std::io::sink())
        .unwrap_or_else(|e| panic!("{}: {e}", args.xr.display()));
    String::from_utf8(out).unwrap()
}

#[test]
fn every_example_matches_its_golden_file() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let inputs = tempfile::tempdir().unwrap();
    let examples = examples(inputs.path());
    assert!(
        examples.len() >= 5,
        "expected the LLMInference examples, found {}",
        examples.len()
    );
    let mut stale = Vec::new();
    for args in &examples {
        let rendered = render_example(args);
        let golden = golden_path(&args.xr);
        if update {
            std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
            std::fs::write(&golden, &rendered).unwrap();
        } else if std::fs::read_to_string(&golden).ok().as_deref() != Some(rendered.as_str()) {
            stale.push(golden.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "rendered output differs from {stale:#?}: review, then UPDATE_GOLDEN=1 cargo test --test examples"
    );
}

#[test]
fn every_composed_manifest_is_schema_valid() {
    let inputs = tempfile::tempdir().unwrap();
    for args in examples(inputs.path()) {
        let rendered = render_example(&args);
        let docs: Vec<Value> = serde_yaml::Deserializer::from_str(&rendered)
            .map(|d| Value::deserialize(d).unwrap())
            .collect();
        let composed: Vec<&Value> = docs
            .iter()
            .filter(|d| {
                d["kind"] != "Result"
                    && d["apiVersion"].as_str().is_some_and(|a| {
                        !a.starts_with("infer.dev/")
                            && !a.starts_with("inference.devopstoolkit.ai/")
                    })
            })
            .collect();
        assert!(
            !composed.is_empty(),
            "{}: nothing composed",
            args.xr.display()
        );
        for doc in composed {
            let problems = support::manifests::validate_composed(doc);
            assert!(
                problems.is_empty(),
                "{} {}: {problems:#?}",
                args.xr.display(),
                doc["kind"]
            );
        }
    }
}

/// `render` says the XR's conditions, `Ready` among them, as Crossplane's
/// own renderer does: compared with the crossplane-render goldens of the
/// Crossplane CLI stage (tests/crossplane), which ran the real CLI.
#[test]
fn render_says_the_xrs_conditions_as_crossplane_render_does() {
    let conditions = |stream: &str| -> Value {
        let xr = serde_yaml::Deserializer::from_str(stream)
            .next()
            .map(|doc| Value::deserialize(doc).unwrap())
            .unwrap();
        let mut conditions = xr["status"]["conditions"].clone();
        for c in conditions.as_array_mut().into_iter().flatten() {
            c.as_object_mut().unwrap().remove("lastTransitionTime");
        }
        conditions
    };
    let mut compared = 0;
    let inputs = tempfile::tempdir().unwrap();
    for args in &examples(inputs.path()) {
        let rel = args.xr.strip_prefix(root().join("examples")).unwrap();
        let twin = root().join("tests/golden/crossplane-render").join(rel);
        let Ok(crossplane) = std::fs::read_to_string(&twin) else {
            continue;
        };
        assert_eq!(
            conditions(&render_example(args)),
            conditions(&crossplane),
            "{}",
            args.xr.display()
        );
        compared += 1;
    }
    assert!(
        compared >= 10,
        "only {compared} examples have a crossplane-render twin"
    );
}
