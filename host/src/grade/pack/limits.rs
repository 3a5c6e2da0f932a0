//! Per-call limits: what a suite and a pack may set, and the values a call runs with.

use std::time::Duration;

use super::{Limits, PackError};

/// How often the epoch advances; deadlines are counted in these ticks.
pub(super) const TICK: Duration = Duration::from_millis(5);

/// Wasm instructions a call may execute (most instructions cost 1). A trivial Rust grader uses
/// a few thousand, a Python or JavaScript one about a million; 100M is tens of milliseconds.
pub const DEFAULT_FUEL: u64 = 100_000_000;
/// Linear memory per call, in MiB.
pub const DEFAULT_MEMORY_MB: u64 = 64;
/// Wall-clock deadline per call, in milliseconds: a backstop behind fuel.
pub const DEFAULT_TIMEOUT_MS: u64 = 2_000;
/// Largest grade (all its texts together) or extraction a call may return, in KiB.
pub const DEFAULT_OUTPUT_KB: u64 = 1_024;
/// What a call may write to stdout, and separately to stderr, in KiB.
pub const DEFAULT_STDOUT_KB: u64 = 16;
/// Instructions for loading an interpreter's program (running its module's top level and
/// importing what it imports) into an instance, apart from the call's own fuel: importing
/// requests costs about 300M, httpx about 110M.
pub const DEFAULT_LOAD_FUEL: u64 = 1_000_000_000;
/// Wall-clock deadline for loading a program, in milliseconds, apart from the call's.
pub const DEFAULT_LOAD_TIMEOUT_MS: u64 = 10_000;

/// What a grader's writable `/tmp` may hold, per instance: bytes in MiB, and files and folders.
/// At most `engine::CALL_SLOTS` (128) instances are alive at once, so the defaults bound what
/// a run can put in the system's temporary folder at 2 GiB.
pub const DEFAULT_TMP_MB: u64 = 16;
pub const DEFAULT_TMP_FILES: u64 = 1_000;

/// Instructions, wall-clock time and linear memory (in MiB) for compiling Python source into
/// bytecode, once: one share of a suite's packages when they are unpacked, and at most a
/// suite's own files (see [`CallLimits::compiling`]). The CPython compiler on a few MiB of
/// source, with no user code running; a grading call's budget is far too small for it.
pub const COMPILE_FUEL: u64 = 200_000_000_000;
pub const COMPILE_TIMEOUT: Duration = Duration::from_secs(600);
const COMPILE_MEMORY_MB: u64 = 1_024;

/// What compiling a suite's own files may take a byte of their source beyond a load's budget.
/// CPython's compiler takes about 9,000 instructions in the sandbox and 0.6 µs natively a byte
/// of ordinary code; these leave room for ten times the instructions, and for the slower
/// sandbox on a loaded machine, while a source that is slow to compile for its size is still
/// stopped.
const COMPILE_FUEL_PER_BYTE: u64 = 100_000;
const COMPILE_TIME_PER_BYTE: Duration = Duration::from_micros(50);

const MAX_MEMORY_MB: u64 = 4_096;
const MAX_TIMEOUT_MS: u64 = 600_000;
const MAX_STDOUT_KB: u64 = 1_024;
const MAX_TMP_MB: u64 = 65_536;
const MAX_TMP_FILES: u64 = 1_000_000;

/// The limits one call runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct CallLimits {
    pub(super) fuel: u64,
    pub(super) memory_bytes: usize,
    pub(super) deadline_ticks: u64,
    /// The deadline as a duration from the call's start, for waits the epoch does not reach.
    pub(super) timeout: Duration,
    pub(super) output_bytes: usize,
    pub(super) stdout_bytes: usize,
    /// Fuel and deadline (ms) for loading an interpreter's program, before the call proper.
    pub(super) load_fuel: u64,
    pub(super) load_timeout_ms: u64,
    /// What the instance's writable `/tmp` may hold: bytes, and files and folders.
    pub(super) tmp_bytes: u64,
    pub(super) tmp_files: u64,
}

