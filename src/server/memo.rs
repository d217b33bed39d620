//! A small, bounded memo of whole calls, so that steady-state reconciles
//! cost little more than the transport.
//!
//! Crossplane calls the function on every reconcile of every XR, and most of
//! those calls carry exactly what the previous one did. The core
//! (`crate::function::run_function`) is a pure function of its request, so
//! the memo wraps it from outside: a call that carries a request answered
//! before gets that answer again. Nothing in the core knows the memo
//! exists.
//!
//! A request is recognised by its tag when it has one. Crossplane tags each
//! request with a SHA-256 of its content, and the function spec promises
//! that requests with identical tags are otherwise identical. Their bytes
//! are not: Go encodes a `Struct`'s map in a random order on every call, so
//! the same reconcile never arrives twice in the same bytes. Crossplane
//! computes the tag before its fetching loop adds the resources a function
//! required, so those are compared too, and so is the request's encoded
//! length, which the order does not change: a client that reuses a tag for
//! a request of another length is caught. One that reuses it for a request
//! of the same length is not; it breaks the spec's promise, which
//! Crossplane's own response cache relies on too (it keys on the tag
//! alone). A request without a tag is recognised by its bytes, less its
//! meta.
//!
//! Memory is bounded by the bytes the entries hold; the least recently used
//! entries go first, so the entry of an XR's previous version ages out.
//! A hash of the key picks the slot; a hit is confirmed by comparing keys.
//!
//! A fleet with more XRs than the memo holds calls them in turn, and plain
//! LRU then evicts every entry before its XR comes round again: each call
//! would pay for a copy, an insertion and an eviction and never hit. So
//! once the memo is full, a new answer displaces an old one only if its
//! request was seen recently enough that an LRU of this budget would still
//! have held it. The memo remembers those sightings as hashes and sizes
//! only, a few bytes each; the entries it holds keep answering.

use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use prost::Message;

use crate::function::Call;
use crate::protocol::wire;

/// What [`Memo::look_up`] found.
enum LookUp {
    Hit(Arc<Entry>),
    /// Not answered before; whether the memo may keep the answer, its
    /// size allowing.
    Miss {
        may_keep: bool,
    },
}

/// What recognises a request (see the module documentation); the
/// requests it holds are in buffers of their own.
enum Key {
    Tagged {
        tag: String,
        /// The required resources and schemas, and nothing else.
        required: wire::RunFunctionRequest,
        /// The whole request's encoded length, less its meta.
        len: usize,
    },
    /// The request less its meta.
    Untagged(wire::RunFunctionRequest),
}

/// The part of a request that a tag does not cover.
fn required_part(req: &wire::RunFunctionRequest) -> wire::RunFunctionRequest {
    wire::RunFunctionRequest {
        required_resources: req.required_resources.clone(),
        required_schemas: req.required_schemas.clone(),
        ..Default::default()
    }
}

impl Key {
    /// Whether this key recognises `req` (less its meta), tagged `tag`.
    fn matches(&self, tag: &str, req: &wire::RunFunctionRequest) -> bool {
        match self {
            Key::Tagged {
                tag: t,
                required,
                len,
            } => {
                t == tag
                    && required.required_resources == req.required_resources
                    && required.required_schemas == req.required_schemas
                    && *len == req.encoded_len()
            }
            Key::Untagged(request) => tag.is_empty() && request == req,
        }
    }
}

/// One answered call: what recognises its request, and the call.
struct Entry {
    key: Key,
    call: Call,
    size: usize,
    /// When it last answered a call, on the memo's clock.
    used: AtomicU64,
}

/// The memo; shared by every call of a server.
///
/// Calls on all worker threads look entries up at once, so a lookup holds
/// the read lock only to clone an `Arc`; comparing the requests (kilobytes)
/// and marking the entry used happen outside any lock.
pub struct Memo {
    budget: usize,
    /// Picks an entry's slot; a hit is confirmed by comparing the requests.
    /// Seeded per process, so that no one can choose requests that share
    /// a slot and push each other out.
    hasher: foldhash::quality::RandomState,
    clock: AtomicU64,
    inner: RwLock<Slots>,
}

#[derive(Default)]
struct Slots {
    by_hash: HashMap<u64, Arc<Entry>>,
    bytes: usize,
    /// Requests answered but not remembered because the memo was full.
    seen: Sightings,
}

/// The hashes and sizes of recent requests the memo had no room for,
/// oldest first, up to the memo's budget in total size: the requests an
/// LRU of that budget would still hold.
#[derive(Default)]
struct Sightings {
    order: VecDeque<(u64, usize)>,
    /// How many times each hash is in `order`.
    count: HashMap<u64, u32>,
    bytes: usize,
}

