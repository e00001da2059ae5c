//! Dependencies point one way inside each crate too: no module of a workspace crate reaches,
//! through `crate::` paths, a module that reaches it back. Modules are a crate's top-level
//! ones (`src/replay.rs`, `src/import/` as one); the crate root and unit tests are left out
//! (the root wires everything; a test may look anywhere).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use regex::Regex;

/// The workspace's member folders, from the root manifest.
fn members(root: &Path) -> Vec<PathBuf> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let list = manifest
        .split_once("members = [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(list, _)| list)
        .unwrap();
    list.split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .map(|m| root.join(m))
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Which top-level modules each top-level module of the crate at `src` names.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let line_comment = Regex::new(r"//[^\n]*").unwrap();
    let path = Regex::new(r"crate::([a-z_0-9]+)").unwrap();
    let group = Regex::new(r"crate::\{([^}]*)\}").unwrap();
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(src).unwrap();
        let first = relative.components().next().unwrap();
        let module = first.as_os_str().to_string_lossy();
        let module = module.trim_end_matches(".rs").to_owned();
        if module == "lib" || module == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let text = match text.find("#[cfg(test)]\nmod tests") {
            Some(tests) => &text[..tests],
            None => &text[..],
        };
        let text = line_comment.replace_all(text, "");
        let mut named: Vec<String> = path.captures_iter(&text).map(|c| c[1].to_owned()).collect();
        for grouped in group.captures_iter(&text) {
            named.extend(
                grouped[1]
                    .split(',')
                    .filter_map(|part| part.trim().split("::").next())
                    .filter(|name| !name.is_empty())
                    .map(str::to_owned),
            );
        }
        let edges = graph.entry(module.clone()).or_default();
        edges.extend(named.into_iter().filter(|m| *m != module));
    }
    graph
}

/// The modules on a cycle of `graph`, each cycle once (strongly connected components of more
/// than one module).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let reaches = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_owned()];
        while let Some(module) = stack.pop() {
            for next in graph.get(&module).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reach: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|m| (m, reaches(m))).collect();
    let mut found: Vec<Vec<String>> = Vec::new();
    for (module, reached) in &reach {
        if !reached.contains(*module) {
            continue;
        }
        let mut cycle: Vec<String> = reached
            .iter()
            .filter(|other| reach.get(other).is_some_and(|r| r.contains(*module)))
            .cloned()
            .collect();
        cycle.sort();
        if !found.contains(&cycle) {
            found.push(cycle);
        }
    }
    found
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for member in members(&root) {
        let src = member.join("src");
        for cycle in cycles(&module_graph(&src)) {
            let name = member.file_name().unwrap_or_default().to_string_lossy();
            found.push(format!("{name}: {}", cycle.join(" <-> ")));
        }
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn a_circle_is_found() {
    let dir = tempfile_dir();
    std::fs::write(dir.join("a.rs"), "use crate::b::B;\n").unwrap();
    std::fs::write(dir.join("b.rs"), "pub fn f() { crate::c::g() }\n").unwrap();
    std::fs::write(dir.join("c.rs"), "use crate::{a::A, d};\n").unwrap();
    std::fs::write(
        dir.join("d.rs"),
        "// crate::a::A in a comment is no import\n",
    )
    .unwrap();
    let graph = module_graph(&dir);
    assert_eq!(cycles(&graph), vec![vec!["a", "b", "c"]]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A fresh folder of its own in the temporary directory.
fn tempfile_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("module-order-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// ARCHITECTURE.md's code map names every top-level module of every crate (`name.rs` or
/// `name/`), so the map and the tree cannot drift apart unnoticed. Test-only modules are left
/// out.
#[test]
fn the_code_map_names_every_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let map = architecture
        .split_once("## Code map")
        .and_then(|(_, rest)| rest.split_once("\n## "))
        .map(|(map, _)| map)
        .unwrap();
    let mut missing = Vec::new();
    for member in members(&root) {
        let crate_dir = member.file_name().unwrap().to_string_lossy().into_owned();
        for entry in std::fs::read_dir(member.join("src")).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let module = name.trim_end_matches(".rs");
            let test_only =
                module.ends_with("_tests") || ["test_support", "snapshots"].contains(&module);
            if ["lib", "main"].contains(&module)
                || test_only
                || !(name.ends_with(".rs") || entry.path().is_dir())
            {
                continue;
            }
            let named =
                map.contains(&format!("`{module}.rs`")) || map.contains(&format!("`{module}/`"));
            if !named {
                missing.push(format!("{crate_dir}/src/{name}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "not in ARCHITECTURE.md's code map: {missing:?}"
    );
}
