//! The core's protocol-level behaviour as a table, after function-template-go's
//! fn_test.go: each case says in a sentence why it exists and compares the
//! WHOLE response, so nothing in it changes unnoticed.
//!
//! Only behaviour every kind shares lives here (tag, TTL, input, dispatch,
//! pass-through); each composer has its own tests.

mod support;

use function_inference::protocol::{fnv1, from_server, to_server};
use function_inference::run::run_function;
use serde_json::json;
use support::*;

struct Case {
    name: &'static str,
    reason: &'static str,
    req: fnv1::RunFunctionRequest,
    want: fnv1::RunFunctionResponse,
}

fn with_input(
    mut req: fnv1::RunFunctionRequest,
    input: prost_types::Struct,
) -> fnv1::RunFunctionRequest {
    req.input = Some(input);
    req
}

fn cases() -> Vec<Case> {
    let unknown_kind = || {
        fatal(
            "UnknownKind",
            &unknown_kind_message("Spaceship", "example.org/v1"),
        )
    };
    vec![
        Case {
            name: "MissingComposite",
            reason: "A request without an observed XR cannot be composed; the function says so in a FATAL result instead of failing the call.",
            req: fnv1::RunFunctionRequest {
                meta: Some(fnv1::RequestMeta {
                    tag: "no-xr".into(),
                    capabilities: vec![],
                }),
                ..Default::default()
            },
            want: fnv1::RunFunctionResponse {
                meta: meta("no-xr", 60),
                desired: Some(fnv1::State::default()),
                results: vec![fatal(
                    "MissingComposite",
                    "the request has no observed composite resource",
                )],
                ..Default::default()
            },
        },
        Case {
            name: "CompositeWithoutKind",
            reason: "An observed XR without a kind cannot be dispatched to a composer.",
            req: request(
                "no-kind",
                json!({"apiVersion": "example.org/v1", "metadata": {"name": "x"}}),
            ),
            want: fnv1::RunFunctionResponse {
                meta: meta("no-kind", 60),
                desired: Some(fnv1::State::default()),
                results: vec![fatal(
                    "MissingComposite",
                    "the observed composite resource has no kind",
                )],
                ..Default::default()
            },
        },
        Case {
            name: "UnknownKind",
            reason: "An XR of a kind the function does not compose gets a FATAL result naming the kind, its API version and the kinds it does compose.",
            req: request("spaceship", spaceship()),
            want: fnv1::RunFunctionResponse {
                meta: meta("spaceship", 60),
                desired: Some(fnv1::State::default()),
                results: vec![unknown_kind()],
                ..Default::default()
            },
        },
        Case {
            name: "UnknownKindWithoutApiVersion",
            reason: "An XR without an apiVersion is named by its kind alone, with no empty brackets.",
            req: request("no-api-version", {
                let mut xr = spaceship();
                xr.as_object_mut().unwrap().remove("apiVersion");
                xr
            }),
            want: fnv1::RunFunctionResponse {
                meta: meta("no-api-version", 60),
                desired: Some(fnv1::State::default()),
                results: vec![fatal(
                    "UnknownKind",
                    "function-inference cannot compose kind \"Spaceship\"; it composes LLMInference, Model, AgentPool",
                )],
                ..Default::default()
            },
        },
        Case {
            name: "NoMetaNoTag",
            reason: "A request without meta still gets a meta with an empty tag and the default TTL.",
            req: fnv1::RunFunctionRequest {
                meta: None,
                ..request("", spaceship())
            },
            want: fnv1::RunFunctionResponse {
                meta: meta("", 60),
                desired: Some(fnv1::State::default()),
                results: vec![unknown_kind()],
                ..Default::default()
            },
        },
        Case {
            name: "TtlFromInput",
            reason: "The step input's ttl (a Kubernetes duration) replaces the default TTL of 60 s.",
            req: with_input(request("ttl", spaceship()), input(json!({"ttl": "5m"}))),
            want: fnv1::RunFunctionResponse {
                meta: meta("ttl", 300),
                desired: Some(fnv1::State::default()),
                results: vec![unknown_kind()],
                ..Default::default()
            },
        },
        Case {
            name: "TtlWithFractionOfASecond",
            reason: "A ttl with a fraction of a second is kept whole: the protobuf Duration carries nanoseconds.",
            req: with_input(
                request("ttl-fraction", spaceship()),
                input(json!({"ttl": "1m30.5s"})),
            ),
            want: fnv1::RunFunctionResponse {
                meta: Some(fnv1::ResponseMeta {
                    tag: "ttl-fraction".into(),
                    ttl: Some(prost_types::Duration {
                        seconds: 90,
                        nanos: 500_000_000,
                    }),
                }),
                desired: Some(fnv1::State::default()),
                results: vec![unknown_kind()],
                ..Default::default()
            },
        },
        Case {
            name: "TtlOfWrongType",
            reason: "A ttl that is a number, not a duration string, is refused with the field's path.",
            req: with_input(request("ttl-number", spaceship()), input(json!({"ttl": 5}))),
            want: fnv1::RunFunctionResponse {
                meta: meta("ttl-number", 60),
                desired: Some(fnv1::State::default()),
                results: vec![fatal(
                    "InvalidInput",
                    "cannot read the step input: input.ttl: 5 is not a duration; write one like 500ms, 30s, 5m or 1h30m",
                )],
                ..Default::default()
            },
        },
        Case {
            name: "TtlZero",
            reason: "A TTL of zero would make Crossplane call again at once; it is refused.",
            req: with_input(
                request("ttl-zero", spaceship()),
                input(json!({"ttl": "0s"})),
            ),
            want: fnv1::RunFunctionResponse {
                meta: meta("ttl-zero", 60),
                desired: Some(fnv1::State::default()),
                results: vec![fatal(
                    "InvalidInput",
                    "invalid step input: input.ttl must be at least 1s",
                )],
                ..Default::default()
            },
        },
        Case {
            name: "UnknownInputField",
            reason: "A typo in the step input fails loudly, naming the field, rather than falling back to a default.",
            req: with_input(request("typo", spaceship()), input(json!({"tll": "5m"}))),
            want: fnv1::RunFunctionResponse {
                meta: meta("typo", 60),
                desired: Some(fnv1::State::default()),
                results: vec![fatal(
                    "InvalidInput",
                    "cannot read the step input: input.tll: unknown field tll; valid fields are apiVersion, kind, metadata, ttl, defaults",
                )],
                ..Default::default()
            },
        },
        Case {
            name: "UnknownNestedInputField",
            reason: "A typo below the top level of the input names the whole path.",
            req: with_input(
                request("nested-typo", spaceship()),
                input(json!({"defaults": {"gpuTpye": "L4"}})),
            ),
            want: fnv1::RunFunctionResponse {
                meta: meta("nested-typo", 60),
                desired: Some(fnv1::State::default()),
                results: vec![fatal(
                    "InvalidInput",
                    "cannot read the step input: input.defaults.gpuTpye: unknown field gpuTpye; valid fields are gpuType, offeredGpuTypes, gpuPrices, image, gpuMemoryUtilization, gpuNodeSelector, migStrategy, gpuToleration, diagnosePods, providerConfigKind, weightsCache, objective, vllmVersion, runtime, vllmImages, autoscaler, prometheusAddress, podMonitor, inferenceGateway, imagePullSecrets, modelServerTolerations, hfTokenSecretRef, modelServerPriorityClassName, modelServerServiceAccountName, modelServerSchedulerName",
                )],
                ..Default::default()
            },
        },
        Case {
            name: "WrongInputApiVersion",
            reason: "An input of another API version is refused with the version expected.",
            req: fnv1::RunFunctionRequest {
                input: Some(object(json!({
                    "apiVersion": "inference.fn.crossplane.io/v1alpha1",
                    "kind": "Input",
                    "ttl": "5m",
                }))),
                ..request("old-input", spaceship())
            },
            want: fnv1::RunFunctionResponse {
                meta: meta("old-input", 60),
                desired: Some(fnv1::State::default()),
                results: vec![fatal(
                    "InvalidInput",
                    "invalid step input: input.apiVersion is \"inference.fn.crossplane.io/v1alpha1\"; expected \"inference.fn.crossplane.io/v1beta1\"",
                )],
                ..Default::default()
            },
        },
        Case {
            name: "WrongInputKind",
            reason: "An input of another kind is refused with the kind expected.",
            req: fnv1::RunFunctionRequest {
                input: Some(object(json!({
                    "apiVersion": INPUT_API_VERSION,
                    "kind": "Settings",
                }))),
                ..request("other-kind", spaceship())
            },
            want: fnv1::RunFunctionResponse {
                meta: meta("other-kind", 60),
                desired: Some(fnv1::State::default()),
                results: vec![fatal(
                    "InvalidInput",
                    "invalid step input: input.kind is \"Settings\"; expected \"Input\"",
                )],
                ..Default::default()
            },
        },
        Case {
            name: "DesiredPassThrough",
            reason: "Desired state earlier steps built (an XR status field, a composed resource with its connection details and readiness) comes back unchanged.",
            req: fnv1::RunFunctionRequest {
                desired: Some(earlier_desired()),
                ..request("pass-through", spaceship())
            },
            want: fnv1::RunFunctionResponse {
                meta: meta("pass-through", 60),
                desired: Some(earlier_desired()),
                results: vec![unknown_kind()],
                ..Default::default()
            },
        },
        Case {
            name: "DesiredPassThroughOnInvalidInput",
            reason: "Even a refused input leaves earlier steps' desired state untouched.",
            req: fnv1::RunFunctionRequest {
                desired: Some(earlier_desired()),
                input: Some(input(json!({"ttl": "soon"}))),
                ..request("pass-through-bad-input", spaceship())
            },
            want: fnv1::RunFunctionResponse {
                meta: meta("pass-through-bad-input", 60),
                desired: Some(earlier_desired()),
                results: vec![fatal(
                    "InvalidInput",
                    "cannot read the step input: input.ttl: \"soon\" is not a duration; write one like 500ms, 30s, 5m or 1h30m",
                )],
                ..Default::default()
            },
        },
    ]
}

#[test]
fn run_function_table() {
    let mut failures = Vec::new();
    for case in cases() {
        let got = from_server(&run_function(to_server(&case.req)).response)
            .expect("the response decodes");
        if got != case.want {
            failures.push(format!(
                "{}: {}\n  got:  {got:?}\n  want: {:?}",
                case.name, case.reason, case.want
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
