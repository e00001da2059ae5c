//! A task's own options for its agent (`[task.agent]`, or `[defaults.agent]`): extra Pi
//! flags, environment variables, text appended to the system prompt, a context file and MCP
//! servers. Each is checked when the suite is read, since what would break the trial (a flag
//! that changes Pi's mode, session or model) or leak (a variable that names a credential) must
//! never reach a run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::check::toml_to_json;

/// The options as a suite gives them.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAgentOptions {
    pub args: Option<Vec<String>>,
    pub env: Option<BTreeMap<String, String>>,
    pub append_system_prompt: Option<String>,
    pub context_file: Option<String>,
    pub mcp_servers: Option<toml::Table>,
}

/// A task's agent options, checked, the task's fields replacing the defaults' one by one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentOptions {
    /// Words added to the agent's command line, before the model and prompts.
    pub args: Vec<String>,
    /// Variables set in the agent process's environment (its commands do not see them).
    pub env: BTreeMap<String, String>,
    /// Pi's `--append-system-prompt`.
    pub append_system_prompt: Option<String>,
    /// A file copied into the trial's agent folder as `AGENTS.md`: Pi's global context file,
    /// put first in the system prompt's project context, outside the workspace the checks
    /// look at.
    pub context_file: Option<PathBuf>,
    /// MCP servers as the entries of Pi's `mcp.json` `mcpServers` (name to entry, Pi's own
    /// field names), written into the trial's agent folder as its `mcp.json`: Pi starts them
    /// for the agent, inside the trial's sandbox.
    pub mcp_servers: serde_json::Map<String, serde_json::Value>,
}

/// Pi flags the harness sets itself or that would take the trial out of its hands: its mode
/// and prompts, its session, recording and replay, its model and key, its tools and thinking
/// (a suite's own fields), the system prompt append (the `append_system_prompt` field), and
/// the flags that print and exit, or load code from outside the workspace.
pub const REFUSED_FLAGS: &[&str] = &[
    "--mode",
    "--print",
    "--continue",
    "--resume",
    "--session",
    "--fork",
    "--session-dir",
    "--no-session",
    "--wait-for-session",
    "--record",
    "--replay",
    "--cassette-mode",
    "--api-key",
    "--provider",
    "--model",
    "--models",
    "--tools",
    "--no-tools",
    "--no-builtin-tools",
    "--thinking",
    "--append-system-prompt",
    "--extension",
    "--export",
    "--list-models",
    "--help",
    "--version",
];

impl AgentOptions {
    /// Checks `task`'s options over `defaults`' (paths relative to `folder`, the suite's); the
    /// field and message of what is refused.
    pub fn resolve(
        folder: &Path,
        defaults: Option<&RawAgentOptions>,
        task: Option<&RawAgentOptions>,
    ) -> Result<AgentOptions, (&'static str, String)> {
        let pick = |f: fn(&RawAgentOptions) -> bool| task.filter(|t| f(t)).or(defaults);
        let args = pick(|o| o.args.is_some())
            .and_then(|o| o.args.clone())
            .unwrap_or_default();
        for word in &args {
            check_arg(word).map_err(|m| ("agent.args", m))?;
        }
        let env = pick(|o| o.env.is_some())
            .and_then(|o| o.env.clone())
            .unwrap_or_default();
        for (name, value) in &env {
            check_env(name, value).map_err(|m| ("agent.env", m))?;
        }
        let append_system_prompt =
            pick(|o| o.append_system_prompt.is_some()).and_then(|o| o.append_system_prompt.clone());
        let context_file = pick(|o| o.context_file.is_some())
            .and_then(|o| o.context_file.as_deref())
            .map(|file| {
                let path = folder.join(file);
                match std::fs::symlink_metadata(&path) {
                    Ok(m) if m.is_file() => Ok(path),
                    Ok(_) => Err(format!("`{file}` is not a regular file")),
                    Err(e) => Err(format!("`{file}`: {e}")),
                }
            })
            .transpose()
            .map_err(|m| ("agent.context_file", m))?;
        let mcp_servers = pick(|o| o.mcp_servers.is_some())
            .and_then(|o| o.mcp_servers.as_ref())
            .map(check_mcp_servers)
            .transpose()
            .map_err(|m| ("agent.mcp_servers", m))?
            .unwrap_or_default();
        Ok(AgentOptions {
            args,
            env,
            append_system_prompt,
            context_file,
            mcp_servers,
        })
    }

    /// The `mcp.json` the trial's agent folder gets: `None` when the task declares no server.
    pub fn mcp_json(&self) -> Option<Value> {
        (!self.mcp_servers.is_empty())
            .then(|| serde_json::json!({ "mcpServers": self.mcp_servers }))
    }

