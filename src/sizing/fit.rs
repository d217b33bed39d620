//! The memory arithmetic of one layout: does a model fit on TP x PP devices?
//!
//! A layout holds the model when, on every GPU,
//! `weights per GPU + activation peak + non-torch + KV(tokens) <= utilization x memory`
//! (vLLM's own start-up check) and, when the objective keeps headroom, the
//! layout's memory is at least 1.2 x the weights (the vLLM recipes' minimum)
//! and the KV cache gets at least a sixth of the usable memory, which leaves
//! room for a useful KV cache. Every decision after the precision (MIG,
//! layout, context) asks this one question, so it lives apart from them.

use super::gpus::{Gpu, MigProfile};
use super::memory::{
    GIB, SMALLER_DEFAULT_MAX_NUM_SEQS, VllmGeneration, Weights, default_max_num_seqs, non_torch_gib,
};
use super::plan::SizingRequest;
use super::precision::Objective;
use super::resolved_model::Model;
use super::target::ContextTarget;

/// The vLLM recipes' minimum VRAM: weights x 1.2.
pub(crate) const RECIPE_HEADROOM: f64 = 1.2;
/// The same headroom measured as vLLM counts memory: the `balanced`
/// objective leaves at least this share of each GPU's usable memory to the
/// KV cache, after weights and overhead (1.2 x weights leaves 1/6).
pub(crate) const KV_SHARE: f64 = 1.0 / 6.0;

/// One device the model runs on: a whole GPU or a MIG slice.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Device {
    /// Memory vLLM sees, in GiB.
    pub(crate) gib: f64,
    /// Memory on the datasheet, in GB, as the recipes count it.
    pub(crate) nominal_gb: f64,
    /// vLLM's default `--max-num-seqs` there, which sets the sampler's
    /// warm-up peak.
    pub(crate) max_num_seqs: u64,
}

impl Device {
    pub(crate) fn gpu(gpu: &Gpu) -> Device {
        Device {
            gib: gpu.vllm_gib,
            nominal_gb: gpu.nominal_gb,
            max_num_seqs: default_max_num_seqs(gpu.vllm_gib, is_a100(gpu)),
        }
    }

    /// A slice of `gpu`: CUDA names it after the GPU (`NVIDIA A100-SXM4-80GB
    /// MIG 7g.80gb`), so vLLM's A100 exception holds on it too.
    pub(crate) fn slice(gpu: &Gpu, p: &MigProfile) -> Device {
        Device {
            gib: p.usable_gib(),
            nominal_gb: f64::from(p.memory_gb),
            max_num_seqs: default_max_num_seqs(p.usable_gib(), is_a100(gpu)),
        }
    }
}

fn is_a100(gpu: &Gpu) -> bool {
    gpu.name.starts_with("A100")
}

/// Memory arithmetic for one model at one precision.
#[derive(Clone)]
pub(crate) struct Sizer<'a> {
    pub(crate) model: &'a Model,
    pub(crate) weights: Weights,
    /// Bytes per KV cache element.
    pub(crate) kv_bytes: f64,
    pub(crate) util: f64,
    pub(crate) generation: VllmGeneration,
    pub(crate) objective: Objective,
    /// Whether a layout must also keep the recipes' headroom
    /// ([`Objective::keeps_headroom`]).
    pub(crate) headroom: bool,
    /// The server's own `--max-num-seqs`, over the device's default.
    pub(crate) max_num_seqs: Option<u64>,
    /// Whether the caller can set the server's `--max-num-seqs`
    /// ([`SizingRequest::max_num_seqs_settable`]).
    pub(crate) batch_settable: bool,
}

/// One layout evaluated on one device size.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fit {
    pub(crate) device: Device,
    pub(crate) tp: u32,
    pub(crate) pp: u32,
    pub(crate) weights_per_gpu: f64,
    /// Activation peak plus non-torch memory.
    pub(crate) overhead: f64,
    pub(crate) activation: f64,
    pub(crate) non_torch: f64,
    pub(crate) kv_per_gpu: f64,
    pub(crate) need: f64,
    pub(crate) usable: f64,
    pub(crate) capacity_tokens: u64,
    /// KV cache memory left per GPU after weights and overhead, in GiB.
    pub(crate) kv_free_gib: f64,
    pub(crate) recipe_ok: bool,
    /// The KV cache gets at least [`KV_SHARE`] of the usable memory (always
    /// true for the `minimal` objective).
    pub(crate) room_ok: bool,
    pub(crate) raw_gb: f64,
}

impl Fit {
    pub(crate) fn fits(&self) -> bool {
        self.need <= self.usable && self.recipe_ok && self.room_ok
    }
    pub(crate) fn holds_weights(&self) -> bool {
        self.weights_per_gpu + self.overhead < self.usable
    }
    pub(crate) fn devices(&self) -> u32 {
        self.tp * self.pp
    }
}

/// `2 x H100-80GB (TP 2, PP 1)`: how reasons and errors name a layout.
pub(crate) fn layout_name(gpu: &Gpu, tp: u32, pp: u32) -> String {
    format!("{} x {} (TP {tp}, PP {pp})", tp * pp, gpu.name)
}

