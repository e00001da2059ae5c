//! Skills and prompt templates, the markdown resources Pi 1.5.2 loads besides context files:
//! reading a file's frontmatter, checking a skill, and expanding `/skill:name` and `/template`
//! prompts. Where the files are is the binary's concern (it reads them and passes the text).

pub mod frontmatter;
pub mod skills;
pub mod templates;

use skills::{expand_skill, skill_command, LoadedSkill};
use templates::{expand_prompt_template, PromptTemplate};

/// The skills and templates a session expands prompts with, in Pi's order (the first of a
/// name wins). Serializable: a recording holds them, so that its replay expands prompts
/// without reading the replaying machine's files.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resources {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<LoadedSkill>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub templates: Vec<PromptTemplate>,
    /// The extensions' commands by the names a prompt invokes them with (`/name args`, Pi's
    /// `invocationName`): such a prompt runs the command instead, before any expansion.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
    /// The same commands as RPC `get_commands` lists them (`name`, `description`, `source`,
    /// `sourceInfo`): kept with the session, so that a replay, which loads no extension, lists
    /// what the run listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command_listing: Vec<serde_json::Value>,
}

impl Resources {
    /// Neither skills nor templates nor extension commands.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
            && self.templates.is_empty()
            && self.commands.is_empty()
            && self.command_listing.is_empty()
    }

    /// The extension command `text` invokes and the text after its name (Pi's
    /// `_tryExecuteExtensionCommand`: the name runs to the first space), if it names one.
    pub fn command<'a>(&self, text: &'a str) -> Option<(&'a str, &'a str)> {
        let invocation = text.strip_prefix('/')?;
        let (name, args) = invocation.split_once(' ').unwrap_or((invocation, ""));
        self.commands
            .iter()
            .any(|c| c == name)
            .then_some((name, args))
    }

    /// The skills as the system prompt lists them.
    pub fn prompt_skills(&self) -> Vec<skills::Skill> {
        self.skills.iter().map(|s| s.skill.clone()).collect()
    }

    /// A prompt as the session sends it (`_expandSkillCommand`, then `expandPromptTemplate`);
    /// an unknown skill leaves the text for the templates.
    pub fn expand(&self, text: &str) -> String {
        let skill_expanded = skill_command(text).and_then(|(name, args)| {
            let skill = self.skills.iter().find(|s| s.skill.name == name)?;
            expand_skill(skill, args).ok()
        });
        let text = skill_expanded.as_deref().unwrap_or(text);
        expand_prompt_template(text, &self.templates)
    }
}
