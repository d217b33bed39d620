//! The layers' modules a quantized checkpoint leaves in 16 bits, as its
//! quantization config lists them: modelopt's `exclude_modules` (globs, as
//! Python's fnmatch reads them), compressed-tensors' `ignore` (module names,
//! or regular expressions after `re:`) and `modules_to_not_convert`
//! (gpt-oss). NVIDIA's NVFP4 checkpoints keep attention, shared experts and
//! the dense layers in bf16, Kimi K2.5's int4 one its attention and shared
//! experts: sized as quantized, they would be under-counted by some 5 %.

use regex::Regex;

/// Where in a layer a module sits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Part {
    /// Attention: `self_attn` (DeepSeek-V4's `attn`).
    Attention,
    /// A linear-attention mixer (Qwen3.5's Gated DeltaNet): `linear_attn`.
    LinearAttention,
    /// The MLP or the experts: `mlp` (`ffn`, `block_sparse_moe`,
    /// `feed_forward`).
    Mlp,
    /// Experts beside a dense MLP (Gemma 4): `moe`.
    MoeBlock,
}

/// One module of a layer and its parameters.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Module {
    pub(crate) part: Part,
    /// Its names below the part, as the families of checkpoints write them
    /// (`shared_experts.down_proj`, Qwen's `shared_expert.down_proj`).
    pub(crate) names: &'static [&'static str],
    pub(crate) params: f64,
}

impl Module {
    pub(crate) fn new(part: Part, names: &'static [&'static str], params: f64) -> Module {
        Module {
            part,
            names,
            params,
        }
    }
}

/// The names a part goes by.
fn part_names(part: Part) -> &'static [&'static str] {
    match part {
        Part::Attention => &["self_attn", "attn"],
        Part::LinearAttention => &["linear_attn"],
        Part::Mlp => &["mlp", "ffn", "block_sparse_moe", "feed_forward"],
        Part::MoeBlock => &["moe"],
    }
}

/// What comes before `layers.` in the module names of the checkpoints:
/// plain, multimodal (Gemma 4, Qwen3.5; Kimi K2.5) and Nemotron's. MTP
/// layers (`mtp.layers.0`) are not among them: vLLM loads them only to
/// speculate.
const PREFIXES: [&str; 4] = [
    "model.",
    "model.language_model.",
    "language_model.model.",
    "backbone.",
];

/// The parameters, in billions, of the modules of `layers` (each layer's
/// modules, in order) that `excluded` names. A module is named when an
/// entry names it or the part or layer it belongs to.
pub(crate) fn excluded_params_b(excluded: &[String], layers: &[Vec<Module>]) -> f64 {
    let entries: Vec<Entry> = excluded.iter().filter_map(|e| Entry::read(e)).collect();
    // The prefixes the list writes, else the plain one (for `*.attn.*`).
    let mut prefixes: Vec<&str> = PREFIXES
        .into_iter()
        .filter(|p| {
            excluded
                .iter()
                .any(|e| e.starts_with(&format!("{p}layers.")))
        })
        .collect();
    if prefixes.is_empty() {
        prefixes.push(PREFIXES[0]);
    }
    let mut total = 0.0;
    for (i, modules) in layers.iter().enumerate() {
        let entries: Vec<&Entry> = entries.iter().filter(|e| e.may_name_layer(i)).collect();
        if entries.is_empty() {
            continue;
        }
        let named = |name: &str| entries.iter().any(|e| e.names(name));
        for module in modules {
            let is_named = prefixes.iter().any(|prefix| {
                let layer = format!("{prefix}layers.{i}");
                named(&layer)
                    || part_names(module.part).iter().any(|part| {
                        let part = format!("{layer}.{part}");
                        named(&part)
                            || module
                                .names
                                .iter()
                                .any(|name| named(&format!("{part}.{name}")))
                    })
            });
            if is_named {
                total += module.params;
            }
        }
    }
    total / 1e9
}

/// One entry of the list: a glob, which names a whole module name (Python's
/// fnmatch), or after `re:` an expression that matches from the name's
/// start (compressed-tensors' `re.match`).
enum Entry {
    Glob {
        pattern: glob::Pattern,
        /// The layer number the glob writes (`model.layers.12.self_attn*`),
        /// and whether a wildcard follows it (`model.layers.1*`: 1, 10,
        /// 11, ...).
        layer: Option<(String, bool)>,
    },
    Expression(Regex),
}