impl CallLimits {
    /// `pack` over `suite` over the defaults; `pack_name` names the pack in errors.
    pub(super) fn resolve(
        pack_name: &str,
        pack: &Limits,
        suite: &Limits,
    ) -> Result<CallLimits, PackError> {
        let pick = |field: &'static str,
                    get: fn(&Limits) -> Option<u64>,
                    default: u64,
                    max: u64|
         -> Result<u64, PackError> {
            let value = get(pack).or(get(suite)).unwrap_or(default);
            if value == 0 || value > max {
                return Err(PackError::InvalidLimit {
                    pack: pack_name.to_string(),
                    field,
                    message: format!("{value} is out of range; use 1 to {max}"),
                });
            }
            Ok(value)
        };
        let fuel = pick("fuel", |l| l.fuel, DEFAULT_FUEL, u64::MAX)?;
        let memory_mb = pick(
            "memory_mb",
            |l| l.memory_mb,
            DEFAULT_MEMORY_MB,
            MAX_MEMORY_MB,
        )?;
        let timeout_ms = pick(
            "timeout_ms",
            |l| l.timeout_ms,
            DEFAULT_TIMEOUT_MS,
            MAX_TIMEOUT_MS,
        )?;
        // A guest cannot return more than its memory holds.
        let output_kb = pick(
            "output_kb",
            |l| l.output_kb,
            DEFAULT_OUTPUT_KB,
            memory_mb << 10,
        )?;
        let stdout_kb = pick(
            "stdout_kb",
            |l| l.stdout_kb,
            DEFAULT_STDOUT_KB,
            MAX_STDOUT_KB,
        )?;
        let load_fuel = pick("load_fuel", |l| l.load_fuel, DEFAULT_LOAD_FUEL, u64::MAX)?;
        let load_timeout_ms = pick(
            "load_timeout_ms",
            |l| l.load_timeout_ms,
            DEFAULT_LOAD_TIMEOUT_MS,
            MAX_TIMEOUT_MS,
        )?;
        let tmp_mb = pick("tmp_mb", |l| l.tmp_mb, DEFAULT_TMP_MB, MAX_TMP_MB)?;
        let tmp_files = pick(
            "tmp_files",
            |l| l.tmp_files,
            DEFAULT_TMP_FILES,
            MAX_TMP_FILES,
        )?;
        Ok(CallLimits {
            fuel,
            memory_bytes: (memory_mb << 20) as usize,
            deadline_ticks: deadline_ticks(timeout_ms),
            timeout: Duration::from_millis(timeout_ms),
            output_bytes: (output_kb << 10) as usize,
            stdout_bytes: (stdout_kb << 10) as usize,
            load_fuel,
            load_timeout_ms,
            tmp_bytes: tmp_mb << 20,
            tmp_files,
        })
    }
}

impl CallLimits {
    /// The limits of loading a program into an instance: its own fuel and deadline.
    pub(super) fn loading(&self) -> CallLimits {
        self.with_budget(self.load_fuel, Duration::from_millis(self.load_timeout_ms))
    }

    /// These limits with `fuel` and the deadline `timeout`.
    pub(super) fn with_budget(&self, fuel: u64, timeout: Duration) -> CallLimits {
        CallLimits {
            fuel,
            deadline_ticks: deadline_ticks(timeout.as_millis() as u64),
            timeout,
            ..*self
        }
    }

    /// The limits of compiling `bytes` of a suite's own Python source, once for every load of
    /// it: a load's budget and a share per byte, within [`COMPILE_FUEL`] and
    /// [`COMPILE_TIMEOUT`].
    pub(super) fn compiling(&self, bytes: u64) -> CallLimits {
        let fuel = self
            .load_fuel
            .saturating_add(bytes.saturating_mul(COMPILE_FUEL_PER_BYTE))
            .min(COMPILE_FUEL);
        let per_byte =
            COMPILE_TIME_PER_BYTE.saturating_mul(u32::try_from(bytes).unwrap_or(u32::MAX));
        let timeout = Duration::from_millis(self.load_timeout_ms)
            .saturating_add(per_byte)
            .min(COMPILE_TIMEOUT);
        self.widened(fuel, timeout)
    }

