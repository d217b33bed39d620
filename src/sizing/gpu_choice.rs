//! Choosing the GPU type: the same request sized on each GPU type a
//! platform offers, and the cheapest plan kept, with the runner-up and the
//! cost of each in its first reason.
//!
//! With prices (per GPU and hour, in any currency or relative units) the
//! cheapest replica wins; without them, the fewest GPUs, then the smallest
//! GPU type (by marketed memory, then by bandwidth: of two 80 GB GPUs the
//! older generation). Ties keep the platform's order. A replica on one node
//! beats one across nodes whatever the price: across nodes it needs a
//! multi-node runtime and the network between the nodes carries its
//! tensors.

use std::collections::BTreeMap;

use super::error::SizingError;
use super::gpus::gpu;
use super::plan::{Plan, SizingRequest};
use super::text::count_of;

/// Price of one GPU for one hour, by canonical GPU type name.
pub(crate) type GpuPrices = BTreeMap<String, f64>;

/// What one replica of `plan` costs per hour at `prices`: its GPUs, or its
/// MIG slices at their share of the GPU's memory (the share the slice's
/// bandwidth gets too).
pub(crate) fn hourly_cost(plan: &Plan, prices: &GpuPrices) -> Option<f64> {
    let price = prices.get(&plan.gpu.name)?;
    Some(price * f64::from(plan.gpu_count) * plan.gpu_share())
}

/// Sizes `request` on each of `offered` and keeps the cheapest plan. Its
/// first reason says why it won; when no offered type can serve, the error
/// says why for each.
pub fn cheapest(
    request: &SizingRequest,
    offered: &[String],
    prices: &GpuPrices,
) -> Result<Plan, SizingError> {
    let sized = offered.iter().map(|name| {
        let on_gpu = SizingRequest {
            gpu_type: name.clone(),
            ..request.clone()
        };
        (name.clone(), super::size(&on_gpu))
    });
    cheapest_of(sized, prices)
}

/// The refusal several GPU types all give alike: a fault of the request,
/// which no GPU type changes, to be said once.
pub(crate) fn shared_refusal<E: PartialEq>(refusals: &[E]) -> Option<&E> {
    match refusals {
        [first, rest @ ..] if !rest.is_empty() && rest.iter().all(|e| e == first) => Some(first),
        _ => None,
    }
}

/// [`cheapest`] over plans already sized, one per offered GPU type, in the
/// platform's order.
pub(crate) fn cheapest_of(
    sized: impl IntoIterator<Item = (String, Result<Plan, SizingError>)>,
    prices: &GpuPrices,
) -> Result<Plan, SizingError> {
    let mut offered = Vec::new();
    let mut plans = Vec::new();
    let mut refusals = Vec::new();
    let mut errors = Vec::new();
    let mut layout_too_small = true;
    for (name, sized) in sized {
        match sized {
            Ok(plan) => match plan.overflow() {
                Some(why) => refusals.push(format!("{name}: {why}")),
                None => plans.push(plan),
            },
            Err(e) => {
                layout_too_small &= matches!(e, SizingError::WeightsExceedGpu { .. });
                refusals.push(format!("{name}: {e}"));
                errors.push(e);
            }
        }
        offered.push(name);
    }
    // That one error names the field to change.
    if plans.is_empty()
        && errors.len() == refusals.len()
        && let Some(e) = shared_refusal(&errors)
    {
        return Err(e.clone());
    }
    if plans.is_empty() {
        return Err(SizingError::NoOfferedGpuServes {
            offered: offered.join(", "),
            why: refusals.join("; "),
            layout_too_small: layout_too_small && !refusals.is_empty(),
        });
    }
    // Stable: equal plans keep the platform's order.
    plans.sort_by(|a, b| {
        let cost = |p: &Plan| hourly_cost(p, prices).unwrap_or(0.0);
        (a.nodes > 1)
            .cmp(&(b.nodes > 1))
            .then(cost(a).total_cmp(&cost(b)))
            .then(a.gpu_count.cmp(&b.gpu_count))
            .then(a.gpu.nominal_gb.total_cmp(&b.gpu.nominal_gb))
            .then(a.gpu.bandwidth_gbps.total_cmp(&b.gpu.bandwidth_gbps))
    });
    let explanation = explain(&plans, refusals.len(), prices);
    let mut chosen = plans.swap_remove(0);
    chosen.reasons.insert(0, explanation);
    Ok(chosen)
}

