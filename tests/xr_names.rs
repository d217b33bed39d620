//! XR names and namespaces the API server would refuse, for every kind: a
//! FATAL result before anything is composed, naming `metadata.name` (or
//! `metadata.namespace`) and what Kubernetes accepts. The longest valid
//! name composes.

mod support;

use serde_json::json;
use support::fixtures::*;
use support::refusals::*;
use support::*;

#[test]
fn xr_names_the_api_server_would_refuse_are_fatal_before_composing() {
    let subdomain = "use a DNS-1123 subdomain, as Kubernetes names objects: at most 253 characters of \
                     lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for \
                     example qwen-7b)";
    let huge = "a".repeat(9 << 20);
    let rows = || {
        vec![
            refusal(
                "9 MiB name",
                "metadata.name",
                json!(huge),
                fatal(
                    "InvalidName",
                    &format!(
                        "metadata.name is \"{}\"... (9437184 characters); {subdomain}",
                        "a".repeat(64)
                    ),
                ),
            ),
            refusal(
                "254 characters",
                "metadata.name",
                json!(&huge[..254]),
                fatal(
                    "InvalidName",
                    &format!(
                        "metadata.name is \"{}\"... (254 characters); {subdomain}",
                        "a".repeat(64)
                    ),
                ),
            ),
            refusal(
                "ends with a dot",
                "metadata.name",
                json!("llama-v3."),
                fatal(
                    "InvalidName",
                    &format!("metadata.name is \"llama-v3.\"; {subdomain}"),
                ),
            ),
            refusal(
                "upper case and underscore",
                "metadata.name",
                json!("Bad_Name"),
                fatal(
                    "InvalidName",
                    &format!("metadata.name is \"Bad_Name\"; {subdomain}"),
                ),
            ),
            refusal(
                "empty",
                "metadata.name",
                json!(""),
                fatal(
                    "InvalidName",
                    &format!("metadata.name is \"\"; {subdomain}"),
                ),
            ),
        ]
    };
    for xr in [
        LlmInference::new("bad").model(QWEN).build(),
        example("examples/configuration/agents/model.yaml"),
        example("examples/configuration/agents/agentpool.yaml"),
    ] {
        Refusals::of(xr).check(rows());
    }
    // A namespace is a DNS label.
    let mut req = request("bad", LlmInference::new("bad").model(QWEN).build());
    req.observed.as_mut().unwrap().composite = Some(resource(
        LlmInference::new("ok")
            .namespace("team.a")
            .model(QWEN)
            .build(),
    ));
    assert_eq!(
        call(&req).results,
        vec![fatal(
            "InvalidName",
            "metadata.namespace is \"team.a\"; use at most 63 lower-case letters, digits and '-', starting and \
             ending with a letter or digit (for example team-a)"
        )]
    );
    // The longest valid name composes (names.rs shortens what derives from it).
    // Kubernetes limits a name, not its dot-separated parts, to 253.
    let longest = format!("{}.{}", &huge[..200], &huge[..52]);
    assert_eq!(longest.len(), 253);
    let rsp = call(&request(
        "ok",
        LlmInference::new(&longest).model(QWEN).build(),
    ));
    assert_not_fatal(&rsp.results, "the longest valid name");
}
