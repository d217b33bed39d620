//! The `size` command: a whole JSON document, the text layout, and an answer
//! for every calibration row.

use clap::Parser;
use function_inference::cli::size::{OutputFormat, SizeArgs, render, run};
use serde_json::Value;

#[path = "sizing_calibration.rs"]
#[allow(dead_code)]
mod calibration;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    size: SizeArgs,
}

fn args(argv: &[&str]) -> SizeArgs {
    Cli::try_parse_from(std::iter::once("size").chain(argv.iter().copied()))
        .expect("flags parse")
        .size
}

fn json_of(argv: &[&str]) -> Value {
    let mut a = args(argv);
    a.output = OutputFormat::Json;
    serde_json::from_str(&render(&a).unwrap()).unwrap()
}

#[test]
fn json_for_a_known_case() {
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        let mut a = args(&[
            "--model",
            "Qwen/Qwen2.5-1.5B-Instruct",
            "--gpu-type",
            "L4",
            "--gpu",
            "2",
        ]);
        a.output = OutputFormat::Json;
        std::fs::write(
            "tests/data/size-qwen2.5-1.5b-l4-x2.json",
            render(&a).unwrap(),
        )
        .unwrap();
    }
    let got = json_of(&[
        "--model",
        "Qwen/Qwen2.5-1.5B-Instruct",
        "--gpu-type",
        "L4",
        "--gpu",
        "2",
    ]);
    // Reviewed by hand: the dot-inference host contract (4 CPU, 16Gi for two
    // GPUs), shm for TP 2, the model's full 32K context.
    let want: Value =
        serde_json::from_str(include_str!("data/size-qwen2.5-1.5b-l4-x2.json")).unwrap();
    assert_eq!(got, want, "{}", serde_json::to_string_pretty(&got).unwrap());
}

#[test]
fn text_has_the_table_and_reasons() {
    let mut out = Vec::new();
    run(
        &args(&[
            "--model",
            "meta-llama/Llama-3.1-70B-Instruct",
            "--gpu-type",
            "nvidia-h100-80gb",
        ]),
        &mut out,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    for want in [
        "Model          meta-llama/Llama-3.1-70B-Instruct\n",
        "GPUs           4 x H100-80GB (TP 4, PP 1, 1 node)\n",
        "Resource       nvidia.com/gpu\n",
        "/dev/shm       8Gi\n",
        "Reasons:\n",
        "KV cache: 327,680 B per token",
        "Weights: 70.55 B parameters x 2 B = 131.4 GiB.",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
}

#[test]
fn errors_are_typed() {
    let e = render(&args(&["--model", "x/y-7B", "--gpu-type", "P100"])).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("unknown GPU type `P100`: known GPU types are T4, V100")
    );
    let e = render(&args(&[
        "--model",
        "x/y-7B",
        "--gpu-type",
        "L4",
        "--quantization",
        "int3",
    ]))
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "unknown precision `int3`: use one of fp32, bf16, fp16, fp8, int8, int4, fp4"
    );
    let e = render(&args(&[
        "--model",
        "x/y-7B",
        "--gpu-type",
        "L4",
        "--gpu",
        "99999999999",
    ]))
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid gpu count `99999999999`: it must be between 1 and 4096"
    );
    let e = render(&args(&[
        "--model",
        "x/y",
        "--gpu-type",
        "L4",
        "--parameter-count",
        "1e30B",
    ]))
    .unwrap_err();
    assert!(e.to_string().starts_with("invalid parameter count `1e30B`"));
}

#[test]
fn answers_every_calibration_row_in_json() {
    for row in calibration::rows() {
        let mut argv = vec![
            "--model".to_string(),
            row.model.clone(),
            "--gpu-type".into(),
            row.gpu.clone(),
            "--quantization".into(),
            calibration::precision(&row.dtype).to_string(),
            "-o".into(),
            "json".into(),
        ];
        if let Some(l) = row.max_model_len {
            argv.extend(["--max-model-len".into(), l.to_string()]);
        }
        if let Some(p) = calibration::request(&row).parameter_count {
            argv.extend(["--parameter-count".into(), p]);
        }
        let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
        let v = json_of(&refs);
        for key in [
            "gpuType",
            "gpuCount",
            "tensorParallelSize",
            "pipelineParallelSize",
            "nodes",
            "migProfile",
            "gpuResourceName",
            "dtype",
            "quantization",
            "maxModelLen",
            "cpu",
            "memory",
            "shmSize",
            "startupProbeSeconds",
            "estimate",
            "reasons",
            "warnings",
        ] {
            assert!(v.get(key).is_some(), "{}: no {key}", row.model);
        }
        for key in [
            "weightsGiB",
            "kvCacheGiB",
            "overheadGiB",
            "perGpuGiB",
            "gpuCapacityGiB",
        ] {
            assert!(
                v["estimate"][key].is_number(),
                "{}: no estimate.{key}",
                row.model
            );
        }
        assert!(!v["reasons"].as_array().unwrap().is_empty());
    }
}
