//! `gavel new pack`: writes a pack folder from a language template that builds and passes its
//! own suite as written.
//!
//! Templates are the folders under `host/templates/`, embedded at build time; every template
//! holds a `build.sh` that builds `build/<ident>.wasm` and a `suite.yaml` whose gate passes on
//! the template's `dataset.jsonl`. In a template's files `{{name}}` is the pack's name,
//! `{{ident}}` the same with `-` turned into `_` (a Rust crate or file name), `{{sdk}}` the
//! folder of the Rust guest SDK and `{{gavel_version}}` this gavel's version. The SDK itself
//! comes with the binary ([`GUEST_SDK`]): a template that needs it gets a copy in the pack's
//! `gavel-guest/` folder, so that a gavel binary alone makes packs that build, wherever it was
//! built. A file whose name
//! ends in `.tmpl` is written without that suffix (a `Cargo.toml` inside `host/` would
//! otherwise look like a package of its own to cargo).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

include!(concat!(env!("OUT_DIR"), "/templates.rs"));

/// Names no pack may take: Rust keywords and the names of Rust's own crates, which cargo
/// refuses as package names and which would shadow them as library names.
const RESERVED: &[&str] = &[
    "abstract",
    "alloc",
    "as",
    "async",
    "await",
    "become",
    "box",
    "break",
    "const",
    "continue",
    "core",
    "crate",
    "do",
    "dyn",
    "else",
    "enum",
    "extern",
    "false",
    "final",
    "fn",
    "for",
    "gen",
    "if",
    "impl",
    "in",
    "let",
    "loop",
    "macro",
    "match",
    "mod",
    "move",
    "mut",
    "override",
    "priv",
    "proc_macro",
    "pub",
    "ref",
    "return",
    "self",
    "static",
    "std",
    "struct",
    "super",
    "test",
    "trait",
    "true",
    "try",
    "type",
    "typeof",
    "unsafe",
    "unsized",
    "use",
    "virtual",
    "where",
    "while",
    "yield",
];

const MAX_NAME_LEN: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    #[error("`{name}` is not a valid pack name: {reason}")]
    BadName { name: String, reason: String },
    #[error("no template for the language `{0}` (there are: {langs})", langs = languages().join(", "))]
    UnknownLanguage(String),
    #[error("{} already exists; choose another name or folder (nothing was written)", .0.display())]
    Exists(PathBuf),
    #[error(
        "the Rust guest SDK (gavel-guest) is not at {}: pass --sdk with a guest-sdk/ folder, or \
         leave --sdk out to have a copy written into the pack",
        .0.display()
    )]
    SdkNotFound(PathBuf),
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

/// The languages with a template, sorted.
pub fn languages() -> Vec<&'static str> {
    TEMPLATES.iter().map(|(lang, _)| *lang).collect()
}

/// What to create.
#[derive(Debug)]
pub struct NewPack<'a> {
    pub name: &'a str,
    pub language: &'a str,
    /// The folder the pack folder is created in.
    pub parent: &'a Path,
    /// The Rust guest SDK's folder, for templates that depend on it; default: a copy of the
    /// SDK that comes with this gavel, written into the pack as `gavel-guest/`.
    pub sdk: Option<&'a Path>,
}

/// What was created.
#[derive(Debug)]
pub struct Created {
    pub dir: PathBuf,
    /// Paths relative to `dir`, in the order written.
    pub files: Vec<String>,
}

/// Checks a pack name: it names the folder, the pack in suites (`function: <name>.<fn>`) and,
/// for Rust, the crate; so lowercase ASCII letters, digits, `-` and `_`, starting with a letter.
pub fn check_name(name: &str) -> Result<(), ScaffoldError> {
    let bad = |reason: &str| {
        Err(ScaffoldError::BadName {
            name: name.to_string(),
            reason: reason.to_string(),
        })
    };
    if name.is_empty() {
        return bad("it is empty");
    }
    if name.len() > MAX_NAME_LEN {
        return bad(&format!("it is longer than {MAX_NAME_LEN} characters"));
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        return bad("it must start with a lowercase letter (a-z)");
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-' || *c == '_'))
    {
        return bad(&format!(
            "{c:?} is not allowed; use lowercase letters, digits, `-` and `_`"
        ));
    }
    if RESERVED.contains(&name.replace('-', "_").as_str()) {
        return bad("it is a reserved word in Rust");
    }
    Ok(())
}

/// Where a pack finds the SDK written into it.
const SDK_IN_PACK: &str = "gavel-guest";

fn find_sdk(dir: &Path) -> Result<PathBuf, ScaffoldError> {
    let dir = dir.to_path_buf();
    let manifest =
        crate::fsio::read_text(&dir.join("Cargo.toml"), crate::fsio::cap::TEXT).unwrap_or_default();
    if !manifest
        .lines()
        .any(|line| line.replace(' ', "") == "name=\"gavel-guest\"")
    {
        return Err(ScaffoldError::SdkNotFound(dir));
    }
    dir.canonicalize()
        .map_err(|source| ScaffoldError::Io { path: dir, source })
}

/// A basic TOML string's body: the path is written inside `"..."`.
fn toml_escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Writes the pack folder. Refuses a folder that exists, and removes what it wrote if a write
/// fails, so a failed attempt can simply be repeated.
pub fn create(request: &NewPack<'_>) -> Result<Created, ScaffoldError> {
    check_name(request.name)?;
    let files = TEMPLATES
        .iter()
        .find(|(lang, _)| *lang == request.language)
        .map(|(_, files)| *files)
        .ok_or_else(|| ScaffoldError::UnknownLanguage(request.language.to_string()))?;

    let ident = request.name.replace('-', "_");
    let needs_sdk = files.iter().any(|(_, text)| text.contains("{{sdk}}"));
    let sdk = match request.sdk {
        Some(dir) if needs_sdk => toml_escape(&find_sdk(dir)?.display().to_string()),
        None if needs_sdk => SDK_IN_PACK.to_string(),
        _ => String::new(),
    };
    let sdk_files = GUEST_SDK
        .iter()
        .filter(|_| needs_sdk && request.sdk.is_none())
        .map(|(path, text)| (format!("{SDK_IN_PACK}/{path}"), *text));
    let render = |text: &str| {
        text.replace("{{name}}", request.name)
            .replace("{{ident}}", &ident)
            .replace("{{sdk}}", &sdk)
            .replace("{{gavel_version}}", env!("CARGO_PKG_VERSION"))
    };

    fs::create_dir_all(request.parent).map_err(|source| ScaffoldError::Io {
        path: request.parent.to_path_buf(),
        source,
    })?;
    let dir = request.parent.join(request.name);
    match fs::create_dir(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            return Err(ScaffoldError::Exists(dir));
        }
        Err(source) => return Err(ScaffoldError::Io { path: dir, source }),
    }
    let mut written = Vec::new();
    let rendered = files.iter().map(|(path, text)| {
        let path = path.strip_suffix(".tmpl").unwrap_or(path);
        (path.to_string(), render(text))
    });
    for (path, text) in rendered.chain(sdk_files.map(|(path, text)| (path, text.to_string()))) {
        if let Err(e) = write_file(&dir, &path, &text) {
            // Best effort: the folder did not exist before, so all of it is ours to remove.
            let _ = fs::remove_dir_all(&dir);
            return Err(e);
        }
        written.push(path);
    }
    Ok(Created {
        dir,
        files: written,
    })
}

