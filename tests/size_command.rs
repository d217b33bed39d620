//! The `size` command: a whole JSON document, the text layout, and an answer
//! for every calibration row.

use clap::Parser;
use function_inference::cli::size::{OutputFormat, SizeArgs, render, run};
use serde_json::{Value, json};

mod support;

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
fn the_model_is_given_as_an_argument_or_a_flag_not_both() {
    let flag = json_of(&["--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu-type", "L4"]);
    let argument = json_of(&["Qwen/Qwen2.5-7B-Instruct", "--gpu-type", "L4"]);
    assert_eq!(argument, flag);
    assert_eq!(argument["model"], "Qwen/Qwen2.5-7B-Instruct");
    for argv in [&["--gpu-type", "L4"][..], &["a/b-7B", "--model", "c/d-7B"]] {
        let parsed = Cli::try_parse_from(std::iter::once("size").chain(argv.iter().copied()));
        assert!(parsed.is_err(), "{argv:?} must not parse");
    }
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
        "Weights: 70.55 B parameters x 2 B = 131.4 GiB",
        "Objective      balanced\n",
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
        "invalid --quantization `int3`: use auto (the checkpoint's precision) or one of fp32, bf16, fp16, fp8, int8, int4, fp4"
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

/// What `size` prints (after `function-inference size: `) names the flag to
/// change, not the XR field the engine's message speaks of.
#[test]
fn errors_lead_with_the_flag_to_change() {
    let error = |argv: &[&str]| run(&args(argv), &mut Vec::new()).unwrap_err().to_string();
    let seventy_b = |gpu_type: &str, gpus: &str| {
        let model = "meta-llama/Llama-3.1-70B-Instruct";
        error(&[model, "--gpu-type", gpu_type, "--gpu", gpus])
    };
    assert_eq!(
        error(&["foo/bar", "--gpu-type", "L4"]),
        "--parameter-count (or --config with the model's config.json, or --weights-index): cannot tell how many parameters `foo/bar` \
         has: it is not in the model catalog and its id carries no size; give its parameter count (for example 8B, \
         70B or 8x7B)"
    );
    assert_eq!(
        error(&[
            "Qwen/Qwen2.5-7B-Instruct",
            "--gpu-type",
            "L4",
            "--max-model-len",
            "1000000"
        ]),
        "--max-model-len: maxModelLen 1000000 exceeds the 32768-token context of Qwen/Qwen2.5-7B-Instruct: use at \
         most 32768"
    );
    assert_eq!(
        seventy_b("L4", "1"),
        "--gpu: 1 x L4 (TP 1, PP 1) cannot hold meta-llama/Llama-3.1-70B-Instruct: each GPU's share of the weights \
         is 131.4 GiB, more than its 21.9 GiB, so vLLM cannot load them whatever its flags; 16 x L4 (TP 8, PP 2) \
         would hold it"
    );
    // A tensor-parallel size the count and --pipeline-parallel imply is the
    // count's to change: --tensor-parallel was not given. So is a count
    // that --pipeline-parallel does not divide.
    let six_gpus = |pp| {
        error(&[
            "meta-llama/Llama-3.1-8B-Instruct",
            "--gpu-type",
            "H100-80GB",
            "--gpu",
            "6",
            "--pipeline-parallel",
            pp,
        ])
    };
    assert_eq!(
        six_gpus("2"),
        "--gpu: 6 GPUs is not a valid tensor-parallel layout for meta-llama/Llama-3.1-8B-Instruct (32 attention \
         heads, 8 KV heads, 8 H100-80GB per node): use 2, 4, 8, 16 with pipeline parallel 2"
    );
    assert_eq!(
        six_gpus("4"),
        "--gpu: invalid gpu count `6`: it must be a multiple of the pipeline parallel size 4"
    );
    // Without --pipeline-parallel, a count no TP makes names the stages
    // that would run it, with the largest TP that holds the model.
    assert_eq!(
        seventy_b("H100-80GB", "6"),
        "--gpu: 6 GPUs is not a valid tensor-parallel layout for meta-llama/Llama-3.1-70B-Instruct (64 attention \
         heads, 8 KV heads, 8 H100-80GB per node): use 1, 2, 4, 8 on one node, or a multiple of 8 across nodes; \
         or --pipeline-parallel 3, which runs them as 3 pipeline stages of TP 2"
    );
    // No hint where no split of the count holds the weights.
    assert_eq!(
        seventy_b("L4", "3"),
        "--gpu: 3 GPUs is not a valid tensor-parallel layout for meta-llama/Llama-3.1-70B-Instruct (64 attention \
         heads, 8 KV heads, 8 L4 per node): use 1, 2, 4, 8 on one node, or a multiple of 8 across nodes"
    );
    assert!(
        error(&["x/y-7B", "--gpu-type", "V100", "--vllm-version", "0.20.1"]).starts_with(
            "--gpu-type: vLLM 0.20.1 does not run on V100, a GPU of compute capability 7.0"
        )
    );
    // A precision the model's id chose is the model's to change; one
    // --quantization asked for is the flag's.
    assert!(
        error(&[
            "nvidia/Llama-3.1-8B-Instruct-FP8",
            "--gpu-type",
            "V100-32GB"
        ])
        .starts_with("MODEL: fp8 weights need a GPU with fp8 support, which V100-32GB lacks")
    );
    assert!(
        error(&[
            "meta-llama/Llama-3.1-8B-Instruct",
            "--quantization",
            "fp8",
            "--gpu-type",
            "V100-32GB"
        ])
        .starts_with(
            "--quantization: fp8 weights need a GPU with fp8 support, which V100-32GB lacks"
        )
    );
    assert!(
        error(&["x/y-7B", "--gpu-type", "L4", "--mig", "1g.5gb"])
            .starts_with("--mig: L4 has no MIG")
    );
    assert!(
        error(&["x/y-7B", "--gpu-type", "P100"]).starts_with("--gpu-type: unknown GPU type `P100`")
    );
    // Nothing narrower or bigger holds it either: the advice is not to
    // try them.
    assert_eq!(
        error(&[
            "acme/huge",
            "--parameter-count",
            "100T",
            "--quantization",
            "int4",
            "--gpu-type",
            "H100-80GB"
        ]),
        "acme/huge with int4 weights (48390.9 GiB) does not fit on H100-80GB: no layout of up to 16 nodes \
         holds it, nor would narrower weights or a bigger GPU type; check the model's size (its parameter \
         count or weights index)"
    );
    // The weights fit and a stated concurrency does not: the refusal is
    // the concurrency's and names how many sequences fit, of the 4,096
    // tokens a default context falls back to (or of the maxModelLen
    // given), not the model's size; then what else would hold them.
    let concurrency = |n: &str, more: &[&str]| {
        error(
            &[
                &["Qwen/Qwen3-8B", "--gpu-type", "L4", "--concurrency", n][..],
                more,
            ]
            .concat(),
        )
    };
    assert_eq!(
        concurrency("100000", &[]),
        "--concurrency: the roomiest layout of up to 16 nodes, 128 x L4 (TP 8, PP 16), holds the KV cache of \
         at most 2,697 sequences of 4,096 tokens beside the weights, not 100,000: a lower concurrency would fit"
    );
    assert_eq!(
        concurrency("100000", &["--max-model-len", "32768"]),
        "--concurrency: the roomiest layout of up to 16 nodes, 128 x L4 (TP 8, PP 16), holds the KV cache of \
         at most 337 sequences of 32,768 tokens beside the weights, not 100,000: a lower concurrency would fit"
    );
    assert_eq!(
        concurrency("5000", &[]),
        "--concurrency: the roomiest layout of up to 16 nodes, 128 x L4 (TP 8, PP 16), holds the KV cache of \
         at most 2,697 sequences of 4,096 tokens beside the weights, not 5,000: a lower concurrency would fit; \
         a bigger GPU would: 16 x B300 (TP 8, PP 2)"
    );
}

/// Without a GPU count or a maxModelLen, a stated concurrency gets the
/// fewest GPUs that hold that many sequences of 4,096 tokens, the context
/// then capped to what they hold (up to the default): not GPUs bought for
/// 32,768-token sequences nobody asked for. A model whose context is 4,096
/// or less is sized at its own (it was refused as fitting nowhere).
#[test]
fn a_stated_concurrency_gets_the_fewest_gpus_and_the_context_they_hold() {
    let plan = |argv: &[&str]| {
        let p = json_of(argv);
        (
            p["gpuCount"].as_u64().unwrap(),
            p["maxModelLen"].as_u64().unwrap(),
        )
    };
    let llama = |n: &str| {
        plan(&[
            "meta-llama/Llama-3.1-8B-Instruct",
            "--gpu-type",
            "L4",
            "--concurrency",
            n,
        ])
    };
    assert_eq!(llama("10"), (2, 14_336));
    assert_eq!(llama("100"), (4, 4_096));
    assert_eq!(llama("500"), (24, 5_888));
    assert_eq!(llama("1000"), (32, 4_096));
    assert_eq!(
        plan(&[
            "meta-llama/Llama-3.1-8B-Instruct",
            "--gpu-type",
            "L4",
            "--concurrency",
            "10",
            "--max-model-len",
            "32768"
        ]),
        (4, 32_768)
    );
    assert_eq!(
        plan(&[
            "acme/x",
            "--parameter-count",
            "7B",
            "--gpu-type",
            "L4",
            "--concurrency",
            "4"
        ]),
        (1, 4_096)
    );
}

/// On a GPU count the caller fixed, a stated concurrency shortens the
/// default context until that many sequences fit, and says so; when not even
/// sequences of the shortest context (256 tokens) fit that many, the
/// concurrency is refused, naming how many do. (It planned 32,768 tokens
/// beside a KV cache of 26,839 tokens, which vLLM refuses to start with, and
/// warned that 1 x L4 could not hold the model, whose weights it holds.)
#[test]
fn a_fixed_layout_holds_a_stated_concurrency_or_says_how_many_fit() {
    let base = [
        "meta-llama/Llama-3.1-8B-Instruct",
        "--gpu-type",
        "L4",
        "--gpu",
        "1",
        "--concurrency",
    ];
    let plan = json_of(&[&base[..], &["100"]].concat());
    assert_eq!(plan["maxModelLen"], json!(256));
    assert_eq!(plan.get("warnings"), None, "{plan:#}");
    let reasons = plan["reasons"].as_array().unwrap();
    assert!(
        reasons.contains(&json!(
            "maxModelLen capped at 256 tokens, so that 100 sequences fit at once, as asked: the KV cache left \
             after the weights holds 26,839 tokens."
        )),
        "{reasons:#?}"
    );
    let e = run(&args(&[&base[..], &["200"]].concat()), &mut Vec::new()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "--concurrency: 1 x L4 (TP 1, PP 1) holds the KV cache of at most 104 sequences of 256 tokens beside \
         the weights, not 200: a lower concurrency would fit; 2 x L4 (TP 2, PP 1) would hold them"
    );
    // A context the caller set is the length counted.
    let e = run(
        &args(&[&base[..], &["200", "--max-model-len", "4096"]].concat()),
        &mut Vec::new(),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "--concurrency: 1 x L4 (TP 1, PP 1) holds the KV cache of at most 6 sequences of 4,096 tokens beside \
         the weights, not 200: a lower concurrency would fit; 8 x L4 (TP 8, PP 1) would hold them"
    );
    // A MIG slice the caller named says the same, at the 4,096 tokens a
    // slice must hold each sequence of (it blamed the model's size).
    let e = run(
        &args(&[
            "meta-llama/Llama-3.1-8B-Instruct",
            "--gpu-type",
            "A100-80GB",
            "--mig",
            "3g.40gb",
            "--concurrency",
            "40",
        ]),
        &mut Vec::new(),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "--concurrency: MIG profile 3g.40gb of A100-80GB holds the KV cache of at most 37 sequences of 4,096 \
         tokens beside the weights, not 40: a lower concurrency would fit; profile 7g.80gb would hold them"
    );
}

/// In a comparison on a fixed GPU count, a GPU type on which that layout
/// cannot hold the model shows why, as the cheapest choice passes it over
/// (the row showed a plan of 32,768 tokens whose KV cache held 0.0 requests).
#[test]
fn a_fixed_layout_that_cannot_hold_the_model_does_not_show_as_serving() {
    let got = render(&args(&[
        "meta-llama/Llama-3.1-8B-Instruct",
        "--gpu",
        "1",
        "--gpu-type",
        "V100,L4",
        "--gpu-price",
        "V100=0.1",
        "--gpu-price",
        "L4=0.8",
    ]))
    .unwrap();
    let want = "\
Model meta-llama/Llama-3.1-8B-Instruct, GPU types V100, L4 (--gpu-type TYPE for one plan and its reasons)

GPU type         GPUs  MIG       TP x PP nodes  maxModelLen   KV holds (requests)  decode/s    cost/h
V100             cannot serve it: 1 x V100 cannot hold it (20.4 GiB per GPU of 14.2 GiB usable)
L4                  1  -         1 x 1       1        26624                   1.0        13      0.80

MIG: the slice of each GPU a replica runs on (- for whole GPUs); KV holds: full-length requests (of maxModelLen \
tokens) the KV cache of one replica holds at once; decode/s: one sequence's tokens per second at most (the \
memory-bandwidth bound); cost/h: one replica at --gpu-price.

Cheapest: L4. GPU type chosen from the offered ones (the cheapest replica per hour): 1 x L4 at 0.80/h, the only \
one that serves it; 1 offered GPU type cannot serve it
";
    assert_eq!(got, want);
    // The JSON comparison says the same.
    let compared = json_of(&[
        "meta-llama/Llama-3.1-8B-Instruct",
        "--gpu",
        "1",
        "--gpu-type",
        "V100,L4",
    ]);
    let v100 = &compared["gpuTypes"][0];
    assert_eq!(
        (&v100["gpuType"], v100.get("plan"), &v100["error"]),
        (
            &json!("V100"),
            None,
            &json!("1 x V100 cannot hold it (20.4 GiB per GPU of 14.2 GiB usable)")
        )
    );
    assert_eq!(
        compared["gpuTypes"][1]["plan"]["maxModelLen"],
        json!(26_624)
    );
}

/// A number out of the range an XR (or the step input) takes is refused by
/// the flag's parser, which names the flag and the range: `size` plans only
/// what an XR could ask for (it planned `--max-model-len 10`, refused by
/// spec.maxModelLen, and `--gpu-memory-utilization 1`, refused by the
/// input, and named the engine's fields, gpuMemoryUtilization and gpu
/// count, for the flags).
#[test]
fn numbers_outside_what_an_xr_takes_are_refused_naming_the_flag() {
    let refused = |flag: &str, value: &str| {
        let argv = ["size", "x/y-7B", "--gpu-type", "L4", flag, value];
        let e = match Cli::try_parse_from(argv) {
            Err(e) => e,
            Ok(_) => panic!("{flag} {value} was taken"),
        };
        assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation);
        e.to_string().lines().next().unwrap().to_string()
    };
    let cases = [
        (
            "--gpu",
            "0",
            "use a whole number of GPUs per replica from 1 to 64",
        ),
        (
            "--gpu",
            "65",
            "use a whole number of GPUs per replica from 1 to 64",
        ),
        (
            "--gpu",
            "99999999999",
            "use a whole number of GPUs per replica from 1 to 64",
        ),
        // Not numbers: clap's own parser said "invalid digit found in
        // string", and of a GPU type nothing about --gpu-type.
        (
            "--gpu",
            "H100-80GB",
            "H100-80GB is a GPU type, which --gpu-type takes; --gpu takes the GPUs per replica, from 1 to 64",
        ),
        (
            "--gpu",
            "two",
            "use a whole number of GPUs per replica from 1 to 64",
        ),
        (
            "--tensor-parallel",
            "128",
            "use a whole number from 1 to 64",
        ),
        (
            "--tensor-parallel",
            "2.0",
            "use a whole number from 1 to 64",
        ),
        (
            "--pipeline-parallel",
            "0",
            "use a whole number from 1 to 64",
        ),
        (
            "--max-model-len",
            "255",
            "use a whole number of tokens from 256 to 10485760",
        ),
        (
            "--max-model-len",
            "10485761",
            "use a whole number of tokens from 256 to 10485760",
        ),
        (
            "--max-model-len",
            "32k",
            "use a whole number of tokens from 256 to 10485760",
        ),
        (
            "--concurrency",
            "0",
            "use a whole number of sequences from 1 to 100000",
        ),
        (
            "--concurrency",
            "1e3",
            "use a whole number of sequences from 1 to 100000",
        ),
        (
            "--max-num-seqs",
            "0",
            "use a whole number of requests from 1 to 4294967295",
        ),
        (
            "--gpu-memory-utilization",
            "1",
            "use a share from 0.1 to 0.99 (0.9 is usual)",
        ),
        (
            "--gpu-memory-utilization",
            "0.09",
            "use a share from 0.1 to 0.99 (0.9 is usual)",
        ),
        (
            "--gpu-memory-utilization",
            "1e308",
            "use a share from 0.1 to 0.99 (0.9 is usual)",
        ),
        (
            "--gpu-memory-utilization",
            "NaN",
            "use a share from 0.1 to 0.99 (0.9 is usual)",
        ),
        // Not a release: it was sized as one before 0.19 ("vLLM latest
        // (before 0.19)").
        (
            "--vllm-version",
            "latest",
            "use the vLLM release the image runs, such as 0.19.0",
        ),
        (
            "--vllm-version",
            "0.19.0-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "it is longer than 64 characters; use the vLLM release the image runs, such as 0.19.0",
        ),
    ];
    for (flag, value, why) in cases {
        let placeholder = flag
            .trim_start_matches("--")
            .replace('-', "_")
            .to_uppercase();
        assert_eq!(
            refused(flag, value),
            format!("error: invalid value '{value}' for '{flag} <{placeholder}>': {why}")
        );
    }
    // The ends of each range are taken.
    for (flag, value) in [
        ("--gpu", "64"),
        ("--gpu", "1"),
        ("--tensor-parallel", "64"),
        ("--concurrency", "100000"),
        ("--max-model-len", "256"),
        ("--max-model-len", "10485760"),
        ("--gpu-memory-utilization", "0.99"),
        ("--gpu-memory-utilization", "0.1"),
        ("--vllm-version", "v0.10.2"),
        ("--vllm-version", "0.19.0rc1"),
    ] {
        let argv = ["size", "x/y-7B", "--gpu-type", "L4", flag, value];
        assert!(Cli::try_parse_from(argv).is_ok(), "{flag} {value}");
    }
}

