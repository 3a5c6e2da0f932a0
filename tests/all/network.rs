//! Python graders' requests through the `gavel` binary, against servers the tests start on
//! 127.0.0.1: what a grant lets through, and what stays closed (no grant, a redirect to a host
//! not granted, a granted name resolving to this machine, a response bomb, a server that never
//! answers, a secret toward a host it is not granted for).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common::{Workspace, gavel_command, stderr};
use crate::python_graders::{cache, paris_row};
use serde_json::{Value, json};

/// A server on 127.0.0.1 answering every connection with `reply`, given the request (head and
/// body, a chunked one joined); each request it read arrives on the receiver.
pub(crate) fn server(reply: fn(&str, &mut TcpStream)) -> (u16, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    let (seen, requests) = mpsc::channel();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().map_while(Result::ok) {
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut request = String::new();
            while reader.read_line(&mut request).is_ok_and(|n| n > 2) {}
            let length = request
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length: ")
                        .map(str::to_string)
                })
                .and_then(|n| n.trim().parse::<usize>().ok())
                .unwrap_or(0);
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            if request
                .to_ascii_lowercase()
                .contains("transfer-encoding: chunked")
            {
                body = chunked(&mut reader);
            }
            request.push_str(&String::from_utf8_lossy(&body));
            let _ = seen.send(request.clone());
            reply(&request, &mut stream);
        }
    });
    (port, requests)
}

/// A body sent in chunks, read to its last.
fn chunked(reader: &mut impl BufRead) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        if reader.read_line(&mut size).unwrap_or(0) == 0 {
            return body;
        }
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        let mut chunk = vec![0; size + 2];
        if size == 0 || reader.read_exact(&mut chunk).is_err() {
            return body;
        }
        body.extend_from_slice(&chunk[..size]);
    }
}

fn json_reply(request: &str, stream: &mut TcpStream) {
    let verdict = if request.contains("\"answer\": \"Paris\"") {
        "good"
    } else {
        "bad"
    };
    let body = json!({"verdict": verdict}).to_string();
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// The grader: POSTs an answer as JSON to `__URL__` and
/// scores the reply; a request that fails is scored 0.25 with its reason's type in the
/// rationale, as a grader's own `except` would.
const GRADER: &str = r#"
import json, os, urllib.error, urllib.request

def grade(sample, item):
    url = "__URL__"
    headers = {"Content-Type": "application/json"}
    try:
        headers["Authorization"] = "Bearer " + os.environ["API_KEY"]
    except KeyError:  # not granted
        pass
    body = json.dumps({"answer": "Paris"}).encode()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers), timeout=30) as reply:
            return 1.0 if json.loads(reply.read())["verdict"] == "good" else 0.0
    except urllib.error.URLError as e:
        raise RuntimeError(f"refused: {type(e.reason).__name__}: {e.reason}")
"#;

/// Runs the grader over one row asking for `url`, under `allow` (YAML lines of the grader's
/// `allow:` block) with `vars` in gavel's environment; kills gavel if it has not ended in 60 s.
fn grade(url: &str, allow: &str, vars: &[(&str, &str)]) -> Option<Value> {
    run_grader(&GRADER.replace("__URL__", url), allow, vars)
}

/// Runs the grader `source` over one row, as [`grade`] does.
fn run_grader(source: &str, allow: &str, vars: &[(&str, &str)]) -> Option<Value> {
    run_limited(source, allow, vars, "timeout_ms: 3000")
}

