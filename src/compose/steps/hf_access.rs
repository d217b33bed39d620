//! Whether vLLM can download a model from Hugging Face without a token.
//!
//! Meta, Mistral AI and Google (Gemma) gate their repositories: only an
//! account that accepted the publisher's licence or contact form can
//! download them, so a model server without a token never starts (401,
//! "access to model ... is restricted"). The XR says so before its pods do.

/// Whether Hugging Face gates the repository `model_id` (`org/name`).
fn is_gated(model_id: &str) -> bool {
    let id = model_id.to_ascii_lowercase();
    let Some((org, name)) = id.split_once('/') else {
        return false;
    };
    match org {
        "meta-llama" | "mistralai" => true,
        "google" => name.starts_with("gemma"),
        _ => false,
    }
}

/// The (Secret, key) of the Hugging Face token a model server reads: the
/// XR's own, else its Model's, else the platform's.
pub(crate) fn token<'a>(
    own: Option<(&'a str, &'a str)>,
    model: Option<&'a (String, String)>,
    platform: Option<&'a (String, String)>,
) -> Option<(&'a str, &'a str)> {
    own.or_else(|| model.or(platform).map(|(n, k)| (n.as_str(), k.as_str())))
}

/// The warning for a gated Hugging Face model served without a token;
/// `token_field` names where the token goes. `model_url` is what vLLM
/// loads: object-store URIs download nothing from Hugging Face.
pub(crate) fn gated_without_token(
    model_url: &str,
    has_token: bool,
    token_field: &str,
) -> Option<String> {
    (!has_token && !model_url.contains("://") && is_gated(model_url)).then(|| {
        format!(
            "{model_url} is gated on Hugging Face (an account must accept its publisher's licence) and no token is \
             given: unless the platform's image or mirror provides one, vLLM cannot download it and the model \
             server never starts; set {token_field} to a Secret holding the token of an account that accepted it \
             (key token)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gated_publishers_need_a_token() {
        for (model, gated) in [
            ("meta-llama/Llama-3.1-8B-Instruct", true),
            ("mistralai/Mistral-7B-Instruct-v0.3", true),
            ("google/gemma-3-27b-it", true),
            ("google/flan-t5-xl", false),
            ("Qwen/Qwen2.5-7B-Instruct", false),
            ("s3://models/meta-llama/Llama-3.1-8B-Instruct", false),
            ("TinyLlama", false),
        ] {
            assert_eq!(
                gated_without_token(model, false, "spec.hfTokenSecretRef").is_some(),
                gated,
                "{model}"
            );
            assert_eq!(
                gated_without_token(model, true, "spec.hfTokenSecretRef"),
                None,
                "{model}"
            );
        }
    }
}
