//! The crate's shape, read from its source: no import circles between files, and each stage of
//! the library (docs/architecture.md) imports only the stages before it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use regex::Regex;

use crate::common::Workspace;

/// The library's top-level modules in the order they may import each other: a module may use
/// those before it (and its own), never one after it. The first ones serve every stage.
const STAGES: &[&[&str]] = &[
    &["alloc", "terminal", "fsio", "notice", "cache", "scaffold"],
    &["config"],
    &["input"],
    &["grade"],
    &["plan"],
    &["output"],
    &["run"],
];

/// A file of the crate as a module: its path below the crate root (`grade/pack/load.rs` is
/// `["grade", "pack", "load"]`), and whether it is the binary's (`main.rs`, `cli/`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Module {
    bin: bool,
    path: Vec<String>,
}

impl Module {
    fn of(file: &Path) -> Module {
        let mut path: Vec<String> = file
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let bin = path[0] == "main" || path[0] == "cli";
        if matches!(
            path.last().map(String::as_str),
            Some("mod" | "lib" | "main")
        ) {
            path.pop();
        }
        Module { bin, path }
    }

    fn file(&self, files: &BTreeMap<Module, PathBuf>) -> String {
        files[self].display().to_string()
    }
}

/// One `use` or path naming another file of the crate.
struct Reference {
    line: usize,
    text: String,
    to: Module,
}

/// `source` with comments and the insides of string and character literals blanked, lines kept.
fn code_of(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let rest = &chars[i..];
        if rest.starts_with(&['/', '/']) {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if rest.starts_with(&['/', '*']) {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i..].starts_with(&['/', '*']) {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i..].starts_with(&['*', '/']) {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if rest[0] == 'r' && rest.len() > 1 && (rest[1] == '"' || rest[1] == '#') {
            let hashes = rest[1..].iter().take_while(|&&c| c == '#').count();
            if rest.get(1 + hashes) != Some(&'"') {
                out.push(rest[0]);
                i += 1;
                continue;
            }
            let end: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            out.push('"');
            i += 2 + hashes;
            while i < chars.len() && !chars[i..].starts_with(&end) {
                out.push(blank(chars[i]));
                i += 1;
            }
            out.push('"');
            i += end.len();
        } else if rest[0] == '"' {
            out.push('"');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                out.push(blank(chars[i]));
                i += 1;
            }
            out.push('"');
            i += 1;
        } else if rest[0] == '\'' && rest.get(1) == Some(&'\\') {
            let len = rest[2..]
                .iter()
                .position(|&c| c == '\'')
                .map_or(2, |n| n + 3);
            out.push_str(&" ".repeat(len));
            i += len;
        } else if rest[0] == '\'' && rest.get(2) == Some(&'\'') {
            out.push_str("   ");
            i += 3;
        } else {
            out.push(rest[0]);
            i += 1;
        }
    }
    out
}

/// `code` without its `#[cfg(test)]` modules written in place, and the names of those declared
/// in a file of their own.
fn without_tests(code: &str) -> (String, Vec<String>) {
    let test_module =
        Regex::new(r"#\[cfg\(test\)\]\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+(\w+)\s*([{;])").unwrap();
    let mut kept = code.to_string();
    let mut own_files = Vec::new();
    while let Some(m) = test_module.captures(&kept) {
        let whole = m.get(0).unwrap();
        let (start, mut end) = (whole.start(), whole.end());
        if &m[2] == ";" {
            own_files.push(m[1].to_string());
        } else {
            let mut depth = 1;
            for (i, c) in kept[end..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    end += i + 1;
                    break;
                }
            }
        }
        let blanked: String = kept[start..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        kept.replace_range(start..end, &blanked);
    }
    (kept, own_files)
}

/// The paths a `use` tree names: `a::{b, c::{d, e as f}}` is `a::b`, `a::c::d`, `a::c::e`.
fn expand(prefix: &str, tree: &str, paths: &mut Vec<String>) {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or_default().trim();
        let path = path.trim_end_matches("::self").trim_end_matches("::*");
        if path == "self" {
            paths.push(prefix.trim_end_matches("::").to_string());
        } else if !path.is_empty() {
            paths.push(format!("{prefix}{path}"));
        }
        return;
    };
    let inner_prefix = format!("{prefix}{}", &tree[..open]);
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut depth, mut from) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                expand(&inner_prefix, &inner[from..i], paths);
                from = i + 1;
            }
            _ => {}
        }
    }
    expand(&inner_prefix, &inner[from..], paths);
}

