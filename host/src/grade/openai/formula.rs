//! A `multi` grader's `calculate_output`: numbers, the sub-graders' names, `+ - * /`,
//! parentheses and the functions min, max, abs, floor, ceil, exp, sqrt and log, parsed once
//! when the grader is loaded.

use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq)]
pub struct Formula {
    root: Expr,
}

#[derive(Debug, Clone, PartialEq)]
enum Expr {
    Number(f64),
    Name(String),
    Negate(Box<Expr>),
    /// A value, then each operator (all `+ -` or all `* /`) and its operand, left to right: a
    /// long sum is one node, not a tree as deep as it is long.
    Chain(Box<Expr>, Vec<(char, Expr)>),
    Call(Function, Vec<Expr>),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Function {
    Min,
    Max,
    Abs,
    Floor,
    Ceil,
    Exp,
    Sqrt,
    Log,
}

const FUNCTIONS: &[(&str, Function)] = &[
    ("min", Function::Min),
    ("max", Function::Max),
    ("abs", Function::Abs),
    ("floor", Function::Floor),
    ("ceil", Function::Ceil),
    ("exp", Function::Exp),
    ("sqrt", Function::Sqrt),
    ("log", Function::Log),
];

/// The longest formula read: real ones are a line; the bound keeps a hostile one's tree, which
/// evaluating and dropping walk recursively, shallow enough for any thread's stack.
const MAX_CHARS: usize = 4096;

/// How deep signs, parentheses and function calls may nest, for the same reason.
const MAX_NESTING: usize = 64;

/// Why a formula does not parse: the character (1-based) where it goes wrong, and what is.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("at character {position}: {message}")]
pub struct FormulaError {
    pub position: usize,
    pub message: String,
}

/// Why a formula has no value for a row.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct EvalError(String);

impl Formula {
    /// Parses `text`, whose names must each be one of `names`.
    pub fn parse(text: &str, names: &[&str]) -> Result<Formula, FormulaError> {
        let chars: Vec<char> = text.chars().collect();
        if chars.len() > MAX_CHARS {
            return Err(FormulaError {
                position: MAX_CHARS + 1,
                message: format!("the formula is longer than {MAX_CHARS} characters"),
            });
        }
        let mut parser = Parser {
            chars,
            at: 0,
            depth: 0,
            names,
        };
        let root = parser.expression()?;
        parser.skip_spaces();
        if let Some(c) = parser.chars.get(parser.at) {
            return Err(parser.error(format!("`{c}` is not expected here")));
        }
        Ok(Formula { root })
    }

    /// The formula's value with each name's score.
    pub fn evaluate(&self, scores: &HashMap<&str, f64>) -> Result<f64, EvalError> {
        self.root.evaluate(scores)
    }
}

impl Expr {
    fn evaluate(&self, scores: &HashMap<&str, f64>) -> Result<f64, EvalError> {
        Ok(match self {
            Expr::Number(n) => *n,
            Expr::Name(name) => *scores
                .get(name.as_str())
                .ok_or_else(|| EvalError(format!("no score for `{name}`")))?,
            Expr::Negate(e) => -e.evaluate(scores)?,
            Expr::Chain(first, rest) => {
                rest.iter()
                    .try_fold(first.evaluate(scores)?, |a, (op, b)| {
                        let b = b.evaluate(scores)?;
                        Ok(match op {
                            '+' => a + b,
                            '-' => a - b,
                            '*' => a * b,
                            _ if b == 0.0 => return Err(EvalError("division by zero".into())),
                            _ => a / b,
                        })
                    })?
            }
            Expr::Call(function, args) => {
                let values = args
                    .iter()
                    .map(|a| a.evaluate(scores))
                    .collect::<Result<Vec<f64>, EvalError>>()?;
                let x = values[0];
                match function {
                    Function::Min => values.iter().copied().fold(f64::INFINITY, f64::min),
                    Function::Max => values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                    Function::Abs => x.abs(),
                    Function::Floor => x.floor(),
                    Function::Ceil => x.ceil(),
                    Function::Exp => x.exp(),
                    Function::Sqrt if x < 0.0 => {
                        return Err(EvalError(format!("sqrt of a negative number ({x})")));
                    }
                    Function::Sqrt => x.sqrt(),
                    Function::Log if x <= 0.0 => {
                        return Err(EvalError(format!("log of a number not above 0 ({x})")));
                    }
                    Function::Log => x.ln(),
                }
            }
        })
    }
}

struct Parser<'n> {
    chars: Vec<char>,
    at: usize,
    /// How many signs, parentheses and calls enclose the position.
    depth: usize,
    names: &'n [&'n str],
}

