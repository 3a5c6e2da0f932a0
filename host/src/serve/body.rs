//! An answer's body: whole, with its length, or a grading's result lines as its pass sends
//! them ([`super::grading::HOLD`]), ended by the pass's word on how it ended. A streamed answer
//! whose pass fails after its first piece cannot change its status: it is broken off (the
//! connection closes before the chunked body's last chunk), which every HTTP client reports as
//! an incomplete answer rather than taking it for a whole one.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::sync::mpsc;

use super::grading::{GradingError, Piece, Tally};

/// How a streamed answer ended: its results counted, or why it was broken off.
pub type Ended = Result<Tally, GradingError>;

/// What is told of a streamed answer's end, once.
type OnEnd = Box<dyn FnOnce(Ended) + Send>;

pub struct AnswerBody(Kind);

enum Kind {
    Whole(Option<Bytes>),
    Streamed(Streamed),
}

impl AnswerBody {
    pub fn whole(bytes: Bytes) -> AnswerBody {
        AnswerBody(Kind::Whole((!bytes.is_empty()).then_some(bytes)))
    }

    pub fn streamed(streamed: Streamed) -> AnswerBody {
        AnswerBody(Kind::Streamed(streamed))
    }
}

/// A streamed answer: its first piece, the pieces its pass sends after it, and who is told how
/// it ended.
pub struct Streamed {
    first: Option<Bytes>,
    pieces: mpsc::Receiver<Piece>,
    on_end: Option<OnEnd>,
}

impl Streamed {
    pub fn new(first: Bytes, pieces: mpsc::Receiver<Piece>) -> Streamed {
        Streamed {
            first: Some(first),
            pieces,
            on_end: None,
        }
    }

    /// `on_end` is told how the answer ended, once: when its last piece has gone, when it is
    /// broken off, or when its client goes before its end.
    pub fn on_end(&mut self, on_end: impl FnOnce(Ended) + Send + 'static) {
        self.on_end = Some(Box::new(on_end));
    }

    fn end(&mut self, ended: Ended) {
        if let Some(on_end) = self.on_end.take() {
            on_end(ended);
        }
    }

    fn poll_piece(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, GradingError>>> {
        if let Some(first) = self.first.take() {
            return Poll::Ready(Some(Ok(first)));
        }
        let broken = match ready!(self.pieces.poll_recv(cx)) {
            Some(Piece::Lines(lines)) => return Poll::Ready(Some(Ok(lines))),
            Some(Piece::End(Ok(tally))) => {
                self.end(Ok(tally));
                return Poll::Ready(None);
            }
            Some(Piece::End(Err(e))) => e,
            // The pass stopped sending without its end: its deadline passed while the client
            // was slow to read.
            None => GradingError::Deadline,
        };
        self.end(Err(broken.clone()));
        Poll::Ready(Some(Err(broken)))
    }
}

impl Drop for Streamed {
    fn drop(&mut self) {
        self.end(Err(GradingError::Gone));
    }
}

impl Body for AnswerBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        match &mut self.0 {
            Kind::Whole(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Kind::Streamed(streamed) => streamed.poll_piece(cx).map(|piece| {
                piece.map(|piece| piece.map(Frame::data).map_err(std::io::Error::other))
            }),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.0, Kind::Whole(None))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.0 {
            Kind::Whole(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
            Kind::Streamed(_) => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use http_body_util::BodyExt;

    use super::*;

    /// A streamed body of `pieces`, and what its end was told.
    fn streamed(pieces: Vec<Piece>) -> (AnswerBody, Arc<Mutex<Option<Ended>>>) {
        let (sender, receiver) = mpsc::channel(pieces.len().max(1));
        for piece in pieces {
            sender.try_send(piece).expect("room");
        }
        drop(sender);
        let told = Arc::new(Mutex::new(None));
        let mut streamed = Streamed::new(Bytes::from_static(b"first\n"), receiver);
        let telling = told.clone();
        streamed.on_end(move |ended| *telling.lock().unwrap() = Some(ended));
        (AnswerBody::streamed(streamed), told)
    }

    #[tokio::test]
    async fn a_streamed_answer_is_its_pieces_in_order_then_its_end() {
        let tally = Tally {
            samples: [("pass", 2)].into_iter().collect(),
            grading_failures: 0,
        };
        let (body, told) = streamed(vec![
            Piece::Lines(Bytes::from_static(b"second\n")),
            Piece::End(Ok(tally.clone())),
        ]);
        let bytes = body.collect().await.expect("whole").to_bytes();
        assert_eq!(&bytes[..], b"first\nsecond\n");
        assert_eq!(*told.lock().unwrap(), Some(Ok(tally)));
    }

    #[tokio::test]
    async fn a_pass_that_fails_or_stops_sending_breaks_the_answer_off() {
        let (body, told) = streamed(vec![Piece::End(Err(GradingError::Stopped))]);
        let Err(error) = body.collect().await else {
            panic!("an answer whose pass failed ended whole");
        };
        assert_eq!(error.to_string(), "the server is stopping");
        assert_eq!(*told.lock().unwrap(), Some(Err(GradingError::Stopped)));
        let (body, told) = streamed(vec![]);
        assert!(body.collect().await.is_err());
        assert_eq!(*told.lock().unwrap(), Some(Err(GradingError::Deadline)));
    }

    #[tokio::test]
    async fn a_client_gone_before_the_end_is_told_once() {
        let (mut body, told) = streamed(vec![Piece::Lines(Bytes::from_static(b"x\n"))]);
        let first = body.frame().await.expect("a frame").expect("data");
        assert_eq!(first.into_data().ok().as_deref(), Some(&b"first\n"[..]));
        drop(body);
        assert_eq!(*told.lock().unwrap(), Some(Err(GradingError::Gone)));
    }

    #[test]
    fn a_whole_answer_says_its_length() {
        let body = AnswerBody::whole(Bytes::from_static(b"ok\n"));
        assert_eq!(body.size_hint().exact(), Some(3));
        assert!(AnswerBody::whole(Bytes::new()).is_end_stream());
    }
}
