//! Graders' outbound HTTP: `wasi:http`'s requests, sent by the host only where the grader's
//! `allow: network:` grants them.
//!
//! The guest builds a request with `wasi:http`; wasmtime's implementation hands it to
//! [`CallNet::send_request`], which checks it against the grant after name resolution and
//! connects to the very address it checked (a second lookup could answer otherwise: DNS
//! rebinding). Loopback, private, link-local, unique-local and unspecified addresses are
//! refused unless an address pattern grants them, so a granted name that resolves inward is
//! refused too. A redirect is the guest's own next request, checked like any other. TLS and
//! its certificate checks (the webpki roots, and the authorities of `GAVEL_CA_FILE`) are the
//! host's.
//!
//! A call may send [`MAX_REQUESTS`] requests and receive [`MAX_RECEIVED`] bytes of response
//! bodies, and every wait (resolution, connection, each read) ends at the call's deadline: a
//! guest blocked in a host wait is not interrupted by epochs, so the host bounds the wait.
//!
//! A secret's placeholder in an outgoing header (never `Host`, which the host writes from the
//! URL's host and port alone) is replaced with its value when the request's host is one the
//! secret is granted for, over HTTPS (over plain HTTP only toward an address pattern's host: a
//! name's traffic on port 80 is anyone's to read). The value never enters the guest: where
//! the answer's headers or body hold a value sent in its request (a server that echoes a header
//! it was given, in an error or a redirect), it is masked, byte for byte, with `*`.

mod address;
mod send;

use std::future::Future;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

use http::{HeaderMap, HeaderValue};
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use crate::grade::grants::{Grants, Host, HostPattern};

/// Requests one call may send.
pub const MAX_REQUESTS: u32 = 32;
/// Bytes of response bodies one call may receive, all its requests together.
pub const MAX_RECEIVED: u64 = 16 << 20;

/// Where a request goes: its URL's host (an address, or a name as written) and port.
#[derive(Debug)]
struct Target {
    host: String,
    address: Option<IpAddr>,
    port: u16,
}

impl Target {
    /// Whether one of `patterns` grants the target: an address by an address pattern, a name
    /// by a name or suffix pattern.
    fn granted_by(&self, patterns: &[HostPattern]) -> bool {
        match self.address {
            Some(address) => address_granted(patterns, address, self.port),
            None => patterns
                .iter()
                .any(|p| !matches!(p.host, Host::Ip(_)) && p.matches(&self.host, self.port)),
        }
    }
}

/// Whether an address pattern of `patterns` grants `address` on `port`.
fn address_granted(patterns: &[HostPattern], address: IpAddr, port: u16) -> bool {
    let address = address::canonical(address).to_string();
    patterns
        .iter()
        .any(|p| matches!(p.host, Host::Ip(_)) && p.matches(&address, port))
}

/// Replaces, in `headers` but `Host`, the placeholder of each secret of `grants` granted for
/// `target` with its value, when the request goes over TLS (`tls`) or to an address an address
/// pattern grants; the values put in, to be masked in the answer. A value that cannot be a
/// header's leaves the placeholder in place.
fn substitute_secrets(
    grants: &Grants,
    headers: &mut HeaderMap,
    target: &Target,
    tls: bool,
) -> Masks {
    let mut masks = Masks::default();
    for secret in grants
        .secrets
        .iter()
        .filter(|s| (tls || target.address.is_some()) && target.granted_by(&s.hosts))
    {
        let placeholder = secret.placeholder.as_bytes();
        for (name, value) in headers.iter_mut() {
            if name == http::header::HOST {
                continue;
            }
            let bytes = value.as_bytes();
            if memchr::memmem::find(bytes, placeholder).is_none() {
                continue;
            }
            let replaced = replace_all(bytes, placeholder, secret.value.as_bytes());
            if let Ok(mut substituted) = HeaderValue::from_bytes(&replaced) {
                substituted.set_sensitive(true);
                *value = substituted;
                masks.add(&secret.value);
            }
        }
    }
    masks
}

/// The secrets' values sent in a request, masked wherever its answer holds them.
#[derive(Debug, Default, Clone)]
pub(super) struct Masks(Vec<Arc<[u8]>>);

/// Values shorter than this are not looked for in answers: masking every `x` of a body would
/// break it, and a secret that short is no secret.
const MASKED_FROM: usize = 8;

impl Masks {
    fn add(&mut self, value: &str) {
        let value = value.as_bytes();
        if value.len() >= MASKED_FROM && !self.0.iter().any(|v| **v == *value) {
            self.0.push(value.into());
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Bytes of the longest value, less one: what a piece of a body may end with that the next
    /// piece could complete into a value.
    pub(super) fn overlap(&self) -> usize {
        self.0.iter().map(|v| v.len() - 1).max().unwrap_or(0)
    }

    /// Overwrites each value in `bytes` with as many `*`.
    pub(super) fn mask(&self, bytes: &mut [u8]) {
        for value in &self.0 {
            let mut from = 0;
            while let Some(at) = memchr::memmem::find(&bytes[from..], value) {
                let at = from + at;
                bytes[at..at + value.len()].fill(b'*');
                from = at + value.len();
            }
        }
    }

    /// [`Masks::mask`] over every header value of `headers`.
    pub(super) fn mask_headers(&self, headers: &mut HeaderMap) {
        for value in headers.values_mut() {
            let mut bytes = value.as_bytes().to_vec();
            self.mask(&mut bytes);
            if bytes != value.as_bytes()
                && let Ok(masked) = HeaderValue::from_bytes(&bytes)
            {
                *value = masked;
            }
        }
    }
}

fn replace_all(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len() + to.len());
    let mut rest = 0;
    for at in memchr::memmem::find_iter(haystack, from) {
        if at < rest {
            continue;
        }
        out.extend_from_slice(&haystack[rest..at]);
        out.extend_from_slice(to);
        rest = at + from.len();
    }
    out.extend_from_slice(&haystack[rest..]);
    out
}

/// One call's network: its grant, deadline and what it has used. `wasi:http`'s hooks.
pub(crate) struct CallNet {
    grants: Arc<Grants>,
    deadline: Instant,
    requests: u32,
    received: Arc<AtomicU64>,
}

impl CallNet {
    pub(crate) fn new(grants: Arc<Grants>, deadline: Instant) -> CallNet {
        CallNet {
            grants,
            deadline,
            requests: 0,
            received: Arc::new(AtomicU64::new(0)),
        }
    }
}

type SendFuture = Box<
    dyn Future<
            Output = Result<
                (
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), Error>> + Send>,
                ),
                Error,
            >,
        > + Send,
>;

impl WasiHttpHooks for CallNet {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> SendFuture {
        if self.requests >= MAX_REQUESTS {
            return Box::new(async { Err(Error::ConnectionLimitReached) });
        }
        self.requests += 1;
        let limits = send::Limits {
            deadline: self.deadline.into(),
            options: options.unwrap_or_default(),
            received: self.received.clone(),
        };
        Box::new(send::send(request, self.grants.clone(), limits))
    }
}

#[cfg(test)]
mod tests;
