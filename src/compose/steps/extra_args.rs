//! What a user's own `vllm serve` arguments (an LLMInference's
//! `spec.extraArgs`) may do. They come after the derived ones and win, so
//! one that sets a flag the plan derives makes the reported plan differ
//! from what runs (a warning), and one that moves what the composed
//! resources reach (the port, the address, plain HTTP) or writes a
//! credential into the pod spec is refused: the server would never be
//! Ready, or its key would be readable by anyone who can read the pod.

use crate::compose::composition::Refusal;
use crate::compose::resources::vllm_pod::CONTAINER_PORT;

/// The `vllm serve` flags the plan derives, each with what asks the plan
/// for another value instead.
const DERIVED_FLAGS: &[(&str, &str)] = &[
    (
        "--tensor-parallel-size",
        "set spec.gpu (or the Model's shardSpec), and the plan chooses the parallelism for it",
    ),
    (
        "--pipeline-parallel-size",
        "set spec.gpu (or the Model's shardSpec), and the plan chooses the parallelism for it",
    ),
    (
        "--max-model-len",
        "set spec.maxModelLen, which the plan sizes the KV cache for",
    ),
    (
        "--dtype",
        "the plan takes it from the checkpoint and the GPU; set spec.quantization to serve other weights",
    ),
    (
        "--quantization",
        "set spec.quantization, and the plan chooses vLLM's method for it",
    ),
    (
        "--kv-cache-dtype",
        "set spec.kvCacheDtype, which the plan sizes the KV cache for",
    ),
];

/// Addresses that listen on every interface, as the composer's `--host`.
const ALL_INTERFACES: &[&str] = &["0.0.0.0", "::", "[::]"];

/// Whether `args` set `flag`, as `--flag value` or `--flag=value`.
pub(crate) fn sets(args: &[String], flag: &str) -> bool {
    value_of(args, flag).is_some()
}

/// The value `args` give `flag` (empty for a flag given last, alone): the
/// last one given, which is the one vLLM's argument parser keeps.
fn value_of<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter()
        .enumerate()
        .rev()
        .find_map(|(i, a)| match given_as(a, flag)? {
            Some(inline) => Some(inline),
            None => Some(args.get(i + 1).map_or("", String::as_str)),
        })
}

/// Whether `arg` is `flag`, and the value it gives inline (`--flag=value`).
/// vLLM's parser reads `_` in a flag's name as `-` (`--api_key`).
fn given_as<'a>(arg: &'a str, flag: &str) -> Option<Option<&'a str>> {
    let (name, inline) = match arg.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (arg, None),
    };
    let same = name.starts_with("--")
        && name.len() == flag.len()
        && name
            .bytes()
            .zip(flag.bytes())
            .all(|(a, f)| a == f || (a == b'_' && f == b'-'));
    same.then_some(inline)
}

/// Whether `args` turn the switch `flag` on (`--flag`) or off
/// (`--no-flag`), the last one given winning as in vLLM's parser; `None`
/// when they give neither.
pub(crate) fn switch(args: &[String], flag: &str) -> Option<bool> {
    let off = format!("--no-{}", flag.trim_start_matches('-'));
    args.iter().rev().find_map(|a| {
        if given_as(a, flag) == Some(None) {
            Some(true)
        } else {
            (given_as(a, &off) == Some(None)).then_some(false)
        }
    })
}

/// The flag that names the model to clients instead of its id.
const SERVED_MODEL_NAME: &str = "--served-model-name";

/// The names clients call the model by, when `args` set them: vLLM takes
/// one or more after `--served-model-name` (the last one given wins),
/// answers to each, and its responses carry the first. Empty when the flag
/// has no name.
pub(crate) fn served_model_names(args: &[String]) -> Option<Vec<&str>> {
    let (i, inline) = args
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, a)| Some((i, given_as(a, SERVED_MODEL_NAME)?)))?;
    Some(match inline {
        Some(name) => [name].into_iter().filter(|n| !n.is_empty()).collect(),
        None => args[i + 1..]
            .iter()
            .take_while(|a| !a.starts_with('-'))
            .map(String::as_str)
            .collect(),
    })
}

