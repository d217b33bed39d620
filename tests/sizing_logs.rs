//! Calibration against vLLM's own start-up logs.
//!
//! `tests/data/vllm-logs.csv` is `../shared/reference/vllm-logs-sample.csv`:
//! real vLLM start-up logs (source URL per row) with the memory vLLM saw, the
//! weights it loaded per GPU and the KV cache it kept. Each row is sized with
//! the layout, precision, utilization, context, KV dtype and vLLM version the
//! log ran with, and the engine's figures must match vLLM's within the
//! thresholds of issue 14. The engine implements formulas, not the rows:
//! rows of the same kind that are not in this file must pass too.

#[path = "support/csv.rs"]
mod csv;

use csv::fields;
use function_inference::sizing::{self, KvCacheDtype, MigChoice, SizingRequest, WeightPrecision};

/// Weights per GPU within 5% on at least 95% of rows.
const WEIGHTS_TOLERANCE: f64 = 0.05;
const WEIGHTS_RATE: f64 = 0.95;
/// KV bytes per token within 1% on at least 95% of rows.
const KV_BYTES_TOLERANCE: f64 = 0.01;
const KV_BYTES_RATE: f64 = 0.95;
/// KV capacity within 10% on at least 85% of rows...
const KV_CAPACITY_TOLERANCE: f64 = 0.10;
const KV_CAPACITY_RATE: f64 = 0.85;
/// ...over-predicted by at most 3% on average...
const KV_CAPACITY_MEAN_MAX: f64 = 0.03;
/// ...and by at most 25% on any row (the direction in which vLLM runs out
/// of memory where the plan said it fits).
const KV_CAPACITY_WORST: f64 = 0.25;

const GIB: f64 = 1_073_741_824.0;

#[derive(Debug)]
pub struct LogRow {
    pub model: String,
    pub engine_model: String,
    pub engine_gpu: String,
    pub tp: u32,
    pub pp: u32,
    pub engine_quant: String,
    pub kv_cache_dtype: String,
    pub util: f64,
    pub max_model_len: Option<u64>,
    pub vllm_version: String,
    pub weights_gib: Option<f64>,
    pub kv_gib: Option<f64>,
    pub kv_tokens: Option<u64>,
}

pub fn rows() -> Vec<LogRow> {
    let text = include_str!("data/vllm-logs.csv");
    let mut lines = text.lines();
    let header = fields(lines.next().unwrap());
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name}"))
    };
    let (model, engine_model, engine_gpu, tp, pp) = (
        col("model"),
        col("engine_model"),
        col("engine_gpu"),
        col("tp"),
        col("pp"),
    );
    let (quant, kv_dtype, util, len, version) = (
        col("engine_quant"),
        col("kv_cache_dtype"),
        col("gpu_memory_utilization"),
        col("max_model_len"),
        col("vllm_version"),
    );
    let (weights, kv_gib, kv_tokens) = (col("weights_gib"), col("kv_gib"), col("kv_tokens"));
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f = fields(l);
            assert_eq!(f.len(), header.len(), "{l}");
            let opt = |i: usize| (!f[i].trim().is_empty()).then(|| f[i].trim().to_string());
            LogRow {
                model: f[model].clone(),
                engine_model: f[engine_model].clone(),
                engine_gpu: f[engine_gpu].clone(),
                tp: f[tp].parse().unwrap(),
                pp: f[pp].parse().unwrap(),
                engine_quant: f[quant].clone(),
                kv_cache_dtype: f[kv_dtype].clone(),
                util: f[util].parse().unwrap(),
                max_model_len: opt(len).map(|v| v.parse().unwrap()),
                vllm_version: f[version].clone(),
                weights_gib: opt(weights).map(|v| v.parse().unwrap()),
                kv_gib: opt(kv_gib).map(|v| v.parse().unwrap()),
                kv_tokens: opt(kv_tokens).map(|v| v.parse().unwrap()),
            }
        })
        .collect()
}

/// The request a log's run corresponds to: its layout, precision,
/// utilization, context, KV dtype and vLLM version.
pub fn request(row: &LogRow) -> SizingRequest {
    let version = row
        .vllm_version
        .split_whitespace()
        .next()
        .filter(|v| !v.is_empty())
        .map(str::to_string);
    SizingRequest {
        model_id: row.engine_model.clone(),
        gpu_type: row.engine_gpu.clone(),
        quantization: Some(row.engine_quant.parse::<WeightPrecision>().unwrap()),
        max_model_len: row.max_model_len,
        gpu_count: Some(row.tp * row.pp),
        tensor_parallel: Some(row.tp),
        pipeline_parallel: Some(row.pp),
        mig: MigChoice::None,
        gpu_memory_utilization: row.util,
        kv_cache_dtype: row.kv_cache_dtype.parse::<KvCacheDtype>().unwrap(),
        vllm_version: version,
        ..SizingRequest::default()
    }
}

/// Share of `errors` within `tolerance`.
fn rate(errors: &[f64], tolerance: f64) -> f64 {
    errors.iter().filter(|e| e.abs() <= tolerance).count() as f64 / errors.len() as f64
}

