//! A `gavel:grader@0.2.0` pack whose grader `get` fetches its config's `url` over wasi:http:
//! score 1 and the body as rationale when the answer is 200, score 0 and the error otherwise.

wit_bindgen::generate!({
    path: ["../../../host/runtime/python/wit", "wit"],
    world: "test:fetcher/fetcher",
    generate_all,
});

use exports::gavel::grader::pack::Guest;
use gavel::grader::types::{FunctionInfo, FunctionKind, Grade, PackInfo, Sample, Trajectory};
use wasi::http::{outgoing_handler, types as http};
use wasi::io::streams::StreamError;

struct Fetcher;

/// The status and body of a GET of `url` (`http://authority/path`).
fn get(url: &str) -> Result<(u16, Vec<u8>), String> {
    let rest = url.strip_prefix("http://").ok_or("only http:// URLs")?;
    let (authority, path) = match rest.split_once('/') {
        Some((authority, path)) => (authority, format!("/{path}")),
        None => (rest, "/".to_string()),
    };
    let request = http::OutgoingRequest::new(http::Fields::new());
    let invalid = |what: &str| format!("invalid {what}");
    request.set_scheme(Some(&http::Scheme::Http)).map_err(|()| invalid("scheme"))?;
    request.set_authority(Some(authority)).map_err(|()| invalid("authority"))?;
    request.set_path_with_query(Some(&path)).map_err(|()| invalid("path"))?;
    let future = outgoing_handler::handle(request, None).map_err(|e| format!("{e:?}"))?;
    future.subscribe().block();
    let response = future
        .get()
        .ok_or("no answer")?
        .map_err(|()| "answer taken twice")?
        .map_err(|e| format!("{e:?}"))?;
    let status = response.status();
    let body = response.consume().map_err(|()| "body taken twice")?;
    let stream = body.stream().map_err(|()| "stream taken twice")?;
    let mut bytes = Vec::new();
    loop {
        match stream.blocking_read(65_536) {
            Ok(chunk) => bytes.extend(chunk),
            Err(StreamError::Closed) => break,
            Err(e) => return Err(format!("{e:?}")),
        }
    }
    Ok((status, bytes))
}

impl Guest for Fetcher {
    fn describe() -> PackInfo {
        PackInfo {
            name: "fetcher".to_string(),
            version: "0.2.0".to_string(),
            functions: vec![FunctionInfo {
                name: "get".to_string(),
                kind: FunctionKind::Grader,
                description: "GETs the config's url".to_string(),
                needs_ground_truth: false,
            }],
        }
    }

    fn check_config(_name: String, _config: String) -> Result<(), String> {
        Ok(())
    }

    fn grade(
        _name: String,
        _sample: Sample,
        _trajectory: Trajectory,
        _submission: String,
        config: String,
    ) -> Result<Grade, String> {
        // The config is {"url": "<url>"}, a URL without quotes or escapes.
        let url = config.split('"').nth(3).unwrap_or_default();
        let (score, rationale) = match get(url) {
            Ok((200, body)) => (1.0, String::from_utf8_lossy(&body).into_owned()),
            Ok((status, _)) => (0.0, format!("status {status}")),
            Err(e) => (0.0, e),
        };
        Ok(Grade {
            score,
            status: None,
            rationale,
            metadata: None,
            expected: None,
            actual: None,
        })
    }

    fn extract(
        _name: String,
        _sample: Sample,
        _trajectory: Trajectory,
        _config: String,
    ) -> Result<Option<String>, String> {
        Ok(None)
    }
}

export!(Fetcher);
