//! One request: checked, resolved, connected to the checked address, sent, and its response
//! body counted and bounded by the call's deadline.

use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http::uri::Scheme;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep, sleep_until, timeout_at};
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody};

use super::address::{inward, own};
use super::{MAX_RECEIVED, Masks, Target, address_granted, substitute_secrets};
use crate::grade::grants::Grants;

/// Names a PEM file of certificate authorities that graders' HTTPS requests trust beside the
/// webpki roots: a corporate proxy's, or a test's own.
const CA_FILE_ENV: &str = "GAVEL_CA_FILE";

/// What bounds one request.
pub(super) struct Limits {
    /// The call's deadline: no wait goes beyond it.
    pub(super) deadline: Instant,
    /// The guest's own timeouts, honoured within the deadline.
    pub(super) options: RequestOptions,
    /// Response body bytes the call has received, all its requests together.
    pub(super) received: Arc<AtomicU64>,
}

impl Limits {
    fn within(&self, timeout: Option<Duration>) -> Instant {
        timeout.map_or(self.deadline, |timeout| {
            self.deadline.min(Instant::now() + timeout)
        })
    }
}

trait Stream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Stream for T {}

type Sent = (
    http::Response<WasiBody>,
    Box<dyn Future<Output = Result<(), Error>> + Send>,
);

pub(super) async fn send(
    mut request: http::Request<WasiBody>,
    grants: Arc<Grants>,
    limits: Limits,
) -> Result<Sent, Error> {
    let uri = request.uri().clone();
    let tls = uri.scheme() == Some(&Scheme::HTTPS);
    let host = uri.host().ok_or(Error::HttpRequestUriInvalid)?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let target = Target {
        host: host.to_string(),
        address: host.parse().ok(),
        port: uri.port_u16().unwrap_or(if tls { 443 } else { 80 }),
    };
    // Host is the URL's host and port, written here: the guest's authority may carry more
    // (`user@`), and a secret is never put there.
    let authority = match uri.port_u16() {
        Some(port) => format!("{}:{port}", uri.host().unwrap_or_default()),
        None => uri.host().unwrap_or_default().to_string(),
    };
    let authority =
        http::HeaderValue::try_from(authority).map_err(|_| Error::HttpRequestUriInvalid)?;
    request.headers_mut().insert(http::header::HOST, authority);
    let masks = substitute_secrets(&grants, request.headers_mut(), &target, tls);
    // Sent as a server expects it: the path alone (the host is in the Host header).
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    *request.uri_mut() = http::Uri::try_from(path).map_err(|_| Error::HttpRequestUriInvalid)?;

    let connect_by = limits.within(limits.options.connect_timeout);
    let address = timeout_at(connect_by, destination(&grants, &target))
        .await
        .map_err(|_| Error::DnsTimeout)??;
    let stream = timeout_at(connect_by, TcpStream::connect(address))
        .await
        .map_err(|_| Error::ConnectionTimeout)?
        .map_err(Error::Connect)?;
    let stream: Box<dyn Stream> = if tls {
        let name = match target.address {
            Some(address) => ServerName::from(address),
            None => ServerName::try_from(target.host.clone()).map_err(|_| Error::DnsError {
                rcode: Some("not a DNS name".to_string()),
                info_code: None,
            })?,
        };
        let connector = connector().map_err(|why| Error::InternalError(Some(why.to_string())))?;
        let tls = timeout_at(connect_by, connector.connect(name, stream))
            .await
            .map_err(|_| Error::ConnectionTimeout)?
            .map_err(|e| {
                // The guest sees the reason: which check failed, and how to trust a private
                // authority.
                Error::InternalError(Some(format!(
                    "TLS with {}: {e} (gavel trusts the webpki roots and those of \
                     {CA_FILE_ENV})",
                    target.host
                )))
            })?;
        Box::new(tls)
    } else {
        Box::new(stream)
    };
    let (mut sender, connection) = timeout_at(
        connect_by,
        hyper::client::conn::http1::handshake(TokioIo::new(stream)),
    )
    .await
    .map_err(|_| Error::ConnectionTimeout)??;

    // The connection is driven while the response is awaited, and after it (by the future
    // returned beside the response) until the body is read: never beyond the deadline.
    let mut connection = Box::pin(timeout_at(limits.deadline, connection));
    let response = sender.send_request(request);
    tokio::pin!(response);
    let first_byte = sleep_until(limits.within(limits.options.first_byte_timeout));
    tokio::pin!(first_byte);
    let mut connected = true;
    let response = loop {
        tokio::select! {
            response = &mut response => break response?,
            ended = &mut connection, if connected => {
                connected = false;
                ended.map_err(|_| Error::ConnectionReadTimeout)??;
            }
            () = &mut first_byte => return Err(Error::ConnectionReadTimeout),
        }
    };
    let between = limits.options.between_bytes_timeout;
    let (mut head, incoming) = response.into_parts();
    let body = Counted {
        incoming,
        idle: Box::pin(sleep_until(limits.within(between))),
        received: limits.received,
        deadline: limits.deadline,
        between,
    };
    let response = if masks.is_empty() {
        http::Response::from_parts(head, body.boxed_unsync())
    } else {
        masks.mask_headers(&mut head.headers);
        let body = Masked {
            inner: body,
            held: Vec::new(),
            trailers: None,
            masks,
        };
        http::Response::from_parts(head, body.boxed_unsync())
    };
    let io: Box<dyn Future<Output = Result<(), Error>> + Send> = Box::new(async move {
        if connected {
            connection.await.map_err(|_| Error::HttpResponseTimeout)??;
        }
        Ok(())
    });
    Ok((response, io))
}

