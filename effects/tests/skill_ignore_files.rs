//! Skill folders holding `.gitignore`, `.ignore` and `.fdignore` files load the skills Pi 1.5.2
//! loads from them (`loadSkillsFromDir` on the same trees, `scripts/gen-resource-fixtures.mjs`):
//! each folder's rules apply below it, written relative to it, and an ignored folder is not
//! entered. Checked for a `--skill` folder and for the agent dir's `skills/` found on its own.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use pi_effects::packages::Accumulator;
use pi_effects::resources::{discover, Wanted};
use serde_json::Value;

fn cases() -> Vec<Value> {
    let all: Value = serde_json::from_str(include_str!(
        "../../core/tests/fixtures/resource_cases.json"
    ))
    .unwrap();
    all["ignored"].as_array().unwrap().clone()
}

fn write_tree(root: &Path, tree: &Value) {
    for (file, content) in tree.as_object().unwrap() {
        let path = root.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content.as_str().unwrap()).unwrap();
    }
}

/// The loaded skills' files relative to `root`, sorted.
fn loaded(root: &Path, agent_dir: &Path, home: &Path, skill_paths: &[String]) -> Vec<String> {
    let wanted = Wanted {
        listed: &[],
        packages: &Accumulator::default(),
        agent_dir,
        cwd: home,
        home,
        project_trusted: false,
        no_skills: !skill_paths.is_empty(),
        skill_paths,
        no_prompt_templates: true,
        prompt_template_paths: &[],
    };
    let mut files: Vec<String> = discover(&wanted)
        .skills
        .iter()
        .map(|s| {
            Path::new(&s.skill.file_path)
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    files.sort();
    files
}

#[test]
fn ignore_files_in_skill_folders_leave_out_what_pi_leaves_out() {
    for case in cases() {
        let mut expected: Vec<String> = case["loaded"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect();
        expected.sort();

        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let given = dir.path().join("given");
        write_tree(&given, &case["tree"]);
        let agent_dir = dir.path().join("agent");
        std::fs::create_dir_all(&agent_dir).unwrap();
        let paths = [given.to_string_lossy().into_owned()];
        assert_eq!(
            loaded(&given, &agent_dir, &home, &paths),
            expected,
            "--skill {}",
            case["tree"]
        );

        let skills = agent_dir.join("skills");
        write_tree(&skills, &case["tree"]);
        assert_eq!(
            loaded(&skills, &agent_dir, &home, &[]),
            expected,
            "agent dir {}",
            case["tree"]
        );
    }
}
