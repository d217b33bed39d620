//! The files in package/ that are generated from the Rust types must be
//! current. Run `UPDATE_PACKAGE=1 cargo test --test package_files` after
//! changing a type, and review the diff like code.

use std::path::Path;

#[test]
fn generated_package_files_are_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let update = std::env::var_os("UPDATE_PACKAGE").is_some();
    let mut stale = Vec::new();
    for f in function_inference::package::files() {
        let path = root.join(f.path);
        if update {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &f.yaml).unwrap();
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(text) if text == f.yaml => {}
            _ => stale.push(f.path),
        }
    }
    assert!(
        stale.is_empty(),
        "stale generated files {stale:?}: run UPDATE_PACKAGE=1 cargo test --test package_files"
    );
}

#[test]
fn generated_files_parse_as_yaml_with_the_expected_kinds() {
    for f in function_inference::package::files() {
        let doc: serde_yaml::Value = serde_yaml::from_str(&f.yaml).unwrap();
        let kind = doc["kind"].as_str().unwrap();
        assert!(
            kind == "CustomResourceDefinition" || kind == "CompositeResourceDefinition",
            "{}: kind {kind}",
            f.path
        );
    }
}

/// The printer columns Crossplane appends to the CRD it derives from a
/// namespaced XRD (`CompositeResourcePrinterColumns`, internal/xcrd/schemas.go,
/// v2.2.0), by name and JSON path.
const CROSSPLANE_COLUMNS: [(&str, &str); 5] = [
    ("SYNCED", ".status.conditions[?(@.type=='Synced')].status"),
    ("READY", ".status.conditions[?(@.type=='Ready')].status"),
    ("COMPOSITION", ".spec.crossplane.compositionRef.name"),
    (
        "COMPOSITIONREVISION",
        ".spec.crossplane.compositionRevisionRef.name",
    ),
    ("AGE", ".metadata.creationTimestamp"),
];

/// A column an XRD declares that Crossplane adds too shows twice in
/// `kubectl get`.
#[test]
fn xrds_declare_no_column_crossplane_adds() {
    for (path, doc) in xrds() {
        for version in doc["spec"]["versions"].as_sequence().unwrap() {
            let columns = version["additionalPrinterColumns"].as_sequence().unwrap();
            assert!(!columns.is_empty(), "{}: its own columns", path.display());
            for c in columns {
                let name = c["name"].as_str().unwrap();
                let json_path = c["jsonPath"].as_str().unwrap();
                for (theirs, their_path) in CROSSPLANE_COLUMNS {
                    assert!(
                        !name.eq_ignore_ascii_case(theirs) && json_path != their_path,
                        "{}: column {name} ({json_path}) duplicates Crossplane's {theirs} ({their_path})",
                        path.display()
                    );
                }
            }
        }
    }
}

/// `kubectl explain` shows `<empty>` for a field without a description:
/// every field of each XRD, and the kind itself, says what it is.
#[test]
fn every_xrd_field_has_a_description() {
    fn undescribed(schema: &serde_yaml::Value, path: String, out: &mut Vec<String>) {
        if schema["description"].as_str().is_none_or(str::is_empty) {
            out.push(if path.is_empty() {
                "(the kind)".into()
            } else {
                path.clone()
            });
        }
        if let Some(props) = schema["properties"].as_mapping() {
            for (name, field) in props {
                undescribed(field, format!("{path}.{}", name.as_str().unwrap()), out);
            }
        }
        for (nested, mark) in [("items", "[]"), ("additionalProperties", "{}")] {
            if schema[nested]["properties"].is_mapping() {
                for (name, field) in schema[nested]["properties"].as_mapping().unwrap() {
                    undescribed(
                        field,
                        format!("{path}{mark}.{}", name.as_str().unwrap()),
                        out,
                    );
                }
            }
        }
    }
    let mut missing = Vec::new();
    for (_, doc) in xrds() {
        let kind = doc["spec"]["names"]["kind"].as_str().unwrap().to_string();
        for version in doc["spec"]["versions"].as_sequence().unwrap() {
            let mut fields = Vec::new();
            undescribed(
                &version["schema"]["openAPIV3Schema"],
                String::new(),
                &mut fields,
            );
            missing.extend(fields.into_iter().map(|f| format!("{kind} {f}")));
        }
    }
    assert!(
        missing.is_empty(),
        "no description (a doc comment on the Rust field):\n{}",
        missing.join("\n")
    );
}

/// Crossplane's `xpkg.ToDNSLabel` (internal/xpkg/name.go, v2.2.0): keeps
/// `[a-z0-9]`, turns `. / : -` into `-` except at the first, 63rd and last
/// byte, stops after the 63rd byte, and trims dashes.
fn to_dns_label(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut cut = String::new();
    for (i, &b) in bytes.iter().enumerate() {
        if b.is_ascii_lowercase() || b.is_ascii_digit() {
            cut.push(b as char);
        }
        if matches!(b, b'.' | b'/' | b':' | b'-') && i != 0 && i != 62 && i != bytes.len() - 1 {
            cut.push('-');
        }
        if i == 62 {
            break;
        }
    }
    cut.trim_matches('-').to_string()
}