/// The flag that caps the requests vLLM runs at once.
const MAX_NUM_SEQS: &str = "--max-num-seqs";

/// The requests vLLM runs at once, when `args` set it (`--max-num-seqs`).
pub(crate) fn max_num_seqs(args: &[String]) -> Option<u64> {
    value_of(args, MAX_NUM_SEQS)?
        .parse()
        .ok()
        .filter(|n| *n > 0)
}

/// The flag for vLLM's share of each GPU's memory.
const GPU_MEMORY_UTILIZATION: &str = "--gpu-memory-utilization";

/// vLLM's share of each GPU's memory, when `args` set one the step input
/// would take too (`--gpu-memory-utilization`).
pub(crate) fn gpu_memory_utilization(args: &[String]) -> Option<f64> {
    crate::input::gpu_memory_utilization(value_of(args, GPU_MEMORY_UTILIZATION)?)
}

/// A warning for each derived flag `args` (at `field`) set.
pub(crate) fn overriding_the_plan(field: &str, args: &[String]) -> Vec<String> {
    DERIVED_FLAGS
        .iter()
        .filter(|(flag, _)| sets(args, flag))
        .map(|(flag, instead)| {
            format!(
                "{field} sets {flag}, which overrides the sizing plan: the reported plan no longer describes the \
                 runtime; {instead}"
            )
        })
        .collect()
}