/// [`run_grader`] with `limit` (a line of the suite's `limits:`) instead of its 3 s deadline.
fn run_limited(source: &str, allow: &str, vars: &[(&str, &str)], limit: &str) -> Option<Value> {
    let cache = cache()?;
    let ws = Workspace::new();
    ws.write("g.py", source);
    ws.write(
        "suite.yaml",
        &format!(
            "name: net\ndataset: data.jsonl\nlimits:\n  {limit}\n  fuel: 10000000000\n\
             graders:\n  g:\n    kind: python\n    source_path: g.py\n{allow}"
        ),
    );
    ws.write_rows("data.jsonl", &[json!({"id": 1, "input": "q"})]);
    let mut vars = vars.to_vec();
    let cache = cache.to_string_lossy();
    vars.extend([("GAVEL_CACHE_DIR", &*cache), ("GAVEL_PYTHON_COMPONENT", "")]);
    let mut child = gavel_command(
        ws.dir.path(),
        &["run", "suite.yaml", "-o", "out", "-q"],
        &vars,
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .expect("gavel starts");
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("gavel still running after 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("gavel ends");
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let results = ws.results("out");
    Some(results[0]["grades"]["g"].clone())
}

fn granted(host: &str) -> String {
    format!("    allow:\n      network: [\"{host}\"]\n")
}

fn rationale(grade: &Value) -> &str {
    grade["rationale"].as_str().unwrap_or_default()
}

#[test]
fn a_granted_server_is_posted_to_and_its_reply_graded() {
    let (port, requests) = server(json_reply);
    let url = format!("http://127.0.0.1:{port}/grade");
    let Some(g) = grade(&url, &granted(&format!("127.0.0.1:{port}")), &[]) else {
        return;
    };
    assert_eq!(g["score"], 1.0, "{g}");
    let seen = requests.try_recv().expect("the server was asked");
    assert!(seen.starts_with("POST /grade HTTP/1.1\r\n"), "{seen}");
    assert!(seen.ends_with("{\"answer\": \"Paris\"}"), "{seen}");
}

#[test]
fn without_a_grant_the_request_fails_as_on_a_closed_network() {
    let (port, requests) = server(json_reply);
    let Some(g) = grade(&format!("http://127.0.0.1:{port}/"), "", &[]) else {
        return;
    };
    assert!(
        rationale(&g).contains("refused: ConnectionRefusedError:")
            && rationale(&g).contains("not granted by allow: network:"),
        "{g}"
    );
    assert!(requests.try_recv().is_err());
}

#[test]
fn a_redirect_to_a_host_not_granted_is_refused() {
    let (other, other_requests) = server(json_reply);
    /// Redirects `/to/PORT` to that port on 127.0.0.1.
    fn redirect(request: &str, stream: &mut TcpStream) {
        let port = request
            .split_whitespace()
            .nth(1)
            .and_then(|path| path.strip_prefix("/to/"))
            .unwrap_or_default();
        let _ = write!(
            stream,
            "HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:{port}/\r\ncontent-length: 0\r\n\
             connection: close\r\n\r\n"
        );
    }
    let (port, requests) = server(redirect);
    let url = format!("http://127.0.0.1:{port}/to/{other}");
    let Some(g) = grade(&url, &granted(&format!("127.0.0.1:{port}")), &[]) else {
        return;
    };
    assert!(
        rationale(&g).contains("refused: ConnectionRefusedError:"),
        "{g}"
    );
    assert!(requests.try_recv().is_ok(), "the granted server was asked");
    assert!(
        other_requests.try_recv().is_err(),
        "the redirect reached a host not granted"
    );
}

#[test]
fn a_granted_name_that_resolves_to_this_machine_is_refused() {
    let (port, requests) = server(json_reply);
    let url = format!("http://localhost:{port}/");
    let Some(g) = grade(&url, &granted(&format!("localhost:{port}")), &[]) else {
        return;
    };
    assert!(
        rationale(&g).contains("refused: ConnectionRefusedError:"),
        "{g}"
    );
    assert!(requests.try_recv().is_err());
}

/// Asks for each of `__URLS__` and raises with what each request's failure said, one line each.
const REASONS_GRADER: &str = r#"
import urllib.error, urllib.request

def grade(sample, item):
    said = []
    for url in __URLS__:
        try:
            urllib.request.urlopen(url, timeout=30)
            said.append(f"{url} answered")
        except urllib.error.URLError as e:
            said.append(f"{url} {type(e.reason).__name__}: {e.reason}")
    raise RuntimeError(" | ".join(said))
"#;

/// Under `*.example.com`, a subdomain gets past the grant and fails where this machine's name
/// resolution fails (no DNS answers for it, here or anywhere: example.com has no such names),
/// while a name of another domain, and `example.com` itself (the pattern wants a label before
/// the suffix), are not granted and never looked up.
#[test]
fn a_wildcard_grant_lets_its_subdomains_reach_name_resolution_and_nothing_else() {
    let urls = [
        "http://api.example.com/",
        "http://api.other.org/",
        "http://example.com/",
    ];
    let source = REASONS_GRADER.replace("__URLS__", &format!("{urls:?}"));
    let Some(g) = run_grader(&source, &granted("*.example.com"), &[]) else {
        return;
    };
    let said: Vec<&str> = rationale(&g)
        .split(" | ")
        .map(|s| s.trim_start_matches("guest returned error: RuntimeError: "))
        .collect();
    assert_eq!(said.len(), 3, "{g}");
    let failed = |said: &str, url: &str, host: &str, why: &str| {
        said.starts_with(&format!("{url} gaierror: "))
            && said.contains(&format!("cannot resolve '{host}': {why}"))
    };
    assert!(
        failed(said[0], urls[0], "api.example.com", "name resolution "),
        "{g}"
    );
    let not_granted = "not granted, a grader reaches only the hosts its allow: network: grants";
    assert!(
        failed(said[1], urls[1], "api.other.org", not_granted),
        "{g}"
    );
    assert!(failed(said[2], urls[2], "example.com", not_granted), "{g}");
}

#[test]
fn a_response_bomb_is_cut_at_the_byte_cap() {
    fn bomb(_: &str, stream: &mut TcpStream) {
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n");
        let chunk = vec![b'x'; 1 << 20];
        while stream.write_all(&chunk).is_ok() {}
    }
    let (port, _) = server(bomb);
    let url = format!("http://127.0.0.1:{port}/");
    let Some(g) = grade(&url, &granted(&format!("127.0.0.1:{port}")), &[]) else {
        return;
    };
    assert!(rationale(&g).contains("16 MiB"), "{g}");
}

/// A body just under the 16 MiB a call may be answered is read whole by urllib in the default
/// 64 MiB of memory: its bytes are not copied over and over on the way to `read()`.
#[test]
fn a_body_near_the_cap_is_read_whole_in_the_default_memory() {
    const BODY: usize = 15 << 20;
    fn large(_: &str, stream: &mut TcpStream) {
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-length: {BODY}\r\nconnection: close\r\n\r\n"
        );
        let _ = stream.write_all(&vec![b'x'; BODY]);
    }
    let (port, _) = server(large);
    let source = format!(
        "import urllib.request\n\ndef grade(sample, item):\n    \
         body = urllib.request.urlopen('http://127.0.0.1:{port}/', timeout=30).read()\n    \
         return 1.0 if len(body) == {BODY} and body.count(b'x') == {BODY} else 0.0\n"
    );
    let allow = granted(&format!("127.0.0.1:{port}"));
    let Some(g) = run_limited(&source, &allow, &[], "timeout_ms: 30000") else {
        return;
    };
    assert_eq!(g["score"], 1.0, "{g}");
}

#[test]
fn a_server_that_never_answers_ends_at_the_deadline() {
    fn silent(_: &str, stream: &mut TcpStream) {
        let _ = stream.read(&mut [0; 1]);
    }
    let (port, _) = server(silent);
    let url = format!("http://127.0.0.1:{port}/");
    let Some(g) = grade(&url, &granted(&format!("127.0.0.1:{port}")), &[]) else {
        return;
    };
    assert_eq!(g["status"], "error", "{g}");
    assert!(
        rationale(&g).contains("deadline exceeded") || rationale(&g).contains("TimeoutError"),
        "{g}"
    );
}

#[test]
fn a_secret_reaches_only_the_host_it_is_granted_for() {
    let (granted_port, granted_requests) = server(json_reply);
    let (other_port, other_requests) = server(json_reply);
    let allow = format!(
        "    allow:\n      network: [\"127.0.0.1:{granted_port}\", \"127.0.0.1:{other_port}\"]\n      \
         secrets:\n        API_KEY: [\"127.0.0.1:{granted_port}\"]\n"
    );
    let vars = [("API_KEY", "the-secret-value")];
    let Some(g) = grade(&format!("http://127.0.0.1:{granted_port}/"), &allow, &vars) else {
        return;
    };
    assert_eq!(g["score"], 1.0, "{g}");
    let seen = granted_requests.try_recv().expect("asked");
    assert!(
        seen.contains("authorization: Bearer the-secret-value\r\n"),
        "{seen}"
    );
    let g = grade(&format!("http://127.0.0.1:{other_port}/"), &allow, &vars).expect("built");
    assert_eq!(g["score"], 1.0, "{g}");
    let seen = other_requests.try_recv().expect("asked");
    assert!(!seen.contains("the-secret-value"), "{seen}");
    assert!(
        seen.contains("authorization: Bearer gavel-secret-API_KEY-"),
        "{seen}"
    );
}

/// A request body the grader writes and never sends would wait for room forever: a wait in the
/// host, which epochs do not interrupt. It ends at the deadline.
#[test]
fn a_request_body_written_and_never_sent_ends_at_the_deadline() {
    let source = r#"
from wit_world.imports import wasi_http_types as t

def grade(sample, item):
    request = t.OutgoingRequest(t.Fields())
    body = request.body()
    stream = body.write()
    while True:
        stream.blocking_write_and_flush(b"x" * 4096)
"#;
    let Some(g) = run_grader(source, "", &[]) else {
        return;
    };
    assert_eq!(g["status"], "error", "{g}");
    assert_eq!(rationale(&g), "deadline exceeded", "{g}");
}

/// A pack written in Rust, GETting its config's `url` over wasi:http under `allow`.
fn fetch(url: &str, allow: &str) -> Value {
    fetch_granted(url, "", allow).0
}

/// [`fetch`] with `pack_allow` (YAML lines) in the pack's `packs:` entry; the grade and the
/// workspace, which has the run's output in `out`.
fn fetch_granted(url: &str, pack_allow: &str, allow: &str) -> (Value, Workspace) {
    let fetcher = gavel_test_artifacts::guests::FETCHER;
    let ws = Workspace::new();
    ws.write(
        "suite.yaml",
        &format!(
            "name: fetch\ndataset: data.jsonl\npacks:\n  f:\n    path: {fetcher}\n{pack_allow}graders:\n  \
             get:\n    kind: tool\n    function: f.get\n    config:\n      url: \"{url}\"\n{allow}"
        ),
    );
    ws.write_rows("data.jsonl", &[paris_row(1, "Paris")]);
    let out = ws.gavel(&["run", "suite.yaml", "-o", "out", "-q"]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    (ws.results("out")[0]["grades"]["get"].clone(), ws)
}

#[test]
fn a_packs_entry_grants_its_functions_and_a_grader_narrows_it() {
    let (port, requests) = server(json_reply);
    let url = format!("http://127.0.0.1:{port}/");
    let pack_allow = format!("    allow:\n      network: [\"127.0.0.1:{port}\"]\n");
    let (g, ws) = fetch_granted(&url, &pack_allow, "");
    assert_eq!(
        (g["score"].as_f64(), rationale(&g)),
        (Some(1.0), "{\"verdict\":\"bad\"}"),
        "{g}"
    );
    assert!(requests.try_recv().is_ok(), "the server was asked");
    let shown = ws.gavel(&["validate", "suite.yaml"]);
    assert!(
        String::from_utf8_lossy(&shown.stdout)
            .contains(&format!("graders.get may reach: network 127.0.0.1:{port}")),
        "{}",
        String::from_utf8_lossy(&shown.stdout)
    );
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(ws.path("out/run.json")).unwrap()).unwrap();
    assert_eq!(
        record["grants"],
        json!({"graders.get": {"network": [format!("127.0.0.1:{port}")]}})
    );

    // The grader's own `network:` replaces the pack's.
    let (g, _) = fetch_granted(&url, &pack_allow, "    allow:\n      network: []\n");
    assert_eq!(
        (g["score"].as_f64(), rationale(&g)),
        (Some(0.0), "ErrorCode::DestinationIpProhibited"),
        "{g}"
    );
    // A pack granted another host reaches no other.
    let (g, _) = fetch_granted(&url, "    allow:\n      network: [\"127.0.0.1:1\"]\n", "");
    assert_eq!(
        (g["score"].as_f64(), rationale(&g)),
        (Some(0.0), "ErrorCode::DestinationIpProhibited"),
        "{g}"
    );
    assert!(requests.try_recv().is_err(), "the server saw a request");
}

#[test]
fn a_rust_pack_reaches_a_granted_server_over_wasi_http_and_nothing_else() {
    let (port, requests) = server(json_reply);
    let url = format!("http://127.0.0.1:{port}/");
    let g = fetch(&url, &granted(&format!("127.0.0.1:{port}")));
    assert_eq!(
        (g["score"].as_f64(), rationale(&g)),
        (Some(1.0), "{\"verdict\":\"bad\"}"),
        "{g}"
    );
    assert!(
        requests
            .try_recv()
            .expect("asked")
            .starts_with("GET / HTTP/1.1\r\n")
    );
    let g = fetch(&url, "");
    assert_eq!(
        (g["score"].as_f64(), rationale(&g)),
        (Some(0.0), "ErrorCode::DestinationIpProhibited"),
        "{g}"
    );
    assert!(requests.try_recv().is_err());
}

/// A certificate authority and a certificate for 127.0.0.1 it signed, made by `openssl` in
/// `ws` for this test alone: the paths of the authority's and the server's PEM files and of
/// the server's key; none when `openssl` is missing outside CI.
fn test_pki(ws: &Workspace) -> Option<(String, String, String)> {
    let dir = ws.dir.path();
    let run = |args: &[&str]| {
        std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    ws.write(
        "leaf.ext",
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    );
    let made = run(&[
        &["req", "-x509"],
        &ec[..],
        &[
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=gavel test CA",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign",
        ],
    ]
    .concat())
        && run(&[
            &["req"],
            &ec[..],
            &[
                "-keyout",
                "leaf.key",
                "-out",
                "leaf.csr",
                "-subj",
                "/CN=127.0.0.1",
            ],
        ]
        .concat())
        && run(&[
            "x509",
            "-req",
            "-in",
            "leaf.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "leaf.pem",
            "-days",
            "2",
            "-extfile",
            "leaf.ext",
        ]);
    if !made {
        // CI has openssl: there a missing one fails the test instead of skipping it.
        assert!(!crate::common::c::in_ci(), "openssl is missing or failed");
        eprintln!("openssl is missing or failed: the HTTPS tests are skipped");
        return None;
    }
    let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
    Some((path("ca.pem"), path("leaf.pem"), path("leaf.key")))
}

/// A TLS server on 127.0.0.1 presenting `cert` (PEM, with its `key`), answering each request
/// as [`json_reply`] does; each request it read arrives on the receiver.
fn tls_server(cert: &str, key: &str) -> (u16, mpsc::Receiver<String>) {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain = CertificateDer::pem_file_iter(cert)
        .expect("cert")
        .collect::<Result<Vec<_>, _>>()
        .expect("cert");
    let key = PrivateKeyDer::from_pem_file(key).expect("key");
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("config");
    let config = std::sync::Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    let (seen, requests) = mpsc::channel();
    std::thread::spawn(move || {
        for tcp in listener.incoming().map_while(Result::ok) {
            let connection = rustls::ServerConnection::new(config.clone()).expect("connection");
            let mut tls = rustls::StreamOwned::new(connection, tcp);
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            // The head and a short body arrive together; a refused handshake reads nothing.
            while let Ok(n) = tls.read(&mut buf) {
                request.extend_from_slice(&buf[..n]);
                if n == 0 || String::from_utf8_lossy(&request).contains("}") {
                    break;
                }
            }
            if request.is_empty() {
                continue;
            }
            let request = String::from_utf8_lossy(&request).into_owned();
            let _ = seen.send(request.clone());
            let body = json!({"verdict": "good"}).to_string();
            let _ = write!(
                tls,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            tls.conn.send_close_notify();
            let _ = tls.flush();
        }
    });
    (port, requests)
}

#[test]
fn a_granted_https_server_is_reached_with_its_certificate_checked_against_gavel_ca_file() {
    let ws = Workspace::new();
    let Some((ca, cert, key)) = test_pki(&ws) else {
        return;
    };
    let (port, requests) = tls_server(&cert, &key);
    let url = format!("https://127.0.0.1:{port}/grade");
    let allow = granted(&format!("127.0.0.1:{port}"));
    let Some(g) = grade(&url, &allow, &[("GAVEL_CA_FILE", &ca)]) else {
        return;
    };
    assert_eq!(g["score"], 1.0, "{g}");
    let seen = requests.try_recv().expect("the server was asked");
    assert!(seen.starts_with("POST /grade HTTP/1.1\r\n"), "{seen}");
}

#[test]
fn an_https_server_whose_certificate_gavel_does_not_trust_is_refused_with_the_reason() {
    let ws = Workspace::new();
    let Some((_, cert, key)) = test_pki(&ws) else {
        return;
    };
    let (port, requests) = tls_server(&cert, &key);
    let url = format!("https://127.0.0.1:{port}/grade");
    let allow = granted(&format!("127.0.0.1:{port}"));
    // Granted, but its authority is not among the roots gavel trusts.
    let Some(g) = grade(&url, &allow, &[]) else {
        return;
    };
    assert_eq!(g["status"], "error", "{g}");
    assert!(rationale(&g).contains("refused: "), "{g}");
    assert!(rationale(&g).contains("UnknownIssuer"), "{g}");
    assert!(requests.try_recv().is_err(), "the server saw a request");

    // A GAVEL_CA_FILE that holds no certificate is named, with what it must hold.
    ws.write("empty.pem", "");
    let empty = ws.path("empty.pem").to_string_lossy().into_owned();
    let g = grade(&url, &allow, &[("GAVEL_CA_FILE", &empty)]).expect("graded");
    assert!(
        rationale(&g).contains(&format!("GAVEL_CA_FILE={empty}: it holds no certificate")),
        "{g}"
    );
}

/// A grader that POSTs with `http.client` itself, as urllib does underneath; a refusal is
/// raised as the socket's `OSError` would be.
const HTTP_CLIENT_GRADER: &str = r#"
import http.client, json

def grade(sample, item):
    connection = http.client.HTTPConnection("127.0.0.1", __PORT__, timeout=30)
    try:
        connection.request("POST", "/grade", body=json.dumps({"answer": "Paris"}), headers={"Content-Type": "application/json"})
        reply = connection.getresponse()
    except OSError as e:
        raise RuntimeError(f"refused: {type(e).__name__}: {e}")
    assert (reply.status, reply.reason, reply.getheader("content-type")) == (200, "OK", "application/json"), reply.status
    return 1.0 if json.loads(reply.read())["verdict"] == "good" else 0.0
"#;

#[test]
fn http_client_connections_go_through_the_host_where_granted() {
    let (port, requests) = server(json_reply);
    let source = HTTP_CLIENT_GRADER.replace("__PORT__", &port.to_string());
    let Some(g) = run_grader(&source, &granted(&format!("127.0.0.1:{port}")), &[]) else {
        return;
    };
    assert_eq!(g["score"], 1.0, "{g}");
    let seen = requests.try_recv().expect("the server was asked");
    assert!(seen.starts_with("POST /grade HTTP/1.1\r\n"), "{seen}");
    assert!(seen.ends_with("{\"answer\": \"Paris\"}"), "{seen}");
    // As CPython's http.client sends it: the body's length announced, not chunked.
    let head = seen.to_ascii_lowercase();
    assert!(head.contains("content-length: 19\r\n"), "{seen}");
    assert!(!head.contains("transfer-encoding"), "{seen}");

    let g = run_grader(&source, "", &[]).expect("graded");
    assert!(
        rationale(&g).contains("refused: ConnectionRefusedError"),
        "{g}"
    );
    assert!(requests.try_recv().is_err(), "the server saw a request");
}

/// A grader reading `urlopen`'s response as CPython's `HTTPResponse`, and an `HTTPError`'s
/// reason; what differs is the rationale of an `error` grade.
const RESPONSE_GRADER: &str = r#"
import urllib.error, urllib.request

def grade(sample, item):
    seen = []
    with urllib.request.urlopen("__URL__/grade", timeout=30) as reply:
        seen.append((reply.status, reply.reason, reply.msg, reply.getheader("Content-Type"), reply.url))
    try:
        urllib.request.urlopen("__URL__/missing", timeout=30)
    except urllib.error.HTTPError as e:
        seen.append((e.code, e.reason, e.headers.get("content-type")))
    want = [(200, "OK", "OK", "application/json", "__URL__/grade"), (404, "Not Found", "text/plain")]
    if seen != want:
        raise RuntimeError(repr(seen))
    return 1.0
"#;

fn found_or_not(request: &str, stream: &mut TcpStream) {
    if request.starts_with("GET /missing ") {
        let _ = write!(
            stream,
            "HTTP/1.1 404 Not Found\r\ncontent-type: text/plain\r\ncontent-length: 4\r\n\
             connection: close\r\n\r\nnone"
        );
    } else {
        json_reply(request, stream);
    }
}

#[test]
fn a_urlopen_response_is_cpythons_http_response() {
    let (port, _requests) = server(found_or_not);
    let url = format!("http://127.0.0.1:{port}");
    let source = RESPONSE_GRADER.replace("__URL__", &url);
    let Some(g) = run_grader(&source, &granted(&format!("127.0.0.1:{port}")), &[]) else {
        return;
    };
    assert_eq!(g["score"], 1.0, "{g}");
}

/// A grader using httpx and requests (from `requirements:`) on the server `__GRANTED__`, then on
/// `__REFUSED__`, which is not granted: each library's own error is caught. The seen steps are
/// the rationale of an `error` grade when they are not the expected ones.
const CLIENTS_GRADER: &str = r#"
import httpx, requests

BODY = '{"answer": "Paris"}'
HEADERS = {"content-type": "application/json"}

def grade(sample, item):
    seen = []
    seen.append("httpx " + httpx.post("__GRANTED__", content=BODY, headers=HEADERS).json()["verdict"])
    with httpx.Client() as client:
        seen.append("httpx.Client " + client.post("__GRANTED__", content=BODY, headers=HEADERS).json()["verdict"])
    seen.append("requests " + requests.post("__GRANTED__", data=BODY, headers=HEADERS).json()["verdict"])
    try:
        httpx.post("__REFUSED__", content=BODY)
        seen.append("httpx reached the refused host")
    except httpx.ConnectError:
        seen.append("httpx.ConnectError")
    try:
        requests.post("__REFUSED__", data=BODY)
        seen.append("requests reached the refused host")
    except requests.ConnectionError:
        seen.append("requests.ConnectionError")
    want = ["httpx good", "httpx.Client good", "requests good", "httpx.ConnectError", "requests.ConnectionError"]
    if seen != want:
        raise RuntimeError(" | ".join(seen))
    return 1.0
"#;

#[test]
fn httpx_and_requests_reach_a_granted_host_and_raise_their_own_errors_for_another() {
    let (granted_port, granted_requests) = server(json_reply);
    let (refused_port, refused_requests) = server(json_reply);
    let source = CLIENTS_GRADER
        .replace("__GRANTED__", &format!("http://127.0.0.1:{granted_port}/"))
        .replace("__REFUSED__", &format!("http://127.0.0.1:{refused_port}/"));
    let lines = format!(
        "    requirements: [httpx, requests]\n{}",
        granted(&format!("127.0.0.1:{granted_port}"))
    );
    let Some(g) = run_grader(&source, &lines, &[]) else {
        return;
    };
    assert_eq!(g["score"], 1.0, "{g}");
    assert_eq!(granted_requests.try_iter().count(), 3);
    assert!(
        refused_requests.try_recv().is_err(),
        "the refused host was asked"
    );
}

/// A grader sending requests to `__URL__` until one fails: how many went, and why the next did
/// not, as the rationale of an `error` grade.
const MANY_REQUESTS_GRADER: &str = r#"
import urllib.error, urllib.request

def grade(sample, item):
    sent = 0
    try:
        while sent < 100:
            urllib.request.urlopen(urllib.request.Request("__URL__", data=b'{"answer": "Paris"}')).read()
            sent += 1
    except urllib.error.URLError as e:
        raise RuntimeError(f"{sent} sent, then URLError")
    raise RuntimeError(f"{sent} sent")
"#;

#[test]
fn a_call_sends_at_most_32_requests() {
    let (port, requests) = server(json_reply);
    let source = MANY_REQUESTS_GRADER.replace("__URL__", &format!("http://127.0.0.1:{port}/"));
    let Some(g) = run_grader(&source, &granted(&format!("127.0.0.1:{port}")), &[]) else {
        return;
    };
    assert!(rationale(&g).contains("32 sent, then URLError"), "{g}");
    assert_eq!(requests.try_iter().count(), 32);
}

/// A grader granted `API_KEY` for the server `__URL__`: it sends the variable (a placeholder)
/// in a header, reads the reply, then searches every text and bytes object the interpreter
/// holds for the secret's value, which the row gives it reversed (so that the row itself is
/// not a find). How many objects hold it, as the rationale of an `error` grade.
const SECRET_SEARCH_GRADER: &str = r#"
import gc, os, sys, urllib.request

def grade(sample, item):
    key = os.environ["API_KEY"]
    request = urllib.request.Request("__URL__", data=b'{"answer": "Paris"}', headers={"Authorization": "Bearer " + key})
    with urllib.request.urlopen(request) as reply:
        kept = [reply.read(), dict(reply.headers)]
    needle = item["input"][::-1]
    needles = {id(needle), id(needle.encode())}
    found, seen = 0, set()
    for holder in gc.get_objects() + [sys.modules, os.environ, kept]:
        for value in gc.get_referents(holder) + [holder]:
            if id(value) in seen or id(value) in needles:
                continue
            seen.add(id(value))
            if isinstance(value, str) and needle in value:
                found += 1
            elif isinstance(value, (bytes, bytearray)) and needle.encode() in value:
                found += 1
    raise RuntimeError(f"found {found}")
"#;

/// Replies with the request's `authorization` header in its body, as a server may (the value
/// reaches the grader masked).
fn echo_authorization(request: &str, stream: &mut TcpStream) {
    let header = request
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("authorization:"))
        .unwrap_or_default();
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{header}",
        header.len()
    );
}

#[test]
fn a_secrets_value_is_nowhere_in_the_graders_memory_even_when_its_host_echoes_it() {
    const SECRET: &str = "sk-memory-5d1e9a7c3b";
    let reversed: String = SECRET.chars().rev().collect();
    for reply in [json_reply as fn(&str, &mut TcpStream), echo_authorization] {
        let (port, requests) = server(reply);
        let allow = format!(
            "    allow:\n      network: [\"127.0.0.1:{port}\"]\n      secrets:\n        \
             API_KEY: [\"127.0.0.1:{port}\"]\n"
        );
        let source = SECRET_SEARCH_GRADER
            .replace("__URL__", &format!("http://127.0.0.1:{port}/"))
            .replace("item[\"input\"]", &format!("{reversed:?}"));
        let Some(g) = run_grader(&source, &allow, &[("API_KEY", SECRET)]) else {
            return;
        };
        assert!(rationale(&g).contains("RuntimeError: found 0 ("), "{g}");
        let seen = requests.try_recv().expect("asked");
        assert!(seen.contains(&format!("Bearer {SECRET}")), "{seen}");
    }
}

/// Answers the Anthropic and OpenAI endpoints graders call, each with a reply naming it.
fn api_reply(request: &str, stream: &mut TcpStream) {
    let path = request.split_whitespace().nth(1).unwrap_or_default();
    let body = match path {
        "/v1/messages/count_tokens" => json!({"input_tokens": 7}),
        "/v1/messages" => json!({"id": "msg_1", "type": "message", "role": "assistant",
            "model": "m", "content": [{"type": "text", "text": "messages"}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 1, "output_tokens": 1}}),
        "/v1/chat/completions" => json!({"id": "c", "object": "chat.completion", "created": 1,
            "model": "m", "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "chat"}}]}),
        "/v1/responses" => json!({"id": "r", "object": "response", "created_at": 1,
            "status": "completed", "model": "m", "output": [{"type": "message", "id": "m",
            "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": "responses", "annotations": []}]}]}),
        _ => json!({"error": path}),
    }
    .to_string();
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{body}",
        body.len()
    );
}

