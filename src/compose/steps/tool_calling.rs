//! Whether a model server parses tool calls, and with which vLLM parser.
//!
//! An OpenAI request with `tools` and no `tool_choice` means
//! `tool_choice: auto`, which vLLM refuses (400, "requires
//! --enable-auto-tool-choice and --tool-call-parser") unless it was started
//! with a parser for the model's tool-call format. A Model may name its
//! parser (`spec.toolCallParser`), and every runtime serving it gets it; an
//! AgentPool whose agents have tools gets the parser vLLM's tool calling
//! guide documents for the model family when the Model names none.

use crate::compose::steps::extra_args::sets;
use crate::xr::model::TOOL_CALL_PARSER_MAX;

/// Whether `name` is written as vLLM's parser names are (`llama3_json`,
/// `granite-20b-fc`): lower-case letters, digits, `_` and `-`, the schema's
/// pattern. `Err` says how, for `field`.
pub(crate) fn require_parser_name(field: &str, name: &str) -> Result<(), String> {
    let valid = name.len() <= TOOL_CALL_PARSER_MAX
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if valid {
        return Ok(());
    }
    Err(format!(
        "{field} is {name:?}; use the name of a vLLM tool-call parser: at most {TOOL_CALL_PARSER_MAX} lower-case \
         letters, digits, '_' and '-', such as hermes, llama3_json or mistral"
    ))
}

/// The parser vLLM's tool calling guide documents for a model whose own
/// chat template renders tools (no `--chat-template` needed, which the
/// runtimes' images do not all ship), by Hugging Face id.
pub(crate) fn documented_parser(model_id: &str) -> Option<&'static str> {
    let id = model_id.to_ascii_lowercase();
    let (org, name) = id.split_once('/')?;
    let instruct = name.contains("instruct");
    let parser = match org {
        // Qwen2.5 and Qwen3 templates render Hermes-style tool calls; the
        // coders of Qwen3 write their own XML format.
        "qwen" if name.starts_with("qwen3-coder") => "qwen3_coder",
        "qwen"
            if (name.starts_with("qwen2.5-")
                || name.starts_with("qwen3")
                || name.starts_with("qwq"))
                && !name.contains("-math") =>
        {
            "hermes"
        }
        "nousresearch" if name.starts_with("hermes-2-pro") || name.starts_with("hermes-3") => {
            "hermes"
        }
        // JSON tool calls: Llama 3.1, 3.2, 3.3 and 4 instruction-tuned models.
        "meta-llama"
            if instruct
                && [
                    "llama-3.1-",
                    "meta-llama-3.1-",
                    "llama-3.2-",
                    "llama-3.3-",
                    "llama-4-",
                ]
                .iter()
                .any(|p| name.starts_with(p)) =>
        {
            "llama3_json"
        }
        // Mistral's function-calling releases (not Mistral 7B v0.1/v0.2 or Mixtral 8x7B).
        "mistralai"
            if name.starts_with("mistral-7b-instruct-v0.3")
                || name.starts_with("mixtral-8x22b-instruct")
                || [
                    "mistral-nemo-",
                    "mistral-small-",
                    "mistral-large-",
                    "ministral-",
                    "magistral-",
                    "devstral-",
                ]
                .iter()
                .any(|p| name.starts_with(p)) =>
        {
            "mistral"
        }
        "ibm-granite" if name.starts_with("granite-3.") && instruct => "granite",
        "openai" if name.starts_with("gpt-oss-") => "openai",
        "moonshotai" if name.starts_with("kimi-k2") => "kimi_k2",
        _ => return None,
    };
    Some(parser)
}

/// The parser to name when the family's is not known.
const PARSER_OF_ITS_FORMAT: &str = "the parser of the model's tool-call format (vLLM's tool calling guide lists \
     them: hermes, llama3_json, mistral, pythonic, ...)";

/// Refuses `--enable-auto-tool-choice` in an XR's extra arguments without a
/// parser there or from its Model: vLLM exits at startup ("requires
/// --tool-call-parser"), so the server would only ever crash.
pub(crate) fn check_extra_args(
    field: &str,
    extra_args: &[String],
    model_parser: bool,
    model_id: &str,
) -> Result<(), String> {
    let has = |flag: &str| sets(extra_args, flag);
    if has("--enable-auto-tool-choice") && !has("--tool-call-parser") && !model_parser {
        return Err(format!(
            "{field} has --enable-auto-tool-choice without --tool-call-parser, and vLLM does not start without one \
             (\"--enable-auto-tool-choice requires --tool-call-parser\"); {}",
            match documented_parser(model_id) {
                Some(parser) => format!(
                    "add \"--tool-call-parser\", \"{parser}\", the parser vLLM documents for {model_id}"
                ),
                None => format!("add \"--tool-call-parser\" and {PARSER_OF_ITS_FORMAT}"),
            }
        ));
    }
    Ok(())
}

