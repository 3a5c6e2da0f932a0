//! Python's `string.Formatter().vformat(template, (), values)` where every value is a `str`, as
//! letta-evals formats a rubric: the replacement-field syntax, `!r`/`!s`/`!a`, indexing, nested
//! fields in format specs, and the format mini-language for strings (fill, align, width,
//! precision), with CPython's exception types and messages.
//!
//! A template is parsed once into parts; like CPython's lazy parser, a syntax error becomes the
//! last part, so the errors of earlier fields still come first when rendering.

use crate::grade::python::repr_str;

/// A Python exception: its type and message, as CPython words them.
#[derive(Debug, Clone, PartialEq)]
pub struct PyError {
    pub kind: &'static str,
    pub message: String,
}

impl PyError {
    fn value(message: impl Into<String>) -> PyError {
        PyError {
            kind: "ValueError",
            message: message.into(),
        }
    }
}

/// `_vformat`'s recursion budget: a field's spec is formatted one level down, and below zero
/// Python gives up.
const DEPTH: i32 = 2;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Part {
    Literal(String),
    Field(Field),
    /// A syntax error: rendering stops here with it.
    Broken {
        error: PyError,
        position: usize,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Field {
    /// Character offset of the `{` in the text parsed.
    pub position: usize,
    /// The name before any `.` or `[`: a variable, or a positional index when empty or digits.
    pub name: String,
    /// What follows the name, as CPython's field-name iterator reads it.
    pub access: Vec<Access>,
    pub conversion: Option<char>,
    /// The format spec, itself a template.
    pub spec: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Access {
    Attribute(String),
    Index(usize),
    Key(String),
    /// A malformed accessor: the error it raises once reached.
    Bad(PyError),
}

/// Parses `text` as `string.Formatter` parses a format string.
pub(super) fn parse(text: &str) -> Vec<Part> {
    let chars: Vec<char> = text.chars().collect();
    parse_at(&chars, 0, DEPTH)
}

fn parse_at(chars: &[char], offset: usize, depth: i32) -> Vec<Part> {
    let broken = |message: &str, at: usize| Part::Broken {
        error: PyError::value(message),
        position: offset + at,
    };
    if depth < 0 {
        return vec![broken("Max string recursion exceeded", 0)];
    }
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '{' | '}' if chars.get(i + 1) == Some(&c) => {
                literal.push(c);
                i += 2;
            }
            '}' => {
                flush(&mut literal, &mut parts);
                parts.push(broken("Single '}' encountered in format string", i));
                return parts;
            }
            '{' if i + 1 == chars.len() => {
                flush(&mut literal, &mut parts);
                parts.push(broken("Single '{' encountered in format string", i));
                return parts;
            }
            '{' => {
                flush(&mut literal, &mut parts);
                match parse_field(chars, i, offset, depth) {
                    Ok((field, next)) => {
                        parts.push(Part::Field(field));
                        i = next;
                    }
                    Err(message) => {
                        parts.push(broken(message, i));
                        return parts;
                    }
                }
            }
            c => {
                literal.push(c);
                i += 1;
            }
        }
    }
    flush(&mut literal, &mut parts);
    parts
}

fn flush(literal: &mut String, parts: &mut Vec<Part>) {
    if !literal.is_empty() {
        parts.push(Part::Literal(std::mem::take(literal)));
    }
}

/// The field whose `{` is at `start`; returns it and the index after its `}`.
fn parse_field(
    chars: &[char],
    start: usize,
    offset: usize,
    depth: i32,
) -> Result<(Field, usize), &'static str> {
    let mut i = start + 1;
    let name_start = i;
    let mut end = None;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            '{' => return Err("unexpected '{' in field name"),
            '[' => {
                while i < chars.len() && chars[i] != ']' {
                    i += 1;
                }
            }
            '}' | ':' | '!' => {
                end = Some(c);
                break;
            }
            _ => {}
        }
    }
    let Some(mut end) = end else {
        return Err("expected '}' before end of string");
    };
    let field_name: String = chars[name_start..i - 1].iter().collect();
    let mut conversion = None;
    if end == '!' {
        let Some(&c) = chars.get(i) else {
            return Err("end of string while looking for conversion specifier");
        };
        conversion = Some(c);
        i += 1;
        if let Some(&next) = chars.get(i) {
            i += 1;
            match next {
                '}' => end = '}',
                ':' => end = ':',
                _ => return Err("expected ':' after conversion specifier"),
            }
        }
    }
    let spec_start = i;
    if end != '}' {
        let mut count = 1;
        loop {
            match chars.get(i) {
                None => return Err("unmatched '{' in format spec"),
                Some('{') => count += 1,
                Some('}') => {
                    count -= 1;
                    if count == 0 {
                        break;
                    }
                }
                Some(_) => {}
            }
            i += 1;
        }
    }
    // Even an empty spec is formatted, one level down.
    let spec = parse_at(&chars[spec_start..i], offset + spec_start, depth - 1);
    if end != '}' {
        i += 1;
    }
    let (name, access) = split_name(&field_name);
    let field = Field {
        position: offset + start,
        name,
        access,
        conversion,
        spec,
    };
    Ok((field, i))
}

