//! A pack that misbehaves on purpose: each grader is one attack on the host, named after it.
//! `ok` behaves, so a test can check that the pack still works after an attack.

wit_bindgen::generate!({
    path: "../../../wit/gavel-grader-0.1.0",
    world: "pack-v0",
});

use std::hint::black_box;

use exports::gavel::grader::pack::Guest;
use gavel::grader::types::{
    FunctionInfo, FunctionKind, Grade, PackInfo, Sample, SampleId, Texts, Trajectory,
};

struct Adversary;

const GRADERS: &[(&str, &str)] = &[
    ("ok", "passes, echoing the submission"),
    ("spin", "loops forever"),
    ("memory-bomb", "allocates until the host says no"),
    ("shadow-recursion", "overflows the stack kept in linear memory"),
    ("native-recursion", "overflows the native wasm stack"),
    ("huge-rationale", "returns a 2 MiB rationale"),
    ("stdout-flood", "prints without end"),
    ("unreachable", "executes `unreachable`"),
    ("panic", "panics"),
    ("exit", "calls exit(3)"),
    ("nan", "scores NaN"),
    ("too-high", "scores 1.5"),
    ("bad-metadata", "returns metadata that is not a JSON object"),
    ("refuse", "returns an error"),
    ("probe", "reports what it can see of files, env, clock, network and randomness"),
    ("leak-secret", "leaves the submission in memory"),
    ("find-secret", "looks for what `leak-secret` left behind"),
    ("leak-and-find", "leaves the submission in memory and finds it again in the same call"),
    ("describe-sample", "reports the sample and trajectory it received"),
    (
        "reach",
        "reports its environment and what it can read, list and write at the submission's path",
    ),
];

const EXTRACTORS: &[(&str, &str)] = &[
    ("echo", "extracts the last assistant message"),
    ("huge", "extracts 2 MiB"),
    ("nothing", "extracts nothing"),
];

impl Guest for Adversary {
    fn describe() -> PackInfo {
        let info = |kind: FunctionKind| {
            move |(name, description): &(&str, &str)| FunctionInfo {
                name: name.to_string(),
                kind,
                description: description.to_string(),
                needs_ground_truth: false,
            }
        };
        PackInfo {
            name: "adversary".to_string(),
            version: "0.0.0".to_string(),
            functions: GRADERS
                .iter()
                .map(info(FunctionKind::Grader))
                .chain(EXTRACTORS.iter().map(info(FunctionKind::Extractor)))
                .collect(),
        }
    }

    fn check_config(name: String, config: String) -> Result<(), String> {
        if config.contains("\"reject\"") {
            return Err(format!("{name}: `reject` is not a valid option"));
        }
        Ok(())
    }

    fn grade(
        name: String,
        sample: Sample,
        trajectory: Trajectory,
        submission: String,
        _config: String,
    ) -> Result<Grade, String> {
        match name.as_str() {
            "ok" => Ok(scored(1.0, submission)),
            "spin" => loop {
                black_box(());
            },
            "memory-bomb" => {
                let mut chunks: Vec<Vec<u8>> = Vec::new();
                loop {
                    let mut chunk = vec![0u8; 1 << 20];
                    chunk[0] = 1;
                    chunks.push(black_box(chunk));
                }
            }
            "shadow-recursion" => Ok(scored(0.0, shadow(black_box(1 << 30)).to_string())),
            "native-recursion" => Ok(scored(0.0, native(black_box(1 << 30)).to_string())),
            "huge-rationale" => Ok(scored(1.0, "x".repeat(2 << 20))),
            "stdout-flood" => loop {
                println!("{submission} flooding stdout");
            },
            "unreachable" => core::arch::wasm32::unreachable(),
            "panic" => panic!("grader bug on {submission:?}"),
            "exit" => std::process::exit(3),
            "nan" => Ok(scored(f64::NAN, String::new())),
            "too-high" => Ok(scored(1.5, String::new())),
            "bad-metadata" => Ok(Grade {
                metadata: Some("[1, 2]".to_string()),
                ..scored(1.0, String::new())
            }),
            "refuse" => Err(format!("cannot grade {submission:?}")),
            "probe" => Ok(scored(1.0, probe())),
            "leak-secret" => {
                leak_secret(&submission);
                Ok(scored(1.0, String::new()))
            }
            "find-secret" => Ok(scored(1.0, find_secret(&submission))),
            "leak-and-find" => {
                leak_secret(&submission);
                Ok(scored(1.0, find_secret(&submission)))
            }
            "describe-sample" => Ok(scored(1.0, describe_sample(&sample, &trajectory))),
            "reach" => {
                let reached = reach(&submission);
                println!("{reached}");
                Ok(Grade {
                    metadata: Some(reached.clone()),
                    ..scored(1.0, reached)
                })
            }
            other => Err(format!("no grader named {other}")),
        }
    }

