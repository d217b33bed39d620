//! Sizing plans, each distinct request sized once.
//!
//! A platform runs thousands of XRs on a handful of models and GPU types,
//! and Crossplane calls the function for each of them on every reconcile.
//! Sizing is pure but not free (a plan carries a dozen formatted reasons),
//! so composers ask here: the plan of a request seen recently is a copy of
//! the first one. The cache holds at most [`CAPACITY`] plans, a few KiB
//! each, and forgets the least recently used first.

use std::collections::HashMap;
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
    /// By the request's `Debug` form, which names every field and value.
    plans: HashMap<String, (Result<Plan, SizingError>, u64)>,
    clock: u64,
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
        let key = format!("{request:?}");
        {
            let mut entries = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            entries.clock += 1;
            let now = entries.clock;
            if let Some((plan, used)) = entries.plans.get_mut(&key) {
                *used = now;
                return plan.clone();
            }
        }
        // Sized outside the lock: other calls go on meanwhile.
        let plan = sizing::size(request);
        let mut entries = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if entries.plans.len() >= self.capacity
            && let Some(oldest) = entries
                .plans
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone())
        {
            entries.plans.remove(&oldest);
        }
        let now = entries.clock;
        entries.plans.insert(key, (plan.clone(), now));
        plan
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.inner.lock().unwrap().plans.len()
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
        let key = format!("{:?}", with_len(1));
        assert!(cache.inner.lock().unwrap().plans.contains_key(&key));
    }
}