/// CPython's `formatter_field_name_split`: the first name, then its accessors.
fn split_name(field_name: &str) -> (String, Vec<Access>) {
    let chars: Vec<char> = field_name.chars().collect();
    let first_end = chars
        .iter()
        .position(|c| *c == '.' || *c == '[')
        .unwrap_or(chars.len());
    let name = chars[..first_end].iter().collect();
    let mut access = Vec::new();
    let mut i = first_end;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        let (item, is_attribute) = match c {
            '.' => {
                let from = i;
                while i < chars.len() && chars[i] != '.' && chars[i] != '[' {
                    i += 1;
                }
                (chars[from..i].iter().collect::<String>(), true)
            }
            '[' => {
                let from = i;
                while i < chars.len() && chars[i] != ']' {
                    i += 1;
                }
                if i == chars.len() {
                    access.push(Access::Bad(PyError::value("Missing ']' in format string")));
                    return (name, access);
                }
                i += 1;
                (chars[from..i - 1].iter().collect::<String>(), false)
            }
            _ => {
                access.push(Access::Bad(PyError::value(
                    "Only '.' or '[' may follow ']' in format field specifier",
                )));
                return (name, access);
            }
        };
        if item.is_empty() {
            access.push(Access::Bad(PyError::value(
                "Empty attribute in format string",
            )));
            return (name, access);
        }
        access.push(if is_attribute {
            Access::Attribute(item)
        } else {
            match integer(&item) {
                Ok(Some(n)) => Access::Index(n),
                Ok(None) => Access::Key(item),
                Err(e) => {
                    access.push(Access::Bad(e));
                    return (name, access);
                }
            }
        });
    }
    (name, access)
}

/// CPython's `get_integer`: `None` unless every character is a decimal digit.
fn integer(text: &str) -> Result<Option<usize>, PyError> {
    if text.is_empty() || !text.chars().all(|c| c.is_ascii_digit()) {
        return Ok(None);
    }
    let mut n: usize = 0;
    for c in text.chars() {
        let digit = c as usize - '0' as usize;
        if n > (isize::MAX as usize - digit) / 10 {
            return Err(PyError::value("Too many decimal digits in format string"));
        }
        n = n * 10 + digit;
    }
    Ok(Some(n))
}

impl Field {
    /// Whether the name is positional (`{}`, `{0}`): there are no positional arguments.
    pub fn positional(&self) -> bool {
        self.name.is_empty() && self.access.is_empty()
            || !self.name.is_empty() && self.name.chars().all(|c| c.is_ascii_digit())
    }
}

/// Renders `parts` with `lookup` giving each variable's `str` value; `None` is a `KeyError`.
pub(super) fn render<'v>(
    parts: &[Part],
    lookup: &impl Fn(&str) -> Option<&'v str>,
    out: &mut String,
) -> Result<(), PyError> {
    for part in parts {
        match part {
            Part::Literal(text) => out.push_str(text),
            Part::Broken { error, .. } => return Err(error.clone()),
            Part::Field(field) => {
                let value = field_value(field, lookup)?;
                let converted = match field.conversion {
                    None | Some('s') => value,
                    Some('r') => repr_str(&value),
                    Some('a') => ascii(&repr_str(&value)),
                    Some(other) => {
                        return Err(PyError::value(format!(
                            "Unknown conversion specifier {other}"
                        )));
                    }
                };
                let mut spec = String::new();
                render(&field.spec, lookup, &mut spec)?;
                format_str(&converted, &spec, out)?;
            }
        }
    }
    Ok(())
}

fn field_value<'v>(
    field: &Field,
    lookup: &impl Fn(&str) -> Option<&'v str>,
) -> Result<String, PyError> {
    if field.positional() {
        return Err(PyError {
            kind: "IndexError",
            message: "tuple index out of range".into(),
        });
    }
    let Some(value) = lookup(&field.name) else {
        return Err(PyError {
            kind: "KeyError",
            message: field.name.clone(),
        });
    };
    let mut value = value.to_string();
    for access in &field.access {
        value = match access {
            Access::Bad(e) => return Err(e.clone()),
            Access::Index(n) => match value.chars().nth(*n) {
                Some(c) => c.to_string(),
                None => {
                    return Err(PyError {
                        kind: "IndexError",
                        message: "string index out of range".into(),
                    });
                }
            },
            Access::Key(_) => {
                return Err(PyError {
                    kind: "TypeError",
                    message: "string indices must be integers, not 'str'".into(),
                });
            }
            Access::Attribute(name) => {
                return Err(PyError {
                    kind: "AttributeError",
                    message: format!("'str' object has no attribute {}", repr_str(name)),
                });
            }
        };
    }
    Ok(value)
}

