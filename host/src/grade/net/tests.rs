//! The host's side of a request, against servers on this machine.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

use http_body_util::{BodyExt, Empty};

use super::*;
use crate::grade::grants::Secret;

/// A server on 127.0.0.1 answering each connection with `reply(request head)`; the heads it
/// saw arrive on the receiver.
fn server(reply: fn(&str, &mut TcpStream)) -> (u16, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (seen, heads) = mpsc::channel();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().map_while(Result::ok) {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            while reader.read_line(&mut head).is_ok_and(|n| n > 2) {}
            let _ = seen.send(head.clone());
            reply(&head, &mut stream);
        }
    });
    (port, heads)
}

fn ok(_: &str, stream: &mut TcpStream) {
    let _ =
        stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello");
}

fn pattern(text: &str) -> HostPattern {
    HostPattern::try_from(text.to_string()).unwrap()
}

fn reach(network: &[&str]) -> Arc<Grants> {
    Arc::new(Grants {
        network: network.iter().map(|p| pattern(p)).collect(),
        ..Grants::default()
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn request(url: &str, headers: &[(&str, &str)]) -> http::Request<WasiBody> {
    let mut builder = http::Request::builder().uri(url);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder
        .body(Empty::new().map_err(|never| match never {}).boxed_unsync())
        .unwrap()
}

/// Sends `url` as a call with `reach` and `timeout` would, reading the whole body.
fn fetch(net: &mut CallNet, url: &str, headers: &[(&str, &str)]) -> Result<Vec<u8>, Error> {
    let sent = Pin::from(net.send_request(request(url, headers), None, Box::new(async { Ok(()) })));
    runtime().block_on(async move {
        let (response, io) = sent.await?;
        let io = tokio::spawn(Pin::from(io));
        let body = response.into_body().collect().await?.to_bytes().to_vec();
        let _ = io.await;
        Ok(body)
    })
}

use std::pin::Pin;

fn call(reach: Arc<Grants>, timeout: Duration) -> CallNet {
    CallNet::new(reach, Instant::now() + timeout)
}

#[test]
fn a_granted_address_is_reached_and_nothing_else_is() {
    let (port, _) = server(ok);
    let url = format!("http://127.0.0.1:{port}/x");
    let granted = reach(&[&format!("127.0.0.1:{port}")]);
    assert_eq!(
        fetch(&mut call(granted, Duration::from_secs(30)), &url, &[]).unwrap(),
        b"hello"
    );
    for nothing in [reach(&[]), reach(&["127.0.0.1:1"]), reach(&["localhost"])] {
        let refused = fetch(&mut call(nothing, Duration::from_secs(30)), &url, &[]);
        assert!(
            matches!(refused, Err(Error::DestinationIpProhibited)),
            "{refused:?}"
        );
    }
}

#[test]
fn a_granted_name_that_resolves_inward_is_refused() {
    let (port, heads) = server(ok);
    let url = format!("http://localhost:{port}/");
    let refused = fetch(
        &mut call(
            reach(&[&format!("localhost:{port}")]),
            Duration::from_secs(30),
        ),
        &url,
        &[],
    );
    assert!(
        matches!(refused, Err(Error::DestinationIpProhibited)),
        "{refused:?}"
    );
    // A name not granted is not even looked up.
    let unknown = fetch(&mut call(reach(&[]), Duration::from_secs(30)), &url, &[]);
    assert!(
        matches!(unknown, Err(Error::DnsError { .. })),
        "{unknown:?}"
    );
    assert!(heads.try_recv().is_err());
}

#[test]
fn secrets_are_substituted_only_toward_their_hosts() {
    let (granted_port, granted_heads) = server(ok);
    let (other_port, other_heads) = server(ok);
    let placeholder = "gavel-secret-KEY-0123456789abcdef0123456789abcdef";
    let reach = Arc::new(Grants {
        network: vec![
            pattern(&format!("127.0.0.1:{granted_port}")),
            pattern(&format!("127.0.0.1:{other_port}")),
        ],
        secrets: vec![Secret {
            name: "KEY".to_string(),
            placeholder: placeholder.to_string(),
            value: "s3cr3t".to_string(),
            hosts: vec![pattern(&format!("127.0.0.1:{granted_port}"))],
        }],
        ..Grants::default()
    });
    let header = format!("Bearer {placeholder}");
    for port in [granted_port, other_port] {
        let url = format!("http://127.0.0.1:{port}/");
        fetch(
            &mut call(reach.clone(), Duration::from_secs(30)),
            &url,
            &[("authorization", &header)],
        )
        .unwrap();
    }
    let granted = granted_heads.recv().unwrap();
    assert!(
        granted.contains("authorization: Bearer s3cr3t\r\n"),
        "{granted}"
    );
    let other = other_heads.recv().unwrap();
    assert!(
        other.contains(&header) && !other.contains("s3cr3t"),
        "{other}"
    );
}

/// Replies with the request's head as its body, and its `authorization` header as a
/// `location`, as servers' errors and redirects may.
fn echo(request: &str, stream: &mut TcpStream) {
    let authorization = (request.lines())
        .find_map(|l| l.strip_prefix("authorization: "))
        .unwrap_or_default();
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nlocation: https://{authorization}@x/\r\n\
         connection: close\r\n\r\n{request}",
        request.len()
    );
}

#[test]
fn a_secret_sent_is_masked_in_the_answer_and_never_put_in_host() {
    let (port, heads) = server(echo);
    let placeholder = "gavel-secret-KEY-0123456789abcdef0123456789abcdef";
    let reach = Arc::new(Grants {
        network: vec![pattern(&format!("127.0.0.1:{port}"))],
        secrets: vec![Secret {
            name: "KEY".to_string(),
            placeholder: placeholder.to_string(),
            value: "sk-the-real-value".to_string(),
            hosts: vec![pattern(&format!("127.0.0.1:{port}"))],
        }],
        ..Grants::default()
    });
    let mut net = call(reach, Duration::from_secs(30));
    // An authority with the placeholder as its user: Host is the host and port alone.
    let url = format!("http://{placeholder}@127.0.0.1:{port}/");
    let sent = Pin::from(net.send_request(
        request(
            &url,
            &[("authorization", placeholder), ("x-beta", placeholder)],
        ),
        None,
        Box::new(async { Ok(()) }),
    ));
    let (location, body) = runtime().block_on(async move {
        let (response, io) = sent.await.unwrap();
        let io = tokio::spawn(Pin::from(io));
        let location = response.headers()["location"].to_str().unwrap().to_string();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let _ = io.await;
        (location, String::from_utf8(body.to_vec()).unwrap())
    });
    let head = heads.recv().unwrap();
    assert!(
        head.contains("authorization: sk-the-real-value\r\n"),
        "{head}"
    );
    assert!(head.contains("x-beta: sk-the-real-value\r\n"), "{head}");
    assert!(
        head.contains(&format!("host: 127.0.0.1:{port}\r\n")),
        "{head}"
    );
    assert!(!body.contains("sk-the-real-value"), "{body}");
    assert!(
        body.contains("authorization: *****************\r\n"),
        "{body}"
    );
    assert_eq!(location, "https://*****************@x/");
}

#[test]
fn a_secret_goes_over_plain_http_only_to_an_address_granted() {
    let placeholder = "gavel-secret-KEY-0123456789abcdef0123456789abcdef";
    let grants = Grants {
        secrets: vec![Secret {
            name: "KEY".to_string(),
            placeholder: placeholder.to_string(),
            value: "sk-the-real-value".to_string(),
            hosts: vec![pattern("api.example.com")],
        }],
        ..Grants::default()
    };
    let target = Target {
        host: "api.example.com".to_string(),
        address: None,
        port: 80,
    };
    for (tls, substituted) in [(false, false), (true, true)] {
        let mut headers = HeaderMap::new();
        headers.insert("authorization", placeholder.parse().unwrap());
        let masks = substitute_secrets(&grants, &mut headers, &target, tls);
        assert_eq!(headers["authorization"] == "sk-the-real-value", substituted);
        assert_eq!(masks.is_empty(), !substituted);
    }
}

#[test]
fn response_bodies_past_the_byte_cap_fail() {
    fn bomb(_: &str, stream: &mut TcpStream) {
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n");
        let chunk = vec![b'x'; 1 << 20];
        while stream.write_all(&chunk).is_ok() {}
    }
    let (port, _) = server(bomb);
    let url = format!("http://127.0.0.1:{port}/");
    let result = fetch(
        &mut call(
            reach(&[&format!("127.0.0.1:{port}")]),
            Duration::from_secs(60),
        ),
        &url,
        &[],
    );
    assert!(
        matches!(result, Err(Error::HttpResponseBodySize(Some(MAX_RECEIVED)))),
        "{result:?}"
    );
}

#[test]
fn a_server_that_never_answers_fails_at_the_deadline() {
    fn silent(_: &str, stream: &mut TcpStream) {
        let _ = stream.read(&mut [0; 1]);
    }
    let (port, _) = server(silent);
    let url = format!("http://127.0.0.1:{port}/");
    let result = fetch(
        &mut call(
            reach(&[&format!("127.0.0.1:{port}")]),
            Duration::from_millis(300),
        ),
        &url,
        &[],
    );
    assert!(
        matches!(result, Err(Error::ConnectionReadTimeout)),
        "{result:?}"
    );
}

#[test]
fn a_call_sends_a_bounded_number_of_requests() {
    let (port, _) = server(ok);
    let url = format!("http://127.0.0.1:{port}/");
    let mut net = call(
        reach(&[&format!("127.0.0.1:{port}")]),
        Duration::from_secs(60),
    );
    for _ in 0..MAX_REQUESTS {
        fetch(&mut net, &url, &[]).unwrap();
    }
    let refused = fetch(&mut net, &url, &[]);
    assert!(
        matches!(refused, Err(Error::ConnectionLimitReached)),
        "{refused:?}"
    );
}

#[test]
fn addresses_are_granted_by_address_patterns_alone() {
    let mapped = Target {
        host: "::ffff:127.0.0.1".to_string(),
        address: Some("::ffff:127.0.0.1".parse().unwrap()),
        port: 8080,
    };
    assert!(mapped.granted_by(&[pattern("127.0.0.1:8080")]));
    assert!(!mapped.granted_by(&[pattern("127.0.0.1:80")]));
    let name = Target {
        host: "localhost".to_string(),
        address: None,
        port: 80,
    };
    assert!(name.granted_by(&[pattern("localhost")]));
    assert!(!name.granted_by(&[pattern("127.0.0.1:80")]));
}
