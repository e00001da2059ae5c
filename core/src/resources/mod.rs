//! Skills and prompt templates, the markdown resources Pi 1.5.2 loads besides context files:
//! reading a file's frontmatter, checking a skill, and expanding `/skill:name` and `/template`
//! prompts. Where the files are is the binary's concern (it reads them and passes the text).

pub mod frontmatter;
pub mod skills;
pub mod templates;

use skills::{expand_skill, skill_command, LoadedSkill};
use templates::{expand_prompt_template, PromptTemplate};

/// The skills and templates a session expands prompts with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resources {
    pub skills: Vec<LoadedSkill>,
    pub templates: Vec<PromptTemplate>,
}

impl Resources {
    /// A prompt as the session sends it (`_expandSkillCommand`, then `expandPromptTemplate`):
    /// `read` reads a skill's file now, as Pi does; a skill unknown or unreadable leaves the
    /// text for the templates.
    pub fn expand<E>(&self, text: &str, read: impl Fn(&str) -> Result<String, E>) -> String {
        let skill_expanded = skill_command(text).and_then(|(name, args)| {
            let skill = self.skills.iter().find(|s| s.skill.name == name)?;
            let content = read(&skill.skill.file_path).ok()?;
            expand_skill(skill, &content, args).ok()
        });
        let text = skill_expanded.as_deref().unwrap_or(text);
        expand_prompt_template(text, &self.templates)
    }
}
