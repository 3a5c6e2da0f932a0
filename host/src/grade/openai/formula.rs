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
    Binary(char, Box<Expr>, Box<Expr>),
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
        let mut parser = Parser {
            chars: text.chars().collect(),
            at: 0,
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
            Expr::Binary(op, a, b) => {
                let (a, b) = (a.evaluate(scores)?, b.evaluate(scores)?);
                match op {
                    '+' => a + b,
                    '-' => a - b,
                    '*' => a * b,
                    _ if b == 0.0 => return Err(EvalError("division by zero".into())),
                    _ => a / b,
                }
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
        let mut left = self.term()?;
        while let Some(op @ ('+' | '-')) = self.peek() {
            self.at += 1;
            left = Expr::Binary(op, Box::new(left), Box::new(self.term()?));
        }
        Ok(left)
    }

    fn term(&mut self) -> Result<Expr, FormulaError> {
        let mut left = self.unary()?;
        while let Some(op @ ('*' | '/')) = self.peek() {
            self.at += 1;
            left = Expr::Binary(op, Box::new(left), Box::new(self.unary()?));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, FormulaError> {
        match self.peek() {
            Some('-') => {
                self.at += 1;
                Ok(Expr::Negate(Box::new(self.unary()?)))
            }
            Some('+') => {
                self.at += 1;
                self.unary()
            }
            _ => self.primary(),
        }
    }

    fn primary(&mut self) -> Result<Expr, FormulaError> {
        match self.peek() {
            None => Err(self.error("the formula ends where a value is expected".into())),
            Some('(') => {
                self.at += 1;
                let inner = self.expression()?;
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
            let mut args = vec![self.expression()?];
            while self.peek() == Some(',') {
                self.at += 1;
                args.push(self.expression()?);
            }
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
}
