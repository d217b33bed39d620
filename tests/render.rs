//! `function-inference render` through the binary: its errors are one line
//! naming the file (and position), and a FATAL result still prints the
//! stream, Result document included, before exiting 1.

mod support;

use support::*;

/// Runs `render ARGS` from the crate root, so paths in messages are the
/// relative ones given here. Returns (exit code, stdout, stderr).
fn render(args: &[&str]) -> (Option<i32>, String, String) {
    let out = output_within(
        binary()
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .arg("render")
            .args(args),
    );
    (
        out.status.code(),
        String::from_utf8(out.stdout).expect("UTF-8 stdout"),
        String::from_utf8(out.stderr).expect("UTF-8 stderr"),
    )
}

/// [`render`] with `input` as standard input.
fn render_given(args: &[&str], input: &[u8]) -> (Option<i32>, String, String) {
    let out = output_within_given(
        binary()
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .arg("render")
            .args(args),
        input,
    );
    (
        out.status.code(),
        String::from_utf8(out.stdout).expect("UTF-8 stdout"),
        String::from_utf8(out.stderr).expect("UTF-8 stderr"),
    )
}

const SPACESHIP_XR: &str = "\
---
apiVersion: example.org/v1
kind: Spaceship
metadata:
  name: enterprise
  namespace: fleet
status: {}
";

#[test]
fn bad_yaml_is_one_line_naming_file_line_and_column() {
    let (code, stdout, stderr) = render(&["tests/data/render/bad-yaml.yaml"]);
    assert_eq!(code, Some(1));
    assert_eq!(stdout, "", "nothing is rendered");
    // The flow sequence opened on line 5 is found unclosed at the ':' of
    // line 6 (serde_yaml's positions are 1-based).
    assert_eq!(
        stderr,
        "function-inference render: tests/data/render/bad-yaml.yaml:6:5: did not find expected ',' or ']'\n"
    );
}

#[test]
fn missing_file_is_one_line() {
    let (code, stdout, stderr) = render(&["tests/data/render/no-such-file.yaml"]);
    assert_eq!(code, Some(1));
    assert_eq!(stdout, "");
    assert_eq!(
        stderr,
        "function-inference render: tests/data/render/no-such-file.yaml: No such file or directory (os error 2)\n"
    );
}

#[test]
fn a_document_that_is_not_an_object_is_refused() {
    let (code, stdout, stderr) = render(&["tests/data/render/not-an-object.yaml"]);
    assert_eq!(code, Some(1));
    assert_eq!(stdout, "");
    assert_eq!(
        stderr,
        "function-inference render: tests/data/render/not-an-object.yaml: document 1 is a list, not an object\n"
    );
}

#[test]
fn unknown_kind_prints_the_result_and_exits_1() {
    let (code, stdout, stderr) = render(&["tests/data/render/spaceship.yaml"]);
    assert_eq!(code, Some(1));
    let message = unknown_kind_message("Spaceship", "example.org/v1");
    assert_eq!(
        stdout,
        format!(
            "{SPACESHIP_XR}\
---
apiVersion: render.crossplane.io/v1beta1
kind: Result
message: {message}
reason: UnknownKind
severity: SEVERITY_FATAL
step: function-inference
"
        )
    );
    assert_eq!(
        stderr,
        format!("function-inference render: the function returned a fatal result: {message}\n")
    );
}

#[test]
fn unreadable_input_names_the_field() {
    let (code, stdout, stderr) = render(&[
        "tests/data/render/spaceship.yaml",
        "--input",
        "tests/data/render/input-unknown-field.yaml",
    ]);
    assert_eq!(code, Some(1));
    let message = "cannot read the step input: input.defaults.gpuTpye: unknown field gpuTpye; \
        valid fields are gpuType, offeredGpuTypes, gpuPrices, image, gpuMemoryUtilization, \
        gpuNodeSelector, migStrategy, gpuToleration, diagnosePods, providerConfigKind, weightsCache, objective, vllmVersion, runtime, \
        vllmImages, autoscaler, prometheusAddress, podMonitor, inferenceGateway, imagePullSecrets, \
        modelServerTolerations, hfTokenSecretRef, modelServerPriorityClassName, modelServerServiceAccountName, modelServerSchedulerName";
    assert_eq!(
        stdout,
        format!(
            "{SPACESHIP_XR}\
---
apiVersion: render.crossplane.io/v1beta1
kind: Result
message: '{message}'
reason: InvalidInput
severity: SEVERITY_FATAL
step: function-inference
"
        )
    );
    assert_eq!(
        stderr,
        format!("function-inference render: the function returned a fatal result: {message}\n")
    );
}

