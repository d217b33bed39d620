//! The GPU catalog: what the engine knows about each accelerator.
//!
//! The data lives in `data/gpus.csv`, embedded at compile time so the binary
//! needs no files at run time, and is read once on first use.

use std::collections::HashMap;
use std::fmt;
use std::sync::LazyLock;

use serde::Deserialize;

use super::catalog_csv::{dash_is_none, list, rows, yes_no};
use super::error::SizingError;

const GPUS_CSV: &str = include_str!("data/gpus.csv");

/// A MIG slice's memory per GB of its nominal size where the catalog has no
/// measured size: about the lowest ratio measured (an H200 `1g.18gb` slice
/// has 16.0 GiB, 0.89; A100 and H100 slices 0.95 to 0.99).
const MIG_GIB_PER_NOMINAL_GB: f64 = 0.9;

/// The node label GPU feature discovery sets to a GPU's product name.
pub(crate) const GPU_PRODUCT_LABEL: &str = "nvidia.com/gpu.product";
/// The node label GKE sets to a GPU node's accelerator.
pub(crate) const GKE_ACCELERATOR_LABEL: &str = "cloud.google.com/gke-accelerator";
/// The node label GKE sets to the MIG profile its GPUs are split into
/// (1g.10gb); each partition counts as an nvidia.com/gpu.
pub(crate) const GKE_PARTITION_LABEL: &str = "cloud.google.com/gke-gpu-partition-size";
/// The node label GKE sets where GPUs are shared (time-sharing, MPS): each
/// share counts as an nvidia.com/gpu.
pub(crate) const GKE_SHARING_LABEL: &str = "cloud.google.com/gke-gpu-sharing-strategy";
/// The prefix of the extended resource a MIG slice is under the device
/// plugin's mixed strategy (`nvidia.com/mig-1g.10gb`).
pub(crate) const MIXED_MIG_RESOURCE_PREFIX: &str = "nvidia.com/mig-";
/// The node labels EKS Auto Mode sets to the EC2 instance's GPU.
pub(crate) const EKS_AUTO_MODE_GPU_LABELS: Ec2GpuLabels = Ec2GpuLabels {
    name: "eks.amazonaws.com/instance-gpu-name",
    memory: "eks.amazonaws.com/instance-gpu-memory",
};
/// The node labels Karpenter sets to the EC2 instance's GPU.
pub(crate) const KARPENTER_GPU_LABELS: Ec2GpuLabels = Ec2GpuLabels {
    name: "karpenter.k8s.aws/instance-gpu-name",
    memory: "karpenter.k8s.aws/instance-gpu-memory",
};
/// The node label the cloud sets to a node's instance type: on AKS, the
/// Azure VM size, which names its GPU.
pub(crate) const INSTANCE_TYPE_LABEL: &str = "node.kubernetes.io/instance-type";
/// The node label AMD's node labeller sets to the GPUs' PCI device ID.
pub(crate) const AMD_DEVICE_ID_LABEL: &str = "amd.com/gpu.device-id";
/// The node label AMD's node labeller sets to its GPUs' compute and memory
/// partitioning.
pub(crate) const AMD_PARTITION_LABEL: &str = "amd.com/gpu.compute-memory-partition";
/// [`AMD_PARTITION_LABEL`] of unpartitioned GPUs.
pub(crate) const WHOLE_AMD_GPU: &str = "spx_nps1";