    /// What the task's MCP servers run: each server's command (a bare name is found on the
    /// agent's `PATH` by the sandbox) and its arguments that are absolute paths. The agent's
    /// sandbox binds what of them names a file (the install folder of a program or script),
    /// never a folder; `check_mcp_servers` refused a suite whose words name a folder or a
    /// private file of the user's.
    pub fn mcp_programs(&self) -> Vec<PathBuf> {
        self.mcp_servers
            .values()
            .flat_map(host_words)
            .map(PathBuf::from)
            .collect()
    }

    /// Each MCP server's name and the command it runs (HTTP servers have none).
    pub fn mcp_commands(&self) -> impl Iterator<Item = (&str, &str)> {
        self.mcp_servers.iter().filter_map(|(name, entry)| {
            entry
                .get("command")
                .and_then(Value::as_str)
                .map(|command| (name.as_str(), command))
        })
    }
}

/// An MCP server entry's command (first, when it is one) and its arguments that are absolute
/// paths.
fn host_words(entry: &Value) -> Vec<String> {
    let command = entry.get("command").and_then(Value::as_str);
    let args = entry.get("args").and_then(Value::as_array);
    let absolute = args
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|word| Path::new(word).is_absolute());
    command
        .into_iter()
        .chain(absolute)
        .map(str::to_owned)
        .collect()
}

/// Refuses words of an MCP server entry (its command, its absolute arguments) that would bring
/// the host into the agent's sandbox, which binds what they name read-only: a folder (`/`,
/// `HOME`: the sandbox binds a server's files, never a folder), a file other users may not
/// read (a key of the user's), anything in the user's Pi folders (its `auth.json`), and an
/// argument among `HOME`'s dotfiles or in a hidden folder of it (`~/.npmrc`, `~/.config`: the
/// user's settings and tokens; a command there, `~/.local/bin/x`, is a program). A word naming
/// nothing that exists brings nothing.
fn check_host_words(entry: &Value) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let private = crate::isolate::pi_folders();
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .map(|home| home.canonicalize().unwrap_or(home));
    let has_command = entry.get("command").is_some();
    for (at, word) in host_words(entry).into_iter().enumerate() {
        let path = Path::new(&word);
        if !path.is_absolute() {
            continue;
        }
        let Ok(real) = path.canonicalize() else {
            continue;
        };
        let Ok(meta) = std::fs::metadata(&real) else {
            continue;
        };
        let hidden_in_home = home
            .as_deref()
            .and_then(|home| real.strip_prefix(home).ok())
            .and_then(|inside| inside.components().next())
            .is_some_and(|first| first.as_os_str().to_string_lossy().starts_with('.'));
        let refused = if meta.is_dir() {
            "is a folder: the agent's sandbox binds a server's program and files, never a folder of the host"
        } else if private.iter().any(|dir| real.starts_with(dir)) {
            "is in the user's Pi folder (its keys and settings), which no agent's sandbox holds"
        } else if meta.permissions().mode() & 0o004 == 0 {
            "is a file other users may not read (the user's own, a key perhaps), which no agent's sandbox holds"
        } else if hidden_in_home && !(has_command && at == 0) {
            "is among the dotfiles of HOME (the user's settings and tokens), which no agent's sandbox holds"
        } else {
            continue;
        };
        return Err(format!("`{}` {refused}", word.escape_debug()));
    }
    Ok(())
}