/// Graders calling every stand-in call, sync and async, on `__URL__`: what each read back.
const API_GRADERS: &str = r#"import anthropic
import openai
from letta_evals.decorators import grader
from letta_evals.models import GradeResult

URL = "__URL__"
ASK = [{"role": "user", "content": "q"}]


@grader
def sync_calls(sample, submission):
    a = anthropic.Anthropic(api_key="k", base_url=URL)
    o = openai.OpenAI(api_key="k", base_url=URL + "/v1")
    seen = [
        a.messages.create(model="m", max_tokens=9, messages=ASK).content[0].text,
        str(a.messages.count_tokens(model="m", messages=ASK).input_tokens),
        o.chat.completions.create(model="m", messages=ASK).choices[0].message.content,
        o.responses.create(model="m", input="q").output_text,
    ]
    return GradeResult(score=1.0, rationale=" ".join(seen))


@grader
async def async_calls(sample, submission):
    a = anthropic.AsyncAnthropic(api_key="k", base_url=URL)
    o = openai.AsyncOpenAI(api_key="k", base_url=URL + "/v1")
    seen = [
        (await a.messages.create(model="m", max_tokens=9, messages=ASK)).content[0].text,
        str((await a.messages.count_tokens(model="m", messages=ASK)).input_tokens),
        (await o.chat.completions.create(model="m", messages=ASK)).choices[0].message.content,
        (await o.responses.create(model="m", input="q")).output_text,
    ]
    return GradeResult(score=1.0, rationale=" ".join(seen))
