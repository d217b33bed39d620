//! Checks of user-written strings and numbers that serde cannot express:
//! length limits and ranges (Kubernetes names are `crate::names`'s). The CRD schemas carry the same
//! limits, but the function must not rely on them: `render`, older CRDs and
//! hand-built requests skip the API server. Errors name the field and what
//! would be valid, and never echo more than a short prefix of a long value.

/// A non-blank string of at most `max` characters, in a field the spec may
/// leave out.
pub(crate) fn text(field: &str, value: &str, max: usize, example: &str) -> Result<(), String> {
    checked_text(field, value, max, example, " or omit it")
}

/// A non-blank string of at most `max` characters, in a field the spec
/// requires: the error does not offer to leave it out.
pub(crate) fn required_text(
    field: &str,
    value: &str,
    max: usize,
    example: &str,
) -> Result<(), String> {
    checked_text(field, value, max, example, "")
}

fn checked_text(
    field: &str,
    value: &str,
    max: usize,
    example: &str,
    or_omit: &str,
) -> Result<(), String> {
    if value.trim().is_empty() {
        return Err(format!(
            "{field} is empty; set it (for example {example}){or_omit}"
        ));
    }
    let n = value.chars().count();
    if n > max {
        return Err(format!(
            "{field} is {n} characters long; use at most {max} (for example {example})"
        ));
    }
    Ok(())
}

/// A string of at most `max` characters, as the schema's maxLength says.
pub(crate) fn at_most_chars(field: &str, value: &str, max: usize) -> Result<(), String> {
    let n = value.chars().count();
    if n > max {
        return Err(format!("{field} is {n} characters long; use at most {max}"));
    }
    Ok(())
}

/// A list of at most `max` entries, as the schema's maxItems says.
pub(crate) fn at_most<T>(field: &str, items: &[T], max: usize) -> Result<(), String> {
    if items.len() > max {
        return Err(format!(
            "{field} has {} entries; use at most {max}",
            items.len()
        ));
    }
    Ok(())
}

/// Refuses a part of an image reference (`docker.io`,
/// `vllm/vllm-openai:v0.19.0`) with white space in it: the API server
/// refuses it at either end, and the kubelet cannot pull it
/// (`InvalidImageName`) with it inside.
pub(crate) fn image_part(field: &str, value: &str, example: &str) -> Result<(), String> {
    if value.chars().any(char::is_whitespace) {
        return Err(format!(
            "{field} is {}; an image reference holds no white space (for example {example})",
            crate::quote::shown(value)
        ));
    }
    Ok(())
}

/// Refuses an image the kubelet cannot pull: it parses a pod's image with
/// the distribution reference grammar and refuses to start the container
/// otherwise (`InvalidImageName`), after the workload was created.
pub(crate) fn image_reference(field: &str, reference: &str, example: &str) -> Result<(), String> {
    match reference.parse::<oci_spec::distribution::Reference>() {
        Ok(_) => Ok(()),
        Err(_) => Err(format!(
            "{field}: the kubelet cannot pull {} (InvalidImageName); an image reference is an \
             optional registry host, then lower-case path parts of letters, digits, '.', '_' and \
             '-' separated by '/', then an optional :tag or @digest (for example {example})",
            crate::quote::shown(reference)
        )),
    }
}

/// Longest name part of a Hugging Face repository id.
const HF_NAME_MAX: usize = 96;