/// One GPU model: a row of `data/gpus.csv`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gpu {
    /// Canonical name, e.g. `H100-80GB`.
    pub name: String,
    /// Other spellings that resolve to this GPU (normalised, see [`gpu`]).
    #[serde(deserialize_with = "list")]
    pub(crate) aliases: Vec<String>,
    /// `nvidia` or `amd`.
    pub(crate) vendor: String,
    /// Memory the driver reports, in GiB.
    pub(crate) memory_gib: f64,
    /// Total memory as vLLM sees it (`torch.cuda.mem_get_info`), in GiB:
    /// what `gpu-memory-utilization` is a share of.
    pub vllm_gib: f64,
    /// Marketed memory in GB, the unit of the vLLM recipes' sizing rule.
    pub(crate) nominal_gb: f64,
    /// Memory bandwidth in GB/s.
    #[serde(rename = "bandwidth")]
    pub(crate) bandwidth_gbps: f64,
    #[serde(deserialize_with = "yes_no")]
    pub(crate) bf16: bool,
    #[serde(deserialize_with = "yes_no")]
    pub(crate) fp8: bool,
    #[serde(deserialize_with = "yes_no")]
    pub(crate) fp4: bool,
    /// CUDA compute capability; `None` for AMD.
    #[serde(deserialize_with = "dash_is_none")]
    pub(crate) sm: Option<ComputeCapability>,
    /// GPUs in one node of the usual server.
    pub(crate) per_node: u32,
    /// Kubernetes extended resource of a whole GPU.
    #[serde(rename = "resource")]
    pub(crate) resource_name: String,
    /// The value of the [`GPU_PRODUCT_LABEL`] node label.
    #[serde(deserialize_with = "dash_is_none")]
    pub(crate) product_label: Option<String>,
    /// The values of the [`GKE_ACCELERATOR_LABEL`] node label.
    #[serde(rename = "gke", deserialize_with = "list")]
    pub(crate) gke_accelerators: Vec<String>,
    /// How EKS names the GPU on the nodes it provisions.
    #[serde(deserialize_with = "dash_is_none")]
    pub(crate) ec2: Option<Ec2Gpu>,
    /// The Azure VM sizes whose GPUs are this board, whole: the values of
    /// the [`INSTANCE_TYPE_LABEL`] node label on AKS.
    #[serde(rename = "azure", deserialize_with = "list")]
    pub(crate) azure_vm_sizes: Vec<String>,
    /// The values of the [`AMD_DEVICE_ID_LABEL`] node label: one product
    /// has several (bare metal, virtual function boards).
    #[serde(deserialize_with = "list")]
    pub(crate) amd_device_ids: Vec<String>,
    /// MIG profiles, smallest first; empty when the GPU has no MIG.
    #[serde(rename = "mig", deserialize_with = "list")]
    pub(crate) mig_profiles: Vec<MigProfile>,
}

/// A CUDA compute capability as vLLM compares it: `75` for 7.5 (Turing),
/// `80` for 8.0 (Ampere), `90` for 9.0 (Hopper).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ComputeCapability(pub(crate) u32);

impl ComputeCapability {
    /// Turing: the floor of vLLM's AWQ and W8A8 kernels.
    pub(crate) const TURING: Self = Self(75);
    /// Ampere: the floor of vLLM's Marlin kernels.
    pub(crate) const AMPERE: Self = Self(80);
    /// Blackwell Ultra (B300, GB300).
    pub(crate) const BLACKWELL_ULTRA: Self = Self(103);
}

impl fmt::Display for ComputeCapability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.0 / 10, self.0 % 10)
    }
}

impl TryFrom<String> for ComputeCapability {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        text.parse()
            .map(Self)
            .map_err(|_| format!("{text:?} is not a compute capability such as 80"))
    }
}

/// A provisioner's node labels for an EC2 instance's GPU: its name and its
/// memory in MiB.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Ec2GpuLabels {
    pub(crate) name: &'static str,
    pub(crate) memory: &'static str,
}

/// A GPU as EKS labels its nodes: EC2's name for it (`a100`) and, where
/// two GPUs share the name, the side of a memory bound its memory is on
/// (`a100>61440`: the 80 GB A100, not the 40 GB one).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ec2Gpu {
    pub(crate) name: String,
    /// A node affinity operator on the memory label (`Gt` or `Lt`), and
    /// its bound in MiB.
    pub(crate) memory_bound: Option<(&'static str, u64)>,
}

impl TryFrom<String> for Ec2Gpu {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        let Some(at) = text.find(['<', '>']) else {
            return Ok(Self {
                name: text,
                memory_bound: None,
            });
        };
        let operator = if text[at..].starts_with('>') {
            "Gt"
        } else {
            "Lt"
        };
        let mib = text[at + 1..]
            .parse()
            .map_err(|_| format!("{text:?} is not an EC2 GPU such as a100 or a100>61440"))?;
        Ok(Self {
            name: text[..at].to_string(),
            memory_bound: Some((operator, mib)),
        })
    }
}

