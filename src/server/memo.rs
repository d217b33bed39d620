//! A small, bounded memo of composer outputs, so that steady-state
//! reconciles cost little more than the transport.
//!
//! Crossplane calls the function on every reconcile of every XR, and most of
//! those calls carry exactly what the previous one did. A composer is a pure
//! function of four things: the observed XR, the step input, the required
//! resources, and the observed composed resources it reads. An entry keeps
//! the bytes of all four (the last as recorded by [`crate::compose::Observed`]
//! while the composer ran) and the composer's output already encoded; a call
//! is answered from it only when every one of those byte strings is equal.
//! Everything that belongs to one call (the tag, the desired state of earlier
//! steps, resources kept as observed) is still built per call from the
//! request, never cached.
//!
//! Memory is bounded by the bytes the entries hold; the least recently used
//! entries go first, so the entry of an XR's previous version ages out.
//! A hash of the key picks the slot.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use crate::compose::Refusal;
use crate::function::{Encoded, Subject};

/// Bytes that identify a call's composer inputs, borrowed from the request.
pub struct Key<'a> {
    pub composite: &'a [u8],
    /// The step input's bytes; None when the step has no input.
    pub input: Option<&'a [u8]>,
    pub required: Vec<u8>,
    hash: u64,
}

impl<'a> Key<'a> {
    pub fn new(composite: &'a [u8], input: Option<&'a [u8]>, required: Vec<u8>) -> Self {
        // An absent and an empty input share a slot; `answers` tells them apart.
        let mut h = 0x243f_6a88_85a3_08d3;
        for part in [composite, input.unwrap_or_default(), &required] {
            h = hash(h, part);
        }
        Self {
            composite,
            input,
            required,
            hash: h,
        }
    }
}

/// What a composer returned, encoded, with everything it depended on.
pub struct Entry {
    composite: Vec<u8>,
    input: Option<Vec<u8>>,
    required: Vec<u8>,
    /// Each observed resource the composer asked for, and its bytes (None:
    /// it was not observed).
    reads: Vec<(String, Option<Vec<u8>>)>,
    pub subject: Subject,
    pub ttl_seconds: u64,
    pub outcome: Result<Encoded, Refusal>,
    size: usize,
    /// When it last answered a call, on the memo's clock.
    used: AtomicU64,
}

impl Entry {
    pub fn new(
        key: &Key,
        reads: Vec<(String, Option<Vec<u8>>)>,
        subject: Subject,
        ttl_seconds: u64,
        outcome: Result<Encoded, Refusal>,
    ) -> Self {
        let read_bytes: usize = reads
            .iter()
            .map(|(n, b)| n.len() + b.as_ref().map_or(0, Vec::len))
            .sum();
        let outcome_bytes = match &outcome {
            Ok(e) => e.size(),
            Err(r) => r.message.len(),
        };
        Self {
            size: key.composite.len()
                + key.input.map_or(0, <[u8]>::len)
                + key.required.len()
                + read_bytes
                + outcome_bytes
                + 256,
            composite: key.composite.to_vec(),
            input: key.input.map(<[u8]>::to_vec),
            required: key.required.clone(),
            reads,
            subject,
            ttl_seconds,
            outcome,
            used: AtomicU64::new(0),
        }
    }

    /// True when this entry answers `key` given the request's observed resources.
    fn answers<'b>(&self, key: &Key, observed: impl Fn(&str) -> Option<&'b [u8]>) -> bool {
        self.composite == key.composite
            && self.input.as_deref() == key.input
            && self.required == key.required
            && self
                .reads
                .iter()
                .all(|(name, bytes)| observed(name) == bytes.as_deref())
    }
}

/// The memo; shared by every call of a server.
///
/// Calls on all worker threads look entries up at once, so a lookup holds
/// the read lock only to clone an `Arc`; comparing the bytes (kilobytes)
/// and marking the entry used happen outside any lock.
pub struct Memo {
    budget: usize,
    clock: AtomicU64,
    inner: RwLock<Slots>,
}

#[derive(Default)]
struct Slots {
    by_hash: HashMap<u64, Arc<Entry>>,
    bytes: usize,
}

