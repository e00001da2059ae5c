//! The SDK's tool options apply to custom tools as Pi 1.5.2's `createAgentSession` applies them:
//! an allow-list (`tools`) that does not name a custom tool leaves it out of the model request,
//! one that names it declares it in the allow-list's place, and the read-only selection keeps
//! the custom tools. Checked on the requests the kit's mock LLM receives over real HTTP.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

#[allow(dead_code)]
#[path = "../examples/custom_tool.rs"]
mod custom_tool;

use pi_sdk::{NoTools, SessionBuilder};
use pi_testkit::MockLlm;
use serde_json::json;

fn builder(mock: &MockLlm, workspace: &std::path::Path) -> SessionBuilder {
    common::builder(mock, workspace)
        .seed(7)
        .custom_tool(custom_tool::CountLines::new())
}

/// The tools the first model request declares for a session `configure` sets up.
async fn declared(configure: impl FnOnce(SessionBuilder) -> SessionBuilder) -> Vec<String> {
    let mock = MockLlm::start(&json!([{"text": "ok"}]));
    let workspace = tempfile::tempdir().unwrap();
    let session = configure(builder(&mock, workspace.path())).build().unwrap();
    session.prompt("hi").await.unwrap();
    let requests = mock.requests();
    requests[0]["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|n| (*n).to_owned()).collect()
}

#[tokio::test]
async fn an_allow_list_without_the_custom_tool_leaves_it_out() {
    let tools = declared(|b| b.tools(["read", "bash"])).await;
    assert_eq!(tools, names(&["read", "bash"]));
}

#[tokio::test]
async fn an_allow_list_naming_the_custom_tool_declares_it_in_its_place() {
    let tools = declared(|b| b.tools(["count_lines", "grep"])).await;
    assert_eq!(tools, names(&["count_lines", "grep"]));
}

#[tokio::test]
async fn by_default_and_read_only_the_custom_tool_follows_the_built_ins() {
    let tools = declared(|b| b).await;
    assert_eq!(
        tools,
        names(&["read", "bash", "edit", "write", "count_lines"])
    );
    let tools = declared(SessionBuilder::read_only_tools).await;
    assert_eq!(tools, names(&["read", "grep", "find", "ls", "count_lines"]));
}

#[tokio::test]
async fn exclusions_and_no_tools_apply_to_the_custom_tool() {
    let tools = declared(|b| b.exclude_tools(["count_*", "bash"])).await;
    assert_eq!(tools, names(&["read", "edit", "write"]));
    let tools = declared(|b| b.no_tools(NoTools::Builtin)).await;
    assert_eq!(tools, names(&["count_lines"]));
    let tools = declared(|b| b.no_tools(NoTools::All).tools(["ls"])).await;
    assert_eq!(tools, names(&["ls"]));
}
