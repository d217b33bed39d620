//! How many requests one replica serves at once before vLLM queues or
//! preempts them, and the autoscaling target derived from it.
//!
//! vLLM admits a request while its scheduler has a sequence slot
//! (`--max-num-seqs`) and the KV cache has blocks for its tokens; beyond
//! that, requests wait, and running ones are preempted when their KV grows.
//! So one replica holds `min(max-num-seqs, KV capacity / cached tokens per
//! request)` requests (a hybrid model's windowed layers cache less than
//! the request's tokens), and the autoscaler scales out at a share of that,
//! before the queue builds.

use super::fit::Device;
use super::plan::Plan;
use super::text::{count_of, thousands};

/// Share of a replica's concurrency the autoscaler aims for: the rest
/// absorbs requests longer than stated and the time a new replica takes to
/// start.
pub const TARGET_SHARE: f64 = 0.8;

/// What a request looks like to the autoscaler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestShape {
    /// Prompt plus output tokens: the KV cache a request holds at its end.
    pub tokens: u64,
    /// True when the caller stated it; false when it is the full context.
    pub stated: bool,
    /// The prompt plus output stated, when longer than maxModelLen (which
    /// `tokens` is then capped to): vLLM refuses such a request.
    pub beyond_context: Option<u64>,
}

impl RequestShape {
    /// The warning for a stated request longer than maxModelLen, where
    /// `stated_by` names the fields that state it and `longer` what sets a
    /// longer context.
    pub fn beyond_context_warning(&self, stated_by: &str, longer: &str) -> Option<String> {
        let stated = self.beyond_context?;
        Some(format!(
            "A typical request of {} tokens ({stated_by}) is longer than maxModelLen {}: vLLM refuses such \
             requests, so the autoscaling target is for requests of {} tokens; state a request that fits, or set \
             {longer}",
            thousands(stated),
            thousands(self.tokens),
            thousands(self.tokens)
        ))
    }
}

/// The concurrency of one replica and the target derived from it.
#[derive(Debug, Clone, PartialEq)]
pub struct ScalingTarget {
    /// Tokens of the request the target is for.
    pub request_tokens: u64,
    /// Requests of `shape.tokens` the KV cache of one replica holds at once.
    pub kv_requests: u64,
    /// vLLM's `--max-num-seqs`: the server's own, else its default on this
    /// device.
    pub engine_limit: u64,
    /// In-flight (running plus waiting) requests per replica to scale out
    /// above.
    pub requests_per_replica: u64,
    /// True when the caller set the target instead of the plan.
    pub overridden: bool,
    /// The sentence for the status and `size`.
    pub reason: String,
}

impl Plan {
    /// The `--max-num-seqs` the sizing assumed: the server's own, else
    /// vLLM's default on this plan's device (a MIG slice counts as its own,
    /// smaller device).
    pub(crate) fn engine_max_num_seqs(&self) -> u64 {
        if let Some(n) = self.max_num_seqs {
            return n;
        }
        match self
            .mig_profile
            .as_deref()
            .and_then(|n| self.gpu.mig_profile(n))
        {
            Some(slice) => Device::slice(self.gpu, slice).max_num_seqs,
            None => Device::gpu(self.gpu).max_num_seqs,
        }
    }

    /// The request shape of `prompt` plus `output` tokens; the full context
    /// (`maxModelLen`) when neither is given, which never over-promises.
    pub fn request_shape(&self, prompt: Option<u64>, output: Option<u64>) -> RequestShape {
        match (prompt, output) {
            (None, None) => RequestShape {
                tokens: self.max_model_len,
                stated: false,
                beyond_context: None,
            },
            (p, o) => {
                let stated = p.unwrap_or(0).saturating_add(o.unwrap_or(0));
                RequestShape {
                    tokens: stated.clamp(1, self.max_model_len),
                    stated: true,
                    beyond_context: (stated > self.max_model_len).then_some(stated),
                }
            }
        }
    }