impl Memo {
    /// A memo holding at most `budget_bytes` of entries.
    pub fn new(budget_bytes: usize) -> Self {
        Self {
            budget: budget_bytes,
            clock: AtomicU64::new(0),
            inner: RwLock::new(Slots::default()),
        }
    }

    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The entry that answers `key`, if any.
    pub fn get<'b>(
        &self,
        key: &Key,
        observed: impl Fn(&str) -> Option<&'b [u8]>,
    ) -> Option<Arc<Entry>> {
        let entry = {
            let slots = self.inner.read().unwrap_or_else(|p| p.into_inner());
            slots.by_hash.get(&key.hash)?.clone()
        };
        if !entry.answers(key, observed) {
            return None;
        }
        entry.used.store(self.tick(), Ordering::Relaxed);
        Some(entry)
    }

    /// Stores `entry` for `key`, replacing the slot's previous entry and
    /// evicting the least recently used ones beyond the budget.
    pub fn insert(&self, key: &Key, entry: Entry) {
        if entry.size > self.budget / 4 {
            return;
        }
        entry.used.store(self.tick(), Ordering::Relaxed);
        let mut slots = self.inner.write().unwrap_or_else(|p| p.into_inner());
        slots.bytes += entry.size;
        if let Some(old) = slots.by_hash.insert(key.hash, Arc::new(entry)) {
            slots.bytes -= old.size;
        }
        while slots.bytes > self.budget {
            let Some(oldest) = slots
                .by_hash
                .iter()
                .min_by_key(|(_, e)| e.used.load(Ordering::Relaxed))
                .map(|(h, _)| *h)
            else {
                break;
            };
            if let Some(e) = slots.by_hash.remove(&oldest) {
                slots.bytes -= e.size;
            }
        }
    }

    /// Entries and bytes held, for tests.
    pub fn usage(&self) -> (usize, usize) {
        let slots = self.inner.read().unwrap_or_else(|p| p.into_inner());
        (slots.by_hash.len(), slots.bytes)
    }
}

