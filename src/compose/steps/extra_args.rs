//! What a user's own `vllm serve` arguments (an LLMInference's
//! `spec.extraArgs`) may do. They come after the derived ones and win, so
//! one that sets a flag the plan derives makes the reported plan differ
//! from what runs (a warning), and one that moves what the composed
//! resources reach (the port, the address, plain HTTP) or writes a
//! credential into the pod spec is refused: the server would never be
//! Ready, or its key would be readable by anyone who can read the pod.

use crate::compose::composition::Refusal;
use crate::compose::resources::vllm_pod::CONTAINER_PORT;

/// vllm serve flags the plan derives.
const DERIVED_FLAGS: &[&str] = &[
    "--tensor-parallel-size",
    "--pipeline-parallel-size",
    "--max-model-len",
    "--dtype",
    "--quantization",
    "--gpu-memory-utilization",
    "--kv-cache-dtype",
];

/// Addresses that listen on every interface, as the composer's `--host`.
const ALL_INTERFACES: &[&str] = &["0.0.0.0", "::", "[::]"];

/// Whether `args` set `flag`, as `--flag value` or `--flag=value`.
pub(crate) fn sets(args: &[String], flag: &str) -> bool {
    value_of(args, flag).is_some()
}

/// The value `args` give `flag` (empty for a flag given last, alone).
fn value_of<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter().enumerate().find_map(|(i, a)| {
        if a == flag {
            Some(args.get(i + 1).map_or("", String::as_str))
        } else {
            a.strip_prefix(flag)?.strip_prefix('=')
        }
    })
}

/// A warning for each derived flag `args` (at `field`) set.
pub(crate) fn overriding_the_plan(field: &str, args: &[String]) -> Vec<String> {
    DERIVED_FLAGS
        .iter()
        .filter(|flag| sets(args, flag))
        .map(|flag| {
            format!(
                "{field} sets {flag}, which overrides the sizing plan: the reported plan no longer describes the \
                 runtime"
            )
        })
        .collect()
}

/// Refuses arguments (at `field`) that would keep the server from ever
/// being Ready, or that hold a credential.
pub(crate) fn check(field: &str, args: &[String]) -> Result<(), Refusal> {
    let invalid = |m: String| Err(Refusal::new("InvalidSpec", m));
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
        let given = args(&["--max-num-seqs", "64", "--port=9000", "--host"]);
        assert_eq!(value_of(&given, "--max-num-seqs"), Some("64"));
        assert_eq!(value_of(&given, "--port"), Some("9000"));
        assert_eq!(value_of(&given, "--host"), Some(""));
        assert_eq!(value_of(&given, "--max-num"), None);
    }

    #[test]
    fn what_the_composition_already_says_passes() {
        for given in [
            args(&["--port", "8000", "--host", "0.0.0.0"]),
            args(&["--host=::", "--max-num-seqs", "64"]),
            args(&[]),
        ] {
            assert!(check("spec.extraArgs", &given).is_ok(), "{given:?}");
        }
    }
}
