//! Pi's settings (`<agent dir>/settings.json`, overlaid by the project's `.pi/settings.json`),
//! read as Pi reads them: missing or malformed files count as empty, unknown keys are ignored.
//! The `pi` binary and the SDK read them through this one reader.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pi_core::agent::QueueMode;
use pi_core::agent_session::retry::RetrySettings;
use pi_core::agent_session::CacheWarmingMode;
use pi_core::compaction::CompactionSettings;
use pi_core::model::ThinkingLevel;
use pi_providers::registry::is_credential_name;
use serde_json::{Map, Value};

/// The merged settings.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    values: Map<String, Value>,
    /// The global file's `cacheWarming`, which Pi 1.5.2 reads from there only.
    global_cache_warming: Option<Value>,
    /// The `skills` and `prompts` entries of each file read, the project's first.
    listed: Vec<Listed>,
    /// Problems reading the files, for stderr.
    pub warnings: Vec<String>,
}

/// One settings file's `extensions`, `skills`, `prompts` and `packages` entries (paths to skill files or folders and to
/// template files or folders), which Pi 1.5.2 resolves against the file's own folder; unlike
/// the other keys they are not merged, each file's keeping its folder and scope.
#[derive(Clone, Debug)]
pub struct Listed {
    /// `project` (`<cwd>/.pi/settings.json`) or `user` (`<agent dir>/settings.json`).
    pub scope: &'static str,
    /// The settings file's folder, which relative entries are relative to.
    pub base_dir: PathBuf,
    pub skills: Vec<String>,
    pub prompts: Vec<String>,
    /// The `extensions` entries (paths, and patterns over what is found).
    pub extensions: Vec<String>,
    /// The `packages` entries: a source, or an object of a `source` and its filters.
    pub packages: Vec<Value>,
}