    fn extract(
        name: String,
        _sample: Sample,
        trajectory: Trajectory,
        _config: String,
    ) -> Result<Option<String>, String> {
        match name.as_str() {
            "echo" => Ok(trajectory.output),
            "huge" => Ok(Some("y".repeat(2 << 20))),
            "nothing" => Ok(None),
            other => Err(format!("no extractor named {other}")),
        }
    }
}

fn scored(score: f64, rationale: String) -> Grade {
    Grade {
        score,
        status: None,
        rationale,
        metadata: None,
        expected: None,
        actual: None,
    }
}

/// Each frame keeps 4 KiB in linear memory, so the 1 MiB shadow stack overflows long before the
/// native stack does.
fn shadow(depth: u64) -> u64 {
    let mut frame = [0u8; 4096];
    frame[(depth % 4096) as usize] = depth as u8;
    let frame = black_box(frame);
    if depth == 0 {
        return frame[0] as u64;
    }
    shadow(depth - 1) + frame[(depth % 7) as usize] as u64
}

/// Scalars only: nothing goes to linear memory, so only the native stack can overflow.
fn native(depth: u64) -> u64 {
    if black_box(depth) == 0 {
        return 0;
    }
    native(depth - 1).wrapping_mul(3).wrapping_add(depth)
}

/// Everything the guest can reach from `path` (a file, or a folder when it ends in `/`), as a
/// JSON object: its whole environment, the file's text or the folder's entries, and whether it
/// could write beside it and in `/tmp` (and what `/tmp` held before).
fn reach(path: &str) -> String {
    let text = |r: std::io::Result<String>| match r {
        Ok(text) => text,
        Err(e) => format!("error: {e}"),
    };
    let env: Vec<String> = std::env::vars().map(|(k, v)| format!("{k}={v}")).collect();
    let read = match path.strip_suffix('/') {
        Some(dir) => text(std::fs::read_dir(dir).map(|entries| {
            let mut names: Vec<String> = entries
                .filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
                .collect();
            names.sort();
            names.join(",")
        })),
        None => text(std::fs::read_to_string(path)),
    };
    let beside = format!("{}.written", path.trim_end_matches('/'));
    let write = text(std::fs::write(&beside, "x").map(|()| "written".to_string()));
    let tmp_before = text(std::fs::read_dir("/tmp").map(|entries| entries.count().to_string()));
    let tmp = text(
        std::fs::write("/tmp/scratch.txt", "scratch")
            .and_then(|()| std::fs::read_to_string("/tmp/scratch.txt")),
    );
    let quoted = |s: &str| {
        let mut out = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    };
    let env: Vec<String> = env.iter().map(|e| quoted(e)).collect();
    format!(
        "{{\"env\":[{}],\"read\":{},\"write\":{},\"tmp_before\":{},\"tmp\":{}}}",
        env.join(","),
        quoted(&read),
        quoted(&write),
        quoted(&tmp_before),
        quoted(&tmp)
    )
}

