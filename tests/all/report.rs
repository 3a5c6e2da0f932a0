//! `gavel report` and `gavel run --report`, looked at in a real browser: Debian's Chromium,
//! headless, loads a report made through the binary, and the tests read the page it rendered
//! (after its script ran) for the counts, a sample's trajectory and a filter's result.
//!
//! Some run a probe of their own after the page's script (a click, where letters are drawn) and
//! read what it found from the page. Without Chromium these tests say so and pass, except under
//! `CI`, where they fail. The README's screenshots are taken by `docs/screenshots.sh`, which a
//! test runs.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{Workspace, stderr};
use serde_json::{Value, json};

const SUITE: &str = "name: flights
dataset: data.jsonl
graders:
  answer:
    kind: tool
    function: contains
  searched:
    kind: tool
    function: tools_called
    config: {required: [search_flights]}
gate:
  kind: simple
  metric_key: answer
  aggregation: avg_score
  op: gte
  value: 0.5
";

/// A letta row: reasoning, a tool call and its return, the answer, and memory blocks.
fn letta_row(id: &str, answer: &str, tags: &[&str]) -> Value {
    json!({
        "id": id,
        "input": "Find me a flight to Lisbon",
        "ground_truth": "TP1234",
        "tags": tags,
        "trajectory": [[
            {"id": "m1", "date": "2026-01-01T00:00:00Z", "message_type": "user_message", "content": "Find me a flight to Lisbon"},
            {"id": "m2", "date": "2026-01-01T00:00:01Z", "message_type": "reasoning_message", "reasoning": "I should search for flights first."},
            {"id": "m3", "date": "2026-01-01T00:00:02Z", "message_type": "tool_call_message",
             "tool_call": {"name": "search_flights", "arguments": "{\"to\": \"LIS\"}", "tool_call_id": "call_1"}},
            {"id": "m4", "date": "2026-01-01T00:00:03Z", "message_type": "tool_return_message", "tool_call_id": "call_1",
             "status": "success", "tool_return": "[{\"flight\": \"TP1234\"}]"},
            {"id": "m5", "date": "2026-01-01T00:00:04Z", "message_type": "assistant_message", "content": answer}
        ]],
        "agent_state": {"blocks": [{"label": "human", "value": "Prefers window seats"}]}
    })
}

/// An evaldeck trace without the search.
fn evaldeck_row(id: &str, output: &str) -> Value {
    json!({
        "id": id,
        "input": "Book the cheapest flight",
        "ground_truth": "TP1234",
        "tags": ["evaldeck"],
        "trajectory": {"input": "Book the cheapest flight", "output": output, "status": "success", "steps": [
            {"type": "llm_call", "model": "gpt-4o-mini", "tokens": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70}},
            {"type": "tool_call", "tool_name": "book_flight", "tool_args": {"flight": "TP1234"}, "tool_result": {"ok": true}}
        ]}
    })
}

/// An OpenAI chat transcript.
fn openai_row(id: &str, answer: &str) -> Value {
    json!({
        "id": id,
        "input": "Which flight?",
        "ground_truth": "TP1234",
        "tags": ["openai"],
        "trajectory": [
            {"role": "system", "content": "You book flights."},
            {"role": "user", "content": "Which flight?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c9", "type": "function", "function": {"name": "search_flights", "arguments": "{\"to\":\"LIS\"}"}}]},
            {"role": "tool", "tool_call_id": "c9", "content": "TP1234 at 9:00"},
            {"role": "assistant", "content": answer}
        ]
    })
}

/// Text that would be markup if the page parsed it as such.
const HOSTILE: &str = "TP1234 </script><img src=x onerror=\"document.title='owned'\"><!--";

fn rows() -> Vec<Value> {
    vec![
        letta_row("lisbon-ok", "Booked TP1234 for you.", &["letta", "easy"]),
        letta_row("lisbon-wrong", "I could not find anything.", &["letta"]),
        evaldeck_row("cheapest", "Booked TP1234."),
        openai_row("which", "TP1234 leaves at 9:00."),
        openai_row("hostile", HOSTILE),
    ]
}