/// The address to connect to for `target`, checked against the grant: an address URL's
/// address when an address pattern grants it; for a name a pattern grants, the first of its
/// addresses that is not inward or that an address pattern grants.
async fn destination(grants: &Grants, target: &Target) -> Result<SocketAddr, Error> {
    let granted_address = |address: IpAddr| address_granted(&grants.network, address, target.port);
    if let Some(address) = target.address {
        return match granted_address(address) {
            true => Ok(SocketAddr::new(address, target.port)),
            false => Err(Error::DestinationIpProhibited),
        };
    }
    // A name not granted is refused as a resolver refuses a query it will not answer, apart
    // from a granted name that does not resolve, whose resolver's reason the guest is told.
    if !target.granted_by(&grants.network) {
        return Err(dns_error(NOT_GRANTED));
    }
    let mut addresses = lookup(&target.host, target.port)
        .await?
        .into_iter()
        .peekable();
    if addresses.peek().is_none() {
        return Err(dns_error("no address"));
    }
    addresses
        .find(|address| {
            let ip = address.ip();
            !(inward(ip) || own(ip)) || granted_address(ip)
        })
        .ok_or(Error::DestinationIpProhibited)
}

/// Name lookups that may run at once, every call's together.
const LOOKUPS: usize = 32;

/// The addresses of `host`, looked up by the system's resolver on a thread for blocking work.
/// A call that stops waiting at its deadline does not stop the lookup, which holds its place
/// among [`LOOKUPS`] until the resolver answers: graders asking for names that never resolve
/// wait for a place (within their deadline) rather than pile threads up.
async fn lookup(host: &str, port: u16) -> Result<Vec<SocketAddr>, Error> {
    static PLACES: Semaphore = Semaphore::const_new(LOOKUPS);
    let host = host.to_string();
    bounded(&PLACES, move || {
        std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), port)).map(Iterator::collect)
    })
    .await
}

/// `resolve` run on a thread for blocking work once one of `places` is free, the place held
/// until `resolve` returns, whether or not its caller still waits.
async fn bounded(
    places: &'static Semaphore,
    resolve: impl FnOnce() -> std::io::Result<Vec<SocketAddr>> + Send + 'static,
) -> Result<Vec<SocketAddr>, Error> {
    let place = places
        .acquire()
        .await
        .map_err(|_| dns_error("no lookup can start"))?;
    let looked_up = tokio::task::spawn_blocking(move || {
        let _place = place;
        resolve()
    });
    looked_up
        .await
        .map_err(|e| dns_error(&e.to_string()))?
        .map_err(|e| dns_error(&e.to_string()))
}

/// The DNS error code a name not granted by `allow: network:` gets (the guest's runtime tells
/// it from a resolution that failed by this code).
const NOT_GRANTED: &str = "REFUSED";

fn dns_error(rcode: &str) -> Error {
    Error::DnsError {
        rcode: Some(rcode.to_string()),
        info_code: None,
    }
}

/// Why graders' HTTPS client cannot be set up.
#[derive(Debug, thiserror::Error)]
enum TlsSetupError {
    #[error(
        "{env}={}: {why}; it must name a PEM file of the certificate authorities graders' \
         HTTPS requests trust beside the usual ones",
        path.display(),
        env = CA_FILE_ENV
    )]
    CaFile {
        path: std::path::PathBuf,
        why: CaFileProblem,
    },
    #[error("{env}: a certificate in it is refused: {0}", env = CA_FILE_ENV)]
    Refused(rustls::Error),
    #[error("{0}")]
    Setup(rustls::Error),
}

