//! The writable `/tmp` of a grader granted files, through the real interpreter component and
//! the `gavel` binary: its quota of bytes and of files, hit as a full disk is (an `OSError`,
//! which the grader catches and grades on: `ENOSPC` where the interpreter's C library passes
//! the host's error code on, `EIO` for a write into a file already being written, whose stream
//! errors it reports as that), and its reset with the instance.

use crate::common::Workspace;
use crate::python_graders::{cache, graded, paris_row};
use serde_json::Value;

/// The grades of `probe` in `tmp.py` (`body` after the imports), granted a folder (so that it
/// has a `/tmp`) under `limits`, graded over `rows` rows.
fn probed(body: &str, limits: &str, rows: i64) -> Vec<Value> {
    let Some(cache) = cache() else {
        return Vec::new();
    };
    let ws = Workspace::new();
    ws.write("work/notes.txt", "granted");
    ws.write(
        "tmp.py",
        &format!(
            "import errno\nimport os\n\nfrom letta_evals.decorators import grader\n\
             from letta_evals.models import GradeResult\n\n{body}"
        ),
    );
    ws.write(
        "suite.yaml",
        &format!(
            "name: tmp\ndataset: data.jsonl\nallow:\n  files: [work/]\n{limits}graders:\n  \
             probe:\n    kind: tool\n    function: tmp.py:probe\n"
        ),
    );
    let rows: Vec<Value> = (1..=rows).map(|id| paris_row(id, "Paris")).collect();
    ws.write_rows("data.jsonl", &rows);
    graded(cache, &ws)
        .iter()
        .map(|result| result["grades"]["probe"].clone())
        .collect()
}

/// What each grade says, each of which must have passed.
fn said(grades: &[Value]) -> Vec<&str> {
    grades
        .iter()
        .map(|grade| {
            assert_eq!(grade["status"], "pass", "{grade}");
            grade["rationale"].as_str().unwrap()
        })
        .collect()
}

/// Writes `/tmp/<name>` in 64 KiB writes until `total` bytes or an `OSError`: what it wrote,
/// and the error's errno name and text.
const FILL: &str = r#"
def fill(name, total):
    written = 0
    try:
        with open(f"/tmp/{name}", "wb", buffering=0) as f:
            while written < total:
                written += f.write(b"x" * 65536)
        return f"{written} written"
    except OSError as e:
        return f"{written} written, then {errno.errorcode[e.errno]}: {e.strerror}"

"#;

#[test]
fn a_grader_writing_past_the_tmp_quota_gets_an_os_error_catches_it_and_grades() {
    let grades = probed(
        &format!(
            "{FILL}
@grader
def probe(sample, submission):
    seen = [fill(\"big\", 4 << 20), fill(\"other\", 65536)]
    seen.append(f\"size {{os.stat('/tmp/big').st_size}}\")
    os.remove(\"/tmp/big\")
    seen.append(fill(\"again\", 512 << 10))
    return GradeResult(score=1.0, rationale=\" | \".join(seen))
"
        ),
        "limits:\n  timeout_ms: 60000\n  tmp_mb: 1\n",
        1,
    );
    if grades.is_empty() {
        return;
    }
    // 16 writes of 64 KiB fill the MiB; the 17th finds the disk full, and so does a new
    // file's first write. Removing the file gives the room back.
    assert_eq!(
        said(&grades),
        ["1048576 written, then EIO: I/O error | \
             0 written, then ENOSPC: No space left on device | size 1048576 | 524288 written"]
    );
}

#[test]
fn writes_far_past_a_files_end_count_the_hole_they_leave() {
    // One byte every 4 KiB costs the disk a block a write: each write is charged what the file
    // grows by, so the MiB is full after 256 of them, not after a million.
    let grades = probed(
        r#"
@grader
def probe(sample, submission):
    seen = []
    fd = os.open("/tmp/sparse", os.O_WRONLY | os.O_CREAT)
    writes = 0
    try:
        while writes < 10_000:
            os.pwrite(fd, b"x", writes * 4096)
            writes += 1
        seen.append(f"{writes} writes")
    except OSError as e:
        seen.append(f"{writes} writes, then {errno.errorcode[e.errno]}")
    os.close(fd)
    seen.append(f"size {os.stat('/tmp/sparse').st_size}")
    os.remove("/tmp/sparse")
    with open("/tmp/far", "wb", buffering=0) as f:
        f.seek(64 << 20)
        try:
            f.write(b"x")
            seen.append("a byte 64 MiB in")
        except OSError as e:
            seen.append(f"a byte 64 MiB in: {errno.errorcode[e.errno]}")
    seen.append(f"size {os.stat('/tmp/far').st_size}")
    return GradeResult(score=1.0, rationale=" | ".join(seen))
"#,
        "limits:\n  timeout_ms: 60000\n  tmp_mb: 1\n",
        1,
    );
    if grades.is_empty() {
        return;
    }
    assert_eq!(
        said(&grades),
        ["256 writes, then ENOSPC | size 1044481 | a byte 64 MiB in: ENOSPC | size 0"]
    );
}

#[test]
fn a_grader_making_many_small_files_gets_enospc_at_the_file_quota() {
    let grades = probed(
        r#"
@grader
def probe(sample, submission):
    made = 0
    try:
        os.mkdir("/tmp/d")
        made += 1
        while made < 10_000:
            with open(f"/tmp/d/{made}.txt", "w") as f:
                f.write("x")
            made += 1
        said = f"{made} made"
    except OSError as e:
        said = f"{made} made, then {errno.errorcode[e.errno]}: {e.strerror}"
    # A full folder still opens and rewrites the files it holds.
    with open("/tmp/d/1.txt", "w") as f:
        f.write("rewritten")
    with open("/tmp/d/1.txt") as f:
        said += f" | {f.read()}"
    return GradeResult(score=1.0, rationale=said)
"#,
        "limits:\n  timeout_ms: 60000\n  tmp_files: 50\n",
        1,
    );
    if grades.is_empty() {
        return;
    }
    assert_eq!(
        said(&grades),
        ["50 made, then ENOSPC: No space left on device | rewritten"]
    );
}

/// Writes 768 KiB of a 1 MiB quota into a file of the row's own, keeping the others.
const THREE_QUARTERS: &str = r#"
@grader
def probe(sample, submission):
    kept = sorted(os.listdir("/tmp"))
    return GradeResult(score=1.0, rationale=f"{kept} {fill(str(sample.id), 768 << 10)}")
"#;

#[test]
fn the_tmp_quota_resets_with_the_instance() {
    // A warm instance keeps its /tmp, and its quota, for its batch: the second row finds the
    // first's file and the room it took.
    let warm = probed(
        &format!("{FILL}{THREE_QUARTERS}"),
        "limits:\n  timeout_ms: 60000\n  tmp_mb: 1\n",
        2,
    );
    if warm.is_empty() {
        return;
    }
    assert_eq!(
        said(&warm),
        [
            "[] 786432 written",
            "['1'] 262144 written, then EIO: I/O error"
        ]
    );
    // A fresh instance per row starts with an empty /tmp and the whole quota.
    let fresh = probed(
        &format!("{FILL}{THREE_QUARTERS}"),
        "isolation: sample\nlimits:\n  timeout_ms: 60000\n  tmp_mb: 1\n",
        2,
    );
    assert_eq!(said(&fresh), ["[] 786432 written", "[] 786432 written"]);
}