/// One MIG profile of a GPU, e.g. `3g.40gb`.
#[derive(Debug, Clone, PartialEq)]
pub struct MigProfile {
    pub(crate) name: String,
    /// Compute slices (the `3` of `3g.40gb`).
    pub(crate) compute_slices: u32,
    /// Nominal memory in GB (the `40` of `3g.40gb`).
    pub(crate) memory_gb: u32,
    /// Memory CUDA sees on the slice, in GiB: the catalog's measured size
    /// (`3g.40gb=39.50`), else [`MIG_GIB_PER_NOMINAL_GB`] of the nominal.
    cuda_gib: f64,
}

impl TryFrom<String> for MigProfile {
    type Error = String;

    fn try_from(entry: String) -> Result<Self, String> {
        let invalid = || format!("{entry:?} is not a MIG profile such as 3g.40gb or 3g.40gb=39.50");
        let (name, measured) = match entry.split_once('=') {
            Some((name, gib)) => (name, Some(gib.parse::<f64>().map_err(|_| invalid())?)),
            None => (entry.as_str(), None),
        };
        let (compute_slices, memory_gb) = name
            .split_once("g.")
            .and_then(|(g, mem)| {
                let gb = mem.strip_suffix("gb")?;
                Some((g.parse().ok()?, gb.parse::<u32>().ok()?))
            })
            .ok_or_else(invalid)?;
        Ok(Self {
            name: name.to_string(),
            compute_slices,
            memory_gb,
            cuda_gib: measured.unwrap_or(f64::from(memory_gb) * MIG_GIB_PER_NOMINAL_GB),
        })
    }
}

impl MigProfile {
    /// Memory CUDA sees on the slice, in GiB: what vLLM's
    /// gpu-memory-utilization is a share of.
    pub(crate) fn usable_gib(&self) -> f64 {
        self.cuda_gib
    }

    /// The extended resource under the device plugin's `mixed` strategy.
    pub(crate) fn resource_name(&self) -> String {
        format!("{MIXED_MIG_RESOURCE_PREFIX}{}", self.name)
    }
}

impl Gpu {
    /// True when the GPU can be partitioned with MIG.
    pub fn has_mig(&self) -> bool {
        !self.mig_profiles.is_empty()
    }

    /// The profile called `name` (case-insensitive), if this GPU has it.
    pub(crate) fn mig_profile(&self, name: &str) -> Option<&MigProfile> {
        self.mig_profiles
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case(name))
    }

    /// Profile names, comma-separated, for messages.
    pub(crate) fn mig_profile_list(&self) -> String {
        let names: Vec<&str> = self.mig_profiles.iter().map(|p| p.name.as_str()).collect();
        names.join(", ")
    }
}

struct Catalog {
    gpus: Vec<Gpu>,
    by_key: HashMap<String, usize>,
}

static CATALOG: LazyLock<Catalog> = LazyLock::new(|| {
    let gpus: Vec<Gpu> = rows("gpus.csv", GPUS_CSV);
    let mut by_key = HashMap::new();
    for (i, g) in gpus.iter().enumerate() {
        let names = [&g.name]
            .into_iter()
            .chain(&g.aliases)
            .chain(&g.product_label)
            .chain(&g.gke_accelerators);
        for n in names {
            by_key.insert(normalize(n), i);
        }
    }
    Catalog { gpus, by_key }
});

/// Lowercase, `-` for spaces and underscores, vendor prefixes dropped:
/// `NVIDIA H100_80GB` and `nvidia-h100-80gb` both become `h100-80gb`.
fn normalize(name: &str) -> String {
    let mut s: String = name
        .trim()
        .chars()
        .map(|c| match c {
            ' ' | '_' => '-',
            c => c.to_ascii_lowercase(),
        })
        .collect();
    for prefix in ["nvidia-", "tesla-", "amd-", "instinct-"] {
        if let Some(rest) = s.strip_prefix(prefix) {
            s = rest.to_string();
        }
    }
    s
}