/// `size` takes the model ids an LLMInference's spec.model takes, and
/// plans nothing else: a 3,000-character id was planned and repeated whole
/// in every line of the comparison.
#[test]
fn a_model_id_an_xr_would_refuse_is_refused() {
    let error = |argv: &[&str]| run(&args(argv), &mut Vec::new()).unwrap_err().to_string();
    let long = format!("acme/{}-7B", "x".repeat(300));
    assert_eq!(
        error(&[&long]),
        format!(
            "invalid model `acme/{}... (308 characters)`: it is 308 characters long; use at most 256",
            "x".repeat(59)
        )
    );
    assert_eq!(
        error(&["acme/chat bot-7B", "--gpu-type", "L4"]),
        "invalid model `acme/chat bot-7B`: not a Hugging Face id (' ' is not a letter, digit, '-', '_' or '.'); \
         use one such as Qwen/Qwen2.5-7B-Instruct"
    );
    assert_eq!(
        error(&["acme/team/bot-7B", "--gpu-type", "L4"]),
        "invalid model `acme/team/bot-7B`: not a Hugging Face id (it has 3 parts; an id has at most two, \
         org/name); use one such as Qwen/Qwen2.5-7B-Instruct"
    );
    // White space around an id is dropped, as spec.model drops it.
    assert!(
        run(
            &args(&[" Qwen/Qwen2.5-7B-Instruct ", "--gpu-type", "L4"]),
            &mut Vec::new()
        )
        .is_ok()
    );
    // Weights in the image, by path, as spec.model takes them.
    assert!(
        run(
            &args(&["/models/bot-7B", "--gpu-type", "L4"]),
            &mut Vec::new()
        )
        .is_ok()
    );
}