fn write_file(dir: &Path, relative: &str, text: &str) -> Result<(), ScaffoldError> {
    let path = dir.join(relative);
    let io_error = |source| ScaffoldError::Io {
        path: path.clone(),
        source,
    };
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(io_error)?;
    }
    fs::write(&path, text).map_err(io_error)?;
    #[cfg(unix)]
    if relative.ends_with(".sh") {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).map_err(io_error)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        for good in ["a", "my-pack", "answers_2", "x9"] {
            check_name(good).unwrap_or_else(|e| panic!("{good}: {e}"));
        }
        for (bad, why) in [
            ("", "empty"),
            ("My-pack", "lowercase letter"),
            ("2fast", "lowercase letter"),
            ("-x", "lowercase letter"),
            ("my.pack", "'.' is not allowed"),
            ("my pack", "' ' is not allowed"),
            ("pâte", "'â' is not allowed"),
            ("test", "reserved"),
            ("proc-macro", "reserved"),
        ] {
            let e = check_name(bad).expect_err(bad).to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
        let long = "a".repeat(MAX_NAME_LEN + 1);
        assert!(check_name(&long).is_err());
        check_name(&long[1..]).expect("the longest name allowed");
    }

    #[test]
    fn every_template_has_what_new_pack_promises() {
        for lang in ["c", "js", "python", "rust"] {
            assert!(languages().contains(&lang), "no {lang} template");
        }
        for (lang, files) in TEMPLATES {
            for required in ["build.sh", "suite.yaml", "dataset.jsonl", "README.md"] {
                assert!(
                    files.iter().any(|(path, _)| *path == required),
                    "the {lang} template has {required}"
                );
            }
            for (path, text) in *files {
                let rendered = text
                    .replace("{{name}}", "")
                    .replace("{{ident}}", "")
                    .replace("{{sdk}}", "")
                    .replace("{{gavel_version}}", "");
                assert!(
                    !rendered.contains("{{"),
                    "{lang}/{path} uses a placeholder gavel does not fill"
                );
            }
        }
    }

    #[test]
    fn an_existing_folder_is_never_overwritten() {
        let parent = tempfile::tempdir().unwrap();
        std::fs::create_dir(parent.path().join("taken")).unwrap();
        std::fs::write(parent.path().join("taken/keep.txt"), "mine").unwrap();
        let request = NewPack {
            name: "taken",
            language: "c",
            parent: parent.path(),
            sdk: None,
        };
        let e = create(&request).unwrap_err();
        assert!(matches!(e, ScaffoldError::Exists(_)), "{e}");
        assert_eq!(
            std::fs::read_to_string(parent.path().join("taken/keep.txt")).unwrap(),
            "mine"
        );
        assert_eq!(
            std::fs::read_dir(parent.path().join("taken"))
                .unwrap()
                .count(),
            1
        );
    }

    #[test]
    fn an_unknown_language_names_the_known_ones() {
        let parent = tempfile::tempdir().unwrap();
        let request = NewPack {
            name: "p",
            language: "cobol",
            parent: parent.path(),
            sdk: None,
        };
        let e = create(&request).unwrap_err().to_string();
        assert!(
            e.contains("cobol") && e.contains("c, ") && e.contains("rust"),
            "{e}"
        );
        assert!(!parent.path().join("p").exists());
    }

    #[test]
    fn a_missing_sdk_is_refused_before_anything_is_written() {
        let parent = tempfile::tempdir().unwrap();
        let request = NewPack {
            name: "p",
            language: "rust",
            parent: parent.path(),
            sdk: Some(parent.path()),
        };
        let e = create(&request).unwrap_err();
        assert!(matches!(e, ScaffoldError::SdkNotFound(_)), "{e}");
        assert!(!parent.path().join("p").exists());
    }
}
