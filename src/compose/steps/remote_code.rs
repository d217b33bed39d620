//! Whether vLLM must run Python code from the model's own repository.
//!
//! Some checkpoints cannot load with transformers' own classes: Kimi K2's
//! tokenizer is `tokenization_kimi.TikTokenTokenizer`, shipped in its
//! repository, and Kimi-VL ships its tokenizer and image processor (its
//! model card serves it with the flag); MiniMax-M2's configuration class is
//! in its repository too. vLLM imports such code only with
//! `--trust-remote-code`, and stops at startup without it, so the model
//! server would only crash-loop.
//! The code runs in the model server's pods, so trusting it is the user's
//! call (a Model's `spec.trustRemoteCode`, an LLMInference's
//! `spec.extraArgs`); an XR serving such a model without it is refused.

use crate::compose::steps::extra_args;

/// vLLM's flag that lets transformers import the repository's code.
pub(crate) const FLAG: &str = "--trust-remote-code";

/// What code `model` (a Hugging Face id, or a bucket path ending in the
/// checkpoint's name) needs from its repository, for the checkpoints known
/// to need any.
fn code_needed(model: &str) -> Option<&'static str> {
    let name = model.trim_end_matches('/').rsplit('/').next()?;
    let name = name.to_ascii_lowercase();
    if name.starts_with("kimi-k2") {
        Some("its tokenizer as Python code in its repository (tokenization_kimi.py)")
    } else if name.starts_with("kimi-vl") {
        Some("its tokenizer and image processor as Python code in its repository")
    } else if [
        "llama-3_3-nemotron-super",
        "llama-3_1-nemotron-ultra",
        "llama-3_1-nemotron-51b",
    ]
    .iter()
    .any(|nas| name.starts_with(nas))
    {
        // Nemotron-NAS (DeciLM): no nemotron-nas configuration in
        // transformers 4.57 either.
        Some("its configuration as Python code in its repository (configuration_decilm.py)")
    } else if name.starts_with("minimax-m2") {
        // transformers 4.57, which the built-in vLLM 0.19 images run, has
        // no minimax_m2 configuration, and vLLM registers none of its own.
        Some("its configuration as Python code in its repository (configuration_minimax_m2.py)")
    } else {
        None
    }
}

/// Why `model` cannot be served when `trusted` is false; `how` says where
/// the user trusts it.
pub(crate) fn untrusted(model: &str, trusted: bool, how: &str) -> Option<String> {
    let code = code_needed(model).filter(|_| !trusted)?;
    Some(format!(
        "{model} ships {code}, which vLLM runs only with {FLAG}: without it the model server stops at startup; \
         {how} (the code then runs in the model server's pods: trust only repositories you would run)"
    ))
}

/// Whether `args`, a `vllm serve` command line, trusts remote code.
pub(crate) fn trusted_by(args: &[String]) -> bool {
    extra_args::switch(args, FLAG) == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kimi_and_minimax_checkpoints_need_their_code() {
        for (model, needs) in [
            ("moonshotai/Kimi-K2-Instruct", true),
            ("moonshotai/Kimi-K2-Instruct-0905", true),
            ("moonshotai/Kimi-K2-Thinking", true),
            ("s3://models/moonshotai/Kimi-K2-Instruct/", true),
            ("moonshotai/Kimi-VL-A3B-Instruct", true),
            ("moonshotai/Kimi-VL-A3B-Thinking-2506", true),
            ("MiniMaxAI/MiniMax-M2", true),
            ("MiniMaxAI/MiniMax-M2.5", true),
            ("nvidia/Llama-3_3-Nemotron-Super-49B-v1_5", true),
            ("nvidia/Llama-3_1-Nemotron-Ultra-253B-v1", true),
            ("nvidia/Llama-3.1-Nemotron-70B-Instruct-HF", false),
            ("deepseek-ai/DeepSeek-V3", false),
            ("zai-org/GLM-4.6", false),
            ("Qwen/Qwen3-8B", false),
        ] {
            assert_eq!(
                untrusted(model, false, "trust it").is_some(),
                needs,
                "{model}"
            );
            assert_eq!(untrusted(model, true, "trust it"), None, "{model}");
        }
    }

    #[test]
    fn only_the_flag_itself_trusts() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(trusted_by(&args(&[
            "--max-num-seqs",
            "64",
            "--trust-remote-code"
        ])));
        assert!(!trusted_by(&args(&["--no-trust-remote-code"])));
        assert!(!trusted_by(&args(&[])));
        // vLLM's parser reads `_` as `-`, and keeps the last one given.
        assert!(trusted_by(&args(&["--trust_remote_code"])));
        assert!(!trusted_by(&args(&[
            "--trust-remote-code",
            "--no-trust-remote-code"
        ])));
        assert!(trusted_by(&args(&[
            "--no-trust-remote-code",
            "--trust-remote-code"
        ])));
        // A value is not how the switch is turned on.
        assert!(!trusted_by(&args(&["--trust-remote-code=false"])));
    }
}