impl Listed {
    /// The entries of one settings file; the `skills` object of old settings
    /// (`customDirectories`) read as Pi's migration reads it.
    fn of(map: &Map<String, Value>, scope: &'static str, base_dir: &Path) -> Listed {
        let strings = |value: Option<&Value>| -> Vec<String> {
            value
                .and_then(Value::as_array)
                .map(|list| {
                    list.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        let skills = match map.get("skills") {
            Some(Value::Object(old)) => strings(old.get("customDirectories")),
            other => strings(other),
        };
        Listed {
            scope,
            base_dir: base_dir.to_path_buf(),
            skills,
            prompts: strings(map.get("prompts")),
            extensions: strings(map.get("extensions")),
            packages: map
                .get("packages")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
        }
    }
}

impl Settings {
    /// Global settings, then the project's on top (objects merged key by key, as Pi does) when
    /// the project is trusted (the binary's project trust; Pi's SDK trusts it).
    pub fn load(agent_dir: &Path, cwd: &Path, project_trusted: bool) -> Settings {
        let mut settings = Settings::default();
        let project = cwd.join(".pi").join("settings.json");
        let paths = [agent_dir.join("settings.json")];
        let project = project_trusted.then_some(project);
        for (i, path) in paths.into_iter().chain(project).enumerate() {
            let (scope, base_dir) = match i {
                0 => ("user", agent_dir.to_path_buf()),
                _ => ("project", cwd.join(".pi")),
            };
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            match serde_json::from_str::<Value>(&text) {
                Ok(Value::Object(map)) => {
                    if i == 0 {
                        settings.global_cache_warming = map.get("cacheWarming").cloned();
                    }
                    settings
                        .listed
                        .insert(0, Listed::of(&map, scope, &base_dir));
                    let tools = merge_default_tools(settings.values.get("defaultTools"), &map);
                    merge(&mut settings.values, map);
                    if let Some(tools) = tools {
                        settings.values.insert("defaultTools".into(), tools);
                    }
                }
                Ok(_) => settings.warnings.push(format!(
                    "{}: settings must be a JSON object",
                    path.display()
                )),
                Err(error) => settings
                    .warnings
                    .push(format!("{}: {error}", path.display())),
            }
        }
        settings
    }

    /// Settings from a JSON object (tests).
    #[cfg(test)]
    pub fn from_value(value: Value) -> Settings {
        let mut settings = Settings::default();
        if let Value::Object(map) = value {
            settings.values = map;
        }
        settings
    }

    /// Changes one setting for this run and in the global settings file, as Pi's settings
    /// manager does: the file is re-read, only that key (or nested key) replaced, and written
    /// back whole (a temporary file renamed over it). A global file that does not parse is left
    /// alone, as Pi leaves it.
    pub fn set_global(
        &mut self,
        agent_dir: &Path,
        path: &[&str],
        value: Value,
    ) -> Result<(), String> {
        set_path(&mut self.values, path, value.clone());
        let file = agent_dir.join("settings.json");
        let mut current = match std::fs::read_to_string(&file) {
            Ok(text) => match serde_json::from_str::<Value>(&text) {
                Ok(Value::Object(map)) => map,
                _ => {
                    return Err(format!(
                        "{}: not saved, the file does not parse",
                        file.display()
                    ))
                }
            },
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Map::new(),
            Err(error) => return Err(format!("{}: {error}", file.display())),
        };
        set_path(&mut current, path, value);
        let text = serde_json::to_string_pretty(&Value::Object(current))
            .map_err(|e| format!("{}: {e}", file.display()))?;
        // A symlinked settings file (dotfiles) is written where it points, as Node writes
        // through the link.
        let target = std::fs::canonicalize(&file).unwrap_or(file);
        let folder = target.parent().unwrap_or(agent_dir).to_path_buf();
        let temporary = folder.join(format!("settings.json.{}.tmp", std::process::id()));
        let written = std::fs::create_dir_all(&folder)
            .and_then(|()| std::fs::write(&temporary, text))
            .and_then(|()| std::fs::rename(&temporary, &target));
        if written.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
        written.map_err(|e| format!("{}: {e}", target.display()))
    }

    /// Every setting of the files read, the project's over the user's (Pi's settings manager's
    /// `getSettings()`, which extensions read).
    pub fn merged(&self) -> &Map<String, Value> {
        &self.values
    }

    /// The values kept under a name that says it holds a credential (an extension's `apiKey`,
    /// a `deploy_token`, a list's `password`: [`is_credential_name`]), at any depth, each with
    /// where it is. Extensions read every setting (`pi.getSettings()`) and may hand them to a
    /// tool result or the session, so a recording scrubs them as it scrubs the environment's.
    pub fn credentials(&self) -> Vec<(String, String)> {
        let mut found = Vec::new();
        for (name, value) in &self.values {
            credentials_under(name, name, value, &mut found);
        }
        found
    }

    fn get(&self, path: &[&str]) -> Option<&Value> {
        let (first, rest) = path.split_first()?;
        rest.iter()
            .try_fold(self.values.get(*first)?, |value, key| value.get(*key))
    }

    fn string(&self, path: &[&str]) -> Option<&str> {
        self.get(path).and_then(Value::as_str)
    }

    fn number(&self, path: &[&str]) -> Option<u64> {
        self.get(path)
            .and_then(Value::as_f64)
            .filter(|n| *n >= 0.0)
            .map(|n| n as u64)
    }

    fn boolean(&self, path: &[&str]) -> Option<bool> {
        self.get(path).and_then(Value::as_bool)
    }

    /// Each settings file's `extensions`, `skills`, `prompts` and `packages` entries, the project's first (Pi's
    /// precedence: a project's listed resources before its folders, before the user's).
    pub fn listed_resources(&self) -> &[Listed] {
        &self.listed
    }

    /// `defaultTools`, the built-ins active when nothing else says (Pi 1.5.2's
    /// `resolveDefaultTools`): plain names replace Pi's defaults, then each `+name` adds and
    /// `-name` removes a tool in order; unset, none.
    pub fn default_tools(&self) -> Option<Vec<String>> {
        let entries: Vec<&str> = match self.get(&["defaultTools"])? {
            Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let plain: Vec<String> = entries
            .iter()
            .filter(|e| !is_tool_modifier(e))
            .map(|e| (*e).to_owned())
            .collect();
        let mut tools = if plain.is_empty() && !entries.is_empty() {
            pi_core::tools::selection::DEFAULT_TOOL_NAMES
                .iter()
                .map(|t| (*t).to_owned())
                .collect()
        } else {
            plain
        };
        for entry in entries.iter().filter(|e| is_tool_modifier(e)) {
            let name = &entry[1..];
            let at = tools.iter().position(|t| t == name);
            match (entry.starts_with('+'), at) {
                (true, None) if !name.is_empty() => tools.push(name.to_owned()),
                (false, Some(at)) => {
                    tools.remove(at);
                }
                _ => {}
            }
        }
        Some(tools)
    }

    /// `cacheWarming` (`off`, `streaming`, `idle`; `idle` when unset or unknown), read from the
    /// global settings only, as Pi 1.5.2 reads it.
    pub fn cache_warming_mode(&self) -> CacheWarmingMode {
        self.global_cache_warming
            .clone()
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default()
    }

    /// `defaultProvider`: with `defaultModel`, the model when none is asked for.
    pub fn default_provider(&self) -> Option<&str> {
        self.string(&["defaultProvider"])
    }

    /// `defaultModel`.
    pub fn default_model(&self) -> Option<&str> {
        self.string(&["defaultModel"])
    }

    /// `defaultThinkingLevel`.
    pub fn default_thinking_level(&self) -> Option<ThinkingLevel> {
        self.string(&["defaultThinkingLevel"])
            .and_then(ThinkingLevel::parse)
    }

    /// `modelThinkingLevels`: `"provider/id"` → the level that model starts or is switched to
    /// with (names that are no level are left out).
    pub fn model_thinking_levels(&self) -> BTreeMap<String, ThinkingLevel> {
        self.get(&["modelThinkingLevels"])
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(model, level)| {
                Some((model.clone(), ThinkingLevel::parse(level.as_str()?)?))
            })
            .collect()
    }

    /// `defaultProjectTrust` (Pi 1.5): `ask` (the default), `always` or `never`; read from the
    /// global settings only, since the project's wait for the answer.
    pub fn default_project_trust(&self) -> Option<&str> {
        self.string(&["defaultProjectTrust"])
    }

    /// `sessionDir`: where sessions go unless a flag or the environment says otherwise.
    pub fn session_dir(&self) -> Option<&str> {
        self.string(&["sessionDir"])
    }

    /// `shellPath`: the shell bash commands run in.
    pub fn shell_path(&self) -> Option<&str> {
        self.string(&["shellPath"])
    }

    /// `shellCommandPrefix`: lines run before every bash command.
    pub fn shell_command_prefix(&self) -> Option<&str> {
        self.string(&["shellCommandPrefix"])
    }

    /// `shellEnv.passCredentials` (default off; not Pi's): shell commands see the variables
    /// that hold credentials.
    pub fn shell_pass_credentials(&self) -> bool {
        self.boolean(&["shellEnv", "passCredentials"])
            .unwrap_or(false)
    }

    /// `images.autoResize` (default on).
    pub fn auto_resize_images(&self) -> bool {
        self.boolean(&["images", "autoResize"]).unwrap_or(true)
    }

    /// The user's own redaction rules for what is recorded (`redact`: header names, JSON paths
    /// into request bodies, patterns); an entry that does not parse is an error, not ignored.
    pub fn redact_rules(&self) -> Result<pi_cassette_format::redact::Rules, String> {
        pi_cassette_format::redact::Rules::from_setting(self.values.get("redact"))
            .map_err(|e| e.to_string())
    }

    /// `cassettes.record` (default off): every run is recorded as a cassette beside its
    /// session file.
    pub fn record_cassettes(&self) -> bool {
        self.boolean(&["cassettes", "record"]).unwrap_or(false)
    }

    /// `images.blockImages` (default off): the model sees a notice instead of each image.
    pub fn block_images(&self) -> bool {
        self.boolean(&["images", "blockImages"]).unwrap_or(false)
    }

    /// `steeringMode`: queued steering delivered one at a time (default) or all at once.
    pub fn steering_mode(&self) -> QueueMode {
        queue_mode(self.string(&["steeringMode"]))
    }

    /// `followUpMode`, likewise.
    pub fn follow_up_mode(&self) -> QueueMode {
        queue_mode(self.string(&["followUpMode"]))
    }

    /// `retry.*` with Pi's defaults.
    pub fn retry(&self) -> RetrySettings {
        let defaults = RetrySettings::default();
        RetrySettings {
            enabled: self
                .boolean(&["retry", "enabled"])
                .unwrap_or(defaults.enabled),
            max_retries: self
                .number(&["retry", "maxRetries"])
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(defaults.max_retries),
            base_delay_ms: self
                .number(&["retry", "baseDelayMs"])
                .unwrap_or(defaults.base_delay_ms),
            max_delay_ms: self
                .number(&["retry", "maxAgentDelayMs"])
                .unwrap_or(defaults.max_delay_ms),
        }
    }

    /// `thinkingBudgets`: token budgets replacing pi-ai's defaults, per thinking level, for
    /// the agent's own requests (entries that are not numbers are ignored).
    pub fn thinking_budgets(&self) -> BTreeMap<ThinkingLevel, u64> {
        let Some(Value::Object(budgets)) = self.get(&["thinkingBudgets"]) else {
            return BTreeMap::new();
        };
        budgets
            .iter()
            .filter_map(|(level, budget)| {
                let level = ThinkingLevel::parse(level).filter(|l| *l != ThinkingLevel::Off)?;
                let budget = budget.as_f64().filter(|b| *b >= 0.0)?;
                Some((level, budget as u64))
            })
            .collect()
    }

    /// `retry.provider.maxRetries`: the SDK retries of each agent request (unset: none, see
    /// `CallOptions::max_retries`).
    pub fn provider_max_retries(&self) -> Option<u32> {
        self.number(&["retry", "provider", "maxRetries"])
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// `retry.provider.timeoutMs`: how long an agent request waits for the response headers.
    /// A value the SDKs refuse is their error text, which fails each request as it does there.
    pub fn provider_timeout_ms(&self) -> Option<Result<u64, String>> {
        let value = self.get(&["retry", "provider", "timeoutMs"])?;
        if value.is_null() {
            return None;
        }
        Some(match value.as_f64() {
            Some(n) if n.fract() == 0.0 && n >= 0.0 => Ok(n as u64),
            Some(n) if n.fract() == 0.0 => Err("timeout must be a positive integer".into()),
            _ => Err("timeout must be an integer".into()),
        })
    }

    /// `enableInstallTelemetry` (default on): with it, requests to OpenRouter and Cloudflare
    /// carry Pi's attribution headers. `PI_TELEMETRY` overrides it.
    pub fn install_telemetry(&self) -> bool {
        self.boolean(&["enableInstallTelemetry"]).unwrap_or(true)
    }

    /// `compaction.*` with Pi's defaults.
    pub fn compaction(&self) -> CompactionSettings {
        let defaults = CompactionSettings::default();
        CompactionSettings {
            enabled: self
                .boolean(&["compaction", "enabled"])
                .unwrap_or(defaults.enabled),
            reserve_tokens: self
                .number(&["compaction", "reserveTokens"])
                .unwrap_or(defaults.reserve_tokens),
            keep_recent_tokens: self
                .number(&["compaction", "keepRecentTokens"])
                .unwrap_or(defaults.keep_recent_tokens),
        }
    }
}

fn queue_mode(value: Option<&str>) -> QueueMode {
    match value {
        Some("all") => QueueMode::All,
        _ => QueueMode::OneAtATime,
    }
}

/// Sets `path` in `map`, creating (or replacing non-object) parents.
fn set_path(map: &mut Map<String, Value>, path: &[&str], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut node = map;
    for key in parents {
        let entry = node
            .entry((*key).to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        let Value::Object(next) = entry else {
            return;
        };
        node = next;
    }
    node.insert((*last).to_owned(), value);
}

/// A `+name` or `-name` entry of a tool list.
fn is_tool_modifier(entry: &str) -> bool {
    entry.starts_with('+') || entry.starts_with('-')
}

/// Pi 1.5.2's `mergeDefaultTools`: a later file's `defaultTools` of only `+name` / `-name`
/// entries is appended to the earlier one's (changing that selection); any other replaces it.
/// None when the later file does not set it (the merged value is then kept as it is).
fn merge_default_tools(base: Option<&Value>, later: &Map<String, Value>) -> Option<Value> {
    let overrides = later.get("defaultTools")?;
    match (base, overrides) {
        (Some(Value::Array(base)), Value::Array(list))
            if list
                .iter()
                .all(|e| e.as_str().is_some_and(is_tool_modifier)) =>
        {
            Some(Value::Array(base.iter().chain(list).cloned().collect()))
        }
        _ => Some(overrides.clone()),
    }
}

/// Adds to `found` the strings of `value`, found at `path` under the key `name`, when `name`
/// says it holds a credential; a list's items are under their list's name.
fn credentials_under(path: &str, name: &str, value: &Value, found: &mut Vec<(String, String)>) {
    match value {
        Value::String(text) if is_credential_name(name) && !text.is_empty() => {
            found.push((text.clone(), format!("settings.json {path}")));
        }
        Value::Object(map) => {
            for (key, item) in map {
                credentials_under(&format!("{path}.{key}"), key, item, found);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                credentials_under(&format!("{path}[{i}]"), name, item, found);
            }
        }
        _ => {}
    }
}

fn merge(into: &mut Map<String, Value>, from: Map<String, Value>) {
    for (key, value) in from {
        match (into.get_mut(&key), value) {
            (Some(Value::Object(existing)), Value::Object(overlay)) => merge(existing, overlay),
            (_, value) => {
                into.insert(key, value);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let settings = Settings::from_value(json!({
            "retry": {"maxRetries": 1, "provider": {"maxRetries": 0}},
            "compaction": {"enabled": false},
            "steeringMode": "all"
        }));
        assert_eq!(settings.retry().max_retries, 1);
        assert_eq!(settings.retry().base_delay_ms, 2000);
        assert!(!settings.compaction().enabled);
        assert_eq!(settings.compaction().reserve_tokens, 16_384);
        assert_eq!(settings.steering_mode(), QueueMode::All);
        assert_eq!(settings.follow_up_mode(), QueueMode::OneAtATime);
    }

    #[test]
    fn request_settings_are_read_as_the_sdks_take_them() {
        let settings = Settings::from_value(json!({
            "thinkingBudgets": {"low": 500, "high": 3000.0, "medium": "big", "off": 1, "ultra": 2},
            "retry": {"provider": {"maxRetries": 4, "timeoutMs": 2500}},
            "enableInstallTelemetry": false
        }));
        let budgets = settings.thinking_budgets();
        assert_eq!(
            budgets.into_iter().collect::<Vec<_>>(),
            vec![(ThinkingLevel::Low, 500), (ThinkingLevel::High, 3000)]
        );
        assert_eq!(settings.provider_max_retries(), Some(4));
        assert_eq!(settings.provider_timeout_ms(), Some(Ok(2500)));
        assert!(!settings.install_telemetry());
        let unset = Settings::from_value(json!({"retry": {"provider": {"timeoutMs": null}}}));
        assert_eq!(unset.provider_max_retries(), None);
        assert_eq!(unset.provider_timeout_ms(), None);
        assert!(unset.install_telemetry());
        assert!(unset.thinking_budgets().is_empty());
        for (value, error) in [
            (json!(1.5), "timeout must be an integer"),
            (json!("100"), "timeout must be an integer"),
            (json!(-5), "timeout must be a positive integer"),
        ] {
            let settings =
                Settings::from_value(json!({"retry": {"provider": {"timeoutMs": value}}}));
            assert_eq!(settings.provider_timeout_ms(), Some(Err(error.to_owned())));
        }
    }

    #[test]
    fn credentials_are_found_by_their_names_at_any_depth() {
        let settings = Settings::from_value(json!({
            "gateway": {"apiKey": "k-1", "region": "eu", "empty_token": ""},
            "deploy_token": "t-1",
            "databases": [{"name": "main", "password": "p-1"}],
            "rotation_secret": ["t-2"],
            "tokens": ["plural-names-are-not-credentials"],
            "keybindings": {"submit": "enter"}
        }));
        assert_eq!(
            settings.credentials(),
            [
                ("k-1".to_owned(), "settings.json gateway.apiKey".to_owned()),
                ("t-1".to_owned(), "settings.json deploy_token".to_owned()),
                (
                    "p-1".to_owned(),
                    "settings.json databases[0].password".to_owned()
                ),
                (
                    "t-2".to_owned(),
                    "settings.json rotation_secret[0]".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn the_project_overlays_the_global_file() {
        let agent = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        std::fs::write(
            agent.path().join("settings.json"),
            r#"{"retry": {"enabled": false, "maxRetries": 7}, "defaultModel": "a"}"#,
        )
        .unwrap();
        std::fs::create_dir(cwd.path().join(".pi")).unwrap();
        std::fs::write(
            cwd.path().join(".pi/settings.json"),
            r#"{"retry": {"maxRetries": 2}}"#,
        )
        .unwrap();
        let settings = Settings::load(agent.path(), cwd.path(), true);
        assert!(!settings.retry().enabled);
        assert_eq!(settings.retry().max_retries, 2);
        assert_eq!(settings.default_model(), Some("a"));
    }

    #[test]
    fn a_change_is_saved_without_touching_other_keys() {
        let agent = tempfile::tempdir().unwrap();
        let file = agent.path().join("settings.json");
        std::fs::write(
            &file,
            r#"{"compaction": {"reserveTokens": 100}, "theme": "dark"}"#,
        )
        .unwrap();
        let mut settings = Settings::load(agent.path(), agent.path(), true);
        settings
            .set_global(agent.path(), &["compaction", "enabled"], json!(false))
            .unwrap();
        settings
            .set_global(agent.path(), &["steeringMode"], json!("all"))
            .unwrap();
        assert!(!settings.compaction().enabled);
        assert_eq!(settings.steering_mode(), QueueMode::All);
        let saved: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(
            saved,
            json!({"compaction": {"reserveTokens": 100, "enabled": false}, "theme": "dark", "steeringMode": "all"})
        );
        // Through a symlink, the file it points to is updated and the link stays.
        let elsewhere = tempfile::tempdir().unwrap();
        let real = elsewhere.path().join("settings.json");
        std::fs::rename(&file, &real).unwrap();
        std::os::unix::fs::symlink(&real, &file).unwrap();
        settings
            .set_global(agent.path(), &["theme"], json!("light"))
            .unwrap();
        assert!(std::fs::symlink_metadata(&file)
            .unwrap()
            .file_type()
            .is_symlink());
        let saved: Value = serde_json::from_str(&std::fs::read_to_string(&real).unwrap()).unwrap();
        assert_eq!(saved["theme"], "light");
        std::fs::remove_file(&file).unwrap();
        std::fs::write(&file, "{ broken").unwrap();
        assert!(settings
            .set_global(agent.path(), &["steeringMode"], json!("one-at-a-time"))
            .is_err());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{ broken");
    }
}
