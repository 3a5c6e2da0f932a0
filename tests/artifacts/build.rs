//! Builds the guest workspaces for `wasm32-wasip2` (release) with the toolchain building this
//! crate, and writes one `pub const NAME: &str = "<path>.wasm"` per crate into
//! `$OUT_DIR/artifacts.rs`. Each workspace builds into its own `target/`, where a user running
//! `cargo build --target wasm32-wasip2 --release` there would find the same files, so the example
//! suites' relative pack paths hold after either.

use std::collections::BTreeSet;
use std::env;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const TARGET: &str = "wasm32-wasip2";

/// (module name, workspace directory relative to the repository root, whether it must exist).
const WORKSPACES: [(&str, &str, bool); 2] = [
    ("packs", "examples/packs", true),
    ("guests", "tests/guests", false),
];

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest_dir
        .join("../..")
        .canonicalize()
        .expect("the repository root is readable");
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));

    // The packs are built against the SDK and the WIT: a change there rebuilds them.
    for shared in [
        "guest-sdk/src",
        "guest-sdk/wit",
        "guest-sdk/Cargo.toml",
        "wit",
        // The Python interpreter's world, which the stand-in interpreter guest exports.
        "host/runtime/python/wit",
    ] {
        watch(&root.join(shared));
    }

    ensure_target();
    let mut code = String::new();
    for (module, dir, required) in WORKSPACES {
        let workspace = root.join(dir);
        let manifest = workspace.join("Cargo.toml");
        if !manifest.exists() {
            assert!(!required, "{} is missing", manifest.display());
            // Watching the parent notices the workspace when it appears; watching a path that
            // does not exist would rerun this script on every build.
            println!(
                "cargo:rerun-if-changed={}",
                workspace.parent().unwrap_or(&root).display()
            );
            write_module(&mut code, module, dir, &[]);
            continue;
        }
        watch(&workspace);
        build(&manifest);
        write_module(&mut code, module, dir, &components(&manifest));
    }
    fs::write(out_dir.join("artifacts.rs"), code).expect("OUT_DIR is writable");
}

/// Adds the target with rustup when the toolchain lacks it; stops with a hint when that fails.
fn ensure_target() {
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
    if sysroot.is_some_and(|root| root.join("lib/rustlib").join(TARGET).is_dir()) {
        return;
    }
    let added = Command::new("rustup")
        .args(["target", "add", TARGET])
        .stdout(Stdio::from(io::stderr()))
        .status();
    match added {
        Ok(status) if status.success() => {}
        outcome => panic!(
            "\n\nThe Rust target `{TARGET}` is not installed, and `rustup target add {TARGET}` \
             did not add it ({}).\nInstall it for the toolchain in use, then build again:\n\n    \
             rustup target add {TARGET}\n\nWithout rustup, install the `{TARGET}` standard \
             library of your Rust distribution.\n",
            match outcome {
                Ok(status) => format!("it exited with {status}"),
                Err(e) => format!("could not run rustup: {e}"),
            }
        ),
    }
}

fn build(manifest: &Path) {
    let mut cargo = nested_cargo();
    cargo
        .args(["build", "--release", "--target", TARGET, "--manifest-path"])
        .arg(manifest)
        .arg("--target-dir")
        .arg(target_dir(manifest))
        // Cargo reads a build script's stdout as instructions; the nested build's goes to stderr.
        .stdout(Stdio::from(io::stderr()));
    let status = cargo
        .status()
        .unwrap_or_else(|e| panic!("could not run cargo to build {}: {e}", manifest.display()));
    assert!(
        status.success(),
        "\n\nBuilding the guests in {} for {TARGET} failed ({status}); the compiler's messages \
         are above. To reproduce: cargo build --release --target {TARGET} --manifest-path {}\n",
        manifest.display(),
        manifest.display()
    );
}

/// `(package name, component path)` of every cdylib crate of the workspace.
fn components(manifest: &Path) -> Vec<(String, PathBuf)> {
    let output = nested_cargo()
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--manifest-path",
        ])
        .arg(manifest)
        .output()
        .unwrap_or_else(|e| panic!("could not run cargo metadata: {e}"));
    assert!(
        output.status.success(),
        "cargo metadata failed for {}: {}",
        manifest.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let release = target_dir(manifest).join(TARGET).join("release");
    let mut found = Vec::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        let name = package["name"].as_str().unwrap_or_default();
        for target in package["targets"].as_array().into_iter().flatten() {
            let kinds = target["crate_types"].as_array().into_iter().flatten();
            if kinds.filter_map(|k| k.as_str()).any(|k| k == "cdylib") {
                let lib = target["name"].as_str().unwrap_or(name).replace('-', "_");
                let path = release.join(format!("{lib}.wasm"));
                assert!(
                    path.exists(),
                    "the build did not produce {}",
                    path.display()
                );
                found.push((name.to_string(), path));
            }
        }
    }
    found.sort();
    found
}

/// The workspace's own `target/`, whatever a cargo config says: the example suites name their
/// packs there.
fn target_dir(manifest: &Path) -> PathBuf {
    manifest.with_file_name("target")
}

/// A cargo for another workspace: the flags and wrappers of the build running this script
/// (host rustflags, clippy as a wrapper) must not leak into it.
fn nested_cargo() -> Command {
    let mut cargo = Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_LLVM_COV",
    ] {
        cargo.env_remove(var);
    }
    cargo
}

fn write_module(code: &mut String, module: &str, dir: &str, components: &[(String, PathBuf)]) {
    let _ = writeln!(code, "/// Components built from `{dir}/`.");
    let _ = writeln!(code, "pub mod {module} {{");
    let mut names = BTreeSet::new();
    for (package, path) in components {
        let constant = package.to_uppercase().replace('-', "_");
        assert!(
            names.insert(constant.clone()),
            "two crates map to {constant}"
        );
        let _ = writeln!(code, "    /// `{package}`.");
        let _ = writeln!(
            code,
            "    pub const {constant}: &str = {:?};",
            path.display().to_string()
        );
    }
    let _ = writeln!(
        code,
        "    /// Every `(crate name, component path)` of `{dir}/`."
    );
    let _ = writeln!(code, "    pub const ALL: &[(&str, &str)] = &[");
    for (package, path) in components {
        let _ = writeln!(
            code,
            "        ({package:?}, {:?}),",
            path.display().to_string()
        );
    }
    let _ = writeln!(code, "    ];");
    let _ = writeln!(code, "}}");
}

/// Reruns this script when anything under `path` changes, build output excluded. Cargo scans a
/// watched directory whole, so a directory holding a `target/` is watched entry by entry.
fn watch(path: &Path) {
    if !path.join("target").is_dir() {
        println!("cargo:rerun-if-changed={}", path.display());
        return;
    }
    let Ok(entries) = fs::read_dir(path) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name() != "target" {
            watch(&entry.path());
        }
    }
}