impl Parser<'_> {
    fn error(&self, message: String) -> FormulaError {
        FormulaError {
            position: self.at + 1,
            message,
        }
    }

    fn skip_spaces(&mut self) {
        while self.chars.get(self.at).is_some_and(|c| c.is_whitespace()) {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_spaces();
        self.chars.get(self.at).copied()
    }

    fn expression(&mut self) -> Result<Expr, FormulaError> {
        self.chain(&['+', '-'], Self::term)
    }

    fn term(&mut self) -> Result<Expr, FormulaError> {
        self.chain(&['*', '/'], Self::unary)
    }

    /// Operands read by `operand`, joined by any of `ops`.
    fn chain(
        &mut self,
        ops: &[char],
        operand: fn(&mut Self) -> Result<Expr, FormulaError>,
    ) -> Result<Expr, FormulaError> {
        let first = operand(self)?;
        let mut rest = Vec::new();
        while let Some(op) = self.peek().filter(|c| ops.contains(c)) {
            self.at += 1;
            rest.push((op, operand(self)?));
        }
        Ok(match rest.is_empty() {
            true => first,
            false => Expr::Chain(Box::new(first), rest),
        })
    }

    /// `parse` one level deeper in the nesting, refused past [`MAX_NESTING`].
    fn nested<T>(
        &mut self,
        parse: impl FnOnce(&mut Self) -> Result<T, FormulaError>,
    ) -> Result<T, FormulaError> {
        if self.depth == MAX_NESTING {
            return Err(self.error(format!("the formula nests more than {MAX_NESTING} deep")));
        }
        self.depth += 1;
        let parsed = parse(self);
        self.depth -= 1;
        parsed
    }

    fn unary(&mut self) -> Result<Expr, FormulaError> {
        match self.peek() {
            Some('-') => {
                self.at += 1;
                let operand = self.nested(Self::unary)?;
                Ok(Expr::Negate(Box::new(operand)))
            }
            Some('+') => {
                self.at += 1;
                self.nested(Self::unary)
            }
            _ => self.primary(),
        }
    }

    fn primary(&mut self) -> Result<Expr, FormulaError> {
        match self.peek() {
            None => Err(self.error("the formula ends where a value is expected".into())),
            Some('(') => {
                self.at += 1;
                let inner = self.nested(Self::expression)?;
                self.expect(')')?;
                Ok(inner)
            }
            Some(c) if c.is_ascii_digit() || c == '.' => self.number(),
            Some(c) if c.is_alphabetic() || c == '_' => self.name(),
            Some(c) => Err(self.error(format!("`{c}` is not expected here"))),
        }
    }

    fn expect(&mut self, wanted: char) -> Result<(), FormulaError> {
        if self.peek() == Some(wanted) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.error(format!("`{wanted}` is expected here")))
        }
    }

    fn take_while(&mut self, keep: impl Fn(char) -> bool) -> String {
        let mut taken = String::new();
        while let Some(&c) = self.chars.get(self.at) {
            if !keep(c) {
                break;
            }
            taken.push(c);
            self.at += 1;
        }
        taken
    }

    fn number(&mut self) -> Result<Expr, FormulaError> {
        let start = self.at;
        let mut text = self.take_while(|c| c.is_ascii_digit() || c == '.');
        if matches!(self.chars.get(self.at), Some('e' | 'E')) {
            let mark = self.at;
            self.at += 1;
            let sign = self.take_while(|c| c == '+' || c == '-');
            let digits = self.take_while(|c| c.is_ascii_digit());
            if digits.is_empty() || sign.len() > 1 {
                self.at = mark;
            } else {
                text = format!("{text}e{sign}{digits}");
            }
        }
        text.parse().map(Expr::Number).map_err(|_| {
            self.at = start;
            self.error(format!("`{text}` is not a number"))
        })
    }

    fn name(&mut self) -> Result<Expr, FormulaError> {
        let start = self.at;
        let name = self.take_while(|c| c.is_alphanumeric() || c == '_');
        if self.peek() == Some('(') {
            let Some(&(_, function)) = FUNCTIONS.iter().find(|(n, _)| *n == name) else {
                self.at = start;
                let known: Vec<&str> = FUNCTIONS.iter().map(|(n, _)| *n).collect();
                return Err(self.error(format!(
                    "`{name}` is not a function; the functions are {}",
                    known.join(", ")
                )));
            };
            self.at += 1;
            let args = self.nested(|parser| {
                let mut args = vec![parser.expression()?];
                while parser.peek() == Some(',') {
                    parser.at += 1;
                    args.push(parser.expression()?);
                }
                Ok(args)
            })?;
            self.expect(')')?;
            let variadic = matches!(function, Function::Min | Function::Max);
            if !variadic && args.len() != 1 {
                self.at = start;
                return Err(self.error(format!(
                    "`{name}` takes one argument, it is given {}",
                    args.len()
                )));
            }
            return Ok(Expr::Call(function, args));
        }
        if !self.names.contains(&name.as_str()) {
            self.at = start;
            return Err(self.error(format!(
                "`{name}` is not one of the sub-graders ({})",
                self.names.join(", ")
            )));
        }
        Ok(Expr::Name(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str) -> Result<f64, String> {
        let formula = Formula::parse(text, &["a", "b_2"]).map_err(|e| e.to_string())?;
        let scores = HashMap::from([("a", 0.5), ("b_2", 0.25)]);
        formula.evaluate(&scores).map_err(|e| e.to_string())
    }

    #[test]
    fn formulas_follow_precedence_and_the_documented_functions() {
        assert_eq!(value("a + b_2 * 2"), Ok(1.0));
        assert_eq!(value("(a + b_2) * 2"), Ok(1.5));
        assert_eq!(value("-a + 1"), Ok(0.5));
        assert_eq!(value("0.5 * a + 0.5 * b_2"), Ok(0.375));
        assert_eq!(value("min(a, b_2, 1) + max(a, b_2)"), Ok(0.75));
        assert_eq!(value("abs(b_2 - a) + floor(1.7) + ceil(0.2)"), Ok(2.25));
        assert_eq!(value("sqrt(b_2) + exp(0) + log(1)"), Ok(1.5));
        assert_eq!(value("1e-1 * 10 / 4"), Ok(0.25));
        assert_eq!(value("a / (b_2 - 0.25)"), Err("division by zero".into()));
        assert_eq!(
            value("log(a - a)"),
            Err("log of a number not above 0 (0)".into())
        );
    }

    #[test]
    fn an_invalid_formula_is_refused_at_its_position() {
        assert_eq!(
            value("a + c"),
            Err("at character 5: `c` is not one of the sub-graders (a, b_2)".into())
        );
        assert_eq!(
            value("a +"),
            Err("at character 4: the formula ends where a value is expected".into())
        );
        assert_eq!(
            value("(a + b_2"),
            Err("at character 9: `)` is expected here".into())
        );
        assert_eq!(
            value("a ^ 2"),
            Err("at character 3: `^` is not expected here".into())
        );
        assert_eq!(
            value("pow(a, 2)"),
            Err(
                "at character 1: `pow` is not a function; the functions are min, max, abs, \
                 floor, ceil, exp, sqrt, log"
                    .into()
            )
        );
        assert_eq!(
            value("abs(a, b_2)"),
            Err("at character 1: `abs` takes one argument, it is given 2".into())
        );
        assert_eq!(
            value("1.2.3"),
            Err("at character 1: `1.2.3` is not a number".into())
        );
    }

    /// A hostile formula is refused, not parsed or evaluated as deep as it goes (which would
    /// overflow the stack and abort the process).
    #[test]
    fn a_formula_too_long_or_too_deep_is_refused() {
        let deep = |open: &str, close: &str| {
            let many = |s: &str, n| s.repeat(n);
            format!("{}a{}", many(open, 10_000), many(close, 10_000))
        };
        for (text, at) in [
            (deep("-", ""), 66),
            (deep("(", ")"), 66),
            (deep("abs(", ")"), 261),
        ] {
            let text = &text[..text.len().min(4000)];
            assert_eq!(
                value(text),
                Err(format!(
                    "at character {at}: the formula nests more than 64 deep"
                ))
            );
        }
        assert_eq!(
            value(&format!("a{}", "+a".repeat(5000))),
            Err("at character 4097: the formula is longer than 4096 characters".into())
        );
        // Within the bounds, a long sum and a deep nesting are evaluated.
        assert_eq!(value(&format!("a{}", "+a".repeat(2000))), Ok(1000.5));
        assert_eq!(
            value(&format!("{}a{}", "(".repeat(64), ")".repeat(64))),
            Ok(0.5)
        );
        assert_eq!(value(&format!("{}a", "-".repeat(64))), Ok(0.5));
    }
}