/// "1 x L40S at 1.20/h beats 1 x A100-80GB at 2.10/h; then 1 x H100-80GB
/// at 4.10/h; 1 offered GPU type cannot serve it".
fn explain(ranked: &[Plan], refused: usize, prices: &GpuPrices) -> String {
    let with_cost = |p: &Plan| {
        let mut layout = match &p.mig_profile {
            Some(m) => format!("{} x {} {m}", p.gpu_count, p.gpu.name),
            None => format!("{} x {}", p.gpu_count, p.gpu.name),
        };
        if p.nodes > 1 {
            layout.push_str(&format!(" on {} nodes", p.nodes));
        }
        match hourly_cost(p, prices) {
            Some(c) => format!("{layout} at {c:.2}/h"),
            None => layout,
        }
    };
    let rule = if prices.is_empty() {
        "without prices, the fewest GPUs, then the smallest GPU type"
    } else {
        "the cheapest replica per hour"
    };
    let mixed = ranked.iter().any(|p| p.nodes > 1) && ranked.iter().any(|p| p.nodes == 1);
    let nodes_first = if mixed {
        "one node before several, then "
    } else {
        ""
    };
    let mut s = format!("GPU type chosen from the offered ones ({nodes_first}{rule}): ");
    s.push_str(&with_cost(&ranked[0]));
    match ranked.get(1) {
        Some(runner_up) => s.push_str(&format!(" beats {}", with_cost(runner_up))),
        None => s.push_str(", the only one that serves it"),
    }
    if ranked.len() > 2 {
        let rest: Vec<_> = ranked[2..].iter().map(with_cost).collect();
        s.push_str(&format!("; then {}", rest.join(", ")));
    }
    if refused > 0 {
        s.push_str(&format!(
            "; {} cannot serve it",
            count_of(refused as u64, "offered GPU type")
        ));
    }
    s
}

/// The largest price per GPU and hour: a replica of thousands of GPUs at it
/// still costs a finite number, where 1e308 made every cost `inf`.
const PRICE_MAX: f64 = 1e9;

/// Why one price as written cannot be used.
pub(crate) enum PriceFault {
    /// It names no GPU type of the catalog: the catalog's refusal.
    UnknownGpu(String),
    /// The number itself, said after the entry it is for: "is -1; give a
    /// positive price ...".
    Value(String),
}

/// One price as written, checked: the catalog's name of its GPU type and
/// the price, a positive number of at most [`PRICE_MAX`].
pub(crate) fn checked_price(name: &str, price: f64) -> Result<(String, f64), PriceFault> {
    let g = gpu(name).map_err(|e| PriceFault::UnknownGpu(e.to_string()))?;
    if !(price.is_finite() && price > 0.0) {
        return Err(PriceFault::Value(format!(
            "is {price}; give a positive price per GPU and hour (any currency, or relative costs such as 1 and 4.5)"
        )));
    }
    if price > PRICE_MAX {
        return Err(PriceFault::Value(format!(
            "is {price:e}, more than the {PRICE_MAX:e} per GPU and hour a price may be; give it in a larger unit, or as relative costs such as 1 and 4.5"
        )));
    }
    Ok((g.name.clone(), price))
}

