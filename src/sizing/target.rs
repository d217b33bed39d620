//! What a layout must hold: a context length and how many sequences of it
//! at once, counted as the model's attention stores them.

use super::memory::Arch;

/// Capped contexts are rounded down to a multiple of this.
pub(crate) const CONTEXT_STEP: u64 = 256;
/// When the default context does not fit anywhere, or a concurrency is
/// stated without a context, the engine sizes for this much and caps
/// `maxModelLen` to what fits.
pub(crate) const MIN_DEFAULT_CONTEXT: u64 = 4_096;

/// The context the engine sizes for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ContextTarget {
    /// Tokens per sequence: the `maxModelLen` to aim for.
    pub(crate) target: u64,
    /// True when the caller set `maxModelLen`.
    pub(crate) explicit: bool,
    /// True when the caller set the concurrency.
    pub(crate) concurrency_stated: bool,
    /// Full-length sequences the KV cache must hold at once.
    pub(crate) concurrency: u64,
    /// Sequences the layout is chosen to hold: `concurrency`, or more for
    /// the `throughput` objective.
    pub(crate) serving: u64,
    /// The model's shape, which says what a sequence costs in the KV cache
    /// (less than its length for sliding-window models).
    pub(crate) arch: Arch,
}

impl ContextTarget {
    /// True when the caller said what a replica must hold (its context or
    /// its concurrency), which the `balanced` objective then sizes for.
    pub(crate) fn need_stated(&self) -> bool {
        self.explicit || self.concurrency_stated
    }

    /// The length of the sequences a stated concurrency must fit: the
    /// maxModelLen given, else the shortest default (the context is then
    /// capped to what the layout holds, as a default is).
    pub(crate) fn length_to_hold(&self) -> u64 {
        if self.explicit {
            self.target
        } else {
            MIN_DEFAULT_CONTEXT.min(self.target)
        }
    }

    /// Tokens the KV cache must hold: `target x concurrency`, counted as
    /// [`Arch::kv_tokens`] does (sliding-window layers keep only their window).
    pub(crate) fn tokens(&self) -> u64 {
        self.tokens_at(self.target)
    }

    /// The same for sequences of `len` tokens.
    pub(crate) fn tokens_at(&self, len: u64) -> u64 {
        self.arch.kv_tokens(len, self.concurrency)
    }

    /// Tokens the layout is chosen to hold: `serving` sequences of `len`.
    pub(crate) fn serving_tokens_at(&self, len: u64) -> u64 {
        self.arch.kv_tokens(len, self.serving)
    }

    /// The longest context, in steps of 256 and at most the target, whose
    /// sequences fit in `capacity_tokens`; 0 when not even one step does.
    pub(crate) fn longest_fitting(&self, capacity_tokens: u64) -> u64 {
        (self
            .arch
            .longest_sequence(capacity_tokens, self.concurrency)
            / CONTEXT_STEP
            * CONTEXT_STEP)
            .min(self.target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(target: u64, concurrency: u64) -> ContextTarget {
        ContextTarget {
            target,
            explicit: false,
            concurrency_stated: false,
            concurrency,
            serving: concurrency,
            arch: Arch::from_spec(crate::sizing::model_catalog::nearest_template(8.0)),
        }
    }

    #[test]
    fn longest_fitting_rounds_down_to_steps_and_never_exceeds_the_target() {
        // (target, concurrency, KV capacity in tokens, longest context)
        let cases = [
            (32_768, 1, 1_000_000, 32_768),
            (32_768, 1, 20_000, 19_968),
            (32_768, 4, 20_000, 4_864),
            (32_768, 1, 255, 0),
            (4_096, 1, 4_096, 4_096),
            (4_096, 2, 8_191, 3_840),
        ];
        for (target, concurrency, capacity, want) in cases {
            assert_eq!(
                ctx(target, concurrency).longest_fitting(capacity),
                want,
                "{target} x {concurrency} in {capacity}"
            );
        }
    }

    #[test]
    fn tokens_saturate_instead_of_overflowing() {
        assert_eq!(ctx(32_768, 4).tokens(), 131_072);
        assert_eq!(ctx(u64::MAX, 2).tokens(), u64::MAX);
    }
}
