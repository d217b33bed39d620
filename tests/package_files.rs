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
