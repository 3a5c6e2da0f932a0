//! Write [gavel](https://example.invalid/gavel) grader packs as plain Rust functions.
//!
//! A pack is a WebAssembly component that provides graders and extractors. With this crate a
//! grader is a function from a [`GradeInput`] (the [`Sample`], its [`Trajectory`] and the
//! submission the extractor chose) and your own config type to a [`Grade`]; an extractor is a
//! function from an [`ExtractInput`] and a config to the text to grade. One [`pack!`] lists
//! them; it answers gavel's `describe`, `check-config`, `grade` and `extract` calls.
//!
//! ```
//! use gavel_guest::prelude::*;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize)]
//! #[serde(deny_unknown_fields)]
//! struct Budget {
//!     max_tokens: u64,
//! }
//!
//! fn token_budget(input: &GradeInput, config: &Budget) -> Grade {
//!     let used = input.trajectory.total_tokens();
//!     if used <= config.max_tokens {
//!         Grade::pass(format!("Used {used} tokens (budget: {})", config.max_tokens))
//!     } else {
//!         Grade::fail("Exceeded token budget")
//!             .expected(format!("<= {}", config.max_tokens))
//!             .actual(used)
//!     }
//! }
//!
//! fn final_answer(input: &ExtractInput, _: &NoConfig) -> String {
//!     input.trajectory.after_marker("FINAL ANSWER:", false)
//! }
//!
//! gavel_guest::pack! {
//!     graders: {
//!         /// Passes when the run used at most `max_tokens` tokens.
//!         token_budget,
//!     },
//!     extractors: {
//!         /// The text after the last `FINAL ANSWER:` marker.
//!         final_answer,
//!     },
//! }
//! # fn main() {}
//! ```
//!
//! Build it with `cargo build --target wasm32-wasip2 --release`; the `.wasm` in
//! `target/wasm32-wasip2/release/` is the component a suite names under `packs:`. The
//! trajectory helpers ([`Trajectory::last_assistant`], [`Trajectory::tool_arguments`], ...)
//! behave exactly like gavel's built-in extractors of the same name.

// Lets the generated bindings and `pack!` name this crate the same way from inside and outside.
extern crate self as gavel_guest;

mod convert;
mod grade;
mod registry;
mod sample;
mod trajectory;

use std::fmt;

use serde::Deserialize;

pub use grade::{Grade, Status};
pub use registry::{IntoExtraction, IntoGrade};
pub use sample::{MemoryBlock, Sample, SampleId, Texts};
pub use trajectory::{
    Content, Event, LlmCall, RunStatus, Tokens, ToolCall, ToolReturn, ToolStatus, Trajectory,
};

/// The names a pack usually needs, in one import.
///
/// ```
/// use gavel_guest::prelude::*;
///
/// let grade: Grade = Grade::pass("ok");
/// # let _ = grade;
/// ```
pub mod prelude {
    pub use crate::{
        Content, Error, Event, ExtractInput, Grade, GradeInput, NoConfig, Sample, Status, ToolCall,
        Trajectory,
    };
}

/// What a grader gets for one sample.
///
/// ```
/// use gavel_guest::prelude::*;
///
/// fn exact(input: &GradeInput, _: &NoConfig) -> Result<Grade, Error> {
///     let truth = input.sample.ground_truth_text().ok_or_else(|| Error::new("no ground_truth"))?;
///     Ok(if input.submission.trim() == truth.trim() {
///         Grade::pass("Exact match")
///     } else {
///         Grade::fail("No exact match").expected(truth).actual(input.submission)
///     })
/// }
/// # let sample = Sample { ground_truth: Some(gavel_guest::Texts::One("4".into())), ..Sample::default() };
/// # let input = GradeInput { sample: &sample, trajectory: &Trajectory::default(), submission: " 4" };
/// # assert_eq!(exact(&input, &NoConfig {}).unwrap().score, 1.0);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct GradeInput<'a> {
    /// The dataset row.
    pub sample: &'a Sample,
    /// The recorded run.
    pub trajectory: &'a Trajectory,
    /// What the grader's extractor chose from the run (`last_assistant` unless the suite says
    /// otherwise).
    pub submission: &'a str,
}

/// What an extractor gets for one sample.
///
/// ```
/// use gavel_guest::prelude::*;
///
/// fn first_tool(input: &ExtractInput, _: &NoConfig) -> Option<String> {
///     input.trajectory.tools_called().first().map(|name| name.to_string())
/// }
/// # let input = ExtractInput { sample: &Sample::default(), trajectory: &Trajectory::default() };
/// # assert_eq!(first_tool(&input, &NoConfig {}), None);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ExtractInput<'a> {
    /// The dataset row.
    pub sample: &'a Sample,
    /// The recorded run.
    pub trajectory: &'a Trajectory,
}

/// The config of a function that takes none: only `{}` (or no `config:` at all) is accepted.
///
/// ```
/// use gavel_guest::NoConfig;
///
/// assert!(serde_json::from_str::<NoConfig>("{}").is_ok());
/// assert!(serde_json::from_str::<NoConfig>(r#"{"max": 3}"#).is_err());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoConfig {}

/// An error a grader or extractor returns: gavel records it as an `error` grade whose reason is
/// `guest returned error: <message>`. Any `std::error::Error` converts into it, so `?` works on
/// `serde_json` and parse results.
///
/// ```
/// use gavel_guest::Error;
///
/// fn parse(text: &str) -> Result<serde_json::Value, Error> {
///     Ok(serde_json::from_str(text)?)
/// }
/// assert!(parse("{").is_err());
/// assert_eq!(Error::new("no ground truth").to_string(), "no ground truth");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    message: String,
}

