//! Reads the files the commands name. `-` is standard input, as in
//! `kubectl apply -f -`, so a live object can be piped in
//! (`kubectl get llminference chat -o yaml | function-inference render -`).
//! Every read stops at a limit, so a wrong path such as `/dev/zero` fails
//! at once instead of filling memory.

use std::io::Read;
use std::path::Path;

/// Largest file a command reads. A Kubernetes object is at most about
/// 1.5 MiB (etcd's limit), and the largest `model.safetensors.index.json`
/// (a trillion-parameter MoE's) about 12 MiB, so this holds any of them.
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The path that names standard input.
const STDIN: &str = "-";

/// Whether `path` names standard input.
fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == STDIN
}

/// How messages name `path`.
pub(crate) fn shown(path: &Path) -> String {
    if is_stdin(path) {
        "standard input".into()
    } else {
        path.display().to_string()
    }
}

/// Refuses more than one flag naming standard input, which can be read
/// only once: the second would read nothing. `flags` pairs each flag's
/// name with its path.
pub(crate) fn stdin_once<'a>(
    flags: impl IntoIterator<Item = (&'static str, Option<&'a Path>)>,
) -> Result<(), String> {
    let on_stdin: Vec<&str> = flags
        .into_iter()
        .filter(|(_, path)| path.is_some_and(is_stdin))
        .map(|(flag, _)| flag)
        .collect();
    match on_stdin.as_slice() {
        [] | [_] => Ok(()),
        [rest @ .., last] => Err(format!(
            "{} and {last} name it (-), and it can be read only once: write all but one to files",
            rest.join(", ")
        )),
    }
}

/// The text of `path` (standard input for `-`); the error says what is
/// wrong with it and asks for `expected`.
pub(crate) fn read_text(path: &Path, expected: &str) -> Result<String, String> {
    let reader: Box<dyn Read> = if is_stdin(path) {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::fs::File::open(path).map_err(|e| e.to_string())?)
    };
    let mut bytes = Vec::new();
    // One byte more than the limit tells a file at the limit from a larger one.
    reader
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "larger than {} MiB, the most function-inference reads; pass {expected}",
            MAX_FILE_BYTES / (1024 * 1024)
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "not UTF-8 text (invalid byte at offset {}); pass {expected}",
            e.utf8_error().valid_up_to()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_flag_may_name_standard_input() {
        let xr = Path::new("-");
        let file = Path::new("observed.yaml");
        assert_eq!(
            stdin_once([("XR", Some(xr)), ("--observed", Some(file))]),
            Ok(())
        );
        assert_eq!(
            stdin_once([("XR", Some(xr)), ("--observed", None), ("--input", Some(xr))]),
            Err("XR and --input name it (-), and it can be read only once: write all but one to files".into())
        );
    }

    #[test]
    fn standard_input_is_named_in_words() {
        assert_eq!(shown(Path::new("-")), "standard input");
        assert_eq!(shown(Path::new("./-")), "./-");
    }
}
