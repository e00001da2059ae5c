//! Pi's command line (`cli/args.js`): the same flags, parsed by clap. Pi's multi-letter short
//! flags (`-nt`, `-nc`, ...) are spelled out before parsing, since clap's short flags are single
//! letters. A long option Pi does not know is taken out first, with its value as Pi takes it,
//! for the extensions' flags (`pi.registerFlag`): whether it is one is known only once they
//! have loaded.

use clap::{ArgAction, CommandFactory, Parser, ValueEnum};
use pi_effects::extension::sidecar::GivenFlag;

/// What `--replay FILE` does with the file (the vocabulary of VCR libraries).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CassetteMode {
    Replay,
    Record,
    Once,
    Hybrid,
}

/// How the run talks to its caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    Text,
    Json,
    Rpc,
}

/// Every flag of `pi` 1.5.2 that makes sense without the interactive interface.
#[derive(Clone, Debug, Default, Parser)]
#[command(
    name = "pi",
    disable_help_flag = true,
    disable_version_flag = true,
    about = "AI coding assistant with read, bash, edit, write tools"
)]
pub struct Args {
    #[arg(long)]
    pub provider: Option<String>,
    /// Model pattern or ID (supports "provider/id" and optional `:<thinking>`).
    #[arg(long)]
    pub model: Option<String>,
    #[arg(long = "api-key")]
    pub api_key: Option<String>,
    #[arg(long = "system-prompt")]
    pub system_prompt: Option<String>,
    /// Text or a file whose contents are appended (repeatable).
    #[arg(long = "append-system-prompt")]
    pub append_system_prompt: Vec<String>,
    #[arg(long, value_enum)]
    pub mode: Option<Mode>,
    #[arg(short = 'p', long = "print")]
    pub print: bool,
    #[arg(short = 'c', long = "continue")]
    pub continue_session: bool,
    #[arg(short = 'r', long)]
    pub resume: bool,
    /// Session file path or id prefix.
    #[arg(long)]
    pub session: Option<String>,
    /// Session file path or id prefix to fork into a new session.
    #[arg(long)]
    pub fork: Option<String>,
    /// The id of this directory's session to open, or of the new session (Pi 1.5).
    #[arg(long = "session-id")]
    pub session_id: Option<String>,
    /// The session's display name, recorded as a `session_info` entry (Pi 1.5).
    #[arg(short = 'n', long = "name", allow_hyphen_values = true)]
    pub name: Option<String>,
    #[arg(long = "session-dir")]
    pub session_dir: Option<String>,
    #[arg(long = "no-session")]
    pub no_session: bool,
    /// Wait for another process writing the session file to finish instead of refusing (not
    /// Pi's).
    #[arg(long = "wait-for-session")]
    pub wait_for_session: bool,
    /// Comma-separated model patterns for cycling.
    #[arg(long, value_delimiter = ',')]
    pub models: Vec<String>,
    #[arg(long = "no-tools")]
    pub no_tools: bool,
    #[arg(long = "no-builtin-tools")]
    pub no_builtin_tools: bool,
    /// Comma-separated allowlist of tool names or `*` patterns, or only `+name`/`-name`
    /// entries that change the default tools.
    #[arg(short = 't', long, value_delimiter = ',', allow_hyphen_values = true)]
    pub tools: Option<Vec<String>>,
    /// Comma-separated denylist of tool names or `*` patterns (Pi 1.5).
    #[arg(long = "exclude-tools", value_delimiter = ',')]
    pub exclude_tools: Option<Vec<String>>,
    #[arg(long)]
    pub thinking: Option<String>,
    #[arg(short = 'e', long = "extension")]
    pub extensions: Vec<String>,
    #[arg(long = "no-extensions")]
    pub no_extensions: bool,
    #[arg(long = "skill")]
    pub skills: Vec<String>,
    #[arg(long = "no-skills")]
    pub no_skills: bool,
    #[arg(long = "prompt-template")]
    pub prompt_templates: Vec<String>,
    #[arg(long = "no-prompt-templates")]
    pub no_prompt_templates: bool,
    #[arg(long = "theme")]
    pub themes: Vec<String>,
    #[arg(long = "no-themes")]
    pub no_themes: bool,
    #[arg(long = "no-context-files")]
    pub no_context_files: bool,
    /// Export a session file to HTML and exit.
    #[arg(long)]
    pub export: Option<String>,
    /// List available models, optionally filtered.
    #[arg(long = "list-models", num_args = 0..=1, default_missing_value = "")]
    pub list_models: Option<String>,
    #[arg(long)]
    pub verbose: bool,
    /// Trust the project's own files for this run (Pi 1.5; the last of the two flags wins).
    #[arg(short = 'a', long = "approve", overrides_with = "no_approve")]
    pub approve: bool,
    /// Ignore the project's own files for this run (Pi 1.5).
    #[arg(long = "no-approve", overrides_with = "approve")]
    pub no_approve: bool,
    /// Accepted as Pi 1.5 accepts it; this build has no MCP support to turn off.
    #[arg(long = "no-mcp")]
    pub no_mcp: bool,
    /// Pi 1.5's TUI mode: checked as Pi checks it ([`Args::tui_mode_error`]); there is no TUI.
    #[arg(long = "tui-mode", num_args = 0..=1, default_missing_value = "")]
    pub tui_mode: Option<String>,
    #[arg(long)]
    pub offline: bool,
    /// Record the run as a cassette into this file.
    #[arg(long)]
    pub record: Option<String>,
    /// Answer the run from this cassette (see `--cassette-mode`).
    #[arg(long)]
    pub replay: Option<String>,
    /// What `--replay` does: `replay` (the default; the network is never touched), `once`
    /// (record when the file is missing), `record` (record again), `hybrid`.
    #[arg(long = "cassette-mode", value_enum)]
    pub cassette_mode: Option<CassetteMode>,
    #[arg(short = 'h', long, action = ArgAction::SetTrue)]
    pub help: bool,
    #[arg(short = 'v', long, action = ArgAction::SetTrue)]
    pub version: bool,
    /// Messages, and `@file` arguments whose contents are prepended to the first message.
    #[arg(allow_hyphen_values = false)]
    pub messages: Vec<String>,
    /// The long options Pi's own do not know, in the order given: the extensions' flags, or
    /// Pi's `Unknown option` error once the extensions have loaded.
    #[arg(skip)]
    pub extension_flags: Vec<GivenFlag>,
}