/// Prices as a platform writes them under `field`, each checked
/// ([`checked_price`]) and keyed by canonical GPU type name, once.
pub(crate) fn canonical_prices(
    written: &BTreeMap<String, f64>,
    field: &str,
) -> Result<GpuPrices, String> {
    let mut prices = GpuPrices::new();
    for (name, &price) in written {
        let (gpu, price) = checked_price(name, price).map_err(|fault| match fault {
            PriceFault::UnknownGpu(e) => format!("{field}: {e}"),
            PriceFault::Value(why) => format!("{field}.{name} {why}"),
        })?;
        if prices.insert(gpu.clone(), price).is_some() {
            return Err(format!(
                "{field} prices {gpu} twice under different names; keep one"
            ));
        }
    }
    Ok(prices)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(model: &str) -> SizingRequest {
        SizingRequest {
            model_id: model.into(),
            mig: super::super::MigChoice::None,
            ..Default::default()
        }
    }

    fn offered(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    fn prices(list: &[(&str, f64)]) -> GpuPrices {
        list.iter().map(|(n, p)| (n.to_string(), *p)).collect()
    }

    #[test]
    fn without_prices_the_fewest_gpus_then_the_smallest_type_win() {
        let plan = cheapest(
            &request("meta-llama/Llama-3.1-70B-Instruct"),
            &offered(&["H100-80GB", "L4", "L40S", "A100-80GB"]),
            &GpuPrices::new(),
        )
        .unwrap();
        // A100-80GB and H100-80GB tie on count and memory; the A100's lower
        // bandwidth makes it the smaller type.
        assert_eq!((plan.gpu.name.as_str(), plan.gpu_count), ("A100-80GB", 4));
        assert_eq!(
            plan.reasons.first().unwrap(),
            "GPU type chosen from the offered ones (one node before several, then without prices, the fewest GPUs, then the smallest GPU type): 4 x A100-80GB beats 4 x H100-80GB; then 8 x L40S, 16 x L4 on 2 nodes"
        );
    }

    #[test]
    fn a_replica_on_one_node_beats_a_cheaper_one_across_nodes() {
        let plan = cheapest(
            &request("meta-llama/Llama-3.1-70B-Instruct"),
            &offered(&["L4", "H100-80GB"]),
            &prices(&[("L4", 0.5), ("H100-80GB", 4.10)]),
        )
        .unwrap();
        assert_eq!(plan.gpu.name, "H100-80GB");
        assert!(
            plan.reasons.first()
                .unwrap()
                .ends_with("(one node before several, then the cheapest replica per hour): 4 x H100-80GB at 16.40/h beats 16 x L4 on 2 nodes at 8.00/h"),
            "{:?}",
            plan.reasons.first()
        );
    }

    #[test]
    fn with_prices_the_cheapest_replica_wins_and_each_cost_is_stated() {
        let plan = cheapest(
            &request("meta-llama/Llama-3.1-70B-Instruct"),
            &offered(&["L40S", "H100-80GB"]),
            &prices(&[("L40S", 0.85), ("H100-80GB", 4.10)]),
        )
        .unwrap();
        assert_eq!((plan.gpu.name.as_str(), plan.gpu_count), ("L40S", 8));
        assert_eq!(
            plan.reasons.first().unwrap(),
            "GPU type chosen from the offered ones (the cheapest replica per hour): 8 x L40S at 6.80/h beats 4 x H100-80GB at 16.40/h"
        );
        // The rest of the reasons are the chosen plan's own.
        let direct = super::super::size(&SizingRequest {
            gpu_type: "L40S".into(),
            ..request("meta-llama/Llama-3.1-70B-Instruct")
        })
        .unwrap();
        assert!(plan.reasons.iter().skip(1).eq(direct.reasons.iter()));
    }

    #[test]
    fn a_type_that_cannot_serve_is_counted_and_all_failing_is_an_error_per_type_or_one_shared() {
        let plan = cheapest(
            &SizingRequest {
                gpu_count: Some(1),
                ..request("meta-llama/Llama-3.1-8B-Instruct")
            },
            &offered(&["T4", "L4"]),
            &GpuPrices::new(),
        )
        .unwrap();
        assert_eq!(plan.gpu.name, "L4");
        assert!(
            plan.reasons.first().unwrap().ends_with(
                "1 x L4, the only one that serves it; 1 offered GPU type cannot serve it"
            ),
            "{:?}",
            plan.reasons.first()
        );
        let err = cheapest(
            &SizingRequest {
                max_model_len: Some(131_072),
                gpu_count: Some(1),
                ..request("meta-llama/Llama-3.1-70B-Instruct")
            },
            &offered(&["L4", "T4"]),
            &GpuPrices::new(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("none of the offered GPU types (L4, T4) serves it: L4: "),
            "{err}"
        );
        assert!(err.contains("; T4: "), "{err}");
        // What no GPU type changes is the request's own error, once.
        let err = cheapest(
            &request("example/support-bot"),
            &offered(&["L4", "T4"]),
            &GpuPrices::new(),
        )
        .unwrap_err();
        assert!(
            matches!(err, SizingError::MissingParameterCount { .. }),
            "{err}"
        );
    }

    #[test]
    fn a_mig_slice_costs_its_share_of_the_gpu() {
        let plan = super::super::size(&SizingRequest {
            gpu_type: "A100-80GB".into(),
            mig: "3g.40gb".parse().unwrap(),
            ..request("Qwen/Qwen2.5-7B-Instruct")
        })
        .unwrap();
        let cost = hourly_cost(&plan, &prices(&[("A100-80GB", 2.0)])).unwrap();
        assert!((cost - 1.0).abs() < 1e-9, "{cost}");
    }

    #[test]
    fn prices_must_name_known_types_once_and_be_positive() {
        let written = |list: &[(&str, f64)]| -> BTreeMap<String, f64> {
            list.iter().map(|(n, p)| (n.to_string(), *p)).collect()
        };
        assert_eq!(
            canonical_prices(&written(&[("nvidia-h100-80gb", 4.1)]), "p").unwrap(),
            prices(&[("H100-80GB", 4.1)])
        );
        assert!(
            canonical_prices(&written(&[("H1000", 4.1)]), "p")
                .unwrap_err()
                .starts_with("p: unknown GPU type `H1000`")
        );
        assert_eq!(
            canonical_prices(&written(&[("L4", 0.0)]), "p").unwrap_err(),
            "p.L4 is 0; give a positive price per GPU and hour (any currency, or relative costs such as 1 and 4.5)"
        );
        assert_eq!(
            canonical_prices(&written(&[("H100-80GB", 4.1), ("h100", 4.0)]), "p").unwrap_err(),
            "p prices H100-80GB twice under different names; keep one"
        );
    }
}
