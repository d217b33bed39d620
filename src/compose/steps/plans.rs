//! Sizing plans, each distinct request sized once.
//!
//! A platform runs thousands of XRs on a handful of models and GPU types,
//! and Crossplane calls the function for each of them on every reconcile.
//! Sizing is pure but not free (a plan carries a dozen formatted reasons),
//! so composers ask here: the plan of a request seen recently is a copy of
//! the first one. The cache holds at most [`CAPACITY`] plans, a few KiB
//! each, and forgets the least recently used first.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{Mutex, OnceLock};

use crate::sizing::{self, Plan, SizingError, SizingRequest};

/// Distinct sizing requests remembered.
const CAPACITY: usize = 256;

/// Plans by request, least recently used forgotten first.
struct Cache {
    capacity: usize,
    inner: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    /// By [`bucket`] of the request; a hit is confirmed by comparing the
    /// whole request, so a field the bucket leaves out costs a shared
    /// bucket, never another request's plan.
    plans: HashMap<u64, Vec<Remembered>, foldhash::fast::RandomState>,
    clock: u64,
}

struct Remembered {
    request: SizingRequest,
    plan: Result<Plan, SizingError>,
    used: u64,
}

/// A hash of the fields that usually tell requests apart. Formatting the
/// whole request as a key cost more than half of a remembered plan, and
/// SipHash most of a lookup. Its seed is fixed: requests made to share a
/// bucket only lengthen a scan of at most [`CAPACITY`] plans.
fn bucket(request: &SizingRequest) -> u64 {
    foldhash::fast::FixedState::default().hash_one((
        &request.model_id,
        &request.gpu_type,
        request.gpu_count,
        request.max_model_len,
        request.checkpoint_bytes,
    ))
}

/// [`sizing::size`] of `request`, computed or remembered.
pub fn size(request: &SizingRequest) -> Result<Plan, SizingError> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(|| Cache::new(CAPACITY)).size(request)
}

impl Cache {
    fn new(capacity: usize) -> Self {
        Self {
            capacity,
            inner: Mutex::default(),
        }
    }

    fn size(&self, request: &SizingRequest) -> Result<Plan, SizingError> {
        let key = bucket(request);
        {
            let mut entries = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            entries.clock += 1;
            let now = entries.clock;
            if let Some(hit) = entries.find(key, request) {
                hit.used = now;
                return hit.plan.clone();
            }
        }
        // Sized outside the lock: other calls go on meanwhile.
        let plan = sizing::size(request);
        let mut entries = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let now = entries.clock;
        // Another call may have sized the same request meanwhile.
        if let Some(known) = entries.find(key, request) {
            known.used = now;
            return plan;
        }
        if entries.len() >= self.capacity {
            entries.forget_oldest();
        }
        entries.plans.entry(key).or_default().push(Remembered {
            request: request.clone(),
            plan: plan.clone(),
            used: now,
        });
        plan
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.inner.lock().unwrap().len()
    }

    #[cfg(test)]
    fn holds(&self, request: &SizingRequest) -> bool {
        self.inner
            .lock()
            .unwrap()
            .find(bucket(request), request)
            .is_some()
    }
}

impl Entries {
    fn len(&self) -> usize {
        self.plans.values().map(Vec::len).sum()
    }

    fn find(&mut self, key: u64, request: &SizingRequest) -> Option<&mut Remembered> {
        self.plans
            .get_mut(&key)?
            .iter_mut()
            .find(|r| r.request == *request)
    }

    fn forget_oldest(&mut self) {
        let oldest = self
            .plans
            .iter()
            .flat_map(|(key, bucket)| {
                bucket
                    .iter()
                    .enumerate()
                    .map(move |(i, r)| (r.used, *key, i))
            })
            .min();
        if let Some((_, key, i)) = oldest
            && let Some(bucket) = self.plans.get_mut(&key)
        {
            bucket.swap_remove(i);
            if bucket.is_empty() {
                self.plans.remove(&key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(model: &str) -> SizingRequest {
        SizingRequest {
            model_id: model.into(),
            gpu_type: "H100-80GB".into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_remembered_plan_is_the_plan_sizing_gives() {
        for model in [
            "Qwen/Qwen2.5-7B-Instruct",
            "meta-llama/Llama-3.1-70B-Instruct",
            "no/such-13b",
        ] {
            let fresh = sizing::size(&request(model));
            assert_eq!(size(&request(model)), fresh, "{model}, first");
            assert_eq!(size(&request(model)), fresh, "{model}, remembered");
        }
        // Requests in one bucket (it hashes some fields only) keep their own plans.
        let fp8 = SizingRequest {
            kv_cache_dtype: sizing::KvCacheDtype::Fp8,
            ..request("Qwen/Qwen2.5-7B-Instruct")
        };
        assert_eq!(bucket(&fp8), bucket(&request("Qwen/Qwen2.5-7B-Instruct")));
        assert_ne!(
            sizing::size(&fp8),
            sizing::size(&request("Qwen/Qwen2.5-7B-Instruct"))
        );
        assert_eq!(size(&fp8), sizing::size(&fp8));
        assert_eq!(size(&fp8), sizing::size(&fp8), "remembered");
        // Any field of the request makes it another request.
        let mut longer = request("Qwen/Qwen2.5-7B-Instruct");
        longer.max_model_len = Some(4096);
        assert_eq!(size(&longer), sizing::size(&longer));
        let refused = SizingRequest {
            gpu_type: "no-such-gpu".into(),
            ..request("Qwen/Qwen2.5-7B-Instruct")
        };
        assert!(size(&refused).is_err());
        assert_eq!(size(&refused), sizing::size(&refused));
    }

    #[test]
    fn it_holds_a_bounded_number_of_plans_and_keeps_the_used_ones() {
        let cache = Cache::new(4);
        let with_len = |n: u64| {
            let mut r = request("Qwen/Qwen2.5-1.5B-Instruct");
            r.max_model_len = Some(1024 * n);
            r
        };
        for n in 1..=10 {
            assert_eq!(cache.size(&with_len(n)), sizing::size(&with_len(n)));
            // The first request stays in use, so it is never the one forgotten.
            assert_eq!(cache.size(&with_len(1)), sizing::size(&with_len(1)));
            assert!(cache.len() <= 4, "{} plans", cache.len());
        }
        assert!(cache.holds(&with_len(1)));
    }
}