/// The file a path written in `from` names, if it names one of the crate's other files.
fn resolve(from: &Module, path: &str, files: &BTreeMap<Module, PathBuf>) -> Option<Module> {
    let mut segments = path.split("::").map(str::trim);
    let mut base = match segments.next()? {
        "crate" => Vec::new(),
        "self" => from.path.clone(),
        "super" => from.path[..from.path.len().saturating_sub(1)].to_vec(),
        "gavel" if from.bin => return None,
        _ => return None,
    };
    for segment in segments {
        match segment {
            "super" => {
                base.pop();
            }
            segment => base.push(segment.to_string()),
        }
    }
    let to = (1..=base.len()).rev().find_map(|n| {
        let module = Module {
            bin: from.bin,
            path: base[..n].to_vec(),
        };
        files.contains_key(&module).then_some(module)
    })?;
    // A module's own file, and those of the folders it is in, are the module itself: its
    // children use what it declares.
    (!from.path.starts_with(&to.path)).then_some(to)
}

/// Every reference of each file of the crate to another.
/// The crate's files below `root`, each as its module, its path as the repository names it
/// (`host/src/...`) and its code without comments, literals' insides or test modules; files that
/// are only test modules are left out.
fn crate_code(root: &Path) -> (BTreeMap<Module, PathBuf>, BTreeMap<Module, String>) {
    let mut sources = BTreeMap::new();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let relative = path.strip_prefix(root).unwrap().to_path_buf();
                let source = std::fs::read_to_string(&path).unwrap();
                sources.insert(Module::of(&relative), (relative, source));
            }
        }
    }
    let mut files: BTreeMap<Module, PathBuf> = BTreeMap::new();
    let mut code = BTreeMap::new();
    let mut test_files = Vec::new();
    for (module, (relative, source)) in sources {
        let (kept, own_files) = without_tests(&code_of(&source));
        for name in own_files {
            let mut path = module.path.clone();
            path.push(name);
            test_files.push(Module {
                bin: module.bin,
                path,
            });
        }
        files.insert(module.clone(), Path::new("host/src").join(relative));
        code.insert(module, kept);
    }
    for test_file in &test_files {
        files.remove(test_file);
        code.remove(test_file);
    }
    (files, code)
}

fn references(root: &Path) -> (BTreeMap<Module, PathBuf>, BTreeMap<Module, Vec<Reference>>) {
    let (files, code) = crate_code(root);
    let use_statement = Regex::new(r"\buse\s+([^;]+);").unwrap();
    let inline_path =
        Regex::new(r"\b(?:crate|super|self)(?:\s*::\s*[A-Za-z_][A-Za-z0-9_]*)+").unwrap();
    let mut all = BTreeMap::new();
    for (module, code) in &code {
        let line_of = |offset: usize| code[..offset].matches('\n').count() + 1;
        let mut found = Vec::new();
        let mut rest = code.clone();
        for m in use_statement.captures_iter(code) {
            let whole = m.get(0).unwrap();
            let mut paths = Vec::new();
            expand("", &m[1], &mut paths);
            for path in paths {
                if let Some(to) = resolve(module, &path, &files) {
                    found.push(Reference {
                        line: line_of(whole.start()),
                        text: whole
                            .as_str()
                            .split_whitespace()
                            .collect::<Vec<_>>()
                            .join(" "),
                        to,
                    });
                }
            }
            rest.replace_range(whole.range(), &" ".repeat(whole.len()));
        }
        for m in inline_path.find_iter(&rest) {
            let path: String = m.as_str().split_whitespace().collect();
            if let Some(to) = resolve(module, &path, &files) {
                found.push(Reference {
                    line: line_of(m.start()),
                    text: path,
                    to,
                });
            }
        }
        found.dedup_by(|a, b| (a.line, &a.text, &a.to) == (b.line, &b.text, &b.to));
        all.insert(module.clone(), found);
    }
    (files, all)
}