/// Checks MCP servers given as Pi's `mcpServers` entries, as far as the trial depends on them:
/// each a table with a `command` (stdio) or a `url` (HTTP), `args` a list of strings, and `env`
/// and `headers` tables of strings in which a variable or header whose name says it holds a
/// credential takes its value from the eval's environment (`${NAME}`, which Pi resolves),
/// never from the suite. What else an entry says is Pi's to read, and Pi's notice names what
/// it refuses. The entries as JSON.
fn check_mcp_servers(table: &toml::Table) -> Result<serde_json::Map<String, Value>, String> {
    let mut servers = serde_json::Map::new();
    for (name, entry) in table {
        let at = |m: String| format!("server `{}`: {m}", name.escape_debug());
        if name.trim().is_empty() {
            return Err("a server needs a name".to_owned());
        }
        let Value::Object(entry) = toml_to_json(entry) else {
            return Err(at("not a table".to_owned()));
        };
        let text = |field: &str| {
            entry
                .get(field)
                .map(|v| v.as_str().filter(|s| !s.is_empty()))
        };
        match (text("command"), text("url")) {
            (Some(Some(_)), None) | (None, Some(Some(_))) => {}
            (Some(_), Some(_)) => return Err(at("`command` and `url` exclude each other".into())),
            (None, None) => return Err(at("needs a `command` or a `url`".into())),
            _ => return Err(at("`command` or `url` must be a non-empty string".into())),
        }
        if let Some(args) = entry.get("args") {
            let strings = args
                .as_array()
                .is_some_and(|a| a.iter().all(Value::is_string));
            if !strings {
                return Err(at("`args` must be a list of strings".into()));
            }
        }
        for field in ["env", "headers"] {
            let Some(values) = entry.get(field) else {
                continue;
            };
            let Some(values) = values.as_object() else {
                return Err(at(format!("`{field}` must be a table of strings")));
            };
            for (key, value) in values {
                let Some(value) = value.as_str() else {
                    return Err(at(format!("`{field}.{key}` must be a string")));
                };
                if pi_credential_names::is_credential_name(key) && !is_reference(value) {
                    return Err(at(format!(
                        "`{field}.{key}` names a credential: give it as `${{NAME}}`, a variable of the eval's environment, never its value"
                    )));
                }
            }
        }
        let entry = Value::Object(entry);
        check_host_words(&entry).map_err(at)?;
        servers.insert(name.clone(), entry);
    }
    Ok(servers)
}

