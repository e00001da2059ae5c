//! The coding agent's system prompt (`buildSystemPrompt`): Pi's default prompt with the tools
//! that have a one-line snippet, the guidelines they imply, the documentation paths, appended
//! instructions, project context files (AGENTS.md / CLAUDE.md), skills, and the date and working
//! directory, which are inputs here (the original reads the clock).

/// Pi's default prompt, extracted from the original (`scripts/gen-system-prompt-fixtures.mjs`);
/// `${...}` marks where the lists and paths go.
const DEFAULT_TEMPLATE: &str = include_str!("default.txt");

/// Tools assumed when the caller selects none.
const DEFAULT_TOOLS: [&str; 4] = ["read", "bash", "edit", "write"];

/// A skill the model may load with the read tool.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub file_path: String,
    /// Hidden from the prompt (only invocable explicitly).
    pub disable_model_invocation: bool,
}

/// Where Pi's own documentation is, for the prompt's pointer to it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DocPaths {
    pub readme: String,
    pub docs: String,
    pub examples: String,
}

/// Everything the prompt is built from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SystemPromptInputs {
    /// Replaces the default prompt (context, skills, date and cwd are still appended).
    pub custom_prompt: Option<String>,
    /// Active tool names, in order; `None` means Pi's default four.
    pub selected_tools: Option<Vec<String>>,
    /// One-line description per tool; a tool without one is not listed.
    pub tool_snippets: Vec<(String, String)>,
    pub prompt_guidelines: Vec<String>,
    pub append_system_prompt: Option<String>,
    pub cwd: String,
    /// (path, content) of each context file, in load order.
    pub context_files: Vec<(String, String)>,
    pub skills: Vec<Skill>,
    /// The date line's `YYYY-MM-DD`. Pi writes the local date; the caller chooses (the harness passes
    /// the UTC date of the run's clock, so a run does not depend on the machine's time zone).
    pub date: String,
    pub docs: DocPaths,
}

fn escape_xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// The skills section (empty when no skill is visible).
pub fn format_skills(skills: &[Skill]) -> String {
    let visible: Vec<&Skill> = skills
        .iter()
        .filter(|s| !s.disable_model_invocation)
        .collect();
    if visible.is_empty() {
        return String::new();
    }
    let mut lines = vec![
        "\n\nThe following skills provide specialized instructions for specific tasks.".to_owned(),
        "Use the read tool to load a skill's file when the task matches its description.".to_owned(),
        "When a skill file references a relative path, resolve it against the skill directory (parent of SKILL.md / dirname of the path) and use that absolute path in tool commands.".to_owned(),
        String::new(),
        "<available_skills>".to_owned(),
    ];
    for skill in visible {
        lines.push("  <skill>".to_owned());
        lines.push(format!("    <name>{}</name>", escape_xml(&skill.name)));
        lines.push(format!(
            "    <description>{}</description>",
            escape_xml(&skill.description)
        ));
        lines.push(format!(
            "    <location>{}</location>",
            escape_xml(&skill.file_path)
        ));
        lines.push("  </skill>".to_owned());
    }
    lines.push("</available_skills>".to_owned());
    lines.join("\n")
}

fn guidelines(tools: &[&str], extra: &[String]) -> String {
    let mut list: Vec<String> = Vec::new();
    let mut add = |guideline: &str| {
        if !list.iter().any(|g| g == guideline) {
            list.push(guideline.to_owned());
        }
    };
    let has = |name: &str| tools.contains(&name);
    let explorers = has("grep") || has("find") || has("ls");
    if has("bash") && !explorers {
        add("Use bash for file operations like ls, rg, find");
    } else if has("bash") {
        add("Prefer grep/find/ls tools over bash for file exploration (faster, respects .gitignore)");
    }
    for guideline in extra {
        let trimmed = guideline.trim();
        if !trimmed.is_empty() {
            add(trimmed);
        }
    }
    add("Be concise in your responses");
    add("Show file paths clearly when working with files");
    list.iter()
        .map(|g| format!("- {g}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn context_section(files: &[(String, String)]) -> String {
    if files.is_empty() {
        return String::new();
    }
    let mut out =
        String::from("\n\n# Project Context\n\nProject-specific instructions and guidelines:\n\n");
    for (path, content) in files {
        out.push_str(&format!("## {path}\n\n{content}\n\n"));
    }
    out
}

impl SystemPromptInputs {
    /// Snippets and guidelines of the active tools, in order, as the coding agent collects them
    /// from their definitions (built-in tools only; others can be added to the lists).
    pub fn with_builtin_tools(mut self, names: &[&str]) -> Self {
        self.selected_tools = Some(names.iter().map(|n| (*n).to_owned()).collect());
        for tool in names
            .iter()
            .filter_map(|n| crate::tools::definitions::builtin_tool(n))
        {
            if let Some(snippet) = &tool.prompt_snippet {
                self.tool_snippets
                    .push((tool.name.clone(), snippet.clone()));
            }
            self.prompt_guidelines
                .extend(tool.prompt_guidelines.iter().cloned());
        }
        self
    }
}

/// The system prompt Pi would send.
pub fn build_system_prompt(inputs: &SystemPromptInputs) -> String {
    let cwd = inputs.cwd.replace('\\', "/");
    let append = inputs
        .append_system_prompt
        .as_deref()
        .filter(|a| !a.is_empty())
        .map(|a| format!("\n\n{a}"))
        .unwrap_or_default();
    let selected: Option<Vec<&str>> = inputs
        .selected_tools
        .as_ref()
        .map(|tools| tools.iter().map(String::as_str).collect());
    let mut prompt = match inputs.custom_prompt.as_deref().filter(|p| !p.is_empty()) {
        Some(custom) => {
            let mut prompt = format!("{custom}{append}");
            prompt.push_str(&context_section(&inputs.context_files));
            if selected
                .as_ref()
                .is_none_or(|tools| tools.contains(&"read"))
            {
                prompt.push_str(&format_skills(&inputs.skills));
            }
            prompt
        }
        None => {
            let tools = selected.unwrap_or_else(|| DEFAULT_TOOLS.to_vec());
            let snippet = |name: &str| {
                inputs
                    .tool_snippets
                    .iter()
                    .find(|(tool, snippet)| tool == name && !snippet.is_empty())
                    .map(|(_, snippet)| snippet.as_str())
            };
            let listed: Vec<String> = tools
                .iter()
                .filter_map(|name| snippet(name).map(|s| format!("- {name}: {s}")))
                .collect();
            let tools_list = if listed.is_empty() {
                "(none)".to_owned()
            } else {
                listed.join("\n")
            };
            let mut prompt = DEFAULT_TEMPLATE
                .replace("${toolsList}", &tools_list)
                .replace(
                    "${guidelines}",
                    &guidelines(&tools, &inputs.prompt_guidelines),
                )
                .replace("${readmePath}", &inputs.docs.readme)
                .replace("${docsPath}", &inputs.docs.docs)
                .replace("${examplesPath}", &inputs.docs.examples);
            prompt.push_str(&append);
            prompt.push_str(&context_section(&inputs.context_files));
            if tools.contains(&"read") {
                prompt.push_str(&format_skills(&inputs.skills));
            }
            prompt
        }
    };
    prompt.push_str(&format!("\nCurrent date: {}", inputs.date));
    prompt.push_str(&format!("\nCurrent working directory: {cwd}"));
    prompt
}
