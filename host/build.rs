//! Embeds the pack templates of `gavel new pack`: every folder under `templates/` is one
//! language, and every file in it is written into a new pack. A language is added by dropping
//! in a folder; nothing here or in the code that writes packs has to change.
//!
//! Embeds the sources of the Python interpreter component (`runtime/python/`, but for what its
//! builds leave there), so that a gavel binary can build the component on its own.
//!
//! Sets `GAVEL_COMMIT`, which `gavel --version` prints: the short hash of the commit built,
//! with `-dirty` when the tree had changes not committed, or `unknown` outside a git checkout.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    println!("cargo:rustc-env=GAVEL_COMMIT={}", commit(&manifest_dir));
    let templates = manifest_dir.join("templates");
    // A directory is scanned as a whole: any file added, removed or edited reruns this.
    println!("cargo:rerun-if-changed={}", templates.display());

    let mut languages: Vec<PathBuf> = fs::read_dir(&templates)
        .expect("host/templates is readable")
        .map(|entry| entry.expect("a template folder entry").path())
        .filter(|path| path.is_dir())
        .collect();
    languages.sort();

    let mut code = String::from("/// (language, [(path inside the pack, text)]), by language.\n");
    code.push_str("pub const TEMPLATES: &[(&str, &[(&str, &str)])] = &[\n");
    for language in &languages {
        let name = language
            .file_name()
            .and_then(|n| n.to_str())
            .expect("template folder names are UTF-8");
        let mut files = Vec::new();
        collect(language, language, &|_| false, &mut files);
        files.sort();
        writeln!(code, "    ({name:?}, &[").unwrap();
        include_texts(&mut code, "        ", files);
        code.push_str("    ]),\n");
    }
    code.push_str("];\n");
    guest_sdk(&manifest_dir.join(".."), &mut code);

    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));
    fs::write(out_dir.join("templates.rs"), code).expect("OUT_DIR is writable");

    let runtime = manifest_dir.join("runtime").join("python");
    println!("cargo:rerun-if-changed={}", runtime.display());
    let mut files = Vec::new();
    // What a build leaves in the folder: the venv, outputs, bytecode.
    let built = |folder: &str| {
        folder.starts_with('.') || matches!(folder, "target" | "build" | "__pycache__")
    };
    if runtime.is_dir() {
        collect(&runtime, &runtime, &built, &mut files);
    }
    files.retain(|(relative, _)| !relative.ends_with(".wasm"));
    files.sort();
    let mut code =
        String::from("/// The Python runtime's sources: (path inside `runtime/python/`, bytes).\n");
    code.push_str("pub const RUNTIME_PYTHON: &[(&str, &[u8])] = &[\n");
    for (relative, absolute) in files {
        writeln!(
            code,
            "    ({relative:?}, include_bytes!({:?})),",
            absolute.display().to_string()
        )
        .unwrap();
    }
    code.push_str("];\n");
    fs::write(out_dir.join("runtime_python.rs"), code).expect("OUT_DIR is writable");
}

/// The commit the source at `dir` is checked out at, as `git` names it briefly, `-dirty` when
/// tracked files changed since; `unknown` when it is no git checkout (a published crate) or
/// `git` is not there. The build runs again when the checkout moves to another commit.
fn commit(dir: &Path) -> String {
    let git = |args: &[&str]| -> Option<String> {
        let output = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .ok()?;
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
    };
    let Some(hash) = git(&["rev-parse", "--short", "HEAD"]).filter(|h| !h.is_empty()) else {
        return "unknown".to_string();
    };
    // HEAD names the branch, whose file (or packed-refs, once packed) names the commit.
    for path in [
        git(&["rev-parse", "--git-path", "HEAD"]),
        git(&["rev-parse", "--symbolic-full-name", "HEAD"])
            .and_then(|branch| git(&["rev-parse", "--git-path", &branch])),
        git(&["rev-parse", "--git-path", "packed-refs"]),
    ]
    .into_iter()
    .flatten()
    .map(|path| dir.join(path))
    // A path watched that does not exist would run this again on every build.
    .filter(|path| path.exists())
    {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|changes| !changes.is_empty());
    if dirty { format!("{hash}-dirty") } else { hash }
}