/// Refuses arguments (at `field`) that would keep the server from ever
/// being Ready, or that hold a credential.
pub(crate) fn check(field: &str, args: &[String]) -> Result<(), Refusal> {
    let invalid = |m: String| Err(Refusal::new("InvalidSpec", m));
    // One argument is one argv word: "--max-num-seqs 64" is neither the
    // flag nor its value to vLLM's parser, which stops on it.
    for (i, arg) in args.iter().enumerate() {
        let name = arg.split_once('=').map_or(arg.as_str(), |(name, _)| name);
        if let Some((flag, value)) = name
            .strip_prefix("--")
            .filter(|rest| rest.contains(char::is_whitespace))
            .and_then(|_| arg.split_once(char::is_whitespace))
        {
            let value = value.trim();
            return invalid(format!(
                "{field}[{i}] is {arg:?}: a flag and its value in one argument, which vLLM's parser takes for \
                 neither, so it would not start; give them as two arguments (\"{flag}\", \"{value}\") or as \
                 one: \"{flag}={value}\""
            ));
        }
    }
    if let Some(port) = value_of(args, "--port")
        && port != CONTAINER_PORT.to_string()
    {
        return invalid(format!(
            "{field} sets --port {port}, but the probes, the Service and the metrics scrape reach vLLM on port \
             {CONTAINER_PORT}, so the server would never be Ready; drop it (clients reach the model through the \
             Service)"
        ));
    }
    if let Some(host) = value_of(args, "--host")
        && !ALL_INTERFACES.contains(&host)
    {
        return invalid(format!(
            "{field} sets --host {host}, but the kubelet's probes and the Service reach the pod's own address, so \
             the server would never be Ready; drop it (vLLM listens on every interface, 0.0.0.0)"
        ));
    }
    if let Some(flag) = ["--ssl-keyfile", "--ssl-certfile"]
        .into_iter()
        .find(|f| sets(args, f))
    {
        return invalid(format!(
            "{field} sets {flag}: vLLM would answer HTTPS only, but the probes, the Service's clients and the \
             metrics scrape speak HTTP, so the server would never be Ready; drop it and terminate TLS at the \
             Ingress (spec.tls) or the Gateway"
        ));
    }
    if let Some(n) = value_of(args, MAX_NUM_SEQS)
        && max_num_seqs(args).is_none()
    {
        let given = if n.is_empty() {
            "without a value".to_string()
        } else {
            n.to_string()
        };
        return invalid(format!(
            "{field} sets {MAX_NUM_SEQS} {given}; vLLM takes a whole number of at least 1 there (the requests it \
             runs at once, for example 64) and would not start otherwise"
        ));
    }
    if let Some(u) = value_of(args, GPU_MEMORY_UTILIZATION)
        && gpu_memory_utilization(args).is_none()
    {
        use crate::input::{GPU_MEMORY_UTILIZATION_MAX as MAX, GPU_MEMORY_UTILIZATION_MIN as MIN};
        let given = if u.is_empty() { "without a value" } else { u };
        // vLLM takes up to 1, but starts only when the share it asks for is
        // free, and its own CUDA context already holds part of the GPU.
        let why = match u.parse::<f64>() {
            Ok(share) if share > MAX && share <= 1.0 => {
                ", at which vLLM would not start (it needs that share of each GPU free at start-up, and its CUDA \
                 context already takes part of it)"
            }
            _ => "",
        };
        return invalid(format!(
            "{field} sets {GPU_MEMORY_UTILIZATION} {given}{why}; use a share of each GPU's memory from {MIN} to \
             {MAX} (the plan sizes for it), or drop it to take the platform's"
        ));
    }
    if served_model_names(args).is_some_and(|names| names.is_empty()) {
        return invalid(format!(
            "{field} sets {SERVED_MODEL_NAME} without a name; give the names clients call the model by (for \
             example \"{SERVED_MODEL_NAME}\", \"chat\"), or drop it to serve the model under its id"
        ));
    }
    if sets(args, "--api-key") {
        return Err(Refusal::new(
            "CredentialInArgs",
            format!(
                "{field} sets --api-key, whose value would stand in plain text in the model server's pod spec; put \
                 the key in a Secret and set spec.apiKeySecretRef {{name, key}} instead"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_flag_is_set_in_either_spelling() {
        let given = args(&[
            "--max-num-seqs",
            "64",
            "--port",
            "8000",
            "--port=9000",
            "--host",
        ]);
        assert_eq!(value_of(&given, "--max-num-seqs"), Some("64"));
        assert_eq!(
            value_of(&given, "--port"),
            Some("9000"),
            "the last one given"
        );
        assert_eq!(value_of(&given, "--host"), Some(""));
        assert_eq!(value_of(&given, "--max-num"), None);
        assert_eq!(value_of(&args(&["--api_key=sk"]), "--api-key"), Some("sk"));
        assert_eq!(value_of(&args(&["__api-key=sk"]), "--api-key"), None);
    }

    #[test]
    fn a_flag_and_its_value_in_one_argument_are_refused() {
        for (given, suggested) in [
            (args(&["--max-num-seqs 64"]), "\"--max-num-seqs=64\""),
            (
                args(&["--seed", "1", "--foo\tbar=baz"]),
                "\"--foo=bar=baz\"",
            ),
        ] {
            let refused = check("spec.extraArgs", &given).unwrap_err();
            assert!(refused.message.ends_with(suggested), "{}", refused.message);
        }
    }

    #[test]
    fn the_names_a_model_is_served_by_are_the_last_ones_given() {
        for (given, names) in [
            (
                args(&["--served-model-name", "chat", "qwen", "--max-num-seqs", "8"]),
                Some(vec!["chat", "qwen"]),
            ),
            (
                args(&["--served-model-name=a", "--served-model-name", "b"]),
                Some(vec!["b"]),
            ),
            (
                args(&["--served-model-name", "a", "--served-model-name=b"]),
                Some(vec!["b"]),
            ),
            (args(&["--served-model-name"]), Some(vec![])),
            (args(&["--served-model-name="]), Some(vec![])),
            (args(&["--served_model_name", "chat"]), Some(vec!["chat"])),
            (args(&["--served-model-names", "x"]), None),
            (args(&["--max-num-seqs", "8"]), None),
        ] {
            assert_eq!(served_model_names(&given), names, "{given:?}");
        }
    }

    #[test]
    fn what_the_composition_already_says_passes() {
        for given in [
            args(&["--port", "8000", "--host", "0.0.0.0"]),
            args(&["--host=::", "--max-num-seqs", "64"]),
            args(&["--override-generation-config={\"temperature\": 0.5}"]),
            args(&[
                "--chat-template",
                "{% for m in messages %}{{ m.content }}{% endfor %}",
            ]),
            args(&[]),
        ] {
            assert!(check("spec.extraArgs", &given).is_ok(), "{given:?}");
        }
    }
}