/// A warning when `name` is a board family sold with two memory sizes
/// (`A100`, `V100`): it resolves to the smaller one (GKE's
/// `nvidia-tesla-a100` is the 40 GB board), and a plan for the smaller
/// board takes more of the larger one's GPUs than it needs.
pub(crate) fn family_name_warning(name: &str, resolved: &Gpu) -> Option<String> {
    let larger = match name.trim().to_ascii_lowercase().as_str() {
        "a100" | "nvidia-a100" => "A100-80GB",
        "v100" | "nvidia-v100" => "V100-32GB",
        _ => return None,
    };
    Some(format!(
        "GPU type `{name}` names boards of two memory sizes; it is read as {} ({:.0} GB): name {larger} for the larger board, or {} to say this one",
        resolved.name, resolved.nominal_gb, resolved.name
    ))
}

/// Every GPU in the catalog.
pub fn gpus() -> &'static [Gpu] {
    &CATALOG.gpus
}

/// Canonical names, comma-separated, for messages.
pub fn gpu_names() -> String {
    let names: Vec<&str> = gpus().iter().map(|g| g.name.as_str()).collect();
    names.join(", ")
}

/// Looks a GPU up by any of its spellings: the canonical name, an alias, the
/// `nvidia.com/gpu.product` label or the GKE accelerator, ignoring case and
/// the vendor prefix.
pub fn gpu(name: &str) -> Result<&'static Gpu, SizingError> {
    CATALOG
        .by_key
        .get(&normalize(name))
        .map(|&i| &CATALOG.gpus[i])
        .ok_or_else(|| SizingError::UnknownGpu {
            name: name.to_string(),
            known: gpu_names(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_parses_and_names_are_unique() {
        assert!(gpus().len() >= 20);
        let mut keys = HashMap::new();
        for g in gpus() {
            // Labels are looked up too: a label that matched another entry
            // would silently resolve to whichever comes last.
            let labels = g.product_label.iter().chain(&g.gke_accelerators);
            for n in [&g.name].into_iter().chain(&g.aliases).chain(labels) {
                let prev = keys.insert(normalize(n), &g.name);
                assert!(prev.is_none() || prev == Some(&g.name), "{n} is ambiguous");
            }
            assert!(g.memory_gib > 0.0 && g.bandwidth_gbps > 0.0 && g.per_node > 0);
            // gpuNodeSelector needs a label that tells the GPU apart.
            assert!(
                g.product_label.is_some() || !g.amd_device_ids.is_empty(),
                "{} has no node label",
                g.name
            );
            assert!(
                g.vllm_gib > 0.9 * g.memory_gib && g.vllm_gib <= g.memory_gib,
                "{}",
                g.name
            );
        }
    }

    #[test]
    fn names_match_forgivingly() {
        let cases = [
            ("h100", "H100-80GB"),
            ("H100-80GB", "H100-80GB"),
            ("nvidia-h100-80gb", "H100-80GB"),
            ("NVIDIA-H100-80GB-HBM3", "H100-80GB"),
            ("H100-80GB-HBM3", "H100-80GB"),
            ("NVIDIA H100 80GB HBM3", "H100-80GB"),
            ("V100-16GB", "V100"),
            ("Tesla-V100-SXM2-16GB", "V100"),
            ("L4-24GB", "L4"),
            ("nvidia-l4", "L4"),
            ("A10G-24GB", "A10G"),
            ("L40S-48GB", "L40S"),
            ("H200-141GB", "H200"),
            ("nvidia-h200-141gb", "H200"),
            ("MI300X-192GB", "MI300X"),
            ("H20-96GB", "H20"),
            ("A100-40GB", "A100-40GB"),
            ("nvidia-tesla-a100", "A100-40GB"),
            ("NVIDIA-A100-SXM4-80GB", "A100-80GB"),
            ("Tesla-T4", "T4"),
            ("nvidia-tesla-t4", "T4"),
            ("H100-NVL", "H100-NVL"),
            ("NVIDIA-B200", "B200"),
            ("gb200", "GB200"),
            ("RTX PRO 6000 Blackwell", "RTX-PRO-6000"),
            ("mi325x", "MI325X"),
        ];
        for (input, want) in cases {
            assert_eq!(gpu(input).unwrap().name, want, "{input}");
        }
    }

    /// GPU feature discovery reports PCIe and NVL boards under their own
    /// `nvidia.com/gpu.product`, which node affinity matches exactly: their
    /// spellings must not resolve to the SXM entry, whose label they lack.
    #[test]
    fn pcie_and_nvl_boards_resolve_to_their_own_product_labels() {
        let cases = [
            ("h100-pcie", "H100-PCIe", "NVIDIA-H100-PCIe"),
            ("h100-pcie-80gb", "H100-PCIe", "NVIDIA-H100-PCIe"),
            ("NVIDIA-H100-PCIe", "H100-PCIe", "NVIDIA-H100-PCIe"),
            ("a100-pcie-80gb", "A100-80GB-PCIe", "NVIDIA-A100-80GB-PCIe"),
            ("a100-80gb-pcie", "A100-80GB-PCIe", "NVIDIA-A100-80GB-PCIe"),
            ("a100-pcie-40gb", "A100-40GB-PCIe", "NVIDIA-A100-PCIE-40GB"),
            (
                "NVIDIA-A100-PCIE-40GB",
                "A100-40GB-PCIe",
                "NVIDIA-A100-PCIE-40GB",
            ),
            ("v100-pcie-16gb", "V100-PCIe", "Tesla-V100-PCIE-16GB"),
            ("Tesla-V100-PCIE-16GB", "V100-PCIe", "Tesla-V100-PCIE-16GB"),
            ("v100-pcie-32gb", "V100-32GB-PCIe", "Tesla-V100-PCIE-32GB"),
            ("h200-nvl", "H200-NVL", "NVIDIA-H200-NVL"),
            ("NVIDIA-H200-NVL", "H200-NVL", "NVIDIA-H200-NVL"),
            // The SXM boards keep theirs.
            ("h100", "H100-80GB", "NVIDIA-H100-80GB-HBM3"),
            ("a100-sxm4-80gb", "A100-80GB", "NVIDIA-A100-SXM4-80GB"),
            ("a100-sxm4-40gb", "A100-40GB", "NVIDIA-A100-SXM4-40GB"),
            ("v100-sxm2-16gb", "V100", "Tesla-V100-SXM2-16GB"),
            ("v100-sxm2-32gb", "V100-32GB", "Tesla-V100-SXM2-32GB"),
            ("h200-sxm", "H200", "NVIDIA-H200"),
        ];
        for (input, name, label) in cases {
            let g = gpu(input).unwrap();
            assert_eq!(
                (g.name.as_str(), g.product_label.as_deref()),
                (name, Some(label)),
                "{input}"
            );
        }
    }

    /// A PCIe (or NVL) board is its SXM sibling with another label, its own
    /// bandwidth and no GKE accelerator (GKE's A100, H100 and H200 are SXM).
    #[test]
    fn pcie_boards_differ_from_their_sibling_in_label_and_bandwidth_only() {
        let cases = [
            ("H100-PCIe", "H100-80GB", 2000.0),
            ("A100-80GB-PCIe", "A100-80GB", 1935.0),
            ("A100-40GB-PCIe", "A100-40GB", 1555.0),
            ("V100-PCIe", "V100", 900.0),
            ("V100-32GB-PCIe", "V100-32GB", 900.0),
            ("H200-NVL", "H200", 4800.0),
        ];
        for (board, sibling, bandwidth_gbps) in cases {
            let (b, s) = (gpu(board).unwrap(), gpu(sibling).unwrap());
            let want = Gpu {
                name: board.to_string(),
                aliases: b.aliases.clone(),
                bandwidth_gbps,
                product_label: b.product_label.clone(),
                gke_accelerators: Vec::new(),
                ec2: None,
                // Azure's sizes name the board: each has its own.
                azure_vm_sizes: b.azure_vm_sizes.clone(),
                ..s.clone()
            };
            assert_eq!(b, &want, "{board}");
            assert_ne!(b.product_label, s.product_label, "{board}");
        }
    }

    /// AKS names a node's GPU by its VM size only: a size names one GPU.
    #[test]
    fn an_azure_vm_size_names_one_gpu() {
        let mut seen = HashMap::new();
        for g in gpus() {
            for size in &g.azure_vm_sizes {
                assert!(size.starts_with("Standard_N"), "{}: {size}", g.name);
                if let Some(other) = seen.insert(size.as_str(), g.name.as_str()) {
                    panic!("{size} names both {other} and {}", g.name);
                }
            }
        }
        assert_eq!(seen["Standard_NC40ads_H100_v5"], "H100-NVL");
    }

    /// EKS labels a GPU by EC2's name for it: where two GPUs share the
    /// name, each memory bound holds its own GPU's memory and not the other's.
    #[test]
    fn ec2_names_are_told_apart_by_memory() {
        let holds = |gpu: &Gpu, (operator, mib): (&str, u64)| {
            let memory_mib = gpu.memory_gib * 1024.0;
            match operator {
                "Gt" => memory_mib > mib as f64,
                _ => memory_mib < mib as f64,
            }
        };
        let named: Vec<(&Gpu, &Ec2Gpu)> = gpus()
            .iter()
            .filter_map(|g| Some((g, g.ec2.as_ref()?)))
            .collect();
        for (gpu, ec2) in &named {
            let sharing: Vec<&Gpu> = named
                .iter()
                .filter(|(other, o)| o.name == ec2.name && other.name != gpu.name)
                .map(|(other, _)| *other)
                .collect();
            match ec2.memory_bound {
                None => assert!(
                    sharing.is_empty(),
                    "{} shares {} unbounded",
                    gpu.name,
                    ec2.name
                ),
                Some(bound) => {
                    assert!(holds(gpu, bound), "{}", gpu.name);
                    assert!(!sharing.is_empty(), "{} needs no bound", gpu.name);
                    for other in sharing {
                        assert!(
                            !holds(other, bound),
                            "{} also holds {}'s bound",
                            other.name,
                            gpu.name
                        );
                    }
                }
            }
        }
        assert_eq!(
            gpu("A100-80GB").unwrap().ec2,
            Some(Ec2Gpu {
                name: "a100".into(),
                memory_bound: Some(("Gt", 61440)),
            })
        );
        assert!(Ec2Gpu::try_from("a100>lots".to_string()).is_err());
    }

    #[test]
    fn unknown_gpu_lists_known_ones() {
        assert_eq!(
            gpu("P100").unwrap_err().to_string(),
            format!(
                "unknown GPU type `P100`: known GPU types are {}",
                gpu_names()
            )
        );
        assert!(gpu_names().starts_with("T4, V100, V100-PCIe, V100-32GB, V100-32GB-PCIe, L4"));
    }

    /// A slice has less than its nominal GB in GiB and no more than the
    /// driver reports for the whole GPU (a 7g slice of an H100 has 79.25
    /// GiB, more than the 79.18 vLLM sees without MIG); a larger profile
    /// never has less memory than a smaller.
    #[test]
    fn measured_mig_sizes_are_plausible() {
        for g in gpus() {
            let mut by_nominal: Vec<&MigProfile> = g.mig_profiles.iter().collect();
            by_nominal.sort_by_key(|p| p.memory_gb);
            for p in &by_nominal {
                let nominal = f64::from(p.memory_gb);
                let gib = p.usable_gib();
                assert!(
                    gib > 0.85 * nominal && gib <= nominal,
                    "{} {}",
                    g.name,
                    p.name
                );
                assert!(gib <= g.memory_gib, "{} {}", g.name, p.name);
            }
            for pair in by_nominal.windows(2) {
                assert!(pair[0].usable_gib() <= pair[1].usable_gib(), "{}", g.name);
            }
        }
        assert!(MigProfile::try_from("1g.10gb=lots".to_string()).is_err());
    }

    #[test]
    fn mig_profiles_and_resources() {
        let h100 = gpu("h100").unwrap();
        assert_eq!(h100.mig_profiles.len(), 6);
        let p = h100.mig_profile("1G.10GB").unwrap();
        assert_eq!(p.resource_name(), "nvidia.com/mig-1g.10gb");
        assert!((p.usable_gib() - 9.75).abs() < 1e-9);
        // No measured size: 0.9 GiB per nominal GB.
        let b200 = gpu("b200").unwrap().mig_profile("1g.23gb").unwrap();
        assert!((b200.usable_gib() - 20.7).abs() < 1e-9);
        assert!(!gpu("L4").unwrap().has_mig());
        assert_eq!(gpu("mi300x").unwrap().resource_name, "amd.com/gpu");
        assert_eq!(
            gpu("t4").unwrap().product_label.as_deref(),
            Some("Tesla-T4")
        );
    }
}