    /// The autoscaling target for requests of `shape`, or the one the caller
    /// sets: `overridden` is that target and the field that sets it.
    pub fn scaling_target(
        &self,
        shape: RequestShape,
        overridden: Option<(u64, &str)>,
    ) -> ScalingTarget {
        let kv_requests = self.sequences_held(shape.tokens);
        let engine_limit = self.engine_max_num_seqs();
        let limit_from = if self.max_num_seqs.is_some() {
            "--max-num-seqs, as the server's arguments set it"
        } else {
            "--max-num-seqs"
        };
        let concurrency = kv_requests.min(engine_limit);
        let derived = ((concurrency as f64 * TARGET_SHARE).floor() as u64).max(1);
        let length = if let Some(stated) = shape.beyond_context {
            format!(
                "{} tokens (maxModelLen, shorter than the {} stated, which vLLM refuses)",
                thousands(shape.tokens),
                thousands(stated)
            )
        } else if shape.stated {
            format!("{} tokens (prompt and output)", thousands(shape.tokens))
        } else {
            format!(
                "{} tokens (the full context: state the prompt and output tokens for a closer target)",
                thousands(shape.tokens)
            )
        };
        let holds = if kv_requests <= engine_limit {
            format!(
                "the KV cache holds {} of {length}",
                count_of(kv_requests, "request")
            )
        } else {
            format!(
                "vLLM runs at most {engine_limit} at once ({limit_from}), though the KV cache holds {} of {length}",
                count_of(kv_requests, "request")
            )
        };
        let (requests_per_replica, reason) = match overridden {
            Some((t, field)) => (
                t.max(1),
                format!(
                    "scales out above {} per replica, as {field} says; the plan's target is {derived}: {holds}",
                    count_of(t.max(1), "request")
                ),
            ),
            None => (
                derived,
                format!(
                    "scales out above {} per replica ({:.0} % of what one serves at once): {holds}",
                    count_of(derived, "request"),
                    TARGET_SHARE * 100.0
                ),
            ),
        };
        ScalingTarget {
            request_tokens: shape.tokens,
            kv_requests,
            engine_limit,
            requests_per_replica,
            overridden: overridden.is_some(),
            reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_requests::whole_gpus;
    use super::super::{MigChoice, SizingRequest};
    use super::*;

    fn plan(model: &str, gpu: &str) -> Plan {
        super::super::size(&whole_gpus(model, gpu)).unwrap()
    }

    #[test]
    fn the_target_is_a_share_of_what_the_kv_cache_holds() {
        let p = plan("meta-llama/Llama-3.1-70B-Instruct", "H100-80GB");
        let shape = p.request_shape(Some(6144), Some(2048));
        let t = p.scaling_target(shape, None);
        assert_eq!(t.kv_requests, p.estimate.kv_capacity_tokens / 8192);
        assert_eq!(t.requests_per_replica, (t.kv_requests as f64 * 0.8) as u64);
        assert!(
            t.reason.starts_with(&format!(
                "scales out above {} requests per replica (80 % of what one serves at once): the KV cache holds {} requests of 8,192 tokens (prompt and output)",
                t.requests_per_replica, t.kv_requests
            )),
            "{}",
            t.reason
        );
    }

    /// gpt-oss alternates full and 128-token sliding-window layers: a
    /// request of the full 32,768 tokens caches 20,552 tokens of every
    /// layer (half its layers keep the window, a prefill chunk and a block),
    /// so the cache holds 39 of them where capacity / length says 24.
    #[test]
    fn a_hybrid_models_windowed_layers_let_it_hold_more_requests() {
        let p = plan("openai/gpt-oss-120b", "H100-80GB");
        assert_eq!(p.max_model_len, 32_768);
        assert_eq!(p.cached_tokens(32_768), 20_552);
        let t = p.scaling_target(p.request_shape(None, None), None);
        assert_eq!(t.kv_requests, p.estimate.kv_capacity_tokens / 20_552);
        assert_eq!(
            (t.kv_requests, p.estimate.kv_capacity_tokens / 32_768),
            (39, 24)
        );
        assert_eq!(t.requests_per_replica, 31);
        // Qwen3-Next's linear-attention layers keep one block of a request:
        // sized for one of 100,000 tokens, its cache holds two.
        let next = super::super::size(&SizingRequest {
            max_model_len: Some(100_000),
            ..whole_gpus("Qwen/Qwen3-Next-80B-A3B-Instruct", "B200")
        })
        .unwrap();
        let t = next.scaling_target(next.request_shape(None, None), None);
        assert_eq!((t.kv_requests, t.requests_per_replica), (2, 1));
        assert!(
            t.reason.starts_with(
                "scales out above 1 request per replica (80 % of what one serves at once): the KV cache holds 2 requests of 100,000 tokens"
            ),
            "{}",
            t.reason
        );
        // A model with no windowed layer caches what it is given.
        let llama = plan("meta-llama/Llama-3.1-8B-Instruct", "H100-80GB");
        assert_eq!(llama.cached_tokens(32_768), 32_768);
    }

    #[test]
    fn short_requests_are_bounded_by_the_engine_and_an_override_wins() {
        let p = plan("Qwen/Qwen2.5-7B-Instruct", "H100-80GB");
        let t = p.scaling_target(p.request_shape(Some(100), Some(28)), None);
        assert_eq!((t.engine_limit, t.requests_per_replica), (1024, 819));
        assert!(
            t.reason
                .contains("vLLM runs at most 1024 at once (--max-num-seqs)"),
            "{}",
            t.reason
        );
        // A request is never longer than the context, however large the
        // tokens given, and one stated longer is said to be refused.
        let long = p.request_shape(Some(u64::MAX), Some(1));
        assert_eq!(
            (long.tokens, long.beyond_context),
            (p.max_model_len, Some(u64::MAX))
        );
        let long = p.request_shape(Some(30_000), Some(4_000));
        assert_eq!(long.beyond_context, Some(34_000));
        assert_eq!(
            long.beyond_context_warning("--prompt-tokens + --output-tokens", "a longer --max-model-len"),
            Some(
                "A typical request of 34,000 tokens (--prompt-tokens + --output-tokens) is longer than maxModelLen \
                 32,768: vLLM refuses such requests, so the autoscaling target is for requests of 32,768 tokens; \
                 state a request that fits, or set a longer --max-model-len"
                    .to_string()
            )
        );
        assert!(p.scaling_target(long, None).reason.contains(
            "of 32,768 tokens (maxModelLen, shorter than the 34,000 stated, which vLLM refuses)"
        ));
        let fits = p.request_shape(Some(30_000), Some(2_768));
        assert_eq!((fits.tokens, fits.beyond_context), (32_768, None));
        assert_eq!(fits.beyond_context_warning("", ""), None);
        let o = p.scaling_target(
            p.request_shape(None, None),
            Some((12, "spec.autoscaling.targetRequestsPerReplica")),
        );
        assert_eq!((o.requests_per_replica, o.overridden), (12, true));
        assert!(
            o.reason.starts_with(
                "scales out above 12 requests per replica, as spec.autoscaling.targetRequestsPerReplica says"
            ),
            "{}",
            o.reason
        );
        assert!(o.reason.contains("the full context"), "{}", o.reason);
    }

    /// vLLM batches 1,024 on a device of 70 GiB or more unless CUDA names
    /// it an A100, as it names an A100's MIG slices too.
    #[test]
    fn a_whole_gpu_slice_batches_as_its_gpu_does() {
        let on_slice = |gpu: &str| {
            super::super::size(&SizingRequest {
                mig: MigChoice::Profile("7g.80gb".into()),
                ..whole_gpus("Qwen/Qwen2.5-7B-Instruct", gpu)
            })
            .unwrap()
            .engine_max_num_seqs()
        };
        assert_eq!(on_slice("A100-80GB"), 256);
        assert_eq!(on_slice("H100-80GB"), 1024);
    }
}