/// What an XR's `status.plan` always reports.
const STATUS_KEYS: &[&str] = &[
    "gpuType",
    "gpuCount",
    "tensorParallelSize",
    "pipelineParallelSize",
    "gpuResourceName",
    "dtype",
    "quantization",
    "maxModelLen",
    "cpu",
    "memory",
    "estimate",
    "objective",
    "kvCacheDtype",
    "architectureGuessed",
    "reasons",
];
/// What it reports when the plan has it.
const OPTIONAL_STATUS_KEYS: &[&str] = &["migProfile", "quantizationMethod", "shmSize", "warnings"];
/// What `size -o json` adds for a person sizing by hand.
const ADDED_KEYS: &[&str] = &[
    "model",
    "scaling",
    "catalogModel",
    "nodes",
    "engineArgs",
    "gpuMemoryUtilization",
    "startupProbeSeconds",
    "decodeTokensPerSecond",
    "weightsPerGpuGiB",
    "kvCache",
];

/// `size -o json` is an XR's `status.plan` plus what [`ADDED_KEYS`] name:
/// every field the function reports for an LLMInference on the same model
/// and GPU reads the same here, and nothing else differs.
#[test]
fn the_json_is_the_xr_status_plan_plus_the_added_fields() {
    let v = json_of(&[
        "--model",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--gpu-type",
        "L4",
    ]);
    let xr = serde_json::json!({
        "apiVersion": "infer.dev/v1alpha1", "kind": "LLMInference",
        "metadata": {"name": "chat", "namespace": "team-a"},
        "spec": {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpuType": "L4",
                 "hfTokenSecretRef": {"name": "hf-token"}},
    });
    let status = support::desired_status(&support::call(&support::request("t", xr)));
    let mut plan = status["plan"].as_object().unwrap().clone();
    // The composer adds one reason: the runtime it chose.
    let reasons = plan["reasons"].as_array_mut().unwrap();
    let before = reasons.len();
    reasons.retain(|r| !r.as_str().is_some_and(|r| r.starts_with("Runtime: ")));
    assert_eq!(reasons.len(), before - 1);
    let mut size = v.as_object().unwrap().clone();
    for key in ADDED_KEYS {
        assert!(size.remove(*key).is_some(), "no {key}");
    }
    // Whole GiB figures read back from the response's Struct as integers.
    let as_in_response = |m: serde_json::Map<String, Value>| {
        Value::Object(function_inference::protocol::resource::struct_to_json(
            &support::object(Value::Object(m)),
        ))
    };
    assert_eq!(as_in_response(size), as_in_response(plan));
}

