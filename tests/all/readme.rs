//! The README's sample outputs are what this gavel prints: each ```text block after a line
//! `<!-- output: NAME -->` is made again by `docs/outputs/readme.sh NAME` through the real
//! binary and compared, so that a change to what gavel prints fails here until the README says
//! it too.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{Workspace, stderr};
use crate::python_graders;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The README's ```text blocks: (the name of the output it shows, if marked; its first line
/// number; its text).
fn text_blocks(readme: &str) -> Vec<(Option<String>, usize, String)> {
    let mut blocks = Vec::new();
    let mut marked = None;
    let mut open: Option<(Option<String>, usize, String)> = None;
    for (number, line) in readme.lines().enumerate() {
        if let Some((_, _, text)) = open.as_mut() {
            if line == "```" {
                blocks.extend(open.take());
            } else {
                text.push_str(line);
                text.push('\n');
            }
        } else if line == "```text" {
            open = Some((marked.take(), number + 2, String::new()));
        } else if let Some(name) = line
            .strip_prefix("<!-- output: ")
            .and_then(|rest| rest.strip_suffix(" -->"))
        {
            marked = Some(name.to_string());
        } else if !line.is_empty() {
            marked = None;
        }
    }
    blocks
}

/// What `docs/outputs/readme.sh NAME` prints, run in a folder of its own.
fn made_again(name: &str, cache: &Path) -> String {
    let ws = Workspace::new();
    let binary = Path::new(env!("CARGO_BIN_EXE_gavel"));
    let path = std::env::join_paths(
        std::iter::once(binary.parent().expect("a folder").to_path_buf()).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ),
    )
    .expect("a PATH");
    let output = Command::new("sh")
        .arg(repo().join("docs/outputs/readme.sh"))
        .arg(name)
        .current_dir(ws.dir.path())
        .env("PATH", path)
        .env("GAVEL_CACHE_DIR", cache)
        .env("GAVEL_PYTHON_COMPONENT", "")
        .env_remove("NO_COLOR")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .expect("sh runs");
    assert!(
        output.status.success(),
        "docs/outputs/readme.sh {name} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        stderr(&output)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn every_sample_output_in_the_readme_is_what_gavel_prints() {
    // The quickstart grades with the example pack the artifacts crate builds.
    assert!(Path::new(gavel_test_artifacts::packs::FORMATS).is_file());
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("the README");
    let blocks = text_blocks(&readme);
    let mut drifted = Vec::new();
    let mut names = Vec::new();
    for (name, line, shown) in &blocks {
        let Some(name) = name else {
            // A block without a mark shows commands to type, not what gavel prints.
            assert!(
                shown
                    .lines()
                    .all(|l| l.starts_with("gavel ") || l.trim_start().starts_with('[')),
                "README.md:{line}: a block of output without `<!-- output: NAME -->` above it:\n{shown}"
            );
            continue;
        };
        names.push(name.as_str());
        let own_cache;
        let cache = if name == "python-graders" {
            match python_graders::cache() {
                Some(cache) => cache,
                None => continue,
            }
        } else {
            own_cache = tempfile::tempdir().expect("a cache folder");
            own_cache.path()
        };
        let printed = made_again(name, cache);
        if &printed != shown {
            drifted.push(format!(
                "README.md:{line}: `docs/outputs/readme.sh {name}` now prints:\n{printed}\
                 where the README shows:\n{shown}"
            ));
        }
    }
    assert_eq!(
        names,
        [
            "quickstart",
            "suite-errors",
            "filter",
            "diff",
            "python-graders"
        ],
        "every output the script makes is in the README, once"
    );
    assert!(drifted.is_empty(), "{}", drifted.join("\n"));
}
