//! Builds the guest components of `tests/guests` for wasm32-wasip2, once per process, and says
//! where they are. Included by the sandbox tests and the pack-call benchmark.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub struct Guests {
    /// Misbehaves on purpose: one grader per attack.
    pub adversary: PathBuf,
    /// One grader that returns a constant: the floor of a sandboxed call.
    pub constant: PathBuf,
    /// Built against `gavel:grader@9.0.0`, a version the host does not support.
    pub future_wit: PathBuf,
}

const TARGET: &str = "wasm32-wasip2";

pub fn guests() -> &'static Guests {
    static GUESTS: OnceLock<Guests> = OnceLock::new();
    GUESTS.get_or_init(|| build().unwrap_or_else(|message| panic!("{message}")))
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the host crate lives inside the workspace")
        .to_path_buf()
}

fn build() -> Result<Guests, String> {
    ensure_target()?;
    let guests_dir = workspace_root().join("tests/guests");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let output = Command::new(cargo)
        .args(["build", "--release", "--target", TARGET, "--manifest-path"])
        .arg(guests_dir.join("Cargo.toml"))
        // The guests build in a target directory of their own: the outer cargo may hold the lock
        // on the main one. Flags meant for the host build must not reach the wasm build.
        .env("CARGO_TARGET_DIR", guests_dir.join("target"))
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .env("RUSTC_WRAPPER", "")
        .output()
        .map_err(|e| format!("cannot run cargo to build the test guests: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "building the test guests in tests/guests failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let out = guests_dir.join("target").join(TARGET).join("release");
    Ok(Guests {
        adversary: out.join("adversary.wasm"),
        constant: out.join("constant.wasm"),
        future_wit: out.join("future_wit.wasm"),
    })
}

/// Adds the wasm32-wasip2 target if it is missing, or explains how to.
fn ensure_target() -> Result<(), String> {
    let installed = Command::new("rustc")
        .args(["--print", "target-libdir", "--target", TARGET])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .is_some_and(|dir| dir.is_dir());
    if installed {
        return Ok(());
    }
    let added = Command::new("rustup")
        .args(["target", "add", TARGET])
        .status()
        .is_ok_and(|s| s.success());
    if added {
        Ok(())
    } else {
        Err(format!(
            "the test guests need the Rust target {TARGET}, which is not installed and could \
             not be added.\nhelp: run `rustup target add {TARGET}`"
        ))
    }
}
