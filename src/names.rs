//! Kubernetes names: the rules the API server checks them by, in one
//! place, and the names of composed objects and label values derived from
//! an XR's name.
//!
//! An XR's name is a DNS-1123 subdomain: up to 253 characters, dots allowed,
//! a digit first allowed (`70b-llama`, `llama.v3`). The kinds it names are
//! stricter: a Service needs a DNS-1035 label (a letter first, no dots, at
//! most 63 characters), and so does a VLLMRuntime, whose Service the operator
//! names after it; a label value holds at most 63 characters. A derived name
//! that already fits its kind is used as it is, so existing resources keep
//! their names; one that does not is rewritten to fit and made unique with a
//! hash of the XR's name, so it is stable across reconciles and two XRs never
//! share it.

/// Longest DNS-1035 or DNS-1123 label, and longest label value.
const LABEL_MAX: usize = 63;
/// Longest DNS-1123 subdomain.
const SUBDOMAIN_MAX: usize = 253;

/// A DNS-1035 label for `base` followed by `suffix` (such as `-model`):
/// the name of a Service, or of an object named after its Service.
pub(crate) fn dns1035_label(base: &str, suffix: &str) -> String {
    let name = [base, suffix].concat();
    if is_dns1035_label(&name) {
        return name;
    }
    let mut head: String = base
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9') => c,
            _ => '-',
        })
        .collect();
    if !head.starts_with(|c: char| c.is_ascii_lowercase()) {
        head.insert(0, 'x');
    }
    shortened(&head, base, suffix, LABEL_MAX)
}

/// `label` (a DNS-1035 label) cut to `max` characters with a hash of it,
/// when it is longer: for objects whose controllers derive longer names and
/// label values from theirs (a LeaderWorkerSet's StatefulSets and pods).
pub(crate) fn short_label(label: &str, max: usize) -> String {
    if label.len() <= max {
        return label.to_string();
    }
    shortened(label, label, "", max)
}

/// A DNS-1123 subdomain for `base` followed by `suffix`: the name of a
/// ConfigMap, Deployment, Ingress, autoscaler or disruption budget.
pub(crate) fn dns_subdomain(base: &str, suffix: &str) -> String {
    let name = [base, suffix].concat();
    if name.len() <= SUBDOMAIN_MAX {
        return name;
    }
    shortened(base, base, suffix, SUBDOMAIN_MAX)
}

/// A label value for `value` (an XR's or a Model's name): at most 63
/// characters, starting and ending with a letter or digit.
pub(crate) fn label_value(value: &str) -> String {
    if value.len() <= LABEL_MAX {
        return value.to_string();
    }
    shortened(value, value, "", LABEL_MAX)
}

/// `head` cut so that `head-HASH` + `suffix` holds `max` characters, where
/// HASH identifies `original`. Separators at the cut are dropped, so the
/// result still starts and ends with a letter or digit.
fn shortened(head: &str, original: &str, suffix: &str, max: usize) -> String {
    let hash = format!("{:08x}", fnv1a64(original.as_bytes()) as u32);
    let room = max.saturating_sub(suffix.len() + 1 + hash.len());
    let cut: String = head.chars().take(room).collect();
    let cut = cut.trim_end_matches(['-', '.', '_']);
    format!("{cut}-{hash}{suffix}")
}

/// A DNS-1035 label: a lower-case letter first, then lower-case letters,
/// digits and '-', not ending with '-', at most 63 characters.
pub(crate) fn is_dns1035_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= LABEL_MAX
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[b.len() - 1] != b'-'
}

/// A DNS-1123 subdomain as Kubernetes checks object and host names
/// (`IsDNS1123Subdomain`): at most 253 characters, dot-separated parts of
/// lower-case letters, digits and '-' that start and end with a letter or
/// digit. Unlike DNS, a part may be longer than 63 characters.
pub(crate) fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= SUBDOMAIN_MAX
        && s.split('.')
            .all(|part| is_dns1123_part(part, SUBDOMAIN_MAX))
}

/// A DNS-1123 label: what a namespace name must be.
pub(crate) fn is_dns1123_label(s: &str) -> bool {
    is_dns1123_part(s, LABEL_MAX)
}