fn stage_of(module: &Module) -> Option<usize> {
    if module.bin {
        return Some(STAGES.len());
    }
    let top = module.path.first()?;
    STAGES
        .iter()
        .position(|stage| stage.contains(&top.as_str()))
}

/// The strongly connected components of more than one file (Tarjan's algorithm).
fn circles(graph: &BTreeMap<Module, Vec<Reference>>) -> Vec<Vec<Module>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<Module, Vec<Reference>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        circles: Vec<Vec<Module>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, module: &'a Module) {
            let n = self.index.len();
            self.index.insert(module, n);
            self.low.insert(module, n);
            self.stack.push(module);
            for reference in self.graph.get(module).into_iter().flatten() {
                let Some((to, _)) = self.graph.get_key_value(&reference.to) else {
                    continue;
                };
                if !self.index.contains_key(to) {
                    self.visit(to);
                    let low = self.low[module].min(self.low[to]);
                    self.low.insert(module, low);
                } else if self.stack.contains(&to) {
                    let low = self.low[module].min(self.index[to]);
                    self.low.insert(module, low);
                }
            }
            if self.low[module] == self.index[module] {
                let at = self.stack.iter().rposition(|m| *m == module).unwrap();
                let circle: Vec<Module> = self.stack.drain(at..).cloned().collect();
                if circle.len() > 1 {
                    self.circles.push(circle);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        circles: Vec::new(),
    };
    for module in graph.keys() {
        if !walk.index.contains_key(module) {
            walk.visit(module);
        }
    }
    walk.circles
}

/// What is wrong with the crate's imports, each naming the file, line and `use` at fault.
fn problems(root: &Path) -> Vec<String> {
    let (files, graph) = references(root);
    let mut problems = Vec::new();
    for (module, references) in &graph {
        let Some(stage) = stage_of(module) else {
            continue;
        };
        for reference in references {
            if stage_of(&reference.to).is_some_and(|to| to > stage) {
                problems.push(format!(
                    "{}:{}: `{}` reaches {}, a later stage: move what it needs to an earlier \
                     one (docs/architecture.md)",
                    module.file(&files),
                    reference.line,
                    reference.text,
                    reference.to.file(&files)
                ));
            }
        }
    }
    for circle in circles(&graph) {
        let mut lines = Vec::new();
        for module in &circle {
            for reference in &graph[module] {
                if circle.contains(&reference.to) {
                    lines.push(format!(
                        "  {}:{}: `{}` -> {}",
                        module.file(&files),
                        reference.line,
                        reference.text,
                        reference.to.file(&files)
                    ));
                }
            }
        }
        problems.push(format!(
            "an import circle; break one of these:\n{}",
            lines.join("\n")
        ));
    }
    problems
}

#[test]
fn no_import_circles_and_no_stage_imports_a_later_one() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let problems = problems(&root);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The check itself: a tree with a circle through a `use` tree and an inline path, and a stage
/// using a later one, each named; comments, strings and test modules naming other files are not
/// references.
#[test]
fn a_circle_and_a_reference_to_a_later_stage_are_each_named() {
    let ws = Workspace::new();
    ws.write("src/lib.rs", "pub mod config;\npub mod input;\n");
    ws.write("src/config/mod.rs", "pub mod suite;\npub mod gate;\n");
    ws.write(
        "src/config/suite.rs",
        "use crate::{config::gate::Gate, fsio};\n// use crate::input::dataset;\n\
         const S: &str = \"crate::input::dataset::X\";\n\
         #[cfg(test)]\nmod tests {\n    use crate::input::dataset::Rows;\n}\n",
    );
    ws.write("src/config/gate.rs", "fn f() { super::suite::check(); }\n");
    ws.write("src/input/mod.rs", "pub mod dataset;\n");
    ws.write("src/input/dataset.rs", "pub struct Rows;\n");
    ws.write(
        "src/fsio.rs",
        "pub fn open() -> crate::input::dataset::Rows { todo!() }\n",
    );
    let problems = problems(&ws.path("src"));
    assert_eq!(
        problems,
        [
            "host/src/fsio.rs:1: `crate::input::dataset::Rows` reaches host/src/input/dataset.rs, \
             a later stage: move what it needs to an earlier one (docs/architecture.md)",
            "an import circle; break one of these:\n  \
             host/src/config/gate.rs:1: `super::suite::check` -> host/src/config/suite.rs\n  \
             host/src/config/suite.rs:1: `use crate::{config::gate::Gate, fsio};` -> \
             host/src/config/gate.rs",
        ]
    );
}

