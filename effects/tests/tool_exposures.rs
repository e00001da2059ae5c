//! Which custom tools a session starts with, as Pi 1.5.2's first activation decides it from
//! each tool's `exposure` and `defaultActive` and from `tools` (an allowlist or not): the run's
//! configuration holds the active ones as `customTools` and the others in `toolLoadout`, which
//! is all a replay has to go on.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use pi_core::model::Model;
use pi_effects::agent_session::SessionOptions;
use pi_effects::custom_tool::{
    CustomTool, CustomToolDefinition, ToolCallContext, ToolExposure, ToolFuture, ToolNamespace,
};
use pi_effects::run_config::RunConfig;
use pi_providers::CallOptions;
use serde_json::{json, Value};

struct Declared(CustomToolDefinition);

impl CustomTool for Declared {
    fn definition(&self) -> &CustomToolDefinition {
        &self.0
    }

    fn execute<'a>(&'a self, _args: Value, _cx: ToolCallContext) -> ToolFuture<'a> {
        Box::pin(async { Err("not run here".to_owned()) })
    }
}

fn tool(name: &str, exposure: Option<ToolExposure>, default_active: Option<bool>) -> Declared {
    let mut definition = CustomToolDefinition::new(name, format!("the {name} tool"), json!({}));
    definition.exposure = exposure;
    definition.default_active = default_active;
    if exposure == Some(ToolExposure::Deferred) {
        definition.namespace = Some(ToolNamespace {
            name: "ns".into(),
            ..ToolNamespace::default()
        });
    }
    Declared(definition)
}

/// The configuration of a session with one tool of each kind, `tools` as given.
fn config(tools: &[&str], allowlist: Option<&[&str]>) -> RunConfig {
    let model = Model {
        id: "m".into(),
        provider: "p".into(),
        api: "openai-completions".into(),
        ..Model::default()
    };
    let mut options = SessionOptions::new("/work", model, Arc::new(|_| Ok(CallOptions::default())));
    options.tools = tools.iter().map(|t| (*t).to_owned()).collect();
    options.tools_allowlist = allowlist.map(|a| a.iter().map(|t| (*t).to_owned()).collect());
    options.tool_search = Some(false);
    for registered in [
        tool("quiet", None, Some(false)),
        tool("later", Some(ToolExposure::Deferred), None),
        tool("ghost", Some(ToolExposure::Hidden), None),
        tool("orch", Some(ToolExposure::ModelOnly), None),
        tool("scripted", Some(ToolExposure::Codemode), None),
        tool("plain", None, None),
    ] {
        options.custom_tools.register(Arc::new(registered));
    }
    options.run_config(0).unwrap()
}

fn names(tools: &[CustomToolDefinition]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

#[test]
fn registration_activates_the_declarable_tools_not_registered_inactive() {
    let config = config(&["read"], None);
    assert_eq!(config.tools, ["read"]);
    assert_eq!(names(&config.custom_tools), ["orch", "plain"]);
    let loadout = config.tool_loadout.unwrap();
    assert_eq!(
        names(&loadout.inactive_tools),
        ["quiet", "ghost", "scripted", "tool_search"]
    );
    let deferred: Vec<&str> = loadout
        .deferred_tools
        .iter()
        .map(|t| t.tool.name.as_str())
        .collect();
    assert_eq!(deferred, ["later"]);
    assert_eq!(
        loadout.deferred_tools[0].namespace.as_ref().unwrap().name,
        "ns"
    );
    assert_eq!(
        loadout.registration_order,
        [
            "quiet",
            "later",
            "ghost",
            "orch",
            "scripted",
            "plain",
            "tool_search"
        ]
    );
}

#[test]
fn naming_a_tool_activates_it_unless_it_is_hidden() {
    let config = config(&["read", "quiet", "scripted", "ghost", "later"], None);
    assert_eq!(config.tools, ["read", "quiet", "scripted", "later"]);
    assert_eq!(
        names(&config.custom_tools),
        ["quiet", "orch", "scripted", "plain", "later"]
    );
}

#[test]
fn an_allowlist_activates_the_declarable_tools_it_matches_whatever_their_default() {
    let config = config(&["read"], Some(&["read", "q*", "orch"]));
    assert_eq!(names(&config.custom_tools), ["quiet", "orch"]);
    let loadout = config.tool_loadout.unwrap();
    assert_eq!(
        names(&loadout.inactive_tools),
        ["ghost", "scripted", "plain", "tool_search"]
    );
}

#[test]
fn a_run_whose_tools_are_all_active_records_no_registration_order() {
    let model = Model::default();
    let mut options = SessionOptions::new("/work", model, Arc::new(|_| Ok(CallOptions::default())));
    options.tool_search = Some(false);
    options
        .custom_tools
        .register(Arc::new(tool("plain", None, None)));
    let config = options.run_config(0).unwrap();
    assert_eq!(names(&config.custom_tools), ["plain"]);
    assert!(config.tool_loadout.unwrap().registration_order.is_empty());
}