/// Embeds the Rust guest SDK (`GUEST_SDK`), which `gavel new pack --lang rust` writes into the
/// pack: its sources, its WIT, its README, and a manifest that stands alone, each
/// `key.workspace = true` replaced by the workspace's own value.
fn guest_sdk(repo: &Path, code: &mut String) {
    let sdk = repo.join("guest-sdk");
    for watched in ["Cargo.toml", "guest-sdk"] {
        println!("cargo:rerun-if-changed={}", repo.join(watched).display());
    }
    let mut files = Vec::new();
    for part in ["src", "wit"] {
        collect(&sdk, &sdk.join(part), &|_| false, &mut files);
    }
    files.push(("README.md".to_string(), sdk.join("README.md")));
    files.sort();
    let workspace = fs::read_to_string(repo.join("Cargo.toml")).expect("the workspace manifest");
    let manifest = standalone(
        &fs::read_to_string(sdk.join("Cargo.toml")).expect("the guest SDK's manifest"),
        &workspace,
    );
    code.push_str("/// The Rust guest SDK: (path inside its folder, text).\n");
    code.push_str("pub const GUEST_SDK: &[(&str, &str)] = &[\n");
    writeln!(code, "    (\"Cargo.toml\", {manifest:?}),").unwrap();
    include_texts(code, "    ", files);
    code.push_str("];\n");
}

/// One `(relative path, include_str!(absolute path))` entry a line, indented by `indent`.
fn include_texts(code: &mut String, indent: &str, files: Vec<(String, PathBuf)>) {
    for (relative, absolute) in files {
        writeln!(
            code,
            "{indent}({relative:?}, include_str!({:?})),",
            absolute.display().to_string()
        )
        .unwrap();
    }
}

/// `manifest` with each `key.workspace = true` written out from `workspace`'s
/// `[workspace.package]` and `[workspace.dependencies]`, and without its `[lints]`.
fn standalone(manifest: &str, workspace: &str) -> String {
    let mut values = Vec::new();
    let mut section = "";
    for line in workspace.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line;
        } else if (section == "[workspace.package]" || section == "[workspace.dependencies]")
            && let Some((key, value)) = line.split_once('=')
        {
            values.push((key.trim().to_string(), value.trim().to_string()));
        }
    }
    let mut out = String::new();
    let mut in_lints = false;
    for line in manifest.lines() {
        if line.starts_with('[') {
            in_lints = line.trim() == "[lints]";
        }
        if in_lints {
            continue;
        }
        match line.trim().strip_suffix(".workspace = true") {
            Some(key) => {
                let value = &values
                    .iter()
                    .find(|(k, _)| k == key)
                    .unwrap_or_else(|| panic!("the workspace has no `{key}`"))
                    .1;
                writeln!(out, "{key} = {value}").unwrap();
            }
            None => writeln!(out, "{line}").unwrap(),
        }
    }
    out
}

/// Every file under `dir` but in folders `skip` names, as (path relative to `root` with `/`
/// separators, absolute path).
fn collect(
    root: &Path,
    dir: &Path,
    skip: &dyn Fn(&str) -> bool,
    files: &mut Vec<(String, PathBuf)>,
) {
    for entry in fs::read_dir(dir).expect("a source folder is readable") {
        let path = entry.expect("a source folder entry").path();
        if path.is_dir() {
            if !path.file_name().and_then(|n| n.to_str()).is_some_and(skip) {
                collect(root, &path, skip, files);
            }
        } else {
            let relative = path
                .strip_prefix(root)
                .expect("under the template root")
                .components()
                .map(|c| {
                    c.as_os_str()
                        .to_str()
                        .expect("template file names are UTF-8")
                })
                .collect::<Vec<_>>()
                .join("/");
            files.push((relative, path));
        }
    }
}