/// What is wrong with the file [`CA_FILE_ENV`] names.
#[derive(Debug, thiserror::Error)]
enum CaFileProblem {
    #[error("{0}")]
    Unreadable(std::io::Error),
    #[error("it is not PEM: {0}")]
    NotPem(rustls::pki_types::pem::Error),
    #[error("it holds no certificate")]
    Empty,
}

/// The TLS client: the webpki roots and those of [`CA_FILE_ENV`], ring's cryptography; why
/// not, when the file cannot be used or rustls refuses the setup.
fn connector() -> Result<&'static TlsConnector, &'static TlsSetupError> {
    static CONNECTOR: OnceLock<Result<TlsConnector, TlsSetupError>> = OnceLock::new();
    CONNECTOR
        .get_or_init(|| {
            let mut roots = RootCertStore::empty();
            roots.add_parsable_certificates(
                webpki_root_certs::TLS_SERVER_ROOT_CERTS.iter().cloned(),
            );
            for root in extra_roots()? {
                roots.add(root).map_err(TlsSetupError::Refused)?;
            }
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(TlsSetupError::Setup)?
                .with_root_certificates(roots)
                .with_no_client_auth();
            Ok(TlsConnector::from(Arc::new(config)))
        })
        .as_ref()
}

/// The certificate authorities of the PEM file [`CA_FILE_ENV`] names, none when it is unset or
/// empty; why not, naming the file and what to put there, when it cannot be read or holds no
/// certificate.
fn extra_roots() -> Result<Vec<CertificateDer<'static>>, TlsSetupError> {
    let Some(path) = std::env::var_os(CA_FILE_ENV).filter(|p| !p.is_empty()) else {
        return Ok(Vec::new());
    };
    let path = std::path::PathBuf::from(path);
    let unusable = |why: CaFileProblem| TlsSetupError::CaFile {
        path: path.clone(),
        why,
    };
    let pem = crate::fsio::read_regular(&path, crate::fsio::cap::TEXT)
        .map_err(|e| unusable(CaFileProblem::Unreadable(e)))?;
    let roots = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| unusable(CaFileProblem::NotPem(e)))?;
    if roots.is_empty() {
        return Err(unusable(CaFileProblem::Empty));
    }
    Ok(roots)
}

/// A response body that counts what it yields against the call's byte budget and fails at the
/// deadline (or the guest's between-bytes timeout) rather than wait past it.
struct Counted {
    incoming: hyper::body::Incoming,
    received: Arc<AtomicU64>,
    deadline: Instant,
    between: Option<Duration>,
    idle: Pin<Box<Sleep>>,
}