impl Args {
    /// Parses `argv` (without the program name).
    pub fn parse_from_args(argv: impl IntoIterator<Item = String>) -> Result<Args, clap::Error> {
        // `--` ends the options (Pi 1.5): what follows is kept as it is.
        let mut ended = false;
        let spelled: Vec<String> = argv
            .into_iter()
            .map(move |arg| {
                if ended {
                    return arg;
                }
                ended = arg == "--";
                spell_out(arg)
            })
            .collect();
        let (known, extension_flags) = take_unknown_flags(spelled);
        let mut args = Args::try_parse_from(std::iter::once("pi".to_owned()).chain(known))?;
        args.extension_flags = extension_flags;
        Ok(args)
    }

    /// The messages, `@file` arguments left out.
    pub fn text_messages(&self) -> Vec<&str> {
        self.messages
            .iter()
            .filter(|m| !m.starts_with('@'))
            .map(String::as_str)
            .collect()
    }

    /// `--tools` entries, trimmed, empty ones dropped (`None` without the flag).
    pub fn tool_names(&self) -> Option<Vec<String>> {
        self.tools.as_deref().map(trimmed)
    }

    /// `--exclude-tools` entries, trimmed, empty ones dropped (`None` without the flag).
    pub fn excluded_tools(&self) -> Option<Vec<String>> {
        self.exclude_tools.as_deref().map(trimmed)
    }

    /// `--approve` (true) or `--no-approve` (false), whichever came last; `None` without them.
    pub fn project_trust(&self) -> Option<bool> {
        match (self.approve, self.no_approve) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        }
    }

    /// Pi 1.5's refusal of a missing or unknown `--tui-mode` value.
    pub fn tui_mode_error(&self) -> Option<String> {
        match self.tui_mode.as_deref()? {
            "regular" | "fullscreen" => None,
            "" => Some(TUI_MODE_MISSING.to_owned()),
            other => Some(format!(
                "{TUI_MODE_INVALID_PREFIX}\"{other}\"{TUI_MODE_VALID}"
            )),
        }
    }

    /// The effective mode: `--mode`, else text (print mode is implied by a non-interactive run).
    pub fn mode(&self) -> Mode {
        self.mode.unwrap_or(Mode::Text)
    }
}

/// Pi 1.5's texts for `--tui-mode` (`cli/args.js`).
const TUI_MODE_MISSING: &str = "--tui-mode requires regular or fullscreen";
const TUI_MODE_INVALID_PREFIX: &str = "Invalid TUI mode ";
const TUI_MODE_VALID: &str = ". Valid values: regular, fullscreen";

fn trimmed(names: &[String]) -> Vec<String> {
    names
        .iter()
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .collect()
}

/// Takes the long options Pi's own do not know out of `argv` (before a `--`), each with its
/// value as Pi's `parseArgs` takes it: after `=`, or the next word unless that starts with `-`
/// or `@`. The values of Pi's own options are stepped over.
fn take_unknown_flags(argv: Vec<String>) -> (Vec<String>, Vec<GivenFlag>) {
    let command = Args::command();
    let known = |arg: &str| {
        command
            .get_arguments()
            .find(|a| match (arg.strip_prefix("--"), arg.strip_prefix('-')) {
                (Some(long), _) => a.get_long() == Some(long),
                (None, Some(short)) => {
                    let mut chars = short.chars();
                    chars.next().is_some_and(|c| a.get_short() == Some(c)) && chars.next().is_none()
                }
                _ => false,
            })
    };
    let mut kept = Vec::new();
    let mut flags = Vec::new();
    let mut words = argv.into_iter().peekable();
    while let Some(arg) = words.next() {
        if arg == "--" {
            kept.push(arg);
            kept.extend(words);
            break;
        }
        let name = arg.split_once('=').map_or(arg.as_str(), |(name, _)| name);
        if let Some(option) = known(name) {
            let takes = option.get_action().takes_values() && !arg.contains('=');
            let optional = option.get_num_args().is_some_and(|n| n.min_values() == 0);
            kept.push(arg);
            if takes && (!optional || words.peek().is_some_and(|w| !w.starts_with('-'))) {
                kept.extend(words.next());
            }
            continue;
        }
        let Some(long) = arg.strip_prefix("--") else {
            kept.push(arg);
            continue;
        };
        let given = match long.split_once('=') {
            Some((name, value)) => GivenFlag {
                name: name.to_owned(),
                value: Some(value.to_owned()),
            },
            None => GivenFlag {
                name: long.to_owned(),
                value: words.next_if(|w| !w.starts_with('-') && !w.starts_with('@')),
            },
        };
        flags.push(given);
    }
    (kept, flags)
}

