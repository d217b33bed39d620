//! Calibration: the engine against published deployments.
//!
//! `tests/data/calibration.csv` lists real configurations (vLLM recipes and
//! tutorials, KubeAI, NIM profiles, GKE samples) with the GPU count their
//! authors chose. The engine must agree on the large majority, be within 2x
//! of every row, refuse none, never plan fewer GPUs than the weights need,
//! and only ever pick valid TP sizes.
//!
//! Issue 14 asks for 90% matches: the default objective (`balanced`)
//! matches 20 of 22 rows, `minimal` 18. `balanced` sizes for the context a
//! deployment states (KubeAI's one-H100 70B FP8 keeps room for two 16k
//! sequences at utilization 0.95) and keeps the recipes' headroom where it
//! states none (NIM's throughput profiles). The two rows it misses pull
//! against vLLM's memory model, and docs/sizing.md ("Calibration") says
//! why: TGI's nf4 70B on two L4s cannot start under vLLM, and the Qwen3-235B
//! FP8 recipe on MI300X uses TP 4 where two GPUs hold 17 sequences of its
//! context.
//!
//! One row differs from the shared table: production-stack's Qwen3-Next
//! deployment downloads the FP8 checkpoint (its init container runs `hf
//! download Qwen/Qwen3-Next-80B-A3B-Instruct-FP8`) and sets utilization
//! 0.60, where the table says bf16; 160 GB of bf16 weights cannot start on
//! two 80 GB GPUs.
//!
//! A KV floor of `k` full-length sequences for every row instead of the
//! recipes' weights multiple (tried for k = 1 to 16) never matches more
//! rows than `balanced`: the published deployments keep from 1 to over 100
//! sequences of room.

#[path = "support/csv.rs"]
mod csv;

use csv::fields;
use function_inference::sizing::{
    self, KvCacheDtype, Objective, SizingRequest, WeightPrecision, lookup_model,
};

/// Share of rows whose GPU count must match the published one, per objective.
const MIN_MATCH_RATE_BALANCED: f64 = 0.90;
const MIN_MATCH_RATE_MINIMAL: f64 = 0.81;
/// The same for `balanced`, on the rows vLLM can start as published.
const MIN_MATCH_RATE_STARTABLE: f64 = 0.90;

pub struct Row {
    pub model: String,
    pub params_b: f64,
    pub dtype: String,
    pub gpu: String,
    pub gpu_count: u32,
    pub tp: u32,
    pub max_model_len: Option<u64>,
    pub source: String,
}

pub fn rows() -> Vec<Row> {
    let text = include_str!("data/calibration.csv");
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f = fields(l);
            assert_eq!(f.len(), 8, "{l}");
            Row {
                model: f[0].clone(),
                params_b: f[1].parse().unwrap(),
                dtype: f[2].clone(),
                gpu: f[3].clone(),
                gpu_count: f[4].parse().unwrap(),
                tp: f[5].parse().unwrap(),
                max_model_len: (!f[6].is_empty()).then(|| f[6].parse().unwrap()),
                source: f[7].clone(),
            }
        })
        .collect()
}

/// "bf16 (kv fp8)" → bf16, "int4 (bitsandbytes-nf4, TGI)" → int4: the weights'
/// precision is the first word.
pub fn precision(dtype: &str) -> WeightPrecision {
    let word = dtype.split([' ', '(']).next().unwrap();
    word.parse()
        .unwrap_or_else(|_| panic!("unmapped dtype {dtype}"))
}

/// "bf16 (kv fp8)": the deployment runs an fp8 KV cache.
pub fn kv_cache_dtype(dtype: &str) -> KvCacheDtype {
    if dtype.contains("kv fp8") {
        KvCacheDtype::Fp8
    } else {
        KvCacheDtype::Auto
    }
}

/// "(gpu-mem-util 0.95)" in the source: the utilization the deployment set.
pub fn utilization(source: &str) -> Option<f64> {
    let rest = source.split("gpu-mem-util").nth(1)?;
    let value: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    value.parse().ok()
}

pub fn request(row: &Row) -> SizingRequest {
    SizingRequest {
        model_id: row.model.clone(),
        gpu_type: row.gpu.clone(),
        quantization: Some(precision(&row.dtype)),
        max_model_len: row.max_model_len,
        parameter_count: lookup_model(&row.model)
            .is_none()
            .then(|| format!("{}B", row.params_b)),
        kv_cache_dtype: kv_cache_dtype(&row.dtype),
        gpu_memory_utilization: utilization(&row.source)
            .unwrap_or(sizing::DEFAULT_GPU_MEMORY_UTILIZATION),
        ..SizingRequest::default()
    }
}

#[test]
fn calibration_rows() {
    let balanced = match_rate(Objective::Balanced);
    let minimal = match_rate(Objective::Minimal);
    assert!(
        balanced >= MIN_MATCH_RATE_BALANCED,
        "balanced: match rate {balanced:.3} below {MIN_MATCH_RATE_BALANCED}"
    );
    assert!(
        minimal >= MIN_MATCH_RATE_MINIMAL,
        "minimal: match rate {minimal:.3} below {MIN_MATCH_RATE_MINIMAL}"
    );
}