fn is_dns1123_part(s: &str, max: usize) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= max
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// `value`, a user's name for an object or host, as a DNS-1123 subdomain.
pub(crate) fn require_subdomain(field: &str, value: &str, example: &str) -> Result<(), String> {
    if is_dns_subdomain(value) {
        Ok(())
    } else {
        Err(format!(
            "{field} is {}; use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', \
             starting and ending with a letter or digit (for example {example})",
            crate::quote::shown(value)
        ))
    }
}

/// An XR's `metadata.name`: a DNS-1123 subdomain of at most 63 characters,
/// because Crossplane labels the XR and everything it composes
/// `crossplane.io/composite=<name>` (its XRDs' CRDs say `maxLength: 63`).
pub(crate) fn require_xr_name(name: &str) -> Result<(), String> {
    if !is_dns_subdomain(name) {
        return Err(format!(
            "metadata.name is {}; use a DNS-1123 subdomain, as Kubernetes names objects: at most 253 characters of \
             lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example qwen-7b)",
            crate::quote::shown(name)
        ));
    }
    if name.len() > LABEL_MAX {
        return Err(format!(
            "metadata.name is {}; an XR's name is at most {LABEL_MAX} characters: Crossplane labels everything it \
             composes crossplane.io/composite=<XR name>, a label value is at most {LABEL_MAX} characters, and the \
             API server refuses longer XR names (for example qwen-7b)",
            crate::quote::shown_with_length(name)
        ));
    }
    Ok(())
}

/// `value`, a user's namespace name, as a DNS-1123 label.
pub(crate) fn require_dns1123_label(field: &str, value: &str, example: &str) -> Result<(), String> {
    if is_dns1123_label(value) {
        Ok(())
    } else {
        Err(format!(
            "{field} is {}; use at most 63 lower-case letters, digits and '-', starting and ending with a letter \
             or digit (for example {example})",
            crate::quote::shown(value)
        ))
    }
}

/// What a non-empty label value is, in words for messages.
pub(crate) const LABEL_VALUE_RULE: &str =
    "at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit";

/// A label value as Kubernetes checks it (`IsValidLabelValue`): empty, or
/// at most 63 letters, digits, '-', '_' and '.', starting and ending with a
/// letter or digit.
pub(crate) fn is_label_value(s: &str) -> bool {
    let b = s.as_bytes();
    b.is_empty()
        || (b.len() <= LABEL_MAX
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.')))
}

/// A label or taint key as Kubernetes checks it (`IsQualifiedName`): a
/// non-empty label value, after an optional DNS-1123 subdomain and '/'.
pub(crate) fn is_qualified_name(s: &str) -> bool {
    let (prefix, name) = match s.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, s),
    };
    prefix.is_none_or(is_dns_subdomain) && !name.is_empty() && is_label_value(name)
}

/// `key`, a label or taint key of `field`, as a qualified name.
pub(crate) fn require_qualified_name(field: &str, key: &str) -> Result<(), String> {
    if is_qualified_name(key) {
        return Ok(());
    }
    Err(format!(
        "{field}: the key {} is not a valid label key; use {LABEL_VALUE_RULE}, after an optional DNS prefix and \
         '/' (for example node.example.com/pool)",
        crate::quote::shown(key)
    ))
}

/// `key`, a key of a Secret or ConfigMap that a pod reads, as the API
/// server checks it (`IsConfigMapKey`): at most 253 letters, digits, '-',
/// '_' and '.', and not `.`, `..` or a name starting with `..`.
pub(crate) fn require_data_key(field: &str, key: &str, example: &str) -> Result<(), String> {
    let valid = !key.is_empty()
        && key.len() <= SUBDOMAIN_MAX
        && key
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        && key != "."
        && !key.starts_with("..");
    if valid {
        return Ok(());
    }
    Err(format!(
        "{field} is {}; a key of a Secret or ConfigMap is at most 253 letters, digits, '-', '_' and '.', and not \
         '.' or starting with '..' (for example {example})",
        crate::quote::shown(key)
    ))
}

