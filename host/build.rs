//! Embeds the pack templates of `gavel new pack`: every folder under `templates/` is one
//! language, and every file in it is written into a new pack. A language is added by dropping
//! in a folder; nothing here or in the code that writes packs has to change.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
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
        collect(language, language, &mut files);
        files.sort();
        writeln!(code, "    ({name:?}, &[").unwrap();
        for (relative, absolute) in files {
            writeln!(
                code,
                "        ({relative:?}, include_str!({:?})),",
                absolute.display().to_string()
            )
            .unwrap();
        }
        code.push_str("    ]),\n");
    }
    code.push_str("];\n");

    let out = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo")).join("templates.rs");
    fs::write(out, code).expect("OUT_DIR is writable");
}

/// Every file under `dir`, as (path relative to `root` with `/` separators, absolute path).
fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, PathBuf)>) {
    for entry in fs::read_dir(dir).expect("a template folder is readable") {
        let path = entry.expect("a template folder entry").path();
        if path.is_dir() {
            collect(root, &path, files);
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
