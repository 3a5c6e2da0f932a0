//! What the library has to say while it works that is neither a result nor an error: a cached
//! entry it could not use, a build it starts. The library prints nothing itself; the program
//! running it installs one receiver, which the command line makes print each notice to
//! stderr. Without a receiver, notices are dropped.

use std::fmt;
use std::sync::OnceLock;

/// How much a notice matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Something slow is happening, as it should.
    Note,
    /// Something was not as expected and was worked around.
    Warning,
}

/// One notice: shown as `note: TEXT` or `warning: TEXT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub level: Level,
    pub text: String,
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.level {
            Level::Note => "note",
            Level::Warning => "warning",
        };
        write!(f, "{level}: {}", self.text)
    }
}

static RECEIVER: OnceLock<fn(&Notice)> = OnceLock::new();

/// Sends every later notice of the process to `receiver`, from whichever thread gives it. The
/// first receiver installed stays.
pub fn set_receiver(receiver: fn(&Notice)) {
    let _ = RECEIVER.set(receiver);
}

/// Gives a notice that something slow is happening.
pub(crate) fn note(text: String) {
    give(Level::Note, text);
}

/// Gives a notice that something was worked around.
pub(crate) fn warn(text: String) {
    give(Level::Warning, text);
}

fn give(level: Level, text: String) {
    if let Some(receiver) = RECEIVER.get() {
        receiver(&Notice { level, text });
    }
}