/// A fast, non-cryptographic hash: it only picks a slot, and a hit is
/// confirmed by comparing the bytes. Four independent lanes keep the
/// multiplier busy, so an XR of a few KB hashes in about a tenth of a
/// microsecond rather than waiting on one long chain of multiplications.
fn hash(seed: u64, bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mix = |h: u64, w: u64| (h ^ w).wrapping_mul(K).rotate_left(29);
    let mut lanes = [
        mix(seed, bytes.len() as u64),
        seed.rotate_left(16),
        seed.rotate_left(32),
        seed.rotate_left(48),
    ];
    let mut blocks = bytes.chunks_exact(32);
    for block in &mut blocks {
        for (lane, word) in lanes.iter_mut().zip(block.chunks_exact(8)) {
            *lane = mix(*lane, u64::from_le_bytes(word.try_into().expect("8 bytes")));
        }
    }
    let mut h = lanes.into_iter().fold(seed, mix);
    for &b in blocks.remainder() {
        h = mix(h, u64::from(b));
    }
    h ^ (h >> 32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::function::{respond, respond_with};
    use crate::protocol::struct_json::json_to_struct;
    use crate::protocol::{from_wire, full, to_wire, wire};
    use serde_json::{Value, json};

    fn resource(v: &Value) -> full::Resource {
        full::Resource {
            resource: v.as_object().map(json_to_struct),
            ..Default::default()
        }
    }

    fn xr(name: &str, status: Value) -> Value {
        json!({
            "apiVersion": "infer.dev/v1alpha1", "kind": "LLMInference",
            "metadata": {"name": name, "namespace": "team-a"},
            "spec": {"model": "Qwen/Qwen2.5-1.5B-Instruct", "gpu": 1, "ingressHost": "q.example.com"},
            "status": status,
        })
    }

    fn runtime(available: i64) -> Value {
        json!({"apiVersion": "production-stack.vllm.ai/v1alpha1", "kind": "VLLMRuntime",
               "metadata": {"name": "q"}, "status": {"availableReplicas": available}})
    }

    fn request(
        tag: &str,
        xr: &Value,
        observed: &[(&str, Value)],
        input: Option<Value>,
    ) -> wire::RunFunctionRequest {
        to_wire(&full::RunFunctionRequest {
            meta: Some(full::RequestMeta {
                tag: tag.into(),
                capabilities: vec![],
            }),
            observed: Some(full::State {
                composite: Some(resource(xr)),
                resources: observed
                    .iter()
                    .map(|(n, v)| (n.to_string(), resource(v)))
                    .collect(),
            }),
            desired: Some(full::State::default()),
            input: input
                .as_ref()
                .and_then(Value::as_object)
                .map(json_to_struct),
            ..Default::default()
        })
    }

    fn fresh(req: &wire::RunFunctionRequest) -> full::RunFunctionResponse {
        from_wire(&respond(req.clone(), &mut Subject::default())).unwrap()
    }

    fn memoized(memo: &Memo, req: &wire::RunFunctionRequest) -> full::RunFunctionResponse {
        let mut subject = Subject::default();
        let rsp = from_wire(&respond_with(
            req.clone(),
            &mut subject,
            crate::compose::composer_for,
            Some(memo),
        ))
        .unwrap();
        assert_eq!(&*subject.kind, "LLMInference");
        rsp
    }

    #[test]
    fn a_hit_answers_exactly_what_composing_again_would() {
        let memo = Memo::new(1 << 20);
        let ttl = json!({"apiVersion": "inference.fn.crossplane.io/v1beta1", "kind": "Input", "ttl": "5m"});
        let gpu = json!({"defaults": {"gpuType": "A100-80GB"}});
        let bad = json!({"spec": {"model": ""}});
        let cases = [
            ("first", xr("q", json!({})), vec![], None),
            (
                "observed",
                xr("q", json!({})),
                vec![("vllm_runtime", runtime(0))],
                None,
            ),
            (
                "ready",
                xr("q", json!({})),
                vec![("vllm_runtime", runtime(1)), ("other", runtime(0))],
                None,
            ),
            (
                "ttl",
                xr("q", json!({})),
                vec![("vllm_runtime", runtime(1))],
                Some(ttl),
            ),
            (
                "input",
                xr("q", json!({})),
                vec![("vllm_runtime", runtime(1))],
                Some(gpu),
            ),
            (
                "status",
                xr("q", json!({"ready": "True"})),
                vec![("vllm_runtime", runtime(1))],
                None,
            ),
            (
                "other-xr",
                xr("r", json!({})),
                vec![("vllm_runtime", runtime(1))],
                None,
            ),
        ];
        for (name, x, observed, input) in cases {
            for round in 0..2 {
                let tag = format!("{name}-{round}");
                let req = request(&tag, &x, &observed, input.clone());
                assert_eq!(memoized(&memo, &req), fresh(&req), "{name}, round {round}");
            }
        }
        // A refusal is remembered and answered the same way too.
        let mut refused = xr("bad", json!({}));
        refused["spec"] = bad["spec"].clone();
        for round in 0..2 {
            let req = request(&format!("bad-{round}"), &refused, &[], None);
            let rsp = memoized(&memo, &req);
            assert_eq!(rsp, fresh(&req));
            assert_eq!(rsp.results[0].severity, full::Severity::Fatal as i32);
        }
    }

    #[test]
    fn an_observed_change_the_composer_reads_is_seen_and_others_still_hit() {
        let memo = Memo::new(1 << 20);
        let x = xr("q", json!({}));
        let ready = |tag: &str, available, other| {
            let req = request(
                tag,
                &x,
                &[
                    ("vllm_runtime", runtime(available)),
                    ("unrelated", runtime(other)),
                ],
                None,
            );
            let rsp = memoized(&memo, &req);
            assert_eq!(rsp, fresh(&req), "{tag}");
            rsp.desired.unwrap().resources["vllm_runtime"].ready
        };
        assert_eq!(ready("a", 0, 0), full::Ready::False as i32);
        assert_eq!(ready("b", 1, 0), full::Ready::True as i32);
        assert_eq!(memo.usage().0, 1, "one slot per XR and input");
        // A resource the composer does not read does not matter.
        assert_eq!(ready("c", 1, 5), full::Ready::True as i32);
    }

    #[test]
    fn earlier_steps_desired_state_is_kept_on_a_hit() {
        let memo = Memo::new(1 << 20);
        let x = xr("q", json!({}));
        for round in 0..2 {
            let mut req = request(&format!("d-{round}"), &x, &[], None);
            let earlier = to_wire(&full::RunFunctionRequest {
                desired: Some(full::State {
                    composite: Some(resource(
                        &json!({"apiVersion": "infer.dev/v1alpha1", "kind": "LLMInference", "status": {"fromEarlier": round}}),
                    )),
                    resources: [(format!("earlier-{round}"), resource(&runtime(round)))].into(),
                }),
                ..Default::default()
            });
            req.desired = earlier.desired;
            assert_eq!(memoized(&memo, &req), fresh(&req), "round {round}");
        }
    }

    #[test]
    fn memory_stays_within_the_budget() {
        let memo = Memo::new(64 * 1024);
        for i in 0..200 {
            let req = request("t", &xr(&format!("xr-{i}"), json!({})), &[], None);
            let _ = memoized(&memo, &req);
            assert!(memo.usage().1 <= 64 * 1024);
        }
        assert!(memo.usage().0 >= 2, "{:?}", memo.usage());
    }
}