/// What keeps `id` from being a Hugging Face repository id, as
/// huggingface_hub's `validate_repo_id` (which vLLM's download runs) rules:
/// `name` or `org/name`, each part of ASCII letters, digits, '-', '_' and
/// '.', neither starting nor ending with '-' or '.', without "--" or "..",
/// the name at most 96 characters.
fn hugging_face_id_problem(id: &str) -> Option<String> {
    let parts: Vec<&str> = id.split('/').collect();
    if parts.len() > 2 {
        return Some(format!(
            "it has {} parts; an id has at most two, org/name",
            parts.len()
        ));
    }
    for part in &parts {
        if part.is_empty() {
            return Some("a part is empty".into());
        }
        if let Some(c) = part
            .chars()
            .find(|c| !c.is_ascii_alphanumeric() && !"-_.".contains(*c))
        {
            return Some(format!("{c:?} is not a letter, digit, '-', '_' or '.'"));
        }
        if part.starts_with(['-', '.']) || part.ends_with(['-', '.']) {
            return Some(format!("{part:?} starts or ends with '-' or '.'"));
        }
        if part.contains("--") || part.contains("..") {
            return Some(format!("{part:?} holds \"--\" or \"..\""));
        }
    }
    let name = parts[parts.len() - 1];
    (name.len() > HF_NAME_MAX).then(|| {
        format!(
            "its name is {} characters long; at most {HF_NAME_MAX}",
            name.len()
        )
    })
}

/// Why the function refuses the Hugging Face repository `id` when its name
/// says it holds GGUF files (`TheBloke/Llama-2-7B-GGUF`), or names one of
/// them as vLLM's `repo:quant` form does (`unsloth/Qwen3-0.6B-GGUF:Q4_K_M`).
/// By the bare id vLLM cannot start: it looks for the config.json and
/// safetensors weights such repositories lack. One file it loads, but, as
/// its GGUF guide says, experimentally and under-optimized (and from 0.24
/// only through a separate plugin); the sizing engine knows no GGUF quant
/// type and would size the name as its 16-bit model, several times the
/// memory.
fn gguf_repository(id: &str) -> Option<&'static str> {
    let repo = id.split(':').next()?;
    let name = repo.rsplit('/').next()?;
    name.to_ascii_lowercase().ends_with("gguf").then_some(
        "a repository of GGUF files, which function-inference does not serve: by its id vLLM finds no \
         safetensors checkpoint, and a GGUF file (id:quant) it loads only experimentally, under-optimized; name \
         the checkpoint it was converted from (its model card says which), or an AWQ, GPTQ or FP8 quantization \
         for less memory",
    )
}