/// Files allowed a `Result<_, String>`: the WebAssembly interface's `result<_, string>`
/// (`wit.rs`), then the files that still carry an error as text, to be given typed errors and
/// taken off this list.
const STRING_ERRORS_ALLOWED: &[&str] = &["host/src/grade/pack/wit.rs"];

/// Each `Result<_, String>` of the crate's code below `root` outside [`STRING_ERRORS_ALLOWED`],
/// and each error wrapped by hand into a list of one (`map_err(|e| vec![e])`), at its file and
/// line.
fn string_errors(root: &Path) -> Vec<String> {
    let (files, code) = crate_code(root);
    let result = Regex::new(r"\bResult\s*<").unwrap();
    let list_of_one = Regex::new(r"map_err\(\s*\|\w+\|\s*vec!\[\s*\w+\s*\]\s*\)").unwrap();
    let mut problems = Vec::new();
    for (module, code) in &code {
        let file = module.file(&files);
        for m in list_of_one.find_iter(code) {
            let line = code[..m.start()].matches('\n').count() + 1;
            problems.push(format!(
                "{file}:{line}: `{}`: let `?` make the list (From<SuiteError> for Vec<SuiteError>), \
                 or give the list a type of its own",
                m.as_str()
            ));
        }
        if STRING_ERRORS_ALLOWED.contains(&file.as_str()) {
            continue;
        }
        for m in result.find_iter(code) {
            // The type's arguments at the top level, a trailing comma aside; the second is its
            // error type.
            let (mut depth, mut start) = (1, m.end());
            let mut arguments = Vec::new();
            for (i, c) in code[m.end()..].char_indices() {
                let at = m.end() + i;
                match c {
                    '>' if code[..at].ends_with('-') => {}
                    '<' | '(' | '[' => depth += 1,
                    '>' | ')' | ']' => depth -= 1,
                    ',' if depth == 1 => {
                        arguments.push(code[start..at].trim());
                        start = at + 1;
                    }
                    _ => {}
                }
                if depth == 0 {
                    arguments.push(code[start..at].trim());
                    break;
                }
            }
            arguments.retain(|argument| !argument.is_empty());
            if arguments.len() == 2 && arguments[1] == "String" {
                let line = code[..m.start()].matches('\n').count() + 1;
                problems.push(format!(
                    "{file}:{line}: `Result<_, String>`: give the error a type of its own (an \
                     enum or struct with Display and std::error::Error) that keeps its cause"
                ));
            }
        }
    }
    problems
}

#[test]
fn no_error_is_a_bare_string() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let problems = string_errors(&root);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The check itself: a `Result` whose error is `String`, on one line or several, is named; one
/// of another error, `io::Result<String>`, comments, strings and test modules are not.
#[test]
fn a_string_error_is_named_at_its_line() {
    let ws = Workspace::new();
    ws.write("src/lib.rs", "pub mod input;\n");
    ws.write(
        "src/input.rs",
        "fn a() -> Result<Vec<(u8, String)>, String> { todo!() }\n\
         fn b() -> std::io::Result<String> { todo!() }\n\
         fn c() -> Result<\n    String,\n    String,\n> { todo!() }\n\
         // fn d() -> Result<(), String>\n\
         const E: &str = \"Result<(), String>\";\n\
         fn f() -> Result<String, Error> { todo!() }\n\
         fn h() -> Result<(), Vec<E>> { g().map_err(|e| vec![e]) }\n\
         #[cfg(test)]\nmod tests {\n    fn g() -> Result<(), String> { todo!() }\n}\n",
    );
    let problems = string_errors(&ws.path("src"));
    let named = |line: usize| {
        format!(
            "host/src/input.rs:{line}: `Result<_, String>`: give the error a type of its own (an \
             enum or struct with Display and std::error::Error) that keeps its cause"
        )
    };
    assert_eq!(
        problems,
        [
            "host/src/input.rs:10: `map_err(|e| vec![e])`: let `?` make the list \
             (From<SuiteError> for Vec<SuiteError>), or give the list a type of its own"
                .to_string(),
            named(1),
            named(3),
        ]
    );
}