fn probe() -> String {
    let file = match std::fs::read_to_string("/etc/passwd") {
        Ok(text) => format!("read {} bytes", text.len()),
        Err(_) => "denied".to_string(),
    };
    let dir = match std::fs::read_dir("/") {
        Ok(entries) => format!("{} entries", entries.count()),
        Err(_) => "denied".to_string(),
    };
    let env = std::env::vars().count();
    let args = std::env::args().count();
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let start = std::time::Instant::now();
    std::thread::sleep(std::time::Duration::from_secs(3600));
    let slept_ms = start.elapsed().as_millis();
    let tcp = match std::net::TcpStream::connect("127.0.0.1:22") {
        Ok(_) => "connected".to_string(),
        Err(_) => "denied".to_string(),
    };
    let random = {
        use std::hash::BuildHasher;
        std::collections::hash_map::RandomState::new().hash_one(42u64)
    };
    format!(
        "{{\"file\":\"{file}\",\"dir\":\"{dir}\",\"env\":{env},\"args\":{args},\"wall\":{wall},\
         \"slept_ms\":{slept_ms},\"tcp\":\"{tcp}\",\"random\":{random}}}"
    )
}

const SECRET_BYTES: usize = 1 << 20;
const SECRET_PAGES: usize = 16;

/// The secret as stored: every byte inverted, so that the plain text the host passes in (which
/// lands in guest memory too) does not count as a find.
fn encoded(secret: &str) -> Vec<u8> {
    secret.bytes().map(|b| !b).collect()
}

fn leak_secret(secret: &str) {
    let pattern = encoded(secret);
    let layout = std::alloc::Layout::from_size_align(SECRET_BYTES, 8).unwrap();
    // SAFETY: `layout` has a non-zero size and the block is written within its bounds.
    unsafe {
        let heap = std::alloc::alloc(layout);
        for i in 0..SECRET_BYTES {
            heap.add(i).write_volatile(pattern[i % pattern.len()]);
        }
    }
    let first_page = core::arch::wasm32::memory_grow(0, SECRET_PAGES);
    let start = first_page * 65536;
    for i in 0..SECRET_PAGES * 65536 {
        // SAFETY: the pages were just added to linear memory.
        unsafe { ((start + i) as *mut u8).write_volatile(pattern[i % pattern.len()]) };
    }
}

fn find_secret(secret: &str) -> String {
    let needle = encoded(secret);
    let layout = std::alloc::Layout::from_size_align(SECRET_BYTES, 8).unwrap();
    // SAFETY: the block is only read within its bounds; reading fresh allocations is the point.
    // Where `leak-secret` wrote its block, a fresh instance allocates this one.
    let heap_secret = unsafe {
        let heap = std::alloc::alloc(layout);
        (0..SECRET_BYTES)
            .filter(|&i| heap.add(i).read_volatile() == needle[i % needle.len()])
            .count()
    };
    let first_page = core::arch::wasm32::memory_grow(0, SECRET_PAGES);
    let start = first_page * 65536;
    // SAFETY: the pages were just added to linear memory.
    let grown_dirty = (0..SECRET_PAGES * 65536)
        .filter(|&i| unsafe { ((start + i) as *const u8).read_volatile() } != 0)
        .count();
    let memory_end = core::arch::wasm32::memory_size(0) * 65536;
    let own = needle.as_ptr() as usize;
    let mut matches = 0;
    // Address 0 is never part of a live allocation; start at 1 to keep the pointer non-null.
    for address in 1..memory_end.saturating_sub(needle.len()) {
        if address == own {
            continue;
        }
        // SAFETY: `address..address + needle.len()` lies inside linear memory.
        let window = unsafe { std::slice::from_raw_parts(address as *const u8, needle.len()) };
        if window == needle.as_slice() {
            matches += 1;
        }
    }
    format!(
        "{{\"heap_secret\":{heap_secret},\"grown_dirty\":{grown_dirty},\"matches\":{matches}}}"
    )
}

fn describe_sample(sample: &Sample, trajectory: &Trajectory) -> String {
    let id = match &sample.id {
        SampleId::Int(i) => i.to_string(),
        SampleId::Str(s) => s.clone(),
    };
    let ground_truth = match &sample.ground_truth {
        Some(Texts::One(text)) => text.clone(),
        Some(Texts::PerTurn(texts)) => texts.join("|"),
        None => "-".to_string(),
    };
    let events: usize = trajectory.turns.iter().map(Vec::len).sum();
    format!(
        "id={id} ground_truth={ground_truth} turns={} events={events} output={} metadata={}",
        trajectory.turns.len(),
        trajectory.output.as_deref().unwrap_or("-"),
        sample.metadata,
    )
}

export!(Adversary);