"#;

#[test]
fn the_api_stand_ins_reach_a_granted_loopback_api_sync_and_async() {
    let Some(cache) = cache() else { return };
    let (port, requests) = server(api_reply);
    let ws = Workspace::new();
    ws.write(
        "api.py",
        &API_GRADERS.replace("__URL__", &format!("http://127.0.0.1:{port}")),
    );
    ws.write(
        "suite.yaml",
        &format!(
            "name: api\ndataset: data.jsonl\nallow:\n  network: [\"127.0.0.1:{port}\"]\n\
             graders:\n  sync_calls:\n    kind: tool\n    function: api.py:sync_calls\n  \
             async_calls:\n    kind: tool\n    function: api.py:async_calls\n"
        ),
    );
    ws.write_rows("data.jsonl", &[paris_row(1, "Paris")]);
    let results = crate::python_graders::graded(cache, &ws);
    for name in ["sync_calls", "async_calls"] {
        let grade = &results[0]["grades"][name];
        assert_eq!(grade["rationale"], "messages 7 chat responses", "{grade}");
    }
    let paths: Vec<String> = requests
        .try_iter()
        .map(|r| r.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
        .collect();
    for path in [
        "/v1/messages",
        "/v1/messages/count_tokens",
        "/v1/chat/completions",
        "/v1/responses",
    ] {
        let asked = paths.iter().filter(|p| *p == &format!("POST {path}"));
        assert_eq!(asked.count(), 2, "{paths:?}");
    }
}