impl Sightings {
    /// Whether an answer ever found no room. From then on only a request
    /// seen recently is kept: entries only replace others, so the memo
    /// stays full. (The latest sighting always stays: none is larger than
    /// the budget.)
    fn any(&self) -> bool {
        !self.order.is_empty()
    }

    /// Whether `hash` was seen within the budget; records this sighting.
    fn saw(&mut self, hash: u64, size: usize, budget: usize) -> bool {
        let seen = self.count.contains_key(&hash);
        self.order.push_back((hash, size));
        *self.count.entry(hash).or_default() += 1;
        self.bytes += size;
        while self.bytes > budget {
            let Some((old, old_size)) = self.order.pop_front() else {
                break;
            };
            self.bytes -= old_size;
            if let Some(n) = self.count.get_mut(&old) {
                *n -= 1;
                if *n == 0 {
                    self.count.remove(&old);
                }
            }
        }
        seen
    }
}

/// A copy of `request` decoded from one encoding of it, so that what an
/// entry holds is what the memo counts against its budget.
fn own_copy(request: &wire::RunFunctionRequest) -> wire::RunFunctionRequest {
    wire::RunFunctionRequest::decode(bytes::Bytes::from(request.encode_to_vec()))
        .expect("an encoded request decodes again")
}

impl Memo {
    /// A memo holding at most `budget_bytes` of entries.
    pub fn new(budget_bytes: usize) -> Self {
        Self {
            budget: budget_bytes,
            hasher: Default::default(),
            clock: AtomicU64::new(0),
            inner: RwLock::new(Slots::default()),
        }
    }

    /// `core`'s answer to `req`: remembered, or computed and remembered.
    pub fn answer(
        &self,
        mut req: wire::RunFunctionRequest,
        core: impl FnOnce(wire::RunFunctionRequest) -> Call,
    ) -> Call {
        let meta = req.meta.take();
        let tag = meta.as_ref().map(|m| m.tag.as_str()).unwrap_or_default();
        // Hashed where it lies, its resources' bytes in the buffers the
        // request was decoded into: a miss copies nothing. The leading
        // number keeps the two kinds of key apart.
        let hash = if tag.is_empty() {
            self.hasher.hash_one((1u8, &req))
        } else {
            self.hasher
                .hash_one((0u8, tag, &req.required_resources, &req.required_schemas))
        };
        let (key_size, key) = match self.look_up(hash, tag, &req) {
            // The same tag (or none, for bytes), so the answer already
            // carries the caller's.
            LookUp::Hit(entry) => return entry.call.clone(),
            // Measured on a miss only, and copied only when it may be kept
            // (see `own_copy`).
            LookUp::Miss { may_keep } => {
                let len = req.encoded_len();
                if tag.is_empty() {
                    let keep = may_keep && len <= self.budget / 4;
                    (len, keep.then(|| Key::Untagged(own_copy(&req))))
                } else {
                    let required = required_part(&req);
                    let key_size = tag.len() + required.encoded_len();
                    let key = may_keep.then(|| Key::Tagged {
                        tag: tag.to_string(),
                        required: own_copy(&required),
                        len,
                    });
                    (key_size, key)
                }
            }
        };
        req.meta = meta;
        let call = core(req);
        let size = key_size + call.response.encoded_len() + 256;
        // Asked even when the request was not kept: a miss is a sighting.
        if self.admits(hash, size)
            && let Some(key) = key
        {
            self.insert(
                hash,
                Entry {
                    key,
                    call: call.clone(),
                    size,
                    used: AtomicU64::new(0),
                },
            );
        }
        call
    }

    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The remembered answer to `request` (hashed `hash`), or whether the
    /// memo may keep the answer, its size allowing.
    fn look_up(&self, hash: u64, tag: &str, request: &wire::RunFunctionRequest) -> LookUp {
        let (entry, may_keep) = {
            let slots = self.inner.read().unwrap_or_else(|p| p.into_inner());
            let entry = slots.by_hash.get(&hash).cloned();
            let may_keep =
                entry.is_some() || !slots.seen.any() || slots.seen.count.contains_key(&hash);
            (entry, may_keep)
        };
        if let Some(entry) = entry.filter(|e| e.key.matches(tag, request)) {
            entry.used.store(self.tick(), Ordering::Relaxed);
            return LookUp::Hit(entry);
        }
        LookUp::Miss { may_keep }
    }

    /// Whether an answer of `size` bytes to the request hashed `hash` is to
    /// be remembered: always while there is room, and once the memo is full
    /// only if the request was seen recently (see the module's comment).
    fn admits(&self, hash: u64, size: usize) -> bool {
        if size > self.budget / 4 {
            return false;
        }
        let mut slots = self.inner.write().unwrap_or_else(|p| p.into_inner());
        if slots.bytes + size <= self.budget || slots.by_hash.contains_key(&hash) {
            return true;
        }
        slots.seen.saw(hash, size, self.budget)
    }