/// Pi's multi-letter short flags as their long forms.
/// The values `--mode` takes, as Pi 1.5.2's refusal of another lists them.
const VALID_MODES: &str = "text, json, rpc";

/// Pi 1.5.2's own words for the usage errors it names itself (`cli/args.js`, `main.js`): an
/// unknown option and an invalid `--mode`. `None` for the others, which clap words.
pub fn pi_usage_error(error: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let context = |kind| match error.get(kind) {
        Some(ContextValue::String(text)) => Some(text.as_str()),
        _ => None,
    };
    match error.kind() {
        ErrorKind::UnknownArgument => {
            context(ContextKind::InvalidArg).map(|arg| format!("Error: Unknown option: {arg}"))
        }
        ErrorKind::InvalidValue if context(ContextKind::InvalidArg)?.starts_with("--mode") => {
            let value = context(ContextKind::InvalidValue)?;
            Some(format!(
                "Error: Invalid mode \"{value}\". Valid values: {VALID_MODES}"
            ))
        }
        _ => None,
    }
}

fn spell_out(arg: String) -> String {
    let long = match arg.as_str() {
        "-nt" => "--no-tools",
        "-nbt" => "--no-builtin-tools",
        "-ne" => "--no-extensions",
        "-ns" => "--no-skills",
        "-np" => "--no-prompt-templates",
        "-nc" => "--no-context-files",
        "-xt" => "--exclude-tools",
        "-na" => "--no-approve",
        _ => return arg,
    };
    long.to_owned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Args {
        Args::parse_from_args(args.iter().map(|a| (*a).to_owned())).unwrap()
    }

    #[test]
    fn pi_flags_parse() {
        let args = parse(&[
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--mode",
            "json",
            "-p",
            "Hello",
        ]);
        assert_eq!(args.provider.as_deref(), Some("mock"));
        assert_eq!(args.mode(), Mode::Json);
        assert!(args.print);
        assert_eq!(args.text_messages(), ["Hello"]);
    }

    #[test]
    fn several_messages_and_files_keep_their_order() {
        let args = parse(&["-p", "@a.md", "First", "Second", "-nt", "-nc"]);
        assert_eq!(args.text_messages(), ["First", "Second"]);
        assert!(args.no_tools && args.no_context_files);
    }

    #[test]
    fn lists_and_optional_values() {
        let args = parse(&["--tools", "read, bash", "--models", "a,b", "--list-models"]);
        assert_eq!(args.tool_names().unwrap(), ["read", "bash"]);
        assert_eq!(args.models, ["a", "b"]);
        assert_eq!(args.list_models.as_deref(), Some(""));
        let args = parse(&["--list-models", "sonnet"]);
        assert_eq!(args.list_models.as_deref(), Some("sonnet"));
    }

    #[test]
    fn mistakes_are_named() {
        let err = Args::parse_from_args(["--mode".to_owned(), "xml".to_owned()]).unwrap_err();
        assert!(err.to_string().contains("xml"), "{err}");
        let err = Args::parse_from_args(["-q".to_owned()]).unwrap_err();
        assert!(err.to_string().contains("-q"), "{err}");
    }

    #[test]
    fn unknown_long_options_are_kept_for_the_extensions_with_their_values() {
        let args = parse(&[
            "--greeting",
            "hi",
            "--loud",
            "-p",
            "--model",
            "m",
            "--level=3",
            "--at",
            "@f.md",
            "--system-prompt",
            "be brief",
            "msg",
            "--",
            "--after",
        ]);
        let flag = |name: &str, value: Option<&str>| GivenFlag {
            name: name.into(),
            value: value.map(str::to_owned),
        };
        assert_eq!(
            args.extension_flags,
            [
                flag("greeting", Some("hi")),
                flag("loud", None),
                flag("level", Some("3")),
                flag("at", None),
            ]
        );
        assert!(args.print);
        assert_eq!(args.model.as_deref(), Some("m"));
        assert_eq!(args.system_prompt.as_deref(), Some("be brief"));
        assert_eq!(args.messages, ["@f.md", "msg", "--after"]);
    }
}