impl Error {
    /// An error with this message.
    ///
    /// ```
    /// use gavel_guest::Error;
    ///
    /// let error = Error::new(format!("field {} is missing", "name"));
    /// assert_eq!(error.to_string(), "field name is missing");
    /// ```
    pub fn new(message: impl Into<String>) -> Error {
        Error {
            message: message.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl<E: std::error::Error> From<E> for Error {
    fn from(error: E) -> Error {
        Error::new(error.to_string())
    }
}

/// The generated WIT bindings, reached by `pack!` through [`__private`].
#[doc(hidden)]
#[allow(unsafe_code, missing_docs, clippy::all)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "pack-v0",
        pub_export_macro: true,
        export_macro_name: "__export_pack_v0",
        default_bindings_module: "gavel_guest::__private::bindings",
        runtime_path: "gavel_guest::__private::wit_bindgen::rt",
    });
}

/// What [`pack!`] expands to; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use crate::bindings;
    pub use crate::bindings::exports::gavel::grader::pack::Guest;
    pub use crate::bindings::gavel::grader::types::{
        Grade as WitGrade, PackInfo, Sample as WitSample, Trajectory as WitTrajectory,
    };
    pub use crate::registry::{Function, Registry};
    pub use wit_bindgen;

    /// The first of the given names: the one `pack!` was given, else the crate's.
    pub fn first(names: &[&'static str]) -> &'static str {
        names[0]
    }
}

/// Declares the pack: its graders and extractors, each a function in scope, described by its
/// doc comment (the first paragraph is what `gavel list` shows). This is the one registration
/// point; it exports the component's `describe`, `check-config`, `grade` and `extract`.
///
/// - A grader is `fn(&GradeInput, &C) -> R` and an extractor `fn(&ExtractInput, &C) -> R`,
///   where `C` is any `serde::Deserialize` config type (the suite's `config:` /
///   `extractor_config:`; [`NoConfig`] when there is none) and `R` is [`IntoGrade`] /
///   [`IntoExtraction`]. A config that does not parse is refused by `check-config` before any
///   sample runs, with the field named.
/// - Suites call a function by its Rust name: `function: <pack>.<name>`.
/// - `(needs_ground_truth)` after a name tells gavel the function reads the ground truth.
/// - `name:` and `version:` default to the crate's package name and version.
///
/// ```
/// use gavel_guest::prelude::*;
///
/// fn has_ground_truth(input: &GradeInput, _: &NoConfig) -> Grade {
///     match input.sample.ground_truth_text() {
///         Some(truth) if input.submission.contains(truth) => Grade::pass("found"),
///         _ => Grade::fail("not found"),
///     }
/// }
///
/// gavel_guest::pack! {
///     name: "contains",
///     version: "1.0.0",
///     graders: {
///         /// Passes when the submission contains the ground truth.
///         has_ground_truth(needs_ground_truth),
///     },
/// }
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! pack {
    (
        $(name: $name:expr,)?
        $(version: $version:expr,)?
        $(graders: {
            $(
                $(#[doc = $grader_doc:literal])*
                $grader:ident $(($($grader_flag:ident),* $(,)?))?
            ),* $(,)?
        } $(,)?)?
        $(extractors: {
            $(
                $(#[doc = $extractor_doc:literal])*
                $extractor:ident $(($($extractor_flag:ident),* $(,)?))?
            ),* $(,)?
        } $(,)?)?
    ) => {
        #[doc(hidden)]
        struct __GavelPack;

        impl __GavelPack {
            fn registry() -> $crate::__private::Registry {
                let mut registry = $crate::__private::Registry::new(
                    $crate::__private::first(&[$($name,)? ::core::env!("CARGO_PKG_NAME")]),
                    $crate::__private::first(&[$($version,)? ::core::env!("CARGO_PKG_VERSION")]),
                );
                $($(
                    registry.add(
                        $crate::__private::Function::grader(
                            ::core::stringify!($grader),
                            &[$($grader_doc),*],
                            $grader,
                        )
                        $($(.$grader_flag())*)?
                    );
                )*)?
                $($(
                    registry.add(
                        $crate::__private::Function::extractor(
                            ::core::stringify!($extractor),
                            &[$($extractor_doc),*],
                            $extractor,
                        )
                        $($(.$extractor_flag())*)?
                    );
                )*)?
                registry
            }
        }

        impl $crate::__private::Guest for __GavelPack {
            fn describe() -> $crate::__private::PackInfo {
                Self::registry().describe()
            }

            fn check_config(
                name: ::std::string::String,
                config: ::std::string::String,
            ) -> ::core::result::Result<(), ::std::string::String> {
                Self::registry().check_config(&name, &config)
            }

            fn grade(
                name: ::std::string::String,
                sample: $crate::__private::WitSample,
                trajectory: $crate::__private::WitTrajectory,
                submission: ::std::string::String,
                config: ::std::string::String,
            ) -> ::core::result::Result<$crate::__private::WitGrade, ::std::string::String> {
                Self::registry().grade(&name, sample, trajectory, &submission, &config)
            }

            fn extract(
                name: ::std::string::String,
                sample: $crate::__private::WitSample,
                trajectory: $crate::__private::WitTrajectory,
                config: ::std::string::String,
            ) -> ::core::result::Result<
                ::core::option::Option<::std::string::String>,
                ::std::string::String,
            > {
                Self::registry().extract(&name, sample, trajectory, &config)
            }
        }

        $crate::__private::bindings::__export_pack_v0!(__GavelPack with_types_in $crate::__private::bindings);
    };
}