/// Why a Hugging Face repository id is one vLLM cannot serve.
pub(crate) enum RepositoryProblem {
    /// The repository holds GGUF files; the text says why and what to name.
    Gguf(&'static str),
    /// The text is not an id at all; the text says which rule it breaks.
    NotAnId(String),
}

/// What keeps `id` from naming a repository vLLM serves. GGUF is asked
/// first: vLLM's `repo:quant` form would otherwise read as a bad character.
pub(crate) fn repository_problem(id: &str) -> Option<RepositoryProblem> {
    gguf_repository(id)
        .map(RepositoryProblem::Gguf)
        .or_else(|| hugging_face_id_problem(id).map(RepositoryProblem::NotAnId))
}

/// Refuses a model vLLM cannot load: it takes a Hugging Face repository id
/// or an absolute path to weights in the image, never a URI.
pub(crate) fn model_id(field: &str, value: &str) -> Result<(), String> {
    if value.starts_with('/') {
        return Ok(());
    }
    let takes = "it takes a Hugging Face id such as Qwen/Qwen2.5-7B-Instruct, or an absolute path to weights in \
                 the image";
    let shown = crate::quote::shown(value);
    if let Some((scheme, rest)) = value.split_once("://") {
        let page = rest
            .strip_prefix("huggingface.co/")
            .filter(|_| scheme.starts_with("http"));
        let instead = match (scheme, page) {
            ("hf", _) => format!(
                "write {} (hf:// belongs to a Model's weightsURI)",
                rest.trim_end_matches('/')
            ),
            (_, Some(id)) => format!(
                "write {}, not the repository's page",
                id.trim_end_matches('/')
            ),
            ("s3" | "gs", _) => {
                "for weights in a bucket, create a Model whose weightsURI names them and set \
                                 spec.modelRef to it"
                    .to_string()
            }
            _ => "vLLM loads no URI".to_string(),
        };
        return Err(format!("{field} is {shown}: {takes}; {instead}"));
    }
    match repository_problem(value) {
        None => Ok(()),
        Some(RepositoryProblem::Gguf(why)) => Err(format!("{field} is {shown}, {why}")),
        Some(RepositoryProblem::NotAnId(problem)) => {
            let revision = if value.contains([':', '@']) {
                "; for a revision, add \"--revision\" and it to spec.extraArgs"
            } else {
                ""
            };
            Err(format!(
                "{field} is {shown}, not a Hugging Face id ({problem}): {takes}{revision}"
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hugging_face_ids_follow_the_hubs_rule() {
        for (id, problem) in [
            ("Qwen/Qwen2.5-7B-Instruct", None),
            ("gpt2", None),
            ("TinyLlama/TinyLlama-1.1B-Chat-v1.0", None),
            ("a_b/c_d", None),
            (
                "Qwen/Qwen2.5-7B-Instruct/",
                Some("it has 3 parts; an id has at most two, org/name"),
            ),
            ("/Qwen", Some("a part is empty")),
            (
                "Qwen/Qwen2.5:main",
                Some("':' is not a letter, digit, '-', '_' or '.'"),
            ),
            ("Qwen/-x", Some("\"-x\" starts or ends with '-' or '.'")),
            ("Qwen/x.", Some("\"x.\" starts or ends with '-' or '.'")),
            ("Qwen/a--b", Some("\"a--b\" holds \"--\" or \"..\"")),
            ("Qwen/a..b", Some("\"a..b\" holds \"--\" or \"..\"")),
        ] {
            assert_eq!(hugging_face_id_problem(id).as_deref(), problem, "{id}");
        }
        let long = format!("org/{}", "x".repeat(97));
        assert_eq!(
            hugging_face_id_problem(&long).as_deref(),
            Some("its name is 97 characters long; at most 96")
        );
        assert_eq!(model_id("spec.model", "/models/llama-3.1-8b"), Ok(()));
    }

    #[test]
    fn gguf_repositories_are_refused_by_name() {
        for (id, gguf) in [
            ("TheBloke/Llama-2-7B-GGUF", true),
            ("unsloth/Qwen3-0.6B-GGUF", true),
            ("bartowski/Meta-Llama-3.1-8B-Instruct-gguf", true),
            ("Qwen/Qwen3-8B-AWQ", false),
            ("unsloth/gpt-oss-20b-BF16", false),
            ("gguf-org/Qwen3-8B", false),
            ("unsloth/Qwen3-0.6B-GGUF:Q4_K_M", true),
            ("unsloth/Qwen3-0.6B-GGUF:UD-IQ1_S", true),
            ("Qwen/Qwen3-8B:main", false),
        ] {
            assert_eq!(gguf_repository(id).is_some(), gguf, "{id}");
        }
        let e = model_id("spec.model", "TheBloke/Llama-2-7B-GGUF").unwrap_err();
        assert!(
            e.starts_with(
                "spec.model is \"TheBloke/Llama-2-7B-GGUF\", a repository of GGUF files, which function-inference \
                 does not serve"
            ),
            "{e}"
        );
        // vLLM's form for one file of it is not read as a revision.
        let e = model_id("spec.model", "unsloth/Qwen3-0.6B-GGUF:Q4_K_M").unwrap_err();
        assert!(
            e.starts_with(
                "spec.model is \"unsloth/Qwen3-0.6B-GGUF:Q4_K_M\", a repository of GGUF files"
            ),
            "{e}"
        );
        // A file in the image is the user's to name.
        assert_eq!(
            model_id("spec.model", "/models/llama-2-7b.Q4_K_M.gguf"),
            Ok(())
        );
    }

    #[test]
    fn long_values_are_cut_in_messages() {
        let e = text("spec.model", &"x".repeat(5000), 256, "m").unwrap_err();
        assert_eq!(
            e,
            "spec.model is 5000 characters long; use at most 256 (for example m)"
        );
    }
}