/// Whether `value` is only a reference to a variable (`${NAME}`), which Pi resolves.
fn is_reference(value: &str) -> bool {
    value
        .strip_prefix("${")
        .and_then(|rest| rest.strip_suffix('}'))
        .is_some_and(|name| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

/// Refuses a flag of [`REFUSED_FLAGS`] (as `--flag` or `--flag=value`), any short flag (Pi's
/// short flags alias refused long ones: `-p`, `-nt`), and a word starting with `@`, which Pi
/// reads as a file to attach.
fn check_arg(word: &str) -> Result<(), String> {
    if let Some(flag) = word.strip_prefix("--") {
        let name = format!("--{}", flag.split('=').next().unwrap_or(flag));
        if REFUSED_FLAGS.contains(&name.as_str()) {
            return Err(format!(
                "`{name}` is set by the harness or would take the trial out of its hands (refused: {})",
                REFUSED_FLAGS.join(", ")
            ));
        }
        return Ok(());
    }
    if word.starts_with('-') && word.len() > 1 {
        return Err(format!(
            "`{word}`: short flags are refused (several alias flags the harness sets): write the long form"
        ));
    }
    if word.starts_with('@') {
        return Err(format!("`{word}`: Pi would read it as a file to attach"));
    }
    Ok(())
}

/// Refuses a variable whose name says it holds a credential (the rule of `pi-credential-names`:
/// a key reaches an agent through `auth.json` and `models.json`, never a suite), `PATH`,
/// `HOME` and `PI_*` (the harness sets them), and names that are not `[A-Za-z_][A-Za-z0-9_]*`.
fn check_env(name: &str, value: &str) -> Result<(), String> {
    let well_formed = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !well_formed {
        return Err(format!("`{}` is not a variable name", name.escape_debug()));
    }
    if pi_credential_names::is_credential_variable(name) {
        return Err(format!(
            "`{name}` names a credential: keys reach a trial through the agent folder's auth.json or models.json, never a suite"
        ));
    }
    let upper = name.to_ascii_uppercase();
    if upper == "PATH" || upper == "HOME" || upper.starts_with("PI_") {
        return Err(format!("`{name}` is set by the harness"));
    }
    if value.contains('\0') {
        return Err(format!("the value of `{name}` holds a NUL"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_that_take_the_trial_away_are_refused_in_every_spelling() {
        for bad in [
            "--no-session",
            "--mode",
            "--mode=rpc",
            "--session=/tmp/x",
            "--api-key",
            "--model=x",
            "--record",
            "-p",
            "-nt",
            "@/etc/passwd",
        ] {
            assert!(check_arg(bad).is_err(), "{bad}");
        }
        for good in ["--no-skills", "--offline", "--system-prompt", "text", "-"] {
            assert_eq!(check_arg(good), Ok(()), "{good}");
        }
    }

    #[test]
    fn credentials_and_the_harnesss_variables_are_refused() {
        for bad in [
            "OPENAI_API_KEY",
            "GH_TOKEN",
            "PGPASSWORD",
            "PATH",
            "home",
            "PI_TOOLS_SHELL",
            "1X",
            "A=B",
            "",
        ] {
            assert!(check_env(bad, "v").is_err(), "{bad}");
        }
        assert_eq!(check_env("LANG", "C.UTF-8"), Ok(()));
        assert!(check_env("LANG", "a\0b").is_err());
    }

    #[test]
    fn a_tasks_fields_replace_the_defaults_one_by_one() {
        let defaults = RawAgentOptions {
            args: Some(vec!["--no-skills".into()]),
            env: Some(BTreeMap::from([("A".into(), "1".into())])),
            append_system_prompt: Some("d".into()),
            context_file: None,
            mcp_servers: Some(servers(r#"t = { command = "srv" }"#)),
        };
        let task = RawAgentOptions {
            env: Some(BTreeMap::from([("B".into(), "2".into())])),
            ..RawAgentOptions::default()
        };
        let options =
            AgentOptions::resolve(Path::new(""), Some(&defaults), Some(&task)).unwrap_or_default();
        assert_eq!(options.args, ["--no-skills"]);
        assert_eq!(options.env, BTreeMap::from([("B".into(), "2".into())]));
        assert_eq!(options.append_system_prompt.as_deref(), Some("d"));
        assert_eq!(
            options.mcp_json(),
            Some(serde_json::json!({"mcpServers": {"t": {"command": "srv"}}}))
        );
    }

    fn servers(text: &str) -> toml::Table {
        text.parse().unwrap_or_default()
    }

    #[test]
    fn mcp_servers_are_pi_entries_and_keys_come_from_the_environment() {
        let good = servers(
            r#"t = { command = "/opt/srv/bin/serve", args = ["--port", "/data/x.db"], exposure = "direct", env = { SERVICE_TOKEN = "${SERVICE_TOKEN}", LANG = "C" } }
            web = { url = "http://127.0.0.1:9/mcp", headers = { Authorization = "${WEB_AUTH}" } }"#,
        );
        let checked = check_mcp_servers(&good).map(|servers| servers.len());
        assert_eq!(checked, Ok(2));
        let options = AgentOptions {
            mcp_servers: check_mcp_servers(&good).unwrap_or_default(),
            ..AgentOptions::default()
        };
        assert_eq!(
            options.mcp_programs(),
            [
                PathBuf::from("/opt/srv/bin/serve"),
                PathBuf::from("/data/x.db")
            ]
        );
        for (bad, said) in [
            ("t = 1", "server `t`: not a table"),
            (
                "t = { args = [] }",
                "server `t`: needs a `command` or a `url`",
            ),
            (r#"t = { command = "a", url = "b" }"#, "exclude each other"),
            ("t = { command = 3 }", "must be a non-empty string"),
            (
                r#"t = { command = "a", args = [1] }"#,
                "`args` must be a list of strings",
            ),
            (
                r#"t = { command = "a", env = { X = 1 } }"#,
                "`env.X` must be a string",
            ),
            (
                r#"t = { command = "a", env = { SERVICE_TOKEN = "sk-live-123" } }"#,
                "`env.SERVICE_TOKEN` names a credential",
            ),
            (
                r#"t = { url = "u", headers = { Authorization = "Bearer x ${K}" } }"#,
                "`headers.Authorization` names a credential",
            ),
        ] {
            let error = check_mcp_servers(&servers(bad)).err().unwrap_or_default();
            assert!(error.contains(said), "{bad}: {error}");
        }
    }

    #[test]
    #[allow(clippy::unwrap_used)]
    fn mcp_words_naming_a_folder_or_a_private_file_are_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let open = dir.path().join("server.js");
        let private = dir.path().join("key.pem");
        for (file, mode) in [(&open, 0o644), (&private, 0o600)] {
            std::fs::write(file, "").unwrap();
            std::fs::set_permissions(file, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        let entry = |command: &str, arg: &Path| {
            format!(
                "t = {{ command = {command:?}, args = [\"-x\", {:?}] }}",
                arg.display().to_string()
            )
        };
        for (command, arg, said) in [
            ("node", Path::new("/"), "`/` is a folder"),
            ("node", dir.path(), "is a folder"),
            ("/", open.as_path(), "`/` is a folder"),
            ("node", private.as_path(), "other users may not read"),
        ] {
            let error = check_mcp_servers(&servers(&entry(command, arg)))
                .err()
                .unwrap_or_default();
            assert!(error.starts_with("server `t`: "), "{error}");
            assert!(error.contains(said), "{command} {arg:?}: {error}");
        }
        let fine = check_mcp_servers(&servers(&entry("node", &open)));
        assert_eq!(fine.map(|s| s.len()), Ok(1));
        let missing = check_mcp_servers(&servers(&entry("node", Path::new("/nonexistent/x"))));
        assert_eq!(missing.map(|s| s.len()), Ok(1));
    }
}
