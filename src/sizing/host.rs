//! Pod-level numbers around the GPUs: CPU, memory, /dev/shm and the startup
//! probe budget.

use super::text::gib;

/// dot-inference's contract, kept as the floor: 2 CPU and 8 GiB per GPU.
pub(crate) const CPU_PER_GPU: u32 = 2;
pub(crate) const MEMORY_GIB_PER_GPU: u64 = 8;
/// Host memory beyond the weights while loading (Python, tokenizer, buffers).
pub(crate) const LOAD_MARGIN_GIB: f64 = 4.0;
/// /dev/shm for multi-rank runtimes: NCCL and vLLM's shared-memory broadcast.
/// vLLM's docs name 2Gi as a floor and production-stack uses 20Gi; 8Gi covers
/// eight ranks.
pub(crate) const SHM_SIZE: &str = "8Gi";
/// Startup budget: a fixed part for process start, CUDA graphs and
/// compilation, plus a per-GiB part for download and load (about 50 MiB/s).
pub(crate) const STARTUP_BASE_SECONDS: f64 = 300.0;
pub(crate) const STARTUP_SECONDS_PER_GIB: f64 = 20.0;
pub(crate) const STARTUP_MIN_SECONDS: u32 = 600;

/// Host resources of one replica.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Host {
    pub(crate) cpu: String,
    pub(crate) memory: String,
    pub(crate) memory_gib: u64,
    pub(crate) shm_size: Option<String>,
    pub(crate) startup_probe_seconds: u32,
}

/// `devices` is the GPUs (or MIG slices) of one replica, `ranks` its
/// TP x PP world size, `load_gib` the checkpoint bytes read through host
/// memory.
pub(crate) fn host(devices: u32, ranks: u32, load_gib: f64) -> Host {
    let floor = MEMORY_GIB_PER_GPU.saturating_mul(u64::from(devices));
    let load = (load_gib + LOAD_MARGIN_GIB).ceil().clamp(0.0, 1e12) as u64;
    let memory_gib = floor.max(load);
    let raw = STARTUP_BASE_SECONDS + STARTUP_SECONDS_PER_GIB * load_gib;
    let rounded = (raw / 60.0).ceil() * 60.0;
    // No upper cap: a probe shorter than the load would kill the pod just
    // before it serves, and it would start over for ever.
    let startup = rounded.max(f64::from(STARTUP_MIN_SECONDS)) as u32;
    Host {
        cpu: CPU_PER_GPU.saturating_mul(devices).to_string(),
        memory: format!("{memory_gib}Gi"),
        memory_gib,
        shm_size: (ranks > 1).then(|| SHM_SIZE.to_string()),
        startup_probe_seconds: startup,
    }
}

/// The host numbers as a reason, with the rules behind them.
pub(crate) fn host_reason(h: &Host, devices: u32, load_gib: f64) -> String {
    let shm = match &h.shm_size {
        Some(_) => format!("; /dev/shm {SHM_SIZE} for {devices} ranks"),
        None => String::new(),
    };
    format!(
        "Host: {} CPU and {} memory per replica (at least 2 CPU and 8 GiB per GPU; {} to load the weights plus 4 GiB){shm}; startup probe budget {} s (300 s + 20 s per GiB of weights, at least 600 s).",
        h.cpu,
        h.memory,
        gib(load_gib),
        h.startup_probe_seconds
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_models_keep_the_dot_inference_contract() {
        let h = host(1, 1, 2.9);
        assert_eq!((h.cpu.as_str(), h.memory.as_str()), ("2", "8Gi"));
        assert_eq!(h.shm_size, None);
        assert_eq!(h.startup_probe_seconds, 600);
        let h = host(2, 2, 2.9);
        assert_eq!((h.cpu.as_str(), h.memory.as_str()), ("4", "16Gi"));
        assert_eq!(h.shm_size.as_deref(), Some("8Gi"));
    }

    #[test]
    fn large_models_get_load_memory_and_time() {
        let h = host(8, 8, 625.0);
        assert_eq!(h.memory, "629Gi");
        // 300 + 20 x 625 = 12,800 s, rounded up to a minute: no cap.
        assert_eq!(h.startup_probe_seconds, 12_840);
        let h = host(2, 2, 65.7);
        assert_eq!(h.memory, "70Gi");
        assert_eq!(h.startup_probe_seconds, 1620);
    }
}