#[test]
fn answers_every_calibration_row_in_json() {
    for row in calibration::rows() {
        // A row may label its model ("Llama-2-70b-chat (vLLM backend)").
        let id = row.model.split(" (").next().unwrap();
        let mut argv = vec![
            "--model".to_string(),
            id.to_string(),
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
        for key in STATUS_KEYS.iter().chain(ADDED_KEYS) {
            assert!(v.get(*key).is_some(), "{}: no {key}", row.model);
        }
        for key in v.as_object().unwrap().keys() {
            assert!(
                STATUS_KEYS.contains(&key.as_str())
                    || OPTIONAL_STATUS_KEYS.contains(&key.as_str())
                    || ADDED_KEYS.contains(&key.as_str()),
                "{}: unexpected {key}",
                row.model
            );
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

/// `tests/data/models/` holds config.json and index files shaped like the
/// published ones (CodeLlama-7b: 6.74B parameters, 13,477,093,376 bytes in
/// bf16; DeepSeek-V2-Lite), so that the tests need no network.
fn data(file: &str) -> String {
    format!("{}/tests/data/models/{file}", env!("CARGO_MANIFEST_DIR"))
}

/// A rounded count (7B for CodeLlama's 6.74 B) with the model's config.json
/// is read as the catalog's exact count, as it is without the config.
#[test]
fn a_rounded_count_with_a_config_json_is_the_catalogs_exact_one() {
    let config = data("codellama-7b-config.json");
    for extra in [&["--config", config.as_str()][..], &[]] {
        let mut argv = vec![
            "codellama/CodeLlama-7b-hf",
            "--gpu-type",
            "L4",
            "--parameter-count",
            "7B",
            "-o",
            "json",
        ];
        argv.extend_from_slice(extra);
        let v = json_of(&argv);
        assert_eq!(v["estimate"]["weightsGiB"], 12.55, "{extra:?}");
        assert!(v.get("warnings").is_none(), "{extra:?}: {}", v["warnings"]);
    }
}

#[test]
fn a_config_json_gives_the_exact_architecture_of_any_model() {
    let config = data("codellama-7b-config.json");
    let index = data("codellama-7b-index.json");
    let v = json_of(&[
        "--model",
        "example/my-codellama",
        "--gpu-type",
        "H100",
        "--config",
        &config,
        "--weights-index",
        &index,
    ]);
    // Multi-head attention: 2 x 32 layers x 32 KV heads x 128 x 2 B.
    assert_eq!(v["kvCache"]["bytesPerToken"], 524_288);
    assert_eq!(v["estimate"]["weightsGiB"], 12.55);
    assert_eq!(v["architectureGuessed"], false);
    let reasons = v["reasons"].to_string();
    assert!(
        reasons.contains("Architecture from the model's config.json (llama)"),
        "{reasons}"
    );
    assert!(reasons.contains("13,477,093,376 bytes"), "{reasons}");
    // MLA: 27 layers x (512 + 64) latent elements x 2 B, whole on every rank.
    let v = json_of(&[
        "--model",
        "example/my-deepseek-v2-lite",
        "--gpu-type",
        "H100",
        "--config",
        &data("deepseek-v2-lite-config.json"),
    ]);
    assert_eq!(v["kvCache"]["bytesPerToken"], 31_104);
    // A count estimated from the config's shapes is shown as the
    // architecture line shows it, not with every digit of the estimate.
    let reasons = v["reasons"].to_string();
    assert!(
        reasons.contains("16.21 B parameters (2.66 B active, estimated from the config's shapes")
            && reasons.contains("Weights: 16.21 B parameters x 2 B = 30.2 GiB;"),
        "{reasons}"
    );
}

/// NVIDIA's DeepSeek-V3.2-NVFP4 (ModelOpt before 0.31) lists the modules it
/// leaves in bf16 in hf_quant_config.json, not in config.json: every MLA
/// projection, the sparse-attention indexers and the dense layers' MLPs.
/// Without the file it would be sized as if they were NVFP4 too.
#[test]
fn the_hf_quant_config_json_of_an_older_modelopt_checkpoint_names_its_bf16_modules() {
    let weights = |extra: &[&str]| {
        let mut argv = vec![
            "--gpu-type",
            "B200",
            "--vllm-version",
            "0.20.0",
            "-o",
            "json",
        ];
        argv.extend_from_slice(extra);
        let v = json_of(&argv);
        let reason = v["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .find(|r| r.starts_with("Weights: "))
            .unwrap()
            .to_string();
        (v["estimate"]["weightsGiB"].clone(), reason)
    };
    let config = data("deepseek-v3.2-nvfp4-config.json");
    let file = data("deepseek-v3.2-nvfp4-hf_quant_config.json");
    // Another organisation's checkpoint of the same name, which the
    // catalog's entry for NVIDIA's does not describe.
    let (alone, _) = weights(&[
        "--model",
        "example/DeepSeek-V3.2-NVFP4",
        "--config",
        &config,
    ]);
    let (with_file, reason) = weights(&[
        "--model",
        "example/DeepSeek-V3.2-NVFP4",
        "--config",
        &config,
        "--hf-quant-config",
        &file,
    ]);
    assert_eq!((alone, with_file.clone()), (json!(354.52), json!(361.29)));
    // By its id alone, the catalog's entry for these exact weights says the
    // same.
    let (by_id, by_id_reason) = weights(&["nvidia/DeepSeek-V3.2-NVFP4"]);
    assert_eq!(by_id, with_file);
    assert_eq!(by_id_reason, reason);
    assert!(
        reason.starts_with("Weights: 6.95 B parameters kept in 16 bits (embeddings and lm_head, what the checkpoint leaves unquantized) x 2 B + 664.93 B quantized x 0.5625 B"),
        "{reason}"
    );
    // The file completes a config.json: without one it is refused.
    let Err(refused) = Cli::try_parse_from([
        "size",
        "nvidia/DeepSeek-V3.2-NVFP4",
        "--hf-quant-config",
        &file,
    ]) else {
        panic!("--hf-quant-config without --config parsed");
    };
    assert!(
        refused.to_string().contains("--config <CONFIG_JSON>"),
        "{refused}"
    );
}

#[test]
fn a_guessed_architecture_is_the_nearest_llama_3_and_says_how_to_give_the_config() {
    let v = json_of(&["--model", "example/my-codellama-7B", "--gpu-type", "H100"]);
    assert_eq!(v["architectureGuessed"], true);
    // Llama 3.1 8B's: 32 layers x 8 KV heads x 128 x 2 (K and V) x 2 bytes.
    assert_eq!(v["kvCache"]["bytesPerToken"], 131_072);
    let reasons = v["reasons"].to_string();
    for want in [
        "assumed to be that of meta-llama/Llama-3.1-8B, the Llama 3 model nearest in size",
        "A model with multi-head attention (32 KV heads) caches 4x as much per token",
        "size --config",
    ] {
        assert!(reasons.contains(want), "missing {want:?} in {reasons}");
    }
}

/// A MIG slice is an nvidia.com/mig-<profile> under the device plugin's
/// mixed strategy, and an nvidia.com/gpu under its single one, which the
/// reasons say.
#[test]
fn the_mig_strategy_names_the_slices_resource() {
    let slice = |strategy: &[&str]| {
        let mut argv = vec![
            "Qwen/Qwen2.5-1.5B-Instruct",
            "--gpu-type",
            "A100-80GB",
            "--mig",
            "1g.10gb",
        ];
        argv.extend(strategy);
        json_of(&argv)
    };
    let single_reason = serde_json::json!(
        "The 1g.10gb slice is asked for as one nvidia.com/gpu on a node partitioned into 1g.10gb slices: \
         the device plugin's single MIG strategy."
    );
    for (strategy, resource) in [
        (&[][..], "nvidia.com/mig-1g.10gb"),
        (&["--mig-strategy", "mixed"][..], "nvidia.com/mig-1g.10gb"),
        (&["--mig-strategy", "single"][..], "nvidia.com/gpu"),
    ] {
        let plan = slice(strategy);
        assert_eq!(plan["migProfile"], "1g.10gb", "{strategy:?}");
        assert_eq!(plan["gpuResourceName"], resource, "{strategy:?}");
        let reasons = plan["reasons"].as_array().unwrap();
        assert_eq!(
            reasons.contains(&single_reason),
            resource == "nvidia.com/gpu",
            "{strategy:?}: {reasons:?}"
        );
    }
    // The text says which strategy a slice's resource belongs to.
    let text = |strategy: &str| {
        let mut out = Vec::new();
        let argv = [
            "Qwen/Qwen2.5-1.5B-Instruct",
            "--gpu-type",
            "A100-80GB",
            "--mig",
            "1g.10gb",
            "--mig-strategy",
            strategy,
        ];
        run(&args(&argv), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    };
    assert!(
        text("mixed").contains(
            "Resource       nvidia.com/mig-1g.10gb (the device plugin's mixed MIG strategy; --mig-strategy \
             single where it offers slices as nvidia.com/gpu)\n"
        ),
        "{}",
        text("mixed")
    );
    assert!(text("single").contains("Resource       nvidia.com/gpu\n"));
    let mut a = args(&["Qwen/Qwen2.5-1.5B-Instruct", "--mig-strategy", "shared"]);
    a.output = OutputFormat::Json;
    assert_eq!(
        run(&a, &mut Vec::new()).unwrap_err().to_string(),
        "--mig-strategy: invalid MIG strategy `shared`: use mixed or single"
    );
}

/// `--max-num-seqs` sizes the sampler's warm-up peak, as a server started
/// with it has: on an H100 (1,024 by default) Qwen3-30B-A3B takes two GPUs,
/// at 256 one (which the two-GPU plan says); the flag is among the engine
/// arguments the plan needs.
#[test]
fn max_num_seqs_reaches_the_plan_and_its_engine_arguments() {
    let base = ["Qwen/Qwen3-30B-A3B", "--gpu-type", "H100-80GB"];
    let default = json_of(&base);
    assert_eq!(
        (&default["gpuCount"], &default["engineArgs"]),
        (&serde_json::json!(2), &serde_json::json!([]))
    );
    let layout = |plan: &serde_json::Value| {
        plan["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r.as_str())
            .find(|r| r.contains("the smallest layout that holds it"))
            .unwrap()
            .to_string()
    };
    // The smaller layout, refused for its KV headroom, says how it would serve.
    assert!(
        layout(&default).contains(
            "; 1 x H100-80GB (TP 1, PP 1) would leave the KV cache 7.7 GiB of 71.3 GiB usable per GPU, less than \
             the sixth the balanced objective keeps for it (at --max-num-seqs 256, not vLLM's default 1024, it \
             would keep 12.6 GiB, enough). "
        ),
        "{}",
        layout(&default)
    );
    // Not where a smaller batch would not be enough: 8 H100s still leave too
    // little for Llama-3.1-405B in fp8 at 256.
    let large = json_of(&[
        "meta-llama/Llama-3.1-405B-Instruct-FP8",
        "--gpu-type",
        "H100-80GB",
    ]);
    assert!(
        layout(&large).contains(
            "; 8 x H100-80GB (TP 8, PP 1) would leave the KV cache 7.6 GiB of 71.3 GiB usable per GPU, less than \
             the sixth the balanced objective keeps for it. "
        ),
        "{}",
        layout(&large)
    );
    let argv: Vec<&str> = base
        .iter()
        .copied()
        .chain(["--max-num-seqs", "256"])
        .collect();
    let lowered = json_of(&argv);
    assert_eq!(
        (&lowered["gpuCount"], &lowered["engineArgs"]),
        (
            &serde_json::json!(1),
            &serde_json::json!(["--max-num-seqs", "256"])
        )
    );
    assert!(
        lowered["reasons"]
            .to_string()
            .contains("sampler warm-up 9.7 x 256 sequences (the --max-num-seqs given)"),
        "{}",
        lowered["reasons"]
    );
}

#[test]
fn kv_cache_dtype_and_objective_reach_the_plan() {
    let base = [
        "--model",
        "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8",
        "--gpu-type",
        "H100",
        "--max-model-len",
        "16384",
        "--gpu-memory-utilization",
        "0.95",
        "--vllm-version",
        "0.19.0",
    ];
    let with = |extra: &[&str]| {
        let argv: Vec<&str> = base.iter().chain(extra).copied().collect();
        json_of(&argv)
    };
    let fp8 = with(&["--kv-cache-dtype", "fp8", "--objective", "minimal"]);
    assert_eq!(fp8["kvCacheDtype"], "fp8");
    assert_eq!(
        fp8["engineArgs"],
        serde_json::json!(["--kv-cache-dtype", "fp8"])
    );
    assert_eq!(fp8["kvCache"]["bytesPerToken"], 163_840);
    // KubeAI serves it on one H100 at 0.95 with an fp8 KV cache: minimal
    // agrees, and so does balanced, which sizes for the stated context;
    // throughput makes room for a batch of 16.
    assert_eq!(
        (fp8["gpuCount"].as_u64(), fp8["objective"].as_str()),
        (Some(1), Some("minimal"))
    );
    let balanced = with(&["--kv-cache-dtype", "fp8"]);
    assert_eq!(balanced["gpuCount"], 1);
    let reasons = balanced["reasons"].to_string();
    assert!(
        reasons.contains(
            "(objective balanced, sized for the stated context without the recipes' headroom)"
        ),
        "{reasons}"
    );
    let throughput = with(&["--kv-cache-dtype", "fp8", "--objective", "throughput"]);
    assert_eq!(throughput["gpuCount"], 2);
    // At a terminal the error is led by the flag to change.
    let refused = |flag: &str, value: &str| {
        let argv = ["--model", "x/y-7B", "--gpu-type", "L4", flag, value];
        run(&args(&argv), &mut Vec::new()).unwrap_err().to_string()
    };
    assert_eq!(
        refused("--objective", "fastest"),
        "--objective: invalid objective `fastest`: use minimal, balanced or throughput"
    );
    assert_eq!(
        refused("--kv-cache-dtype", "fp4"),
        "--kv-cache-dtype: invalid KV cache dtype `fp4`: use auto or fp8"
    );
}

#[test]
fn what_vllm_can_run_it_plans() {
    // FP8 on A100: weight-only through FP8 Marlin, with a warning.
    let v = json_of(&[
        "--model",
        "neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8",
        "--gpu-type",
        "A100-80GB",
    ]);
    assert_eq!(
        (v["quantization"].as_str(), v["gpuCount"].as_u64()),
        (Some("fp8"), Some(1))
    );
    assert!(
        v["warnings"].to_string().contains("FP8 Marlin"),
        "{}",
        v["warnings"]
    );
    // gpt-oss-120b's MXFP4 on one MI300X, as AMD publishes it.
    let v = json_of(&["--model", "openai/gpt-oss-120b", "--gpu-type", "MI300X"]);
    assert_eq!(
        (v["quantization"].as_str(), v["gpuCount"].as_u64()),
        (Some("fp4"), Some(1))
    );
    // What vLLM cannot load is still refused: fp8 on a T4.
    let e = render(&args(&[
        "--model",
        "neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8",
        "--gpu-type",
        "T4",
    ]))
    .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("fp8 weights need a GPU with fp8 support, which T4 lacks")
    );
}

/// Without `--gpu-type` (or with `all`), `size` puts every GPU type of the
/// catalog side by side: GPUs, MIG slice, TP x PP, nodes, context, how many
/// full-length requests the KV cache holds and decode speed; a GPU type
/// that cannot serve the model says why. The text is pinned.
#[test]
fn without_a_gpu_type_every_gpu_type_is_compared() {
    let got = render(&args(&["--model", "Qwen/Qwen2.5-7B-Instruct"])).unwrap();
    assert_eq!(got, include_str!("data/size-compare-qwen2.5-7b.txt"));
    assert_eq!(
        render(&args(&[
            "--model",
            "Qwen/Qwen2.5-7B-Instruct",
            "--gpu-type",
            "all"
        ]))
        .unwrap(),
        got
    );
    let big = render(&args(&["--model", "meta-llama/Llama-3.1-405B-Instruct"])).unwrap();
    assert!(
        big.lines()
            .any(|l| l.starts_with("T4               cannot serve it: ")),
        "{big}"
    );
    // A row ends with a clause of the reason, never inside its parentheses.
    let fp8 = render(&args(&[
        "--model",
        "deepseek-ai/DeepSeek-V3",
        "--gpu-type",
        "T4,L4",
    ]))
    .unwrap();
    let t4 = fp8.lines().find(|l| l.starts_with("T4 ")).unwrap();
    assert_eq!(
        t4,
        "T4               cannot serve it: fp8 weights need a GPU with fp8 support, which T4 lacks: vLLM runs them \
         on Turing weight-only (FP8 Marlin) in release 0.14.0 and later, and this plan's release is not known: if the \
         platform's image runs 0.14.0 or later, state it (the step input's vllmVersion; size --vllm-version)"
    );
    let compared = json_of(&["--model", "Qwen/Qwen2.5-7B-Instruct"]);
    let rows = compared["gpuTypes"].as_array().unwrap();
    assert_eq!(rows.len(), function_inference::sizing::gpus().len());
    let l4 = rows.iter().find(|r| r["gpuType"] == "L4").unwrap();
    assert_eq!(l4["plan"]["gpuCount"], 1);
    assert_eq!(l4["plan"].get("hourlyCost"), None);
    assert_eq!(compared.get("cheapest"), None);
}

/// What no GPU type can change (a model of unknown size, an architecture
/// vLLM retired) is one error led by its flag, in text and JSON alike, not
/// a table of the same row.
#[test]
fn a_fault_of_the_request_is_one_error_not_a_row_per_gpu_type() {
    let unknown = "--parameter-count (or --config with the model's config.json, or --weights-index): cannot tell \
                   how many parameters `example/support-bot` has: it is not in the model catalog and its id carries \
                   no size; give its parameter count (for example 8B, 70B or 8x7B)";
    for extra in [&[][..], &["--gpu-type", "L4,H100-80GB"], &["-o", "json"]] {
        let argv = [&["--model", "example/support-bot"][..], extra].concat();
        let e = run(&args(&argv), &mut Vec::new()).unwrap_err();
        assert_eq!(e.to_string(), unknown, "{argv:?}");
    }
    let e = render(&args(&[
        "--model",
        "meta-llama/Llama-3.2-11B-Vision-Instruct",
        "--vllm-version",
        "0.19.0",
    ]))
    .unwrap_err();
    assert!(
        e.to_string().starts_with(
            "meta-llama/Llama-3.2-11B-Vision-Instruct is a MllamaForConditionalGeneration model, which vLLM loads \
             only up to release 0.10.2; vLLM 0.19.0 cannot start it"
        ),
        "{e}"
    );
}

/// Llama 3.1 70B priced on three GPU types.
const PRICED_70B: [&str; 8] = [
    "--model",
    "meta-llama/Llama-3.1-70B-Instruct",
    "--gpu-price",
    "L4=0.8",
    "--gpu-price",
    "l40s-48gb=1.9",
    "--gpu-price",
    "H100-80GB=4.1",
];

/// With `--gpu-price`, each priced row shows what one replica costs and the
/// last line names the cheapest priced type the way an XR's status does.
#[test]
fn prices_add_a_cost_column_and_the_cheapest_type() {
    let priced = PRICED_70B;
    let got = render(&args(&priced)).unwrap();
    assert_eq!(
        got,
        include_str!("data/size-compare-llama-3.1-70b-priced.txt")
    );
    let compared = json_of(&priced);
    assert_eq!(
        compared["cheapest"],
        json!({"gpuType": "L40S", "reason": "GPU type chosen from the offered ones (one node before several, then the cheapest replica per hour): 8 x L40S at 15.20/h beats 4 x H100-80GB at 16.40/h; then 16 x L4 on 2 nodes at 12.80/h"})
    );
    let h100 = compared["gpuTypes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["gpuType"] == "H100-80GB")
        .unwrap();
    assert_eq!(h100["plan"]["hourlyCost"], json!(16.4));
    for (flag, message) in [
        (
            "L4",
            "invalid --gpu-price `L4`: write it as TYPE=PRICE, such as L4=0.8",
        ),
        (
            "L4=cheap",
            "invalid --gpu-price `L4=cheap`: the price is not a number; write it as TYPE=PRICE, such as L4=0.8",
        ),
        (
            "L4=-1",
            "invalid --gpu-price `L4=-1`: L4 is -1; give a positive price per GPU and hour (any currency, or relative costs such as 1 and 4.5)",
        ),
        (
            "L4=1e308",
            "invalid --gpu-price `L4=1e308`: L4 is 1e308, more than the 1e9 per GPU and hour a price may be; give it in a larger unit, or as relative costs such as 1 and 4.5",
        ),
        (
            "X9=1",
            "invalid --gpu-price `X9=1`: unknown GPU type `X9`: known GPU types are T4, V100, V100-PCIe, V100-32GB, \
             V100-32GB-PCIe, L4, A10G, L40S, A30, A100-40GB, A100-40GB-PCIe, A100-80GB, A100-80GB-PCIe, H100-80GB, \
             H100-PCIe, H100-NVL, H20, H200, H200-NVL, B200, GB200, B300, GH200, RTX-PRO-6000, MI300X, MI325X",
        ),
    ] {
        let e = render(&args(&[
            "--model",
            "Qwen/Qwen2.5-7B-Instruct",
            "--gpu-price",
            flag,
        ]))
        .unwrap_err();
        assert_eq!(e.to_string(), message);
    }
    // A second price for a type, by its name or another, is refused: the
    // first is not silently replaced.
    for second in ["L4=2", "nvidia-l4=2"] {
        let e = render(&args(&[
            "--model",
            "Qwen/Qwen2.5-7B-Instruct",
            "--gpu-price",
            "L4=1",
            "--gpu-price",
            second,
        ]))
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "invalid --gpu-price `{second}`: L4 is priced by an earlier --gpu-price already; give each GPU type one price"
            )
        );
    }
}

/// `--gpu-type` with a comma-separated list compares just those types, each
/// once, in the order written; its rows and cheapest type are the full
/// comparison's (which names the priced types, as it compares unpriced ones
/// too). A price for a type left out is refused, not dropped.
#[test]
fn a_list_of_gpu_types_is_compared_side_by_side() {
    let listed = [&PRICED_70B[..], &["--gpu-type", "l4, L40S,h100,L4"]].concat();
    let got = render(&args(&listed)).unwrap();
    let all = include_str!("data/size-compare-llama-3.1-70b-priced.txt");
    let row = |gpu: &str| {
        all.lines()
            .find(|l| l.starts_with(&format!("{gpu:<16} ")))
            .unwrap()
            .to_string()
    };
    let want = format!(
        "Model meta-llama/Llama-3.1-70B-Instruct, GPU types L4, L40S, H100-80GB (--gpu-type TYPE for one plan and its \
         reasons)\n\n{}\n{}\n{}\n{}\n\nMIG: the slice of each GPU a replica runs on (- for whole GPUs); KV holds: \
         full-length requests (of maxModelLen tokens) the KV cache of one replica holds at once; decode/s: one \
         sequence's tokens per second at most (the memory-bandwidth bound); cost/h: one replica at --gpu-price.\n\n{}\n",
        all.lines().nth(2).unwrap(),
        row("L4"),
        row("L40S"),
        row("H100-80GB"),
        // Every listed type is priced, so none is passed over.
        all.lines().last().unwrap().replace(
            "Cheapest of the priced types (H100-80GB, L4, L40S)",
            "Cheapest"
        ),
    );
    assert_eq!(got, want);
    let compared = json_of(&listed);
    let types: Vec<_> = compared["gpuTypes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["gpuType"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["L4", "L40S", "H100-80GB"]);
    assert_eq!(compared["cheapest"]["gpuType"], "L40S");
    let error = |argv: &[&str]| run(&args(argv), &mut Vec::new()).unwrap_err().to_string();
    // Every price outside the list is named.
    for (prices, message) in [
        (
            &["B200=5"][..],
            "invalid --gpu-price `B200=5`: B200 is not among the compared GPU types; add it to --gpu-type or drop its price",
        ),
        (
            &["L4=0.8", "B200=5", "T4=0.3"][..],
            "invalid --gpu-price `L4=0.8 B200=5 T4=0.3`: B200, T4 are not among the compared GPU types; add them to --gpu-type or drop their prices",
        ),
    ] {
        let mut argv = vec!["Qwen/Qwen2.5-7B-Instruct", "--gpu-type", "L4,H100"];
        argv.extend(prices.iter().flat_map(|p| ["--gpu-price", p]));
        assert_eq!(error(&argv), message);
    }
    assert_eq!(
        error(&["Qwen/Qwen2.5-7B-Instruct", "--gpu-type", " , "]),
        "invalid --gpu-type `,`: name GPU types separated by commas, such as L4,H100-80GB"
    );
    assert!(
        error(&["Qwen/Qwen2.5-7B-Instruct", "--gpu-type", "L4,P100"])
            .starts_with("--gpu-type: unknown GPU type `P100`: known GPU types are T4, V100")
    );
}

/// A MIG slice's bar is the slice's memory, not the whole GPU's.
#[test]
fn a_mig_slice_shows_the_slice_as_its_bar() {
    let got = render(&args(&[
        "--model",
        "Qwen/Qwen2.5-7B-Instruct",
        "--gpu-type",
        "A100-80GB",
        "--mig",
        "3g.40gb",
    ]))
    .unwrap();
    let bar = got.lines().find(|l| l.starts_with("Per GPU")).unwrap();
    // 0.9 of the slice's 39.25 GiB is used; before, the bar showed 79.2 GiB with 46.8 free.
    assert!(bar.ends_with(". free 3.9 of 39.2 GiB"), "{bar}");
}

/// One plan's text, with the per-GPU memory bar, is pinned.
#[test]
fn one_plan_shows_its_memory_as_a_bar() {
    let got = render(&args(&[
        "--model",
        "meta-llama/Llama-3.1-70B-Instruct",
        "--gpu-type",
        "H100-80GB",
    ]))
    .unwrap();
    assert_eq!(got, include_str!("data/size-llama-3.1-70b-h100.txt"));
    assert!(got.contains(
        "Per GPU        [WWWWWWWWWWWWWWWWWKKKKKKKKKKKKKKKKoooo...] W weights 32.9 | K KV cache 31.4 | o overhead 6.9 | . free 7.9 of 79.2 GiB\n"
    ));
}

/// `size` states the autoscaling target for the request size it is given
/// (the full context when none), in the text and in the JSON.
#[test]
fn size_states_the_autoscaling_target() {
    let flags = [
        "--model",
        "meta-llama/Llama-3.1-70B-Instruct",
        "--gpu-type",
        "H100-80GB",
        "--prompt-tokens",
        "6144",
        "--output-tokens",
        "2048",
    ];
    let text = render(&args(&flags)).unwrap();
    assert!(text.contains(
        "\nAutoscaling    scales out above 40 requests per replica (80 % of what one serves at once): the KV cache holds 50 requests of 8,192 tokens (prompt and output)\n"
    ), "{text}");
    let v = json_of(&[&flags[..], &["-o", "json"]].concat());
    assert_eq!(
        v["scaling"],
        json!({"requestTokens": 8192, "kvCacheRequests": 50, "maxNumSeqs": 1024, "targetRequestsPerReplica": 40,
               "reason": "scales out above 40 requests per replica (80 % of what one serves at once): the KV cache holds 50 requests of 8,192 tokens (prompt and output)"})
    );
    // The request's tokens take what an LLMInference's promptTokens and
    // outputTokens take; the largest once overflowed their sum.
    for tokens in ["0", "10485761", "18446744073709551615", "1.5"] {
        let e = Cli::try_parse_from([
            "size",
            "--model",
            "m",
            "--gpu-type",
            "L4",
            "--prompt-tokens",
            tokens,
        ])
        .err()
        .unwrap();
        assert!(
            e.to_string().contains(&format!(
                "invalid value '{tokens}' for '--prompt-tokens <PROMPT_TOKENS>': use a whole number of tokens from 1 to 10485760"
            )),
            "{e}"
        );
    }
}

/// The binary's `size` of a CodeLlama-shaped model on H100 as JSON, with
/// `--config config_arg`, `extra` arguments and `stdin`: its exit code,
/// stdout and stderr.
fn size_with_config(
    config_arg: &str,
    extra: &[&str],
    stdin: &[u8],
) -> (Option<i32>, String, String) {
    let out = support::output_within_given(
        support::binary()
            .args([
                "size",
                "example/my-codellama",
                "--gpu-type",
                "H100",
                "-o",
                "json",
                "--config",
                config_arg,
            ])
            .args(extra),
        stdin,
    );
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// `curl .../config.json | size --config -`: standard input is read as the
/// file would be, and an endless file is refused at the size limit.
#[test]
fn the_config_json_can_come_from_standard_input() {
    let config = data("codellama-7b-config.json");
    let size = |config_arg: &str, stdin: &[u8]| size_with_config(config_arg, &[], stdin);
    let from_file = size(&config, b"");
    assert_eq!(from_file.0, Some(0), "{}", from_file.2);
    assert!(
        from_file.1.contains("\"bytesPerToken\": 524288"),
        "{}",
        from_file.1
    );
    assert_eq!(size("-", &std::fs::read(&config).unwrap()), from_file);
    #[cfg(unix)]
    assert_eq!(
        size("/dev/zero", b""),
        (
            Some(2),
            String::new(),
            "function-inference size: invalid config `/dev/zero`: cannot read it: larger than 16 MiB, the most \
             function-inference reads; pass a JSON file\n"
                .into()
        )
    );
}

/// A config.json dtype vLLM does not serve in is said, not read as absent:
/// the plan sizes 16-bit weights, as vLLM's auto dtype loads them.
#[test]
fn a_config_dtype_vllm_does_not_serve_in_is_warned_of() {
    let config = std::fs::read_to_string(data("codellama-7b-config.json"))
        .unwrap()
        .replace(r#""torch_dtype": "bfloat16""#, r#""torch_dtype": "int7""#);
    let plan = |extra: &[&str]| {
        let (code, stdout, stderr) = size_with_config("-", extra, config.as_bytes());
        assert_eq!(code, Some(0), "{stderr}");
        serde_json::from_str::<Value>(&stdout).unwrap()
    };
    let auto = plan(&[]);
    assert_eq!(auto["dtype"], "bfloat16");
    assert_eq!(
        auto["warnings"],
        json!([
            "config.json's torch_dtype `int7` is none of bfloat16, float16 and float32, the dtypes vLLM serves \
             in: the plan sizes the weights at 16 bits, as vLLM's auto dtype loads them"
        ])
    );
    // A precision the caller asks for is what the plan sizes.
    let fp8 = plan(&["--quantization", "fp8"]);
    assert_eq!(fp8["quantization"], "fp8", "{fp8:#}");
    assert_eq!(fp8.get("warnings"), None, "{fp8:#}");
}