    /// These limits with `fuel`, the deadline `timeout` and at least
    /// [`COMPILE_MEMORY_MB`] of memory, for a call that is gavel's own work.
    pub(super) fn widened(&self, fuel: u64, timeout: Duration) -> CallLimits {
        CallLimits {
            memory_bytes: self.memory_bytes.max((COMPILE_MEMORY_MB << 20) as usize),
            ..self.with_budget(fuel, timeout)
        }
    }
}

/// The epoch ticks of a `timeout_ms` deadline. One extra tick: the tick in progress when the
/// call starts may be nearly over.
fn deadline_ticks(timeout_ms: u64) -> u64 {
    timeout_ms.div_ceil(TICK.as_millis() as u64) + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_limits_win_over_suite_limits_which_win_over_defaults() {
        let suite = Limits {
            fuel: Some(5),
            memory_mb: Some(8),
            ..Limits::default()
        };
        let pack = Limits {
            fuel: Some(7),
            ..Limits::default()
        };
        let limits = CallLimits::resolve("p", &pack, &suite).unwrap();
        assert_eq!(limits.fuel, 7);
        assert_eq!(limits.memory_bytes, 8 << 20);
        assert_eq!(limits.output_bytes, (DEFAULT_OUTPUT_KB << 10) as usize);
        assert_eq!(limits.stdout_bytes, (DEFAULT_STDOUT_KB << 10) as usize);
        assert_eq!(limits.deadline_ticks, DEFAULT_TIMEOUT_MS / 5 + 1);
    }

    #[test]
    fn compiling_a_suites_files_grows_with_their_size_within_the_packages_bounds() {
        let limits = CallLimits::resolve("p", &Limits::default(), &Limits::default()).unwrap();
        let empty = limits.compiling(0);
        assert_eq!(empty.fuel, DEFAULT_LOAD_FUEL);
        assert_eq!(
            empty.timeout,
            Duration::from_millis(DEFAULT_LOAD_TIMEOUT_MS)
        );
        assert!(empty.memory_bytes >= (COMPILE_MEMORY_MB << 20) as usize);
        // 500 kB of source: ten times what CPython's compiler takes on it, more than a load.
        let scratch = limits.compiling(500_000);
        assert_eq!(scratch.fuel, DEFAULT_LOAD_FUEL + 50_000_000_000);
        assert_eq!(
            scratch.timeout,
            Duration::from_millis(DEFAULT_LOAD_TIMEOUT_MS) + Duration::from_secs(25)
        );
        // Past what the packages' compile may take, the packages' bounds hold.
        let huge = limits.compiling(u64::MAX);
        assert_eq!((huge.fuel, huge.timeout), (COMPILE_FUEL, COMPILE_TIMEOUT));
    }

    #[test]
    fn out_of_range_limits_name_the_pack_and_field() {
        let pack = Limits {
            memory_mb: Some(0),
            ..Limits::default()
        };
        let err = CallLimits::resolve("p", &pack, &Limits::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "pack `p`: limits.memory_mb: 0 is out of range; use 1 to 4096"
        );
        let pack = Limits {
            memory_mb: Some(1),
            output_kb: Some(2048),
            ..Limits::default()
        };
        let err = CallLimits::resolve("p", &pack, &Limits::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "pack `p`: limits.output_kb: 2048 is out of range; use 1 to 1024"
        );
    }

    #[test]
    fn unknown_limit_keys_are_rejected() {
        let err = serde_json::from_str::<Limits>(r#"{"fule": 3}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field `fule`"), "{err}");
    }
}
