//! letta-evals functions (stub).
use crate::grade::Grade;
use crate::graders::Described;
use crate::sample::Sample;

#[derive(Clone, Copy)]
pub enum Function {
    ExactMatch,
}

impl Function {
    pub const BUILTINS: &'static [Described] = &[Described {
        name: "exact_match",
        description: "exact",
    }];

    pub fn from_name(name: &str) -> Option<Function> {
        (name == "exact_match").then_some(Function::ExactMatch)
    }

    pub fn grade(self, sample: &Sample, submission: &str) -> Grade {
        let ok = sample.ground_truth_text().map(str::trim) == Some(submission.trim());
        Grade::scored(if ok { 1.0 } else { 0.0 }, format!("Exact match: {}", if ok { "True" } else { "False" }))
    }
}