/// The parser a model server runs with and the sentence the plan's reasons
/// carry.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ToolCalling {
    pub(crate) parser: String,
    pub(crate) reason: String,
}

impl ToolCalling {
    /// The Model's own parser, wherever the Model is served.
    pub(crate) fn of_model(parser: Option<&str>) -> Option<Self> {
        let parser = parser?;
        Some(Self {
            parser: parser.to_string(),
            reason: format!(
                "Tool calling: vLLM parses tool calls with {parser}, the Model's spec.toolCallParser \
                 (--enable-auto-tool-choice --tool-call-parser {parser})."
            ),
        })
    }

    /// The parser for a pool whose agents have tools: the Model's, else the
    /// family's. `Err` is the warning when neither is known.
    pub(crate) fn for_agents(model_parser: Option<&str>, model_id: &str) -> Result<Self, String> {
        if let Some(own) = Self::of_model(model_parser) {
            return Ok(own);
        }
        match documented_parser(model_id) {
            Some(parser) => Ok(Self {
                parser: parser.to_string(),
                reason: format!(
                    "Tool calling: the agents have tools (spec.agentClass.toolPermissions), so vLLM parses tool \
                     calls with {parser}, the parser it documents for {model_id} (--enable-auto-tool-choice \
                     --tool-call-parser {parser}; the Model's spec.toolCallParser names another)."
                ),
            }),
            None => Err(format!(
                "spec.agentClass.toolPermissions gives the agents tools, but no tool-call parser is known for \
                 {model_id}, and vLLM refuses requests with tools (tool_choice auto) without one: set the Model's \
                 spec.toolCallParser to {PARSER_OF_ITS_FORMAT}"
            )),
        }
    }

    /// The `vllm serve` arguments.
    pub(crate) fn args(&self) -> [String; 3] {
        [
            "--enable-auto-tool-choice".to_string(),
            "--tool-call-parser".to_string(),
            self.parser.clone(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_parser_follows_the_family_and_its_tool_capable_releases() {
        for (model, parser) in [
            ("Qwen/Qwen2.5-7B-Instruct", Some("hermes")),
            ("Qwen/Qwen2.5-Coder-32B-Instruct", Some("hermes")),
            ("Qwen/Qwen3-30B-A3B-Instruct-2507", Some("hermes")),
            ("Qwen/Qwen3-Coder-30B-A3B-Instruct", Some("qwen3_coder")),
            ("Qwen/Qwen2.5-Math-7B-Instruct", None),
            ("meta-llama/Llama-3.1-8B-Instruct", Some("llama3_json")),
            ("meta-llama/Meta-Llama-3.1-8B-Instruct", Some("llama3_json")),
            ("meta-llama/Llama-3.3-70B-Instruct", Some("llama3_json")),
            (
                "meta-llama/Llama-4-Scout-17B-16E-Instruct",
                Some("llama3_json"),
            ),
            // Base models have no chat template at all.
            ("meta-llama/Llama-3.1-8B", None),
            ("mistralai/Mistral-7B-Instruct-v0.3", Some("mistral")),
            ("mistralai/Mistral-7B-Instruct-v0.2", None),
            ("mistralai/Mixtral-8x7B-Instruct-v0.1", None),
            ("mistralai/Mixtral-8x22B-Instruct-v0.1", Some("mistral")),
            ("mistralai/Mistral-Small-24B-Instruct-2501", Some("mistral")),
            ("ibm-granite/granite-3.1-8b-instruct", Some("granite")),
            ("openai/gpt-oss-120b", Some("openai")),
            ("moonshotai/Kimi-K2-Instruct", Some("kimi_k2")),
            ("NousResearch/Hermes-3-Llama-3.1-8B", Some("hermes")),
            // Their parsers need a chat template the images may not ship.
            ("deepseek-ai/DeepSeek-V3", None),
            ("google/gemma-3-27b-it", None),
            ("TinyLlama/TinyLlama-1.1B-Chat-v1.0", None),
            ("no-organisation", None),
        ] {
            assert_eq!(documented_parser(model), parser, "{model}");
        }
    }

    #[test]
    fn parser_names_are_vllms_spelling() {
        for good in ["hermes", "llama3_json", "granite-20b-fc", "kimi_k2"] {
            assert_eq!(require_parser_name("f", good), Ok(()), "{good}");
        }
        let long = "a".repeat(TOOL_CALL_PARSER_MAX + 1);
        for bad in [
            "",
            "Hermes",
            "hermes 2",
            "_hermes",
            "llama3.json",
            long.as_str(),
        ] {
            assert!(require_parser_name("f", bad).is_err(), "{bad}");
        }
    }
}