/// A Composition as the input composes with its step's input, as the
/// cluster would: the packaged one keeps servers on their GPU type.
#[test]
fn a_composition_as_input_gives_its_steps_input() {
    const XR: &str = "examples/configuration/llm-inference/llama-70b-h100.yaml";
    const COMPOSITION: &str = "package/configuration/llminference-composition.yaml";
    let composition: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(COMPOSITION).unwrap()).unwrap();
    let step_input = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        step_input.path(),
        serde_yaml::to_string(&composition["spec"]["pipeline"][0]["input"]).unwrap(),
    )
    .unwrap();
    let (code, from_composition, stderr) = render(&[XR, "--input", COMPOSITION]);
    assert_eq!((code, stderr.as_str()), (Some(0), ""));
    let (_, from_step_input, _) = render(&[XR, "--input", step_input.path().to_str().unwrap()]);
    assert_eq!(from_composition, from_step_input);
    let (_, with_defaults, _) = render(&[XR]);
    assert_ne!(
        from_composition, with_defaults,
        "the packaged input differs from the built-in defaults"
    );
    assert!(
        from_composition.contains("nvidia.com/gpu.product"),
        "{from_composition}"
    );

    let (code, stdout, stderr) = render(&[
        XR,
        "--input",
        "package/configuration/agentpool-composition.yaml",
    ]);
    assert_eq!((code, stdout.as_str()), (Some(1), ""));
    assert_eq!(
        stderr,
        "function-inference render: package/configuration/agentpool-composition.yaml: this Composition composes \
         AgentPool, and the XR's kind is LLMInference: pass a Composition of LLMInference\n"
    );
    let (code, _, stderr) = render(&[
        XR,
        "--input",
        "tests/data/render/composition-without-our-step.yaml",
    ]);
    assert_eq!(code, Some(1));
    assert_eq!(
        stderr,
        "function-inference render: tests/data/render/composition-without-our-step.yaml: no step of this \
         Composition's pipeline has a function-inference input (apiVersion inference.fn.crossplane.io/v1beta1, kind \
         Input)\n"
    );
}

/// Runs `render FILE` on a file holding `text`, in a temporary directory,
/// and gives up after ten seconds (a generous bound: the point is that a
/// bad file fails quickly rather than after minutes). Returns (exit code,
/// stdout, stderr with the temporary path replaced by FILE).
fn render_text(text: &[u8]) -> (Option<i32>, String, String) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("xr.yaml");
    std::fs::write(&path, text).expect("write the file");
    render_within(&path, std::time::Duration::from_secs(10))
}