/// Python's `ascii()` of a repr: every non-ASCII character escaped.
fn ascii(repr: &str) -> String {
    let mut out = String::with_capacity(repr.len());
    for c in repr.chars() {
        match c as u32 {
            0..0x80 => out.push(c),
            n @ 0x80..0x100 => out.push_str(&format!("\\x{n:02x}")),
            n @ 0x100..0x10000 => out.push_str(&format!("\\u{n:04x}")),
            n => out.push_str(&format!("\\U{n:08x}")),
        }
    }
    out
}

/// A spec of the format mini-language, as far as a `str` uses it.
struct Spec {
    fill: char,
    align: char,
    width: Option<usize>,
    precision: Option<usize>,
}

/// `format(value, spec)` for a `str`: CPython's `unicode__format__`.
pub(super) fn format_str(value: &str, spec: &str, out: &mut String) -> Result<(), PyError> {
    if spec.is_empty() {
        out.push_str(value);
        return Ok(());
    }
    let spec = parse_spec(spec)?;
    let len = value.chars().count();
    let shown = spec.precision.map_or(len, |p| p.min(len));
    let total = spec.width.map_or(shown, |w| w.max(shown));
    let left = match spec.align {
        '>' => total - shown,
        '^' => (total - shown) / 2,
        _ => 0,
    };
    let right = total - shown - left;
    out.extend(std::iter::repeat_n(spec.fill, left));
    out.extend(value.chars().take(shown));
    out.extend(std::iter::repeat_n(spec.fill, right));
    Ok(())
}

/// CPython's `parse_internal_render_format_spec`, then the checks `format_string_internal`
/// makes for a `str`.
fn parse_spec(spec: &str) -> Result<Spec, PyError> {
    let chars: Vec<char> = spec.chars().collect();
    let is_align = |c: Option<&char>| matches!(c, Some('<' | '>' | '=' | '^'));
    let mut i = 0;
    let (mut fill, mut align, mut fill_given) = (' ', '<', false);
    if is_align(chars.get(1)) {
        (fill, align, fill_given) = (chars[0], chars[1], true);
        i = 2;
    } else if is_align(chars.first()) {
        align = chars[0];
        i = 1;
    }
    let sign = chars
        .get(i)
        .copied()
        .filter(|c| matches!(c, ' ' | '+' | '-'));
    i += usize::from(sign.is_some());
    let no_neg_0 = chars.get(i) == Some(&'z');
    i += usize::from(no_neg_0);
    let alternate = chars.get(i) == Some(&'#');
    i += usize::from(alternate);
    if !fill_given && chars.get(i) == Some(&'0') {
        // The default alignment of a `str` is '<', so '0' only sets the fill.
        fill = '0';
        i += 1;
    }
    let digits = |i: &mut usize| -> Result<Option<usize>, PyError> {
        let from = *i;
        while chars.get(*i).is_some_and(char::is_ascii_digit) {
            *i += 1;
        }
        integer(&chars[from..*i].iter().collect::<String>())
    };
    let width = digits(&mut i)?;
    let mut separator = None;
    if chars.get(i) == Some(&',') {
        separator = Some(',');
        i += 1;
    }
    if chars.get(i) == Some(&'_') {
        if separator.is_some() {
            return Err(PyError::value("Cannot specify both ',' and '_'."));
        }
        separator = Some('_');
        i += 1;
    }
    if chars.get(i) == Some(&',') && separator == Some('_') {
        return Err(PyError::value("Cannot specify both ',' and '_'."));
    }
    let mut precision = None;
    if chars.get(i) == Some(&'.') {
        i += 1;
        precision = digits(&mut i)?;
        if precision.is_none() {
            return Err(PyError::value("Format specifier missing precision"));
        }
    }
    if chars.len() - i > 1 {
        return Err(PyError::value(format!(
            "Invalid format specifier '{spec}' for object of type 'str'"
        )));
    }
    let kind = chars.get(i).copied().unwrap_or('s');
    if let Some(separator) = separator {
        return Err(PyError::value(format!(
            "Cannot specify '{separator}' with {}.",
            code(kind)
        )));
    }
    if kind != 's' {
        return Err(PyError::value(format!(
            "Unknown format code {} for object of type 'str'",
            code(kind)
        )));
    }
    let refused = match sign {
        Some(' ') => Some("Space not allowed in string format specifier"),
        Some(_) => Some("Sign not allowed in string format specifier"),
        None if no_neg_0 => {
            Some("Negative zero coercion (z) not allowed in string format specifier")
        }
        None if alternate => Some("Alternate form (#) not allowed in string format specifier"),
        None if align == '=' => Some("'=' alignment not allowed in string format specifier"),
        None => None,
    };
    if let Some(message) = refused {
        return Err(PyError::value(message));
    }
    Ok(Spec {
        fill,
        align,
        width,
        precision,
    })
}

/// A presentation type as CPython's messages quote it: `'d'`, or `'\xe9'` beyond printable ASCII.
fn code(kind: char) -> String {
    let n = kind as u32;
    if n > 32 && n < 128 {
        format!("'{kind}'")
    } else {
        format!("'\\x{n:x}'")
    }
}