impl<'a> Sizer<'a> {
    /// The sizer `req` asks for, for `model` at `weights` with `kv_bytes`
    /// per KV element: its utilization, vLLM release and objective, with the
    /// headroom the objective keeps for `ctx`.
    pub(crate) fn for_request(
        model: &'a Model,
        weights: Weights,
        kv_bytes: f64,
        req: &SizingRequest,
        ctx: &ContextTarget,
    ) -> Sizer<'a> {
        Sizer {
            model,
            weights,
            kv_bytes,
            util: req.gpu_memory_utilization,
            generation: VllmGeneration::from_version(req.vllm_version.as_deref()),
            objective: req.objective,
            headroom: req.objective.keeps_headroom(ctx.need_stated()),
            max_num_seqs: req.max_num_seqs,
            batch_settable: req.max_num_seqs_settable,
        }
    }

    /// The same sizer with other weights (another precision).
    pub(crate) fn with_weights(&self, weights: Weights) -> Sizer<'a> {
        Sizer {
            weights,
            ..self.clone()
        }
    }

    /// The same sizer on a server that batches vLLM's smaller default of
    /// sequences, where `device`'s default is larger and the caller can set
    /// `--max-num-seqs` and has not: the sampler's smaller warm-up peak then
    /// leaves room that a layout refused or overfull may need.
    pub(crate) fn with_smaller_batch(&self, device: Device) -> Option<Sizer<'a>> {
        (self.batch_settable
            && self.max_num_seqs.is_none()
            && device.max_num_seqs > SMALLER_DEFAULT_MAX_NUM_SEQS)
            .then(|| Sizer {
                max_num_seqs: Some(SMALLER_DEFAULT_MAX_NUM_SEQS),
                ..self.clone()
            })
    }

    /// The sequences vLLM batches on `device`: the server's `--max-num-seqs`,
    /// else vLLM's default there.
    pub(crate) fn sequences_on(&self, device: Device) -> u64 {
        self.max_num_seqs.unwrap_or(device.max_num_seqs)
    }

    pub(crate) fn evaluate(&self, device: Device, tp: u32, pp: u32, tokens: u64) -> Fit {
        let n = f64::from(tp * pp);
        let usable = self.util * device.gib;
        let arch = &self.model.arch;
        let weights_per_gpu = self.weights.per_gpu(arch.layers, tp, pp);
        let activation = arch.activation_gib(self.sequences_on(device), self.generation);
        let non_torch = non_torch_gib(tp, pp);
        let overhead = activation + non_torch;
        let per_token = arch.kv_bytes_per_token(self.kv_bytes, tp, pp);
        let kv_per_gpu = per_token * tokens as f64 / GIB;
        let free = usable - weights_per_gpu - overhead;
        let capacity_tokens = if free > 0.0 && per_token > 0.0 {
            (free * GIB / per_token).floor().min(1e15) as u64
        } else {
            0
        };
        let raw_gb = n * device.nominal_gb;
        let (recipe_ok, room_ok) = if self.headroom {
            (
                raw_gb >= RECIPE_HEADROOM * self.weights_gb(),
                free >= KV_SHARE * usable,
            )
        } else {
            (true, true)
        };
        Fit {
            device,
            tp,
            pp,
            weights_per_gpu,
            overhead,
            activation,
            non_torch,
            kv_per_gpu,
            need: weights_per_gpu + overhead + kv_per_gpu,
            usable,
            capacity_tokens,
            kv_free_gib: free.max(0.0),
            recipe_ok,
            room_ok,
            raw_gb,
        }
    }

    /// The same layout on the same device, for another number of tokens.
    pub(crate) fn refit(&self, fit: &Fit, tokens: u64) -> Fit {
        self.evaluate(fit.device, fit.tp, fit.pp, tokens)
    }

    pub(crate) fn weights_gb(&self) -> f64 {
        self.weights.total_gib * GIB / 1e9
    }

    /// The first candidate that holds `tokens`, and the miss a reason names:
    /// of the layouts with the most GPUs that did not hold it, the one that
    /// came closest (the least memory per GPU). Candidates come in order of
    /// GPU count, so the last miss tried is often the worst of its count
    /// (8 x L4 at PP 8 needs 22.6 GiB each where TP 8 needs 19.8).
    pub(crate) fn search(
        &self,
        gpu: &Gpu,
        cands: &[(u32, u32)],
        tokens: u64,
    ) -> (Option<Fit>, Option<Fit>) {
        let mut nearest_miss: Option<Fit> = None;
        for &(tp, pp) in cands {
            let fit = self.evaluate(Device::gpu(gpu), tp, pp, tokens);
            if fit.fits() {
                return (Some(fit), nearest_miss);
            }
            let nearer = nearest_miss.is_none_or(|m| {
                fit.devices() > m.devices() || (fit.devices() == m.devices() && fit.need < m.need)
            });
            if nearer {
                nearest_miss = Some(fit);
            }
        }
        (None, nearest_miss)
    }
}
