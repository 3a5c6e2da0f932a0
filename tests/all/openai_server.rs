//! A scriptable chat-completions endpoint on loopback for tests: records every request, counts
//! requests in flight, and answers as the script says (slowly, with an error status, with a
//! broken body, by hanging up, or never).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("request body is JSON")
    }

    /// The text of the last (user) message: the rubric after templating.
    pub fn prompt(&self) -> String {
        let body = self.json();
        let messages = body["messages"].as_array().expect("messages");
        messages.last().expect("a message")["content"]
            .as_str()
            .expect("text content")
            .to_string()
    }
}

/// What the server does with one request.
#[derive(Debug, Clone)]
pub enum Reply {
    Respond {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Waits, then does the inner reply.
    Delay(Duration, Box<Reply>),
    /// Closes the connection without answering.
    HangUp,
    /// Keeps the connection open and never answers.
    Silent,
    /// A 200 whose body is `budget` bytes of spaces, written for as long as the client reads
    /// them, with `content-length: declared` when given (else ended by closing).
    Flood {
        declared: Option<u64>,
        budget: usize,
    },
}

impl Reply {
    /// A chat completion whose message content is `content`.
    pub fn completion(content: &str) -> Reply {
        Reply::chat(json!({"role": "assistant", "content": content}), "stop")
    }

    /// A chat completion whose message calls the tool `name` with `arguments` (a JSON text).
    pub fn tool_call(name: &str, arguments: &str) -> Reply {
        let call = json!({
            "id": "call_1",
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        });
        Reply::chat(
            json!({"role": "assistant", "content": null, "tool_calls": [call]}),
            "tool_calls",
        )
    }

    /// A chat completion of one choice, `message`, with a token count.
    fn chat(message: Value, finish_reason: &str) -> Reply {
        let body = json!({
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": "test-model",
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        });
        Reply::status(200, &body.to_string())
    }

    /// A Messages API reply (Anthropic) whose one content block is `block`.
    pub fn message(block: Value) -> Reply {
        let body = json!({
            "id": "msg_test",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [block],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 12, "output_tokens": 7, "cache_read_input_tokens": 3},
        });
        Reply::status(200, &body.to_string())
    }

    pub fn verdict(score: f64, rationale: &str) -> Reply {
        Reply::completion(&json!({"score": score, "rationale": rationale}).to_string())
    }

    pub fn status(status: u16, body: &str) -> Reply {
        Reply::Respond {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string(),
        }
    }

    pub fn with_header(self, name: &str, value: &str) -> Reply {
        match self {
            Reply::Respond {
                status,
                mut headers,
                body,
            } => {
                headers.push((name.to_string(), value.to_string()));
                Reply::Respond {
                    status,
                    headers,
                    body,
                }
            }
            other => other,
        }
    }

    pub fn after(self, delay: Duration) -> Reply {
        Reply::Delay(delay, Box::new(self))
    }
}

type Script = dyn Fn(usize, &Recorded) -> Reply + Send + Sync;

struct State {
    script: Box<Script>,
    requests: Mutex<Vec<Recorded>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    /// Body bytes of floods the client took.
    flooded: AtomicUsize,
}

pub struct Server {
    addr: SocketAddr,
    state: Arc<State>,
    accept: JoinHandle<()>,
}

impl Server {
    /// Starts serving; `script` gets the 0-based index of each request and the request.
    pub async fn start(
        script: impl Fn(usize, &Recorded) -> Reply + Send + Sync + 'static,
    ) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let state = Arc::new(State {
            script: Box::new(script),
            requests: Mutex::new(Vec::new()),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            flooded: AtomicUsize::new(0),
        });
        let shared = Arc::clone(&state);
        let accept = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, Arc::clone(&shared)));
            }
        });
        Server {
            addr,
            state,
            accept,
        }
    }

    /// A server that answers every request with the same reply.
    pub async fn always(reply: Reply) -> Server {
        Server::start(move |_, _| reply.clone()).await
    }

    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().expect("requests lock").clone()
    }

    pub fn request_count(&self) -> usize {
        self.state.requests.lock().expect("requests lock").len()
    }

    /// The requests read so far, once they are `n` or ten seconds have passed: a request its
    /// client gave up on (a timeout) may be read after the client has moved on.
    pub async fn request_count_reaching(&self, n: usize) -> usize {
        for _ in 0..1000 {
            if self.request_count() >= n {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.request_count()
    }

    pub fn max_in_flight(&self) -> usize {
        self.state.max_in_flight.load(Ordering::SeqCst)
    }

    /// Body bytes of [`Reply::Flood`] replies written to clients so far.
    pub fn flooded(&self) -> usize {
        self.state.flooded.load(Ordering::SeqCst)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn serve(mut stream: TcpStream, state: Arc<State>) {
    let Some(request) = read_request(&mut stream).await else {
        return;
    };
    let index = {
        let mut requests = state.requests.lock().expect("requests lock");
        requests.push(request.clone());
        requests.len() - 1
    };
    let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    state.max_in_flight.fetch_max(now, Ordering::SeqCst);
    let mut reply = (state.script)(index, &request);
    while let Reply::Delay(delay, inner) = reply {
        tokio::time::sleep(delay).await;
        reply = *inner;
    }
    if let Reply::Respond {
        status,
        headers,
        body,
    } = reply
    {
        let mut head = format!(
            "HTTP/1.1 {status} {}\r\ncontent-length: {}\r\nconnection: close\r\n",
            reason_phrase(status),
            body.len()
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        // The request stops counting as in flight before the client can see the answer, or
        // the client's next request could arrive while this one still counts.
        state.in_flight.fetch_sub(1, Ordering::SeqCst);
        // The client may have given up already (timeouts); that is not the server's concern.
        let _ = stream.write_all(head.as_bytes()).await;
        let _ = stream.write_all(body.as_bytes()).await;
        let _ = stream.shutdown().await;
    } else if let Reply::Flood { declared, budget } = reply {
        let length = declared.map_or_else(String::new, |n| format!("content-length: {n}\r\n"));
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n{length}connection: close\r\n\r\n"
        );
        state.in_flight.fetch_sub(1, Ordering::SeqCst);
        if stream.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        let chunk = vec![b' '; 64 << 10];
        let mut left = budget;
        while left > 0 {
            let n = left.min(chunk.len());
            // A client that stops reading leaves the write waiting until it hangs up.
            if stream.write_all(&chunk[..n]).await.is_err() {
                break;
            }
            state.flooded.fetch_add(n, Ordering::SeqCst);
            left -= n;
        }
        let _ = stream.shutdown().await;
    } else if let Reply::Silent = reply {
        // Held until the client gives up and closes the connection.
        let _ = stream.read(&mut [0u8; 1]).await;
        state.in_flight.fetch_sub(1, Ordering::SeqCst);
    } else {
        state.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn read_request(stream: &mut TcpStream) -> Option<Recorded> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(buffer[..head_end].to_vec()).ok()?;
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_string();
    let path = request_line.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Recorded {
        method,
        path,
        headers,
        body: String::from_utf8(body).ok()?,
    })
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// A loopback address where nothing listens.
pub async fn refused_base_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("local addr");
    drop(listener);
    format!("http://{addr}/v1")
}