impl Entry {
    /// The entry, when it can name a layer's module (`lm_head`, the vision
    /// tower's and the embeddings' names cannot) and is well formed: a
    /// malformed one is passed over, as vLLM would never match it.
    fn read(entry: &str) -> Option<Entry> {
        if let Some(expression) = entry.strip_prefix("re:") {
            return Regex::new(&format!("^(?:{expression})"))
                .ok()
                .map(Entry::Expression);
        }
        if !entry.contains("layers") && !entry.starts_with('*') {
            return None;
        }
        let layer = entry.split_once("layers.").and_then(|(_, rest)| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            let wildcard = rest[digits.len()..].starts_with(['*', '?', '[']);
            (!digits.is_empty()).then_some((digits, wildcard))
        });
        Some(Entry::Glob {
            pattern: glob::Pattern::new(entry).ok()?,
            layer,
        })
    }

    /// Whether the entry can name something of layer `i`.
    fn may_name_layer(&self, i: usize) -> bool {
        match self {
            Entry::Glob {
                layer: Some((n, wildcard)),
                ..
            } => {
                let i = i.to_string();
                if *wildcard {
                    i.starts_with(n.as_str())
                } else {
                    i == *n
                }
            }
            _ => true,
        }
    }

    fn names(&self, name: &str) -> bool {
        match self {
            Entry::Glob { pattern, .. } => pattern.matches(name),
            Entry::Expression(expression) => expression.is_match(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two layers of a DeepSeek-like model: attention of 10 parameters in
    /// two projections, a dense MLP in layer 0, experts and shared experts
    /// in layer 1.
    fn layers() -> Vec<Vec<Module>> {
        let attention = || {
            vec![
                Module::new(Part::Attention, &["q_a_proj"], 4e9),
                Module::new(Part::Attention, &["o_proj"], 6e9),
            ]
        };
        let mut dense = attention();
        dense.push(Module::new(Part::Mlp, &["down_proj"], 20e9));
        let mut moe = attention();
        moe.push(Module::new(Part::Mlp, &["experts.0.down_proj"], 300e9));
        moe.push(Module::new(
            Part::Mlp,
            &["shared_experts.down_proj", "shared_expert.down_proj"],
            7e9,
        ));
        vec![dense, moe]
    }

    fn excluded(list: &[&str]) -> f64 {
        let list: Vec<String> = list.iter().map(|s| s.to_string()).collect();
        excluded_params_b(&list, &layers())
    }

    #[test]
    fn each_form_of_entry_names_its_modules() {
        // modelopt: a whole layer, a part, one projection.
        assert_eq!(excluded(&["lm_head", "model.layers.0*"]), 30.0);
        assert_eq!(
            excluded(&[
                "model.layers.1.mlp.shared_experts*",
                "model.layers.1.self_attn*"
            ]),
            17.0
        );
        assert_eq!(excluded(&["model.layers.1.self_attn.q_a_proj"]), 4.0);
        // A multimodal model's names, and wildcards over the layers.
        assert_eq!(
            excluded(&["model.language_model.layers.0.self_attn*"]),
            10.0
        );
        assert_eq!(excluded(&["*.attn.*", "*.mlp.shared_expert.*"]), 27.0);
        // gpt-oss names a part, without a wildcard after it.
        assert_eq!(excluded(&["model.layers.*.self_attn"]), 20.0);
        // compressed-tensors (Kimi K2.5): expressions matched from the start.
        assert_eq!(
            excluded(&[
                "lm_head",
                r"re:.*mlp\.(gate|up|gate_up|down)_proj.*",
                "re:.*self_attn.*",
                "re:.*shared_experts.*"
            ]),
            47.0
        );
        // A digit after the layer's number is another layer.
        assert_eq!(excluded(&["model.layers.1?.self_attn*"]), 0.0);
        // MTP layers, the vision tower and routers are not the layers'.
        assert_eq!(
            excluded(&["mtp.layers.0*", "model.visual*", "lm_head"]),
            0.0
        );
        assert_eq!(excluded(&["model.layers.1.mlp.gate"]), 0.0);
        // A malformed entry is passed over.
        assert_eq!(
            excluded(&["re:(", "model.layers.[0", "model.layers.0*"]),
            30.0
        );
        // A layer's number is matched as its glob writes it.
        assert_eq!(excluded(&["model.layers.1*"]), 317.0);
        assert_eq!(excluded(&["model.layers.[01].self_attn*"]), 20.0);
    }
}