/// Sizes every row with `objective`; the share whose GPU count matches.
fn match_rate(objective: Objective) -> f64 {
    let rows = rows();
    assert!(rows.len() >= 20);
    let mut matches = 0;
    for row in &rows {
        let plan = sizing::size(&SizingRequest {
            objective,
            ..request(row)
        })
        .unwrap_or_else(|e| panic!("{} on {}: refused: {e}", row.model, row.gpu));
        // Within 2x of what was published, in both directions.
        assert!(
            plan.gpu_count <= 2 * row.gpu_count && row.gpu_count <= 2 * plan.gpu_count,
            "{} on {} ({objective}): {} GPUs, published {}",
            row.model,
            row.gpu,
            plan.gpu_count,
            row.gpu_count
        );
        // Valid TP for the model (vLLM rule) and a consistent layout.
        assert_eq!(
            plan.attention_heads % plan.tensor_parallel_size,
            0,
            "{}",
            row.model
        );
        let (kv, tp) = (plan.kv_heads, plan.tensor_parallel_size);
        assert!(kv % tp == 0 || tp % kv == 0, "{}", row.model);
        assert!(plan.mig_profile.is_some() || plan.gpu_count == tp * plan.pipeline_parallel_size);
        // Never fewer GPUs than the weights alone need.
        let floor = (plan.estimate.weights_gib / plan.estimate.gpu_capacity_gib).ceil() as u32;
        assert!(
            plan.gpu_count >= floor,
            "{}: {} < {floor}",
            row.model,
            plan.gpu_count
        );
        assert!(
            plan.warnings.iter().all(|w| !w.contains("out-of-memory")),
            "{:?}",
            plan.warnings
        );
        if plan.gpu_count == row.gpu_count {
            matches += 1;
        } else {
            println!(
                "MISMATCH ({objective}) {} {} on {}: engine {} (TP {} x PP {}), published {} (TP {}) [{}]\n  per GPU {:.1} of {:.1} GiB; {}",
                row.model,
                row.dtype,
                row.gpu,
                plan.gpu_count,
                plan.tensor_parallel_size,
                plan.pipeline_parallel_size,
                row.gpu_count,
                row.tp,
                row.source,
                plan.estimate.per_gpu_gib,
                plan.estimate.gpu_capacity_gib,
                plan.reasons
                    .iter()
                    .find(|r| r.contains("smallest layout"))
                    .map_or("", |s| s.as_str()),
            );
        }
    }
    let rate = f64::from(matches) / rows.len() as f64;
    println!(
        "calibration ({objective}): {matches}/{} rows match ({:.1}%)",
        rows.len(),
        rate * 100.0
    );
    rate
}

/// True when vLLM can start the row's model at its published GPU count:
/// weights, overhead and one sequence of the row's context fit.
fn starts_as_published(row: &Row) -> bool {
    sizing::size(&SizingRequest {
        objective: Objective::Minimal,
        gpu_count: Some(row.gpu_count),
        ..request(row)
    })
    .is_ok_and(|p| p.estimate.per_gpu_gib <= p.estimate.gpu_capacity_gib)
}

/// Rows whose GPU count `with` (a request from the row) matches.
fn matches(rows: &[Row], with: impl Fn(&Row) -> SizingRequest) -> usize {
    rows.iter()
        .filter(|r| sizing::size(&with(r)).is_ok_and(|p| p.gpu_count == r.gpu_count))
        .count()
}

#[test]
fn on_rows_vllm_can_start_as_published_balanced_matches_ninety_percent() {
    let (startable, not): (Vec<Row>, Vec<Row>) = rows().into_iter().partition(starts_as_published);
    for r in &not {
        println!(
            "cannot start as published: {} {} on {} x {}",
            r.model, r.dtype, r.gpu_count, r.gpu
        );
    }
    let matched = matches(&startable, request);
    let rate = matched as f64 / startable.len() as f64;
    println!(
        "calibration (balanced, startable rows): {matched}/{} ({:.1}%)",
        startable.len(),
        rate * 100.0
    );
    assert!(rate >= MIN_MATCH_RATE_STARTABLE, "{rate:.3}");
    assert!(
        not.len() <= 1,
        "{} rows cannot start as published",
        not.len()
    );
}

/// The alternative to the recipes' 1.2 x weights: `balanced` as a KV cache
/// that holds `k` sequences of the row's context. No `k` does better.
#[test]
fn a_kv_floor_in_sequences_matches_no_more_rows_than_balanced() {
    let rows = rows();
    let balanced = matches(&rows, request);
    for k in [1, 2, 3, 4, 6, 8, 12, 16] {
        let floor = matches(&rows, |r| SizingRequest {
            objective: Objective::Minimal,
            concurrency: Some(k),
            ..request(r)
        });
        println!("KV floor of {k} sequences: {floor}/{} rows", rows.len());
        assert!(floor <= balanced, "{k} sequences: {floor} > {balanced}");
    }
}