fn made_run() -> Workspace {
    let ws = Workspace::new();
    ws.write("suite.yaml", SUITE);
    ws.write_rows("data.jsonl", &rows());
    let output = ws.gavel(&["run", "suite.yaml", "-o", "out", "--report"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert!(
        stderr(&output).contains("report: out/report.html (5 samples, 5 in detail"),
        "{}",
        stderr(&output)
    );
    ws
}

#[test]
fn a_run_records_where_its_samples_are() {
    let ws = made_run();
    let run: Value =
        serde_json::from_str(&std::fs::read_to_string(ws.path("out/run.json")).unwrap()).unwrap();
    assert_eq!(run["name"], "flights");
    let dataset = PathBuf::from(run["dataset"].as_str().unwrap());
    assert!(dataset.is_absolute());
    assert_eq!(
        dataset.canonicalize().unwrap(),
        ws.path("data.jsonl").canonicalize().unwrap()
    );
}

#[test]
fn the_report_is_one_file_that_asks_for_nothing_outside_it() {
    let ws = made_run();
    let html = std::fs::read_to_string(ws.path("out/report.html")).unwrap();
    for outside in [
        "<link",
        "<script src",
        "<img",
        "<iframe",
        "http://",
        "https://",
        "@import",
        "url(",
    ] {
        assert!(
            !html.contains(outside),
            "the report refers outside: {outside}"
        );
    }
    assert!(
        html.contains("default-src 'none'"),
        "a policy forbids every fetch"
    );
    // The hostile text sits in the data only with its `<` escaped, so it cannot end a script.
    assert!(!html.contains("</script><img"));
    assert!(html.contains(r"\u003c/script>\u003cimg src=x"));
    // The summary is in the page itself, charts included.
    assert!(
        html.contains(r#"id="count-total"><b>5</b> samples"#),
        "{html}"
    );
    assert!(html.contains("<svg class=\"chart\""));
    assert!(html.contains("gate passed"));
}

#[test]
fn report_remakes_the_page_from_the_results_folder_and_limits_the_detail() {
    let ws = made_run();
    let output = ws.gavel(&["report", "out", "-o", "small.html", "--limit", "2"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("2 of 5 samples are shown in detail"), "{err}");
    let html = std::fs::read_to_string(ws.path("small.html")).unwrap();
    let rows = script_data(&html, "rows-data");
    // The failing samples come first: two of the five fail a metric.
    let ids: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[1].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["lisbon-wrong", "cheapest"]);
    // Every statistic still counts all five.
    assert!(html.contains(r#"id="count-total"><b>5</b>"#));
}

#[test]
fn a_folder_without_run_json_is_shown_from_the_suite() {
    let ws = made_run();
    std::fs::remove_file(ws.path("out/run.json")).unwrap();
    let bare = ws.gavel(&["report", "out", "-o", "bare.html"]);
    assert_eq!(bare.status.code(), Some(0));
    assert!(
        stderr(&bare).contains("no run.json in out"),
        "{}",
        stderr(&bare)
    );
    let html = std::fs::read_to_string(ws.path("bare.html")).unwrap();
    assert!(script_data(&html, "details-data")[0]["sample"].is_null());

    let with_suite = ws.gavel(&["report", "out", "-o", "full.html", "--suite", "suite.yaml"]);
    assert_eq!(with_suite.status.code(), Some(0), "{}", stderr(&with_suite));
    let html = std::fs::read_to_string(ws.path("full.html")).unwrap();
    let first = &script_data(&html, "details-data")[0]["sample"];
    assert_eq!(first["input"], "Find me a flight to Lisbon");
    assert_eq!(first["trajectory"]["format"], "letta");
}

#[test]
fn bad_results_folders_are_clear_errors() {
    let ws = Workspace::new();
    let missing = ws.gavel(&["report", "nowhere"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("nowhere/results.jsonl: no such file"),
        "{}",
        stderr(&missing)
    );
    ws.write(
        "bad/results.jsonl",
        "{\"sample_id\":1,\"grades\":{}}\nnot json\n",
    );
    let bad = ws.gavel(&["report", "bad"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad)
            .contains("bad/results.jsonl:2: not a gavel result line (expected ident at column 2)"),
        "{}",
        stderr(&bad)
    );
    ws.write("broken/results.jsonl", "{\"sample_id\":1,\"grades\":{}}\n");
    ws.write("broken/run.json", "{\"suite\": 3}");
    let broken = ws.gavel(&["report", "broken"]);
    assert_eq!(broken.status.code(), Some(2));
    assert!(
        stderr(&broken).contains("broken/run.json:1:"),
        "{}",
        stderr(&broken)
    );
}

#[test]
fn a_dataset_changed_after_the_run_is_said_not_shown_wrongly() {
    let ws = made_run();
    let mut changed = rows();
    changed.swap(0, 1);
    ws.write_rows("data.jsonl", &changed);
    let output = ws.gavel(&["report", "out", "-o", "changed.html"]);
    assert_eq!(output.status.code(), Some(0));
    assert!(
        stderr(&output).contains("2 shown samples are not at their place"),
        "{}",
        stderr(&output)
    );
    let html = std::fs::read_to_string(ws.path("changed.html")).unwrap();
    let first = &script_data(&html, "details-data")[0]["sample"];
    assert!(first["input"].is_null());
    assert!(
        first["problem"]
            .as_str()
            .unwrap()
            .contains("has id lisbon-wrong, not lisbon-ok")
    );
}

/// The results of a run that was killed are only part of it: the report says so, on the
/// terminal and in the page, with the command that finishes the run, also when given the suite.
#[test]
fn an_unfinished_run_is_said() {
    let ws = made_run();
    let full = std::fs::read_to_string(ws.path("out/results.jsonl")).unwrap();
    ws.write(
        "out/results.jsonl",
        &full.split_inclusive('\n').take(2).collect::<String>(),
    );
    let record = std::fs::read_to_string(ws.path("out/run.json")).unwrap();
    ws.write(
        "out/run.json",
        &record.replace("\"complete\"", "\"running\""),
    );
    for suite in [None, Some("suite.yaml")] {
        let mut args = vec!["report", "out", "-o", "part.html"];
        args.extend(suite.iter().flat_map(|suite| ["--suite", suite]));
        let output = ws.gavel(&args);
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(0), "{err}");
        assert!(
            err.contains(
                "notice: out holds an unfinished run (out/run.json says `running`: it was \
                 killed, or is still grading), so its results are only part of the run; \
                 finish it with `gavel run "
            ),
            "{err}"
        );
        assert!(err.contains(" -o out --resume`\n"), "{err}");
        let html = std::fs::read_to_string(ws.path("part.html")).unwrap();
        let notices = &script_data(&html, "meta-data")["notices"];
        assert!(
            notices[0]
                .as_str()
                .unwrap()
                .starts_with("out holds an unfinished run"),
            "{notices}"
        );
    }
}

/// The JSON of the page's `<script type="application/json" id=ID>`.
pub(crate) fn script_data(html: &str, id: &str) -> Value {
    let open = format!(r#"<script type="application/json" id="{id}">"#);
    let start = html.find(&open).expect("the data element") + open.len();
    let end = start + html[start..].find("</script>").expect("its end");
    serde_json::from_str(&html[start..end]).expect("JSON")
}

/// Headless Chromium, or `None` (with a note) where there is none outside CI.
fn chromium() -> Option<PathBuf> {
    let found = std::env::var_os("CHROMIUM").map(PathBuf::from).or_else(|| {
        ["chromium", "chromium-browser", "google-chrome"]
            .iter()
            .find_map(|name| which(name))
    });
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "Chromium is needed to test the report in a browser: apt-get install -y chromium"
        );
        eprintln!(
            "SKIPPED: no chromium; install it (apt-get install -y chromium) to test the report in a browser"
        );
    }
    found
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|path| path.is_file())
    })
}

/// Runs headless Chromium on `url` with `args`, in a fresh profile, and returns its stdout.
fn browse(chromium: &Path, url: &str, args: &[&str]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let output = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-quic",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(url)
        .output()
        .expect("chromium runs");
    assert!(
        output.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The page as rendered after its script ran, at `fragment` (the page's state: filters, sample).
fn rendered(chromium: &Path, page: &Path, fragment: &str) -> String {
    let url = format!("file://{}#{fragment}", page.display());
    let dom = browse(
        chromium,
        &url,
        &["--virtual-time-budget=10000", "--dump-dom"],
    );
    assert!(
        dom.contains(r#"data-ready="true""#),
        "the page's script ran to its end: {dom}"
    );
    dom
}

/// The part of `dom` from `open` to the first `close` after it.
fn part<'a>(dom: &'a str, open: &str, close: &str) -> &'a str {
    let start = dom.find(open).unwrap_or_else(|| panic!("{open} in {dom}"));
    let end = start + dom[start..].find(close).expect("its end");
    &dom[start..end]
}

fn table_ids(dom: &str) -> Vec<String> {
    part(dom, r#"<tbody id="samples-body">"#, "</tbody>")
        .split(r#"<td class="id">"#)
        .skip(1)
        .map(|cell| cell[..cell.find("</td>").unwrap()].to_string())
        .collect()
}

#[test]
fn chromium_renders_the_counts_the_table_and_a_filter() {
    let Some(chromium) = chromium() else { return };
    let ws = made_run();
    let page = ws.path("out/report.html");
    let dom = rendered(&chromium, &page, "");
    assert!(
        dom.contains(r#"id="count-failed"><b>2</b> failed"#),
        "{dom}"
    );
    assert_eq!(
        table_ids(&dom),
        ["lisbon-ok", "lisbon-wrong", "cheapest", "which", "hostile"]
    );
    assert!(dom.contains("5 of 5 shown samples match"));
    // The hostile answer is text in a cell, never an element: no image, the title untouched.
    assert!(!dom.contains("<img"), "markup from the data was parsed");
    assert!(dom.contains("<title>flights · gavel report</title>"));

    let failing = rendered(&chromium, &page, "status=fail");
    assert_eq!(table_ids(&failing), ["lisbon-wrong", "cheapest"]);
    assert!(failing.contains("2 of 5 shown samples match"));

    // The metric `searched`, filtered to its failures, by tag and by text.
    let by_metric = rendered(&chromium, &page, "metric=1&status=fail");
    assert_eq!(table_ids(&by_metric), ["cheapest"]);
    let by_tag = rendered(&chromium, &page, "tag=letta");
    assert_eq!(table_ids(&by_tag), ["lisbon-ok", "lisbon-wrong"]);
    let by_text = rendered(&chromium, &page, "q=cheapest%20flight");
    assert_eq!(table_ids(&by_text), ["cheapest"]);
    let sorted = rendered(&chromium, &page, "metric=0&sort=score-asc");
    assert_eq!(table_ids(&sorted)[0], "lisbon-wrong");
}

#[test]
fn chromium_renders_each_format_as_a_conversation() {
    let Some(chromium) = chromium() else { return };
    let ws = made_run();
    let page = ws.path("out/report.html");

    let letta = rendered(&chromium, &page, "sample=0");
    let view = part(&letta, r#"<section id="sample-view">"#, "</section>");
    for shown in [
        r#"<pre class="input">Find me a flight to Lisbon</pre>"#,
        r#"<pre class="ground-truth">TP1234</pre>"#,
        r#"<div class="event user"><div class="role">user</div><div class="text">Find me a flight to Lisbon</div></div>"#,
        r#"<div class="event reasoning"><div class="role">reasoning</div><div class="text">I should search for flights first.</div></div>"#,
        r#"<div class="role">tool call · <bdi>search_flights</bdi> · <bdi>call_1</bdi></div>"#,
        "\"to\": \"LIS\"",
        r#"<div class="role">tool return · <bdi>call_1</bdi> · success</div>"#,
        r#"<div class="event assistant"><div class="role">assistant</div><div class="text">Booked TP1234 for you.</div></div>"#,
        "<b>human</b><pre>Prefers window seats</pre>",
        r#"<div class="grade" data-metric="answer">"#,
    ] {
        assert!(view.contains(shown), "{shown} in {view}");
    }

    let evaldeck = rendered(&chromium, &page, "sample=2");
    let view = part(&evaldeck, r#"<section id="sample-view">"#, "</section>");
    assert!(view.contains("format evaldeck"), "{view}");
    assert!(
        view.contains("llm call · <bdi>gpt-4o-mini</bdi> · 50 + 20 tokens"),
        "{view}"
    );
    assert!(
        view.contains("tool call · <bdi>book_flight</bdi>"),
        "{view}"
    );
    assert!(view.contains(r#"<div class="event user"><div class="role">task</div><div class="text">Book the cheapest flight</div>"#), "{view}");
    assert!(view.contains(r#"<div class="event assistant"><div class="role">assistant</div><div class="text">Booked TP1234.</div>"#), "{view}");
    assert!(
        view.contains("Required tools not called: ['search_flights']"),
        "the rationale is shown: {view}"
    );

    let openai = rendered(&chromium, &page, "sample=3");
    let view = part(&openai, r#"<section id="sample-view">"#, "</section>");
    assert!(view.contains("format openai"), "{view}");
    assert!(view.contains(r#"<div class="event system"><div class="role">system</div><div class="text">You book flights.</div>"#), "{view}");
    assert!(
        view.contains("tool return · <bdi>c9</bdi> · success"),
        "{view}"
    );
    assert!(view.contains("TP1234 at 9:00"), "{view}");

    let hostile = rendered(&chromium, &page, "sample=4");
    assert!(!hostile.contains("<img"), "markup from the data was parsed");
    assert!(
        hostile.contains("&lt;/script&gt;&lt;img src=x"),
        "shown as text"
    );
}

#[test]
fn the_screenshots_are_of_the_report_this_gavel_writes() {
    let Some(chromium) = chromium() else { return };
    // docs/screenshots.sh, run into a folder of its own, takes the README's screenshots of the
    // page it writes beside them; the page in docs/ is the one they were taken of.
    let out = tempfile::tempdir().unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let output = Command::new("sh")
        .arg(repo.join("docs/screenshots.sh"))
        .arg(out.path())
        .env("GAVEL", env!("CARGO_BIN_EXE_gavel"))
        .env("CHROMIUM", &chromium)
        .env("GAVEL_CACHE_DIR", out.path().join(".cache"))
        .output()
        .expect("sh runs");
    assert!(output.status.success(), "{}", stderr(&output));
    for name in ["report-summary.png", "report-sample.png"] {
        let png = std::fs::read(out.path().join(name)).expect("a screenshot");
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert!(
            png.len() > 10_000,
            "a page, not a blank: {} bytes",
            png.len()
        );
        assert!(
            repo.join("docs").join(name).is_file(),
            "the README shows {name}"
        );
    }
    let page = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    let shown = std::fs::read_to_string(repo.join("docs/outputs/report.html")).unwrap();
    assert!(
        page == shown,
        "the report changed since the README's screenshots were taken: run docs/screenshots.sh \
         (with gavel and chromium on the PATH) and commit docs/"
    );
}

/// `page` with `script` run after its own, and what the script left in `data-probe`.
fn probe(
    chromium: &Path,
    page: &Path,
    fragment: &str,
    size: &str,
    extra: &str,
    script: &str,
) -> Value {
    let html = std::fs::read_to_string(page).unwrap();
    let probed = page.with_file_name("probed.html");
    std::fs::write(
        &probed,
        html.replace("</main>", &format!("{extra}</main>")).replace(
            "</body>",
            &format!("<script>document.body.dataset.probe = JSON.stringify((function () {{ {script} }})());</script></body>"),
        ),
    )
    .unwrap();
    let url = format!("file://{}#{fragment}", probed.display());
    let dom = browse(
        chromium,
        &url,
        &[
            &format!("--window-size={size}"),
            "--virtual-time-budget=10000",
            "--dump-dom",
        ],
    );
    let open = r#"data-probe=""#;
    let start = dom
        .find(open)
        .unwrap_or_else(|| panic!("the probe ran: {dom}"))
        + open.len();
    let end = start + dom[start..].find('"').expect("its end");
    let value = dom[start..end]
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    serde_json::from_str(&value).unwrap_or_else(|e| panic!("{e}: {value}"))
}

#[test]
fn a_click_shows_the_sample_and_closing_it_shows_the_row_again() {
    let Some(chromium) = chromium() else { return };
    let ws = made_run();
    let page = ws.path("out/report.html");
    let seen = probe(
        &chromium,
        &page,
        "",
        "1100,500",
        "",
        "var rows = document.querySelectorAll('#samples-body tr');
         var row = rows[rows.length - 1];
         var out = { before: window.scrollY, height: window.innerHeight };
         out.rowBelow = row.getBoundingClientRect().top > window.innerHeight;
         row.click();
         out.after = window.scrollY;
         out.viewTop = document.getElementById('sample-view').getBoundingClientRect().top;
         document.querySelector('#sample-view button').click();
         var back = document.querySelector('#samples-body tr[data-seq=\"' + row.dataset.seq + '\"]');
         out.rowTop = back.getBoundingClientRect().top;
         out.rowBottom = back.getBoundingClientRect().bottom;
         return out;",
    );
    let number = |key: &str| {
        seen[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key} in {seen}"))
    };
    assert_eq!(
        seen["rowBelow"], true,
        "the window is too tall to test: {seen}"
    );
    assert_eq!(number("before"), 0.0, "{seen}");
    assert!(
        number("after") > 0.0,
        "the page scrolled to the sample: {seen}"
    );
    assert!(
        number("viewTop").abs() < 2.0,
        "the sample is at the top of the window: {seen}"
    );
    assert!(
        number("rowTop") >= 0.0 && number("rowBottom") <= number("height"),
        "closed, the row is in view again: {seen}"
    );
}

#[test]
fn axis_labels_are_drawn_whole_at_any_number_of_digits() {
    use gavel::output::report::svg;
    use gavel::output::summary::Histogram;
    let Some(chromium) = chromium() else { return };
    let ws = made_run();
    let mut charts = String::from(r#"<div id="probe-charts" class="charts">"#);
    for count in [100_000, 1_000_000] {
        let mut scores = Histogram::default();
        for _ in 0..count {
            scores.insert(1.0);
        }
        charts.push_str(&svg::histogram("big", &scores));
    }
    charts.push_str("</div>");
    let seen = probe(
        &chromium,
        &ws.path("out/report.html"),
        "",
        "1100,900",
        &charts,
        "return Array.from(document.querySelectorAll('#probe-charts svg')).map(function (svg) {
           var width = svg.viewBox.baseVal.width;
           return Array.from(svg.querySelectorAll('text.tick')).map(function (t) {
             var box = t.getBBox();
             return [t.textContent, box.x >= 0 && box.x + box.width <= width];
           });
         });",
    );
    for (chart, top) in seen.as_array().unwrap().iter().zip(["100000", "1000000"]) {
        let labels = chart.as_array().unwrap();
        assert!(
            labels.iter().any(|l| l[0] == top),
            "{top} is drawn: {chart}"
        );
        for label in labels {
            assert_eq!(label[1], true, "{} is drawn whole: {chart}", label[0]);
        }
    }
}

#[test]
fn a_right_to_left_override_in_a_text_turns_nothing_after_it() {
    let Some(chromium) = chromium() else { return };
    let ws = Workspace::new();
    ws.write("suite.yaml", SUITE);
    ws.write_rows(
        "data.jsonl",
        &[letta_row(
            "\u{202e}evil",
            "I could not find anything.",
            &["x"],
        )],
    );
    let output = ws.gavel(&["run", "suite.yaml", "-o", "out", "--report"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    // Where each letter of the status after the id is drawn, from the left.
    let seen = probe(
        &chromium,
        &ws.path("out/report.html"),
        "sample=0",
        "1100,900",
        "",
        "var status = document.querySelector('#sample-view h2 span');
         var text = status.firstChild, range = document.createRange();
         var at = [];
         for (var i = 0; i < text.length; i++) {
           range.setStart(text, i); range.setEnd(text, i + 1);
           at.push(range.getBoundingClientRect().left);
         }
         return { text: text.data, heading: document.querySelector('#sample-view h2').textContent, at: at };",
    );
    assert_eq!(seen["text"], "fail", "{seen}");
    assert_eq!(seen["heading"], "Sample \u{202e}evil fail", "{seen}");
    let at: Vec<f64> = seen["at"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert!(
        at.windows(2).all(|pair| pair[0] < pair[1]),
        "`fail` reads left to right: {seen}"
    );
}

/// A link to a sample the report does not hold says which line it names, and one whose sample
/// is not a line's number says that, not "sample NaN".
#[test]
fn a_link_to_no_sample_of_the_report_says_so() {
    let Some(chromium) = chromium() else { return };
    let ws = made_run();
    let page = ws.path("out/report.html");
    for (fragment, notice) in [
        (
            "sample=99",
            "sample 100 of results.jsonl is not in this report",
        ),
        (
            "sample=last",
            r#"the link names sample "last", which is not a line of results.jsonl"#,
        ),
        (
            "sample=-1",
            r#"the link names sample "-1", which is not a line of results.jsonl"#,
        ),
    ] {
        let dom = rendered(&chromium, &page, fragment);
        let view = part(&dom, r#"<section id="sample-view">"#, "</section>");
        assert!(
            view.contains(&format!(r#"<p class="notice">{notice}</p>"#)),
            "{fragment}: {view}"
        );
        assert!(!view.contains("NaN"), "{fragment}: {view}");
    }
}

#[test]
fn the_gate_is_said_once() {
    let Some(chromium) = chromium() else { return };
    let ws = made_run();
    let dom = rendered(&chromium, &ws.path("out/report.html"), "");
    let gate = part(&dom, r#"<p id="gate""#, "</p>");
    assert!(
        gate.ends_with("<b>gate passed</b>: <bdi>answer avg_score = 0.8 &gt;= 0.5: passed</bdi>"),
        "{gate}"
    );
    assert_eq!(dom.matches("gate passed").count(), 1, "{gate}");
}

/// A grader's texts and a dataset row can each be as long as a line of a file: the page holds
/// the start of each long text (16 KiB) and says the rest is in results.jsonl, and a row longer
/// than 1 MiB is named, not shown, so that a page of such samples still opens. The comparison
/// of `gavel diff --html` cuts its rationales the same way.
#[test]
fn long_texts_are_cut_so_that_the_page_stays_small() {
    let long = |c: &str| c.repeat(2 << 20);
    let ws = Workspace::new();
    ws.write("suite.yaml", SUITE);
    let id = format!("big{}", long("d"));
    let mut big = letta_row(&id, &format!("TP1234 {}", long("a")), &["letta"]);
    big["input"] = json!(long("i"));
    ws.write_rows("data.jsonl", &[big, letta_row("small", "TP1234", &[])]);
    let run = ws.gavel(&["run", "suite.yaml", "-o", "out"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    // The candidate: its first sample fails with a grader's long texts.
    let mut results = ws.results("out");
    let grade = &mut results[0]["grades"]["answer"];
    grade["status"] = json!("fail");
    grade["score"] = json!(0.0);
    grade["rationale"] = json!(format!("<b>why</b> {}", long("r")));
    grade["metadata"] = json!({"trace": long("m")});
    grade["expected"] = json!([long("e")]);
    results[1]["error"] = json!({"category": "grading", "message": long("x")});
    let lines: Vec<String> = results.iter().map(Value::to_string).collect();
    std::fs::create_dir(ws.path("after")).unwrap();
    std::fs::copy(ws.path("out/run.json"), ws.path("after/run.json")).unwrap();
    ws.write("after/results.jsonl", &(lines.join("\n") + "\n"));

    let report = ws.gavel(&["report", "after", "-o", "report.html"]);
    assert_eq!(report.status.code(), Some(0), "{}", stderr(&report));
    let diff = ws.gavel(&["diff", "out", "after", "--html", "diff.html"]);
    assert_eq!(diff.status.code(), Some(0), "{}", stderr(&diff));
    for page in ["report.html", "diff.html"] {
        let html = std::fs::read_to_string(ws.path(page)).unwrap();
        assert!(html.len() < 1 << 20, "{page} is {} bytes", html.len());
        let details = script_data(&html, "details-data");
        let grade = &details[0]["grades"][0];
        let rationale = grade["rationale"].as_str().unwrap();
        assert!(rationale.starts_with("<b>why</b> rrr"), "{page}");
        assert!(
            rationale.ends_with("more bytes not shown: results.jsonl has the whole text)"),
            "{page}: {}",
            &rationale[rationale.len() - 100..]
        );
        assert!(rationale.len() < 17 << 10, "{page}");
        assert!(
            grade["submission"]
                .as_str()
                .unwrap()
                .starts_with("TP1234 aaa"),
            "{page}"
        );
        let not_shown = |value: &Value| {
            value
                .as_str()
                .is_some_and(|text| text.starts_with("not shown: "))
        };
        assert!(not_shown(&grade["metadata"]["not shown"]), "{page}");
        assert!(not_shown(&grade["expected"]), "{page}");
        let sample = &details[0]["sample"];
        assert!(
            sample["problem"]
                .as_str()
                .unwrap()
                .contains("more than the report shows of a row"),
            "{page}: {sample}"
        );
        assert_eq!(sample["line"], 1, "{page}");
        assert!(sample.get("input").is_none(), "{page}");
        assert!(
            details[1]["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("xxx"),
            "{page}"
        );
        assert_eq!(details[1]["sample"]["input"], "Find me a flight to Lisbon");
        let rows = script_data(&html, "rows-data");
        assert!(rows[0][1].as_str().unwrap().starts_with("bigddd"), "{page}");
        assert_eq!(rows[1][1], "small", "{page}");
    }
    let diff = std::fs::read_to_string(ws.path("diff.html")).unwrap();
    assert!(
        diff.contains("&lt;b&gt;why&lt;/b&gt; rrr") && diff.contains("has the whole text)</bdi>"),
        "the flip's rationale, cut"
    );
}
