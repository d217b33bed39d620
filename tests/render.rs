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
        valid fields are gpuType, offeredGpuTypes, image, gpuMemoryUtilization, \
        gpuNodeSelector, gpuToleration, providerConfigKind, weightsCache";
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