fn render_within(
    path: &std::path::Path,
    limit: std::time::Duration,
) -> (Option<i32>, String, String) {
    let mut child = binary()
        .arg("render")
        .arg(path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the binary");
    let started = std::time::Instant::now();
    while child.try_wait().expect("wait for the binary").is_none() {
        if started.elapsed() > limit {
            // Our own child: it took too long, so end it and fail.
            let _ = child.kill();
            let _ = child.wait();
            panic!("render {} did not finish within {limit:?}", path.display());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("collect the output");
    let shown = path.display().to_string();
    (
        out.status.code(),
        String::from_utf8(out.stdout).expect("UTF-8 stdout"),
        String::from_utf8(out.stderr)
            .expect("UTF-8 stderr")
            .replace(&shown, "FILE"),
    )
}

#[cfg(unix)]
#[test]
fn an_endless_file_is_refused_at_the_size_limit() {
    let (code, stdout, stderr) = render_within(
        std::path::Path::new("/dev/zero"),
        std::time::Duration::from_secs(10),
    );
    assert_eq!(code, Some(1));
    assert_eq!(stdout, "");
    assert_eq!(
        stderr,
        "function-inference render: FILE: larger than 16 MiB, the most function-inference reads; \
         pass a YAML or JSON file of Kubernetes objects\n"
    );
}

#[test]
fn a_file_just_over_the_size_limit_is_refused() {
    let mut text = b"# padding\n".repeat(16 * 1024 * 1024 / 10 + 1);
    text.truncate(16 * 1024 * 1024 + 1);
    let (code, stdout, stderr) = render_text(&text);
    assert_eq!((code, stdout.as_str()), (Some(1), ""));
    assert_eq!(
        stderr,
        "function-inference render: FILE: larger than 16 MiB, the most function-inference reads; \
         pass a YAML or JSON file of Kubernetes objects\n"
    );
}

#[test]
fn deep_nesting_is_refused_quickly() {
    let deep = 100_000;
    let cases = [
        ("flow sequences", "[".repeat(deep), 1),
        ("flow mappings, as JSON", "{\"a\": ".repeat(deep), 1),
        (
            "inside a block mapping",
            format!("apiVersion: v1\nkind: X\nspec:\n  x: {}", "[".repeat(deep)),
            4,
        ),
        (
            "closed again",
            format!("{}{}", "[".repeat(deep), "]".repeat(deep)),
            1,
        ),
    ];
    for (reason, text, line) in cases {
        let (code, stdout, stderr) = render_text(text.as_bytes());
        assert_eq!((code, stdout.as_str()), (Some(1), ""), "{reason}");
        assert_eq!(
            stderr,
            format!(
                "function-inference render: FILE:{line}: [ ] and {{ }} nest deeper than 128 levels, \
                 more than YAML is read to\n"
            ),
            "{reason}"
        );
    }
}

#[test]
fn a_key_given_twice_is_refused_naming_it_and_its_line() {
    let cases = [
        (
            "top level",
            "apiVersion: v1\nkind: X\napiVersion: v2\n",
            "FILE:3:1: duplicate key \"apiVersion\"",
        ),
        (
            "nested",
            "apiVersion: v1\nkind: X\nmetadata:\n  name: a\n  name: b\n",
            "FILE:5:3: metadata: duplicate key \"name\"",
        ),
        (
            "flow mapping",
            "{\"apiVersion\": \"v1\", \"kind\": \"X\", \"kind\": \"Y\"}\n",
            "FILE:1:35: duplicate key \"kind\"",
        ),
    ];
    for (reason, text, at) in cases {
        let (code, stdout, stderr) = render_text(text.as_bytes());
        assert_eq!((code, stdout.as_str()), (Some(1), ""), "{reason}");
        assert_eq!(
            stderr,
            format!(
                "function-inference render: {at}; YAML would keep only the last value, so remove one\n"
            ),
            "{reason}"
        );
    }
}

/// A whole number past 64 bits is read as the API server reads it, so the
/// field's own check names the field and its range; serde_yaml alone said
/// "invalid type: integer as u128, expected a YAML value".
#[test]
fn a_number_too_large_for_64_bits_gets_the_fields_range() {
    for (written, shown) in [
        ("99999999999999999999999", "1e+23"),
        ("-99999999999999999999999", "-1e+23"),
    ] {
        let xr = format!(
            "apiVersion: infer.dev/v1alpha1\nkind: LLMInference\nmetadata: {{name: n, namespace: d}}\n\
             spec:\n  model: Qwen/Qwen2.5-1.5B-Instruct\n  replicas: {written}\n"
        );
        let (code, _, stderr) = render_text(xr.as_bytes());
        assert_eq!(
            (code, stderr),
            (
                Some(1),
                format!(
                    "function-inference render: the function returned a fatal result: \
                     spec.replicas: {shown} is out of range; use a whole number from 0 to 100\n"
                )
            )
        );
    }
}

#[test]
fn a_binary_file_is_one_line() {
    let (code, stdout, stderr) = render_text(b"apiVersion: v1\nkind: \xff\xfe\n");
    assert_eq!((code, stdout.as_str()), (Some(1), ""));
    assert_eq!(
        stderr,
        "function-inference render: FILE: not UTF-8 text (invalid byte at offset 21); pass a YAML or JSON file of Kubernetes objects\n"
    );
}

/// A Model whose config.json is in a ConfigMap: `render --required` answers
/// the requirement the way Crossplane does, and the plans use the config.
#[test]
fn a_models_config_map_is_read_from_the_required_stream() {
    let dir = std::env::temp_dir().join(format!("fi-render-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let xr = dir.join("model.yaml");
    std::fs::write(
        &xr,
        "apiVersion: infer.dev/v1alpha1\nkind: Model\nmetadata: {name: coder, namespace: team-a}\n\
         spec:\n  weightsURI: hf://acme/reviewer-coder-7b\n  configFrom: {configMapRef: {name: coder-config}}\n",
    )
    .unwrap();
    let config = std::fs::read_to_string(data("models/codellama-7b-config.json")).unwrap();
    let map = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "coder-config", "namespace": "team-a"},
        "data": {"config.json": config},
    });
    let required = dir.join("required.yaml");
    std::fs::write(&required, serde_yaml::to_string(&map).unwrap()).unwrap();
    let (code, out, err) = render(&[
        xr.to_str().unwrap(),
        "--required",
        required.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(err, "", "what was required was given");
    assert!(out.contains("phase: Ready"), "{out}");
    assert!(out.contains("architectureGuessed: false"), "{out}");
    assert!(!out.contains("architectureGuessed: true"), "{out}");
    assert!(
        out.contains("Architecture from the model's config.json (llama)"),
        "{out}"
    );

    // Without the ConfigMap: the Model waits, and render still succeeds,
    // saying on standard error what it went without.
    let (code, out, err) = render(&[xr.to_str().unwrap()]);
    assert_eq!(code, Some(0));
    assert!(out.contains("phase: Pending"), "{out}");
    assert!(out.contains("ModelConfigNotFound"), "{out}");
    assert_eq!(
        err,
        "function-inference render: warning: the function requires ConfigMap team-a/coder-config \
         (`model-config`), and no --required file was given: it rendered as if there were none; pass a file \
         that holds it with --required\n"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An AgentPool's Model that `--required` holds under another namespace,
/// or none, is not the one it refers to, as in a cluster; render says which
/// it found, where the output only says the Model does not exist. The
/// pods it also asks for, by label, are rightly absent: no warning.
#[test]
fn a_required_resource_render_was_not_given_is_named_on_standard_error() {
    let dir = tempfile::tempdir().unwrap();
    let model = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/configuration/agents/model.yaml"),
    )
    .unwrap();
    let pool = "examples/configuration/agents/agentpool.yaml";
    for (case, text, found) in [
        ("its own", model.clone(), None),
        (
            "another namespace",
            model.replace("namespace: team-a", "namespace: team-b"),
            Some("in namespace team-b"),
        ),
        (
            "no namespace",
            model.replace("  namespace: team-a\n", ""),
            Some("with no metadata.namespace"),
        ),
        (
            "another version",
            model.replace("infer.dev/v1alpha1", "infer.dev/v1beta1"),
            Some("as apiVersion infer.dev/v1beta1, not infer.dev/v1alpha1"),
        ),
    ] {
        let required = dir.path().join("model.yaml");
        std::fs::write(&required, text).unwrap();
        let (code, out, err) = render(&[pool, "--required", required.to_str().unwrap()]);
        assert_eq!(code, Some(0), "{case}: {err}");
        match found {
            None => {
                assert_eq!(err, "", "{case}");
                assert!(
                    out.contains("served as meta-llama/Llama-3.1-8B-Instruct"),
                    "{case}: {out}"
                );
            }
            Some(found) => assert_eq!(
                err,
                format!(
                    "function-inference render: warning: the function requires Model team-a/llama-3-1-8b \
                     (`model`), which {} does not hold: it rendered as if there were none; it holds Model \
                     llama-3-1-8b {found}\n",
                    required.display()
                ),
                "{case}"
            ),
        }
    }
}

/// `render … | head`: a reader that stops early is not an error, so
/// nothing is printed and the exit status is 0, as for `size`.
#[test]
fn a_reader_that_stops_early_is_not_an_error() {
    for args in [
        &["render", "examples/compat/dot-inference/llm-inference.yaml"][..],
        &[
            "size",
            "--model",
            "Qwen/Qwen2.5-7B-Instruct",
            "--gpu-type",
            "L4",
        ][..],
    ] {
        // The pipe's reading end is closed before the binary writes, so
        // every write it makes fails with EPIPE.
        let (reader, writer) = std::io::pipe().expect("a pipe");
        drop(reader);
        let out = binary()
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .expect("run the binary");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert_eq!(stderr, "", "{args:?}");
    }
}

/// `kubectl get ... -o yaml | render -`: an XR on standard input renders as
/// from its file, and so does a Composition given as `--input -`.
#[test]
fn standard_input_is_read_for_a_dash() {
    let xr_path = "examples/configuration/llm-inference/small-model-mig.yaml";
    let composition = "package/configuration/llminference-composition.yaml";
    let xr = std::fs::read(xr_path).unwrap();
    let from_files = render(&[xr_path, "--input", composition]);
    assert_eq!(from_files.0, Some(0), "{}", from_files.2);
    assert_eq!(
        render_given(&["-", "--input", composition], &xr),
        from_files
    );
    let input = std::fs::read(composition).unwrap();
    assert_eq!(render_given(&[xr_path, "--input", "-"], &input), from_files);
}

#[test]
fn standard_input_is_read_once() {
    let (code, stdout, stderr) = render_given(&["-", "--observed", "-"], b"");
    assert_eq!((code, stdout.as_str()), (Some(1), ""));
    assert_eq!(
        stderr,
        "function-inference render: standard input: the XR and --observed name it (-), and it can be read \
         only once: write all but one to files\n"
    );
    let (_, _, stderr) = render_given(&["-"], b"apiVersion: v1\nkind: [\n");
    assert_eq!(
        stderr,
        "function-inference render: standard input:3:1: did not find expected node content\n"
    );
}

/// `kubectl get deployments,services -o yaml` prints one `v1` `List`: its
/// items are read as the stream of them would be.
#[test]
fn a_kubectl_list_stands_for_its_items() {
    let xr_path = "examples/compat/dot-inference/llm-inference.yaml";
    let (code, composed, stderr) = render(&[xr_path]);
    assert_eq!(code, Some(0), "{stderr}");
    let resources: Vec<serde_json::Value> = serde_yaml::Deserializer::from_str(&composed)
        .map(|doc| serde::Deserialize::deserialize(doc).unwrap())
        .filter(|doc: &serde_json::Value| {
            doc.pointer("/metadata/annotations/crossplane.io~1composition-resource-name")
                .is_some()
        })
        .map(|mut doc: serde_json::Value| {
            doc["status"] = serde_json::json!({"conditions": [
                {"type": "Ready", "status": "True", "reason": "Available"},
                {"type": "Synced", "status": "True", "reason": "ReconcileSuccess"},
            ]});
            doc
        })
        .collect();
    assert!(resources.len() >= 2, "{composed}");
    let stream: String = resources
        .iter()
        .map(|r| format!("---\n{}", serde_yaml::to_string(r).unwrap()))
        .collect();
    let list = serde_yaml::to_string(&serde_json::json!({
        "apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": resources,
    }))
    .unwrap();
    let as_stream = render_given(&[xr_path, "--observed", "-"], stream.as_bytes());
    assert_eq!(as_stream.0, Some(0), "{}", as_stream.2);
    assert_ne!(
        as_stream.1, composed,
        "the observed resources change the status"
    );
    assert_eq!(
        render_given(&[xr_path, "--observed", "-"], list.as_bytes()),
        as_stream
    );

    let (code, _, stderr) = render_given(
        &[xr_path, "--observed", "-"],
        b"apiVersion: v1\nkind: List\nitems: [{kind: Service}, 3]\n",
    );
    assert_eq!(code, Some(1));
    assert_eq!(
        stderr,
        "function-inference render: standard input: document 1 is a List whose items include a number \
         (item 2), not an object\n"
    );
}