/// The repository of a package reference: without its registry host and tag,
/// as go-containerregistry's `RepositoryStr` gives it.
fn repository(reference: &str) -> &str {
    let without_tag = reference.split(['@']).next().unwrap_or(reference);
    let without_tag = match without_tag.rfind(':') {
        Some(i) if !without_tag[i..].contains('/') => &without_tag[..i],
        _ => without_tag,
    };
    match without_tag.split_once('/') {
        Some((host, rest)) if host.contains(['.', ':']) || host == "localhost" => rest,
        _ => without_tag,
    }
}

/// Each XRD of the Configuration package, with its file: LLMInference,
/// Model and AgentPool.
fn xrds() -> Vec<(std::path::PathBuf, serde_yaml::Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("package/configuration");
    let mut xrds = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        for doc in yaml_docs(&path) {
            if doc["kind"].as_str() == Some("CompositeResourceDefinition") {
                xrds.push((path.clone(), doc));
            }
        }
    }
    assert_eq!(xrds.len(), 3, "LLMInference, Model and AgentPool");
    xrds
}

fn yaml_docs(path: &Path) -> Vec<serde_yaml::Value> {
    let text = std::fs::read_to_string(path).unwrap();
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .filter(|v: &serde_yaml::Value| !v.is_null())
        .collect()
}

#[test]
fn to_dns_label_matches_crossplanes_examples() {
    assert_eq!(
        to_dns_label(repository("xpkg.crossplane.io/acme/function-foo")),
        "acme-function-foo"
    );
    assert_eq!(
        repository("ghcr.io/function-inference/function-inference:v0.1.0"),
        "function-inference/function-inference"
    );
    assert_eq!(repository("localhost:5000/a/b@sha256:00"), "a/b");
    assert_eq!(to_dns_label("-Ab.c-"), "b-c");
}

/// Crossplane installs the Configuration's Function dependency under
/// `ToDNSLabel(repository)`; every Composition shipped (and the Function used
/// to render them) must call it by that name, or the pipeline finds no function.
#[test]
fn every_function_ref_names_the_installed_dependency() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let meta = &yaml_docs(&root.join("package/configuration/crossplane.yaml"))[0];
    let function_deps: Vec<&str> = meta["spec"]["dependsOn"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter(|d| d["kind"].as_str() == Some("Function"))
        .map(|d| d["package"].as_str().unwrap())
        .collect();
    assert_eq!(function_deps.len(), 1, "one Function dependency");
    let installed = to_dns_label(repository(function_deps[0]));
    assert_eq!(installed, "function-inference-function-inference");

    let mut compositions = Vec::new();
    for dir in ["package/configuration", "examples/compat/dot-inference"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            for doc in yaml_docs(&path) {
                if doc["kind"].as_str() == Some("Composition") {
                    compositions.push((path.clone(), doc));
                }
            }
        }
    }
    assert_eq!(
        compositions.len(),
        4,
        "three kinds and the dot-inference compatibility example"
    );
    for (path, doc) in compositions {
        for step in doc["spec"]["pipeline"].as_sequence().unwrap() {
            assert_eq!(
                step["functionRef"]["name"].as_str(),
                Some(installed.as_str()),
                "{}",
                path.display()
            );
        }
    }
    for file in [
        "examples/function/functions.yaml",
        "examples/function/runtime-config.yaml",
    ] {
        let functions: Vec<_> = yaml_docs(&root.join(file))
            .into_iter()
            .filter(|d| d["kind"].as_str() == Some("Function"))
            .collect();
        assert_eq!(functions.len(), 1, "{file}");
        assert_eq!(
            functions[0]["metadata"]["name"].as_str(),
            Some(installed.as_str()),
            "{file}"
        );
        let package = functions[0]["spec"]["package"].as_str().unwrap();
        assert_eq!(repository(package), repository(function_deps[0]), "{file}");
    }
}

/// What the package manager and registries show a platform team about each
/// package: who maintains it, where its source is, its license, and (for
/// the Configuration) a readme.
#[test]
fn both_packages_carry_their_metadata() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (file, kind) in [
        ("package/function/crossplane.yaml", "Function"),
        ("package/configuration/crossplane.yaml", "Configuration"),
    ] {
        let meta = &yaml_docs(&root.join(file))[0];
        assert_eq!(meta["kind"].as_str(), Some(kind), "{file}");
        let annotations = &meta["metadata"]["annotations"];
        for key in [
            "meta.crossplane.io/maintainer",
            "meta.crossplane.io/source",
            "meta.crossplane.io/license",
            "meta.crossplane.io/description",
            "meta.crossplane.io/readme",
        ] {
            let value = annotations[key].as_str().unwrap_or_default();
            assert!(!value.trim().is_empty(), "{file}: {key}");
        }
        assert_eq!(
            annotations["meta.crossplane.io/license"].as_str(),
            Some("Apache-2.0"),
            "{file}: the license Cargo.toml declares"
        );
    }
}
