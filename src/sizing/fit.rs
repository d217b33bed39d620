//! The memory arithmetic of one layout: does a model fit on TP x PP devices?
//!
//! A layout holds the model when, on every GPU,
//! `weights/(TP x PP) + overhead + KV(tokens) <= utilization x memory`
//! (vLLM's own start-up check) and the layout's memory is at least 1.2 x the
//! weights (the vLLM recipes' minimum, which leaves room for a useful KV
//! cache). Every decision after the precision (MIG, layout, context) asks
//! this one question, so it lives apart from them.

use super::memory::GIB;
use super::model::Model;
use super::{Gpu, MigProfile};

/// The vLLM recipes' minimum VRAM: weights x 1.2.
pub const RECIPE_HEADROOM: f64 = 1.2;

/// One device the model runs on: a whole GPU or a MIG slice.
#[derive(Debug, Clone, Copy)]
pub struct Device {
    /// Memory the runtime sees, in GiB.
    pub gib: f64,
    /// Memory on the datasheet, in GB, as the recipes count it.
    pub nominal_gb: f64,
}

impl Device {
    pub fn gpu(gpu: &Gpu) -> Device {
        Device {
            gib: gpu.memory_gib,
            nominal_gb: gpu.nominal_gb,
        }
    }

    pub fn slice(p: &MigProfile) -> Device {
        Device {
            gib: p.usable_gib(),
            nominal_gb: f64::from(p.memory_gb),
        }
    }
}

/// Memory arithmetic for one model at one precision.
pub struct Sizer<'a> {
    pub model: &'a Model,
    pub weights_gib: f64,
    /// Bytes per KV cache element.
    pub kv_bytes: f64,
    pub util: f64,
}

/// One layout evaluated on one device size.
#[derive(Debug, Clone, Copy)]
pub struct Fit {
    pub device: Device,
    pub tp: u32,
    pub pp: u32,
    pub weights_per_gpu: f64,
    pub overhead: f64,
    pub kv_per_gpu: f64,
    pub need: f64,
    pub usable: f64,
    pub capacity_tokens: u64,
    pub recipe_ok: bool,
    pub raw_gb: f64,
}

impl Fit {
    pub fn fits(&self) -> bool {
        self.need <= self.usable && self.recipe_ok
    }
    pub fn holds_weights(&self) -> bool {
        self.weights_per_gpu + self.overhead < self.usable
    }
    pub fn devices(&self) -> u32 {
        self.tp * self.pp
    }
}

/// `2 x H100-80GB (TP 2, PP 1)`: how reasons and errors name a layout.
pub fn layout_name(gpu: &Gpu, tp: u32, pp: u32) -> String {
    format!("{} x {} (TP {tp}, PP {pp})", tp * pp, gpu.name)
}

impl Sizer<'_> {
    pub fn evaluate(&self, device: Device, tp: u32, pp: u32, tokens: u64) -> Fit {
        let n = f64::from(tp * pp);
        let usable = self.util * device.gib;
        let weights_per_gpu = self.weights_gib / n;
        let overhead = self.model.arch.overhead_gib();
        let per_token = self.model.arch.kv_bytes_per_token(self.kv_bytes, tp, pp);
        let kv_per_gpu = per_token * tokens as f64 / GIB;
        let free = usable - weights_per_gpu - overhead;
        let capacity_tokens = if free > 0.0 && per_token > 0.0 {
            (free * GIB / per_token).floor().min(1e15) as u64
        } else {
            0
        };
        let raw_gb = n * device.nominal_gb;
        Fit {
            device,
            tp,
            pp,
            weights_per_gpu,
            overhead,
            kv_per_gpu,
            need: weights_per_gpu + overhead + kv_per_gpu,
            usable,
            capacity_tokens,
            recipe_ok: raw_gb >= RECIPE_HEADROOM * self.weights_gb(),
            raw_gb,
        }
    }

    /// The same layout on the same device, for another number of tokens.
    pub fn refit(&self, fit: &Fit, tokens: u64) -> Fit {
        self.evaluate(fit.device, fit.tp, fit.pp, tokens)
    }

    pub fn weights_gb(&self) -> f64 {
        self.weights_gib * GIB / 1e9
    }

    /// The first candidate that holds `tokens`, and the last one that did not.
    pub fn search(
        &self,
        gpu: &Gpu,
        cands: &[(u32, u32)],
        tokens: u64,
    ) -> (Option<Fit>, Option<Fit>) {
        let mut last_miss = None;
        for &(tp, pp) in cands {
            let fit = self.evaluate(Device::gpu(gpu), tp, pp, tokens);
            if fit.fits() {
                return (Some(fit), last_miss);
            }
            last_miss = Some(fit);
        }
        (None, last_miss)
    }
}