    /// Stores `entry`, replacing the slot's previous entry and evicting the
    /// least recently used ones beyond the budget.
    fn insert(&self, hash: u64, entry: Entry) {
        entry.used.store(self.tick(), Ordering::Relaxed);
        // Evicted entries are freed after the lock is released.
        let mut evicted = Vec::new();
        let mut slots = self.inner.write().unwrap_or_else(|p| p.into_inner());
        slots.bytes += entry.size;
        if let Some(old) = slots.by_hash.insert(hash, Arc::new(entry)) {
            slots.bytes -= old.size;
            evicted.push(old);
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
                evicted.push(e);
            }
        }
        drop(slots);
        drop(evicted);
    }

    /// Entries and bytes held, for tests.
    #[cfg(test)]
    fn usage(&self) -> (usize, usize) {
        let slots = self.inner.read().unwrap_or_else(|p| p.into_inner());
        (slots.by_hash.len(), slots.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::function::run_function;
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
        from_wire(&run_function(req.clone()).response).unwrap()
    }

    /// The memo's answer, and whether the core ran for it.
    fn memoized(memo: &Memo, req: &wire::RunFunctionRequest) -> (full::RunFunctionResponse, bool) {
        let mut ran = false;
        let call = memo.answer(req.clone(), |r| {
            ran = true;
            run_function(r)
        });
        assert_eq!(&*call.subject.kind, "LLMInference");
        (from_wire(&call.response).unwrap(), ran)
    }

    #[test]
    fn a_hit_answers_exactly_what_composing_again_would() {
        let memo = Memo::new(1 << 20);
        let ttl = json!({"apiVersion": "inference.fn.crossplane.io/v1beta1", "kind": "Input", "ttl": "5m"});
        let gpu = json!({"defaults": {"gpuType": "A100-80GB"}});
        let mut refused = xr("bad", json!({}));
        refused["spec"] = json!({"model": ""});
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
                "unread",
                xr("q", json!({})),
                vec![("vllm_runtime", runtime(1)), ("other", runtime(1))],
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
            ("refused", refused, vec![], None),
        ];
        // Tagged as Crossplane tags (the same content, the same tag), and
        // untagged, recognised by the bytes.
        for (name, x, observed, input) in cases {
            for tag in [name, ""] {
                for round in 0..2 {
                    let req = request(tag, &x, &observed, input.clone());
                    let (rsp, ran) = memoized(&memo, &req);
                    assert_eq!(rsp, fresh(&req), "{name} {tag:?}, round {round}");
                    assert_eq!(rsp.meta.unwrap().tag, tag);
                    assert_eq!(
                        ran,
                        round == 0,
                        "{name} {tag:?}, round {round}: the core runs once"
                    );
                }
            }
        }
    }

    /// `req` with its observed composite's objects (nested ones too, not
    /// those inside lists) encoded in reverse key order, as Go may send
    /// them: it encodes maps in a random order on every call.
    fn reordered(req: &wire::RunFunctionRequest) -> wire::RunFunctionRequest {
        fn reverse(s: &prost_types::Struct) -> Vec<u8> {
            let mut out = Vec::new();
            for (key, value) in s.fields.iter().rev() {
                let value = match &value.kind {
                    Some(prost_types::value::Kind::StructValue(inner)) => {
                        let mut v = Vec::new();
                        prost::encoding::bytes::encode(5, &reverse(inner), &mut v);
                        v
                    }
                    _ => value.encode_to_vec(),
                };
                let mut entry = Vec::new();
                prost::encoding::string::encode(1, key, &mut entry);
                prost::encoding::bytes::encode(2, &value, &mut entry);
                prost::encoding::bytes::encode(1, &entry, &mut out);
            }
            out
        }
        let full = from_wire_request(req);
        let composite = full.observed.as_ref().unwrap().composite.as_ref().unwrap();
        let mut resource = Vec::new();
        prost::encoding::bytes::encode(
            1,
            &reverse(composite.resource.as_ref().unwrap()),
            &mut resource,
        );
        let mut reordered = req.clone();
        reordered.observed.as_mut().unwrap().composite =
            Some(crate::protocol::raw_message::RawResource::decode(&resource[..]).unwrap());
        assert_ne!(reordered, *req, "the bytes differ");
        assert_eq!(from_wire_request(&reordered), full, "the content does not");
        reordered
    }

    fn from_wire_request(req: &wire::RunFunctionRequest) -> full::RunFunctionRequest {
        full::RunFunctionRequest::decode(&req.encode_to_vec()[..]).unwrap()
    }

    #[test]
    fn a_tagged_request_is_recognised_in_any_field_order() {
        let memo = Memo::new(1 << 20);
        let ready = |tag| {
            request(
                tag,
                &xr("q", json!({})),
                &[("vllm_runtime", runtime(1))],
                None,
            )
        };
        let req = ready("c0ffee");
        assert!(memoized(&memo, &req).1);
        let (rsp, ran) = memoized(&memo, &reordered(&req));
        assert!(!ran, "the same tag and content, in another order, is a hit");
        assert_eq!(rsp, fresh(&req));

        // Untagged, only the same bytes are recognised.
        let untagged = ready("");
        assert!(memoized(&memo, &untagged).1);
        assert!(memoized(&memo, &reordered(&untagged)).1);
        assert!(!memoized(&memo, &untagged).1);
    }

    #[test]
    fn a_tag_does_not_cover_the_resources_crossplane_adds_after_computing_it() {
        let memo = Memo::new(1 << 20);
        let first = request("c0ffee", &xr("q", json!({})), &[], None);
        assert!(memoized(&memo, &first).1);
        // Crossplane's fetching loop calls again with the same tag and the
        // resources the function required.
        let mut fetched = first.clone();
        fetched.required_resources.insert(
            "config".into(),
            wire::Resources {
                items: vec![crate::protocol::raw_message::RawResource::from_full(&resource(
                    &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
                ))],
            },
        );
        let (rsp, ran) = memoized(&memo, &fetched);
        assert!(ran, "new required resources are a new call");
        assert_eq!(rsp, fresh(&fetched));
        assert!(!memoized(&memo, &fetched).1);
        assert!(!memoized(&memo, &first).1);

        // A tag reused for a request of another length is not trusted.
        let other = request("c0ffee", &xr("another", json!({})), &[], None);
        let (rsp, ran) = memoized(&memo, &other);
        assert!(ran);
        assert_eq!(rsp, fresh(&other));
    }

    #[test]
    fn earlier_steps_desired_state_is_part_of_what_is_remembered() {
        let memo = Memo::new(1 << 20);
        let x = xr("q", json!({}));
        for round in 0..3 {
            let mut req = request(&format!("d-{round}"), &x, &[], None);
            let earlier = to_wire(&full::RunFunctionRequest {
                desired: Some(full::State {
                    composite: Some(resource(
                        &json!({"apiVersion": "infer.dev/v1alpha1", "kind": "LLMInference", "status": {"fromEarlier": round.min(1)}}),
                    )),
                    resources: [(
                        format!("earlier-{}", round.min(1)),
                        resource(&runtime(round)),
                    )]
                    .into(),
                }),
                ..Default::default()
            });
            req.desired = earlier.desired;
            let (rsp, ran) = memoized(&memo, &req);
            assert_eq!(rsp, fresh(&req), "round {round}");
            assert!(
                ran,
                "round {round}: a different earlier state is a different call"
            );
        }
    }

    #[test]
    fn a_fleet_larger_than_the_memo_still_gets_answers_from_it() {
        let reqs: Vec<_> = (0..12)
            .map(|i| {
                let name = format!("xr-{i}");
                request(&name, &xr(&name, json!({})), &[], None)
            })
            .collect();
        let one = memoized(&Memo::new(1 << 20), &reqs[0]);
        // Tagged, an entry holds the tag and the answer.
        let size = "xr-0".len() + from_wire_len(&one.0) + 256;
        // Room for four entries; the fleet of twelve is called in turn.
        let memo = Memo::new(4 * size + size / 2);
        let mut hits_per_round = Vec::new();
        for round in 0..3 {
            let mut hits = 0;
            for (i, req) in reqs.iter().enumerate() {
                let (rsp, ran) = memoized(&memo, req);
                assert_eq!(rsp, fresh(req), "round {round}, xr-{i}");
                hits += usize::from(!ran);
            }
            hits_per_round.push(hits);
        }
        // Plain LRU would evict each entry before its XR came round again
        // and hit none; the first four keep being answered.
        assert_eq!(hits_per_round, [0, 4, 4]);

        // A request seen twice while the memo is full displaces an entry.
        let newcomer = request("newcomer", &xr("newcomer", json!({})), &[], None);
        let ran: Vec<bool> = (0..3).map(|_| memoized(&memo, &newcomer).1).collect();
        assert_eq!(ran, [true, true, false]);
    }

    fn from_wire_len(rsp: &full::RunFunctionResponse) -> usize {
        rsp.encoded_len()
    }

    #[test]
    fn memory_stays_within_the_budget() {
        let memo = Memo::new(64 * 1024);
        for i in 0..200 {
            let name = format!("xr-{i}");
            let req = request(&name, &xr(&name, json!({})), &[], None);
            let _ = memoized(&memo, &req);
            assert!(memo.usage().1 <= 64 * 1024);
        }
        assert!(memo.usage().0 >= 2, "{:?}", memo.usage());
    }
}
