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
/// modules, in order) that `excluded` names. A module is named when the list
/// names it or the part or layer it belongs to.
pub(crate) fn excluded_params_b(excluded: &[String], layers: &[Vec<Module>]) -> f64 {
    let Some(named) = matcher(excluded) else {
        return 0.0;
    };
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
        for module in modules {
            let is_named = prefixes.iter().any(|prefix| {
                let layer = format!("{prefix}layers.{i}");
                named.is_match(&layer)
                    || part_names(module.part).iter().any(|part| {
                        let part = format!("{layer}.{part}");
                        named.is_match(&part)
                            || module
                                .names
                                .iter()
                                .any(|name| named.is_match(&format!("{part}.{name}")))
                    })
            });
            if is_named {
                total += module.params;
            }
        }
    }
    total / 1e9
}

/// One expression that matches what any entry names: a glob matches a
/// whole name (fnmatch), `re:` an expression from the name's start (as
/// compressed-tensors' `re.match`). `None` when no entry can name a layer's
/// module, or an expression is invalid (the list is then not read).
fn matcher(excluded: &[String]) -> Option<Regex> {
    let alternatives: Vec<String> = excluded
        .iter()
        .filter(|e| e.contains("layers") || e.starts_with('*') || e.starts_with("re:"))
        .map(|e| match e.strip_prefix("re:") {
            Some(expression) => format!("(?:{expression})"),
            None => format!("(?:{})$", glob(e)),
        })
        .collect();
    if alternatives.is_empty() {
        return None;
    }
    Regex::new(&format!("^(?:{})", alternatives.join("|"))).ok()
}

/// A glob as a regular expression: `*` any text, `?` one character, the
/// rest literally.
fn glob(pattern: &str) -> String {
    pattern
        .chars()
        .map(|c| match c {
            '*' => ".*".to_string(),
            '?' => ".".to_string(),
            c => regex::escape(&c.to_string()),
        })
        .collect()
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
        // An invalid expression reads as no list.
        assert_eq!(excluded(&["re:(", "model.layers.0*"]), 0.0);
    }
}