#[test]
fn engine_matches_vllm_start_up_logs() {
    let rows = rows();
    assert!(rows.len() >= 20);
    let (mut weights, mut kv_bytes, mut kv_capacity) = (Vec::new(), Vec::new(), Vec::new());
    let mut kv_tokens = Vec::new();
    for row in &rows {
        let plan = sizing::size(&request(row))
            .unwrap_or_else(|e| panic!("{} on {}: refused: {e}", row.model, row.engine_gpu));
        let e = &plan.estimate;
        let mut line = format!("{:<58} {:>2}x{:<9}", row.model, row.tp, row.engine_gpu);
        if let Some(w) = row.weights_gib {
            let err = e.weights_per_gpu_gib / w - 1.0;
            weights.push(err);
            line += &format!(
                " weights {:6.2}/{:6.2} {:+6.1}%",
                e.weights_per_gpu_gib,
                w,
                err * 100.0
            );
        }
        if let (Some(g), Some(t)) = (row.kv_gib, row.kv_tokens) {
            let actual = g * GIB / t as f64;
            let err = e.kv_bytes_per_token_per_gpu / actual - 1.0;
            kv_bytes.push(err);
            line += &format!(" B/token {:+6.2}%", err * 100.0);
            kv_tokens.push(e.kv_capacity_tokens as f64 / t as f64 - 1.0);
        }
        if let Some(g) = row.kv_gib {
            let err = e.kv_cache_per_gpu_gib / g - 1.0;
            kv_capacity.push(err);
            line += &format!(
                " KV {:6.2}/{:6.2} GiB {:+6.1}%",
                e.kv_cache_per_gpu_gib,
                g,
                err * 100.0
            );
        }
        println!("{line}");
    }
    let mean = kv_capacity.iter().sum::<f64>() / kv_capacity.len() as f64;
    let worst = kv_capacity.iter().copied().fold(f64::MIN, f64::max);
    let figures = format!(
        "weights within 5%: {:.1}% of {}; KV bytes/token within 1%: {:.1}% of {}; KV capacity within 10%: {:.1}% of {}, mean {:+.2}%, worst {:+.1}%",
        rate(&weights, WEIGHTS_TOLERANCE) * 100.0,
        weights.len(),
        rate(&kv_bytes, KV_BYTES_TOLERANCE) * 100.0,
        kv_bytes.len(),
        rate(&kv_capacity, KV_CAPACITY_TOLERANCE) * 100.0,
        kv_capacity.len(),
        mean * 100.0,
        worst * 100.0
    );
    let tokens_mean = kv_tokens.iter().sum::<f64>() / kv_tokens.len() as f64;
    let tokens_worst = kv_tokens.iter().copied().fold(f64::MIN, f64::max);
    println!("{figures}");
    println!(
        "KV capacity in tokens within 10%: {:.1}% of {}, mean {:+.2}%, worst {:+.1}%",
        rate(&kv_tokens, KV_CAPACITY_TOLERANCE) * 100.0,
        kv_tokens.len(),
        tokens_mean * 100.0,
        tokens_worst * 100.0
    );
    // The same thresholds hold for the capacity in tokens (the rows that log
    // it), which also checks the bytes per token.
    assert!(rate(&kv_tokens, KV_CAPACITY_TOLERANCE) >= KV_CAPACITY_RATE);
    assert!(tokens_mean <= KV_CAPACITY_MEAN_MAX && tokens_worst <= KV_CAPACITY_WORST);
    assert!(
        rate(&weights, WEIGHTS_TOLERANCE) >= WEIGHTS_RATE,
        "{figures}"
    );
    assert!(
        rate(&kv_bytes, KV_BYTES_TOLERANCE) >= KV_BYTES_RATE,
        "{figures}"
    );
    assert!(
        rate(&kv_capacity, KV_CAPACITY_TOLERANCE) >= KV_CAPACITY_RATE,
        "{figures}"
    );
    assert!(mean <= KV_CAPACITY_MEAN_MAX, "{figures}");
    assert!(worst <= KV_CAPACITY_WORST, "{figures}");
}

/// The autoscaling target of each logged layout, for requests of 2,048
/// prompt and 512 output tokens, against the same arithmetic on the KV
/// capacity vLLM itself logged: the requests one replica holds at once,
/// min(max-num-seqs, logged KV tokens / 2,560), and 80 % of them. The
/// plan's target must be within 10 % (or one request) of the logged one on
/// as many rows as the KV capacity is, and never promise more requests than
/// the logged cache holds by more than the capacity's own worst error.
#[test]
fn the_scaling_target_matches_the_kv_capacity_vllm_logged() {
    let mut errors = Vec::new();
    for row in rows() {
        let Some(logged_tokens) = row.kv_tokens else {
            continue;
        };
        let plan = sizing::size(&request(&row)).unwrap();
        let shape = plan.request_shape(Some(2048), Some(512));
        let target = plan.scaling_target(shape, None);
        let logged_requests = (logged_tokens / 2560).min(target.engine_limit);
        let logged_target = ((logged_requests as f64 * sizing::TARGET_SHARE).floor() as u64).max(1);
        let diff = target.requests_per_replica as f64 - logged_target as f64;
        let err = if diff.abs() <= 1.0 {
            0.0
        } else {
            diff / logged_target as f64
        };
        println!(
            "{:<58} {:>2}x{:<9} target {:>4} from the logs {:>4} {:+6.1}%",
            row.model,
            row.tp,
            row.engine_gpu,
            target.requests_per_replica,
            logged_target,
            err * 100.0
        );
        errors.push(err);
    }
    assert!(
        errors.len() >= 15,
        "{} rows log their KV capacity",
        errors.len()
    );
    assert!(rate(&errors, KV_CAPACITY_TOLERANCE) >= KV_CAPACITY_RATE);
    let worst = errors.iter().copied().fold(f64::MIN, f64::max);
    assert!(
        worst <= KV_CAPACITY_WORST,
        "worst over-promise {:+.1}%",
        worst * 100.0
    );
}