impl Body for Counted {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.incoming).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let size = frame.data_ref().map_or(0, |data| data.len() as u64);
                let total = this.received.fetch_add(size, Ordering::Relaxed) + size;
                if total > MAX_RECEIVED {
                    return Poll::Ready(Some(Err(Error::HttpResponseBodySize(Some(MAX_RECEIVED)))));
                }
                let next = match this.between {
                    Some(between) => this.deadline.min(Instant::now() + between),
                    None => this.deadline,
                };
                this.idle.as_mut().reset(next);
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(Error::from(e)))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => {
                ready!(this.idle.as_mut().poll(cx));
                Poll::Ready(Some(Err(Error::ConnectionReadTimeout)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.incoming.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.incoming.size_hint()
    }
}

/// A response body with the values of the secrets its request carried masked ([`Masks`]): the
/// last bytes of each piece, which the next could complete into a value, are held until it
/// comes. Masking keeps every length, so a `Content-Length` stays true.
struct Masked<B> {
    inner: B,
    masks: Masks,
    held: Vec<u8>,
    /// Trailers that came while bytes were held: sent after them.
    trailers: Option<Frame<Bytes>>,
}

impl<B: Body<Data = Bytes> + Unpin> Body for Masked<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = &mut *self;
        loop {
            if this.trailers.is_some() && this.held.is_empty() {
                return Poll::Ready(this.trailers.take().map(Ok));
            }
            let frame = match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                Some(Ok(frame)) => frame,
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                None => {
                    let rest = std::mem::take(&mut this.held);
                    return Poll::Ready((!rest.is_empty()).then(|| Ok(Frame::data(rest.into()))));
                }
            };
            match frame.into_data() {
                Ok(data) => {
                    this.held.extend_from_slice(&data);
                    this.masks.mask(&mut this.held);
                    let ready = this.held.len().saturating_sub(this.masks.overlap());
                    if ready > 0 {
                        let out: Vec<u8> = this.held.drain(..ready).collect();
                        return Poll::Ready(Some(Ok(Frame::data(out.into()))));
                    }
                }
                Err(frame) => {
                    let trailers = frame.into_trailers().map(|mut trailers| {
                        this.masks.mask_headers(&mut trailers);
                        Frame::trailers(trailers)
                    });
                    this.trailers = trailers.ok();
                    let rest = std::mem::take(&mut this.held);
                    if !rest.is_empty() {
                        return Poll::Ready(Some(Ok(Frame::data(rest.into()))));
                    }
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.held.is_empty() && self.trailers.is_none() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let mut hint = self.inner.size_hint();
        let held = self.held.len() as u64;
        if let Some(upper) = hint.upper() {
            hint.set_upper(upper + held);
        }
        hint.set_lower(hint.lower() + held);
        hint
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;

    /// A body of `frames`, each yielded by a poll of its own.
    struct Frames(VecDeque<Frame<Bytes>>);

    impl Body for Frames {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            Poll::Ready(self.0.pop_front().map(Ok))
        }
    }

    /// Lookups past the bound wait for a place rather than start a thread each, and a lookup
    /// its caller stopped waiting for keeps its place until the resolver answers.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn lookups_past_the_bound_wait_for_a_place_held_until_the_resolver_answers() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::{Arc, Mutex};
        static PLACES: Semaphore = Semaphore::const_new(LOOKUPS);
        let started = Arc::new(AtomicUsize::new(0));
        let (answer, answered) = std::sync::mpsc::channel::<()>();
        let answered = Arc::new(Mutex::new(answered));
        let address: SocketAddr = "127.0.0.1:443".parse().unwrap();
        // A resolver that answers only when told to, one lookup per word.
        let stuck = || {
            let (started, answered) = (started.clone(), answered.clone());
            move || {
                started.fetch_add(1, Ordering::SeqCst);
                answered.lock().unwrap().recv().ok();
                Ok(vec![address])
            }
        };
        // Every place taken by a lookup whose caller gives up at once.
        for _ in 0..LOOKUPS {
            let waited = timeout_at(Instant::now(), bounded(&PLACES, stuck())).await;
            assert!(waited.is_err());
        }
        while started.load(Ordering::SeqCst) < LOOKUPS {
            tokio::task::yield_now().await;
        }
        // One more waits for a place, within its caller's deadline, and starts no resolver.
        let by = Instant::now() + Duration::from_millis(200);
        assert!(timeout_at(by, bounded(&PLACES, stuck())).await.is_err());
        assert_eq!(started.load(Ordering::SeqCst), LOOKUPS);
        // One answer frees one place, which the next lookup takes.
        let next = tokio::spawn(bounded(&PLACES, stuck()));
        answer.send(()).unwrap();
        while started.load(Ordering::SeqCst) < LOOKUPS + 1 {
            tokio::task::yield_now().await;
        }
        for _ in 0..LOOKUPS {
            answer.send(()).unwrap();
        }
        assert_eq!(next.await.unwrap().unwrap(), [address]);
        assert_eq!(started.load(Ordering::SeqCst), LOOKUPS + 1);
        // A resolver's failure is the guest's DNS error, with the resolver's words.
        let failed = bounded(&PLACES, || Err(std::io::Error::other("no such name"))).await;
        assert!(
            matches!(&failed, Err(Error::DnsError { rcode: Some(words), .. }) if words == "no such name"),
            "{failed:?}"
        );
    }

    #[tokio::test]
    async fn a_value_is_masked_even_split_between_pieces_and_in_trailers() {
        let mut masks = Masks::default();
        masks.add("sk-secret-value");
        masks.add("short");
        let mut trailers = http::HeaderMap::new();
        trailers.insert("x-echo", "sk-secret-value".parse().unwrap());
        let pieces = [
            "echo: sk-sec",
            "ret-value, ",
            "again sk-secret-value",
            "; short",
        ];
        let mut frames: VecDeque<Frame<Bytes>> = (pieces.iter())
            .map(|piece| Frame::data(Bytes::from_static(piece.as_bytes())))
            .collect();
        frames.push_back(Frame::trailers(trailers));
        let body = Masked {
            inner: Frames(frames),
            masks,
            held: Vec::new(),
            trailers: None,
        };
        let collected = body.collect().await.unwrap();
        let masked_trailers = collected.trailers().cloned().expect("trailers");
        assert_eq!(masked_trailers["x-echo"], "***************");
        let text = collected.to_bytes();
        assert_eq!(
            std::str::from_utf8(&text).unwrap(),
            "echo: ***************, again ***************; short"
        );
    }
}