/// `name`, a container's environment variable, as the API server checks it
/// since Kubernetes 1.32 (`IsRelaxedEnvVarName`): printable ASCII but '='.
/// Servers before it ask for a C identifier, which this also accepts.
pub(crate) fn require_env_var_name(field: &str, name: &str) -> Result<(), String> {
    if !name.is_empty()
        && name
            .bytes()
            .all(|c| (b' '..=b'~').contains(&c) && c != b'=')
    {
        return Ok(());
    }
    Err(format!(
        "{field} is {}; name the variable with printable ASCII characters other than '=' (for example \
         LOG_LEVEL)",
        crate::quote::shown(name)
    ))
}

/// The labels of a node selector, as the API server checks them.
pub(crate) fn require_labels<'a>(
    field: &str,
    labels: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> Result<(), String> {
    for (key, value) in labels {
        require_qualified_name(field, key)?;
        if !is_label_value(value) {
            return Err(format!(
                "{field}[{key:?}] is {}; a label value is empty or {LABEL_VALUE_RULE} (for example inference)",
                crate::quote::shown(value)
            ));
        }
    }
    Ok(())
}

/// FNV-1a, 64 bits: a short, stable hash (the same on every build and
/// platform, unlike std's `DefaultHasher`).
pub(crate) fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The name of a VLLMRuntime for an XR, `suffix` appended: the operator
/// names its Service after it, so it must be a DNS-1035 label, and never
/// `vllm`, since a Service of that name makes Kubernetes inject
/// `VLLM_PORT=tcp://...` into pods, which breaks vLLM.
/// The second value says why the name differs from the XR's, when it does.
pub(crate) fn runtime_name(xr_name: &str, suffix: &str) -> (String, Option<String>) {
    let name = dns1035_label(xr_name, suffix);
    if name == "vllm" {
        let reason = "The runtime and its Service are named vllm-server: a Service named vllm makes Kubernetes \
                      set VLLM_PORT in every pod of the namespace, which breaks vLLM.";
        return ("vllm-server".into(), Some(reason.into()));
    }
    let unchanged = name.strip_prefix(xr_name) == Some(suffix);
    let renamed = (!unchanged).then(|| {
        format!(
            "The runtime and its Service are named {name}: the operator names the Service after the runtime, and a \
             Service name must be a DNS-1035 label (a letter first, then lower-case letters, digits and '-', at most \
             63 characters), which {} is not.",
            crate::quote::shown(&format!("{xr_name}{suffix}"))
        )
    });
    (name, renamed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn data_keys_and_variable_names_as_the_api_server_takes_them() {
        for (key, valid) in [
            ("token", true),
            ("tls.crt", true),
            ("a..b", true),
            ("_x-1", true),
            ("", false),
            (".", false),
            ("..", false),
            ("..data", false),
            ("hf/token", false),
            ("a b", false),
        ] {
            assert_eq!(
                require_data_key("k", key, "token").is_ok(),
                valid,
                "{key:?}"
            );
        }
        assert!(require_data_key("k", &"a".repeat(253), "token").is_ok());
        assert!(require_data_key("k", &"a".repeat(254), "token").is_err());
        for (name, valid) in [
            ("LOG_LEVEL", true),
            ("1ST", true),
            ("my var", true),
            ("a.b-c", true),
            ("", false),
            ("A=B", false),
            ("caf\u{e9}", false),
            ("TAB\t", false),
        ] {
            assert_eq!(require_env_var_name("e", name).is_ok(), valid, "{name:?}");
        }
    }

    #[test]
    fn names() {
        for ok in ["a", "qwen.example.com", "a-b.c-d", "x1"] {
            assert!(require_subdomain("f", ok, "e").is_ok(), "{ok}");
        }
        for bad in [
            "",
            "A",
            "a_b",
            "-a",
            "a-",
            "a..b",
            "not a host!",
            &"a".repeat(254),
        ] {
            assert!(require_subdomain("f", bad, "e").is_err(), "{bad}");
        }
        // Kubernetes caps the whole name, not each dot-separated part.
        let long_part = format!("{}.hf-token", "a".repeat(64));
        assert!(require_subdomain("f", &long_part, "e").is_ok());
        assert!(require_dns1123_label("f", "team-a", "e").is_ok());
        assert!(require_dns1123_label("f", "a.b", "e").is_err());
    }

    /// Apimachinery's IsQualifiedName and IsValidLabelValue cases.
    #[test]
    fn label_keys_and_values() {
        for ok in [
            "pool",
            "node.example.com/pool",
            "kubernetes.io/hostname",
            "A_b.c-9",
            "nvidia.com/gpu.product",
            &"a".repeat(63),
        ] {
            assert!(is_qualified_name(ok), "{ok}");
        }
        for bad in [
            "",
            "/pool",
            "example.com/",
            "Example.com/pool",
            "a/b/c",
            "-pool",
            "pool_",
            "bad key!",
            &"a".repeat(64),
        ] {
            assert!(!is_qualified_name(bad), "{bad}");
        }
        for ok in ["", "inference", "NVIDIA-L4", "a.b_c-d", &"a".repeat(63)] {
            assert!(is_label_value(ok), "{ok}");
        }
        for bad in ["-a", "a-", "a b", "a/b", &"a".repeat(64)] {
            assert!(!is_label_value(bad), "{bad}");
        }
    }

    #[test]
    fn names_that_fit_are_kept() {
        assert_eq!(dns1035_label("llama-70b", ""), "llama-70b");
        assert_eq!(dns1035_label("pool", "-model"), "pool-model");
        assert_eq!(
            dns_subdomain("llama.v3", "-agent-config"),
            "llama.v3-agent-config"
        );
        assert_eq!(label_value("llama.v3"), "llama.v3");
    }

    #[test]
    fn names_that_do_not_fit_are_rewritten_with_a_hash() {
        let cases = [
            ("digit first", "70b-llama", "", "x70b-llama-"),
            ("dot", "llama.v3", "", "llama-v3-"),
            ("dot with suffix", "llama.v3", "-model", "llama-v3-"),
        ];
        for (reason, base, suffix, prefix) in cases {
            let name = dns1035_label(base, suffix);
            assert!(name.starts_with(prefix), "{reason}: {name}");
            assert!(name.ends_with(suffix), "{reason}: {name}");
            assert!(is_dns1035_label(&name), "{reason}: {name}");
            assert_eq!(name, dns1035_label(base, suffix), "{reason}: stable");
        }
        let long = "a".repeat(70);
        let name = dns1035_label(&long, "-model");
        assert_eq!(name.len(), 63);
        assert!(name.ends_with("-model"), "{name}");
        assert_eq!(label_value(&long).len(), 63);
        assert_eq!(short_label("llama-405b", 45), "llama-405b");
        let short = short_label(&long, 45);
        assert_eq!(short.len(), 45);
        assert!(is_dns1035_label(&short), "{short}");
        // Two XRs whose rewritten heads agree still get different names.
        assert_ne!(
            dns1035_label("llama.v3", ""),
            dns1035_label("llama-v3.", "")
        );
        assert_ne!(
            label_value(&format!("{long}x")),
            label_value(&format!("{long}y"))
        );
    }

    fn xr_name() -> impl Strategy<Value = String> {
        // DNS-1123 subdomains, as the API server admits XR names.
        proptest::string::string_regex("[a-z0-9]([a-z0-9.-]{0,250}[a-z0-9])?")
            .unwrap()
            .prop_filter("a subdomain", |s| is_dns_subdomain(s))
    }

    proptest! {
        #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn every_xr_name_gives_valid_names(name in xr_name(), suffix in prop::sample::select(vec!["", "-model", "-agent-config"])) {
            let service = dns1035_label(&name, suffix);
            prop_assert!(is_dns1035_label(&service), "{}", service);
            let object = dns_subdomain(&name, suffix);
            prop_assert!(is_dns_subdomain(&object), "{}", object);
            let label = label_value(&name);
            prop_assert!(label.len() <= 63);
            prop_assert!(label.starts_with(|c: char| c.is_ascii_alphanumeric()));
            prop_assert!(label.ends_with(|c: char| c.is_ascii_alphanumeric()));
        }
    }
}
