//! OpenAI's grader templates: `{{ item.path }}` and `{{ sample.path }}` in a text, parsed when
//! the grader is loaded and filled for each row.

use std::borrow::Cow;

use serde_json::Value;

/// The variables of the `sample` namespace, as OpenAI's graders see a model's output.
const SAMPLE_FIELDS: &[&str] = &["output_text", "output_json", "output_tools", "choices"];

/// A text with its `{{ }}` variables found.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    Variable(Variable),
}

/// `item.a.b[0]` or `sample.output_json.x`: a namespace and a path in it.
#[derive(Debug, Clone, PartialEq)]
struct Variable {
    namespace: Namespace,
    path: Vec<Step>,
    /// As written between the braces, trimmed, for messages.
    written: String,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Namespace {
    Item,
    Sample,
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// Why a template does not parse, with the position in the text (in characters, from 1) where
/// it goes wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("at character {position}: {message}")]
pub struct TemplateError {
    pub position: usize,
    pub message: String,
}

/// The longest text a template fills: a variable may be written many times over, and each
/// time it is filled with the row's value, so a small template and row could otherwise ask for
/// gigabytes.
const MAX_RENDERED: usize = 16 << 20;

/// Why a template has no text for a row, as OpenAI's `invalid_variable_error`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RenderError {
    /// A variable that names nothing in the row.
    #[error("the template variable `{{{{ {0} }}}}` names nothing in this row")]
    Missing(String),
    #[error("the template's text for this row is longer than {} MiB", MAX_RENDERED >> 20)]
    TooLong,
}

impl Template {
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        // Found at a byte, said at its character.
        Template::parse_bytes(text).map_err(|e| TemplateError {
            position: text[..e.position - 1].chars().count() + 1,
            ..e
        })
    }

    /// [`Template::parse`], its error's position the byte's (from 1).
    fn parse_bytes(text: &str) -> Result<Template, TemplateError> {
        let mut parts = Vec::new();
        let mut rest = text;
        let mut offset = 0;
        while let Some(open) = rest.find("{{") {
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_string()));
            }
            let inside = &rest[open + 2..];
            let Some(close) = inside.find("}}") else {
                return Err(TemplateError {
                    position: offset + open + 1,
                    message: "`{{` is not closed by `}}`".into(),
                });
            };
            let at = offset + open + 2;
            parts.push(Part::Variable(Variable::parse(&inside[..close], at)?));
            let consumed = open + 2 + close + 2;
            rest = &rest[consumed..];
            offset += consumed;
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_string()));
        }
        Ok(Template { parts })
    }

    /// The text with each variable filled from `item` and `sample`: a string as it is, `null`
    /// as nothing, any other value as its JSON text.
    pub fn render(&self, item: &Value, sample: &Value) -> Result<String, RenderError> {
        let mut out = String::new();
        for part in &self.parts {
            let piece = match part {
                Part::Text(text) => Cow::Borrowed(text.as_str()),
                Part::Variable(variable) => variable.text(item, sample)?,
            };
            if out.len() + piece.len() > MAX_RENDERED {
                return Err(RenderError::TooLong);
            }
            out.push_str(&piece);
        }
        Ok(out)
    }
}

impl Variable {
    /// `inside` is the text between `{{` and `}}`, starting at byte `at` of the template.
    fn parse(inside: &str, at: usize) -> Result<Variable, TemplateError> {
        let lead = inside.len() - inside.trim_start().len();
        let written = inside.trim();
        let fail = |message: String| TemplateError {
            position: at + lead + 1,
            message,
        };
        let (namespace, rest) = match written.split_once('.') {
            Some(("item", rest)) => (Namespace::Item, rest),
            Some(("sample", rest)) => (Namespace::Sample, rest),
            _ => {
                return Err(fail(format!(
                    "`{{{{ {written} }}}}` is not `item.NAME` or `sample.NAME`: \
                     only the item and sample namespaces exist"
                )));
            }
        };
        let mut path = Vec::new();
        for segment in rest.split('.') {
            let (key, mut indices) = match segment.find('[') {
                Some(bracket) => (&segment[..bracket], &segment[bracket..]),
                None => (segment, ""),
            };
            if key.is_empty() && (path.is_empty() || indices.is_empty()) {
                return Err(fail(format!("`{written}` has an empty name in its path")));
            }
            if !key.is_empty() {
                path.push(Step::Key(key.to_string()));
            }
            while !indices.is_empty() {
                let index = indices
                    .strip_prefix('[')
                    .and_then(|s| s.split_once(']'))
                    .and_then(|(n, after)| n.parse::<usize>().ok().map(|n| (n, after)));
                let Some((n, after)) = index else {
                    return Err(fail(format!(
                        "`{written}`: an index is a number in brackets, as in `[0]`"
                    )));
                };
                path.push(Step::Index(n));
                indices = after;
            }
        }
        if namespace == Namespace::Sample
            && let Some(Step::Key(first)) = path.first()
            && !SAMPLE_FIELDS.contains(&first.as_str())
        {
            return Err(fail(format!(
                "`sample.{first}` does not exist: the sample has {}",
                SAMPLE_FIELDS.join(", ")
            )));
        }
        Ok(Variable {
            namespace,
            path,
            written: written.to_string(),
        })
    }

    /// The value the variable names in `item` or `sample`, as text.
    fn text<'v>(&self, item: &'v Value, sample: &'v Value) -> Result<Cow<'v, str>, RenderError> {
        let mut at = match self.namespace {
            Namespace::Item => item,
            Namespace::Sample => sample,
        };
        for step in &self.path {
            let next = match step {
                // `list.0` indexes a list as `list[0]` does.
                Step::Key(key) => match at {
                    Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
                    _ => at.get(key.as_str()),
                },
                Step::Index(i) => at.get(*i),
            };
            at = next.ok_or_else(|| RenderError::Missing(self.written.clone()))?;
        }
        Ok(match at {
            Value::String(s) => Cow::Borrowed(s),
            Value::Null => Cow::Borrowed(""),
            other => Cow::Owned(other.to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(text: &str, item: Value, sample: Value) -> Result<String, String> {
        Template::parse(text)
            .map_err(|e| e.to_string())?
            .render(&item, &sample)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn variables_fill_from_item_and_sample_and_text_stays() {
        let item = json!({"answer": "Paris", "n": 3, "list": ["a", {"b": true}], "none": null});
        let sample = json!({"output_text": "It is Paris.", "output_json": {"x": [1, 2]}});
        assert_eq!(
            render(
                "{{item.answer}} / {{ sample.output_text }} / {{item.n}}",
                item.clone(),
                sample.clone()
            ),
            Ok("Paris / It is Paris. / 3".into())
        );
        assert_eq!(
            render(
                "{{item.list[1].b}}{{item.list.0}}{{sample.output_json.x}}[{{item.none}}]",
                item.clone(),
                sample.clone()
            ),
            Ok("truea[1,2][]".into())
        );
        assert_eq!(
            render("{{item.missing}}", item.clone(), sample.clone()),
            Err("the template variable `{{ item.missing }}` names nothing in this row".into())
        );
        assert_eq!(
            render("no braces {", item, sample),
            Ok("no braces {".into())
        );
    }

    /// A variable written many times over a large value fills no more than the bound.
    #[test]
    fn a_text_past_the_bound_is_refused_not_built() {
        let item = json!({"a": "x".repeat(100_000)});
        let many = Template::parse(&"{{item.a}}".repeat(20_000)).unwrap();
        assert_eq!(many.render(&item, &json!({})), Err(RenderError::TooLong));
        let some = Template::parse(&"{{item.a}}".repeat(100)).unwrap();
        assert_eq!(some.render(&item, &json!({})).unwrap().len(), 10_000_000);
    }

    #[test]
    fn a_bad_template_is_refused_at_its_position() {
        let error = |text: &str| Template::parse(text).unwrap_err().to_string();
        assert_eq!(
            error("ab {{ answer }}"),
            "at character 7: `{{ answer }}` is not `item.NAME` or `sample.NAME`: only the item \
             and sample namespaces exist"
        );
        assert_eq!(
            error("x {{item.a"),
            "at character 3: `{{` is not closed by `}}`"
        );
        assert_eq!(
            error("{{sample.text}}"),
            "at character 3: `sample.text` does not exist: the sample has output_text, \
             output_json, output_tools, choices"
        );
        assert_eq!(
            error("{{item.a[x]}}"),
            "at character 3: `item.a[x]`: an index is a number in brackets, as in `[0]`"
        );
        assert_eq!(
            error("{{item..a}}"),
            "at character 3: `item..a` has an empty name in its path"
        );
        // Counted in characters, not in the bytes of their UTF-8.
        assert!(error("ééé{{nope}}").starts_with("at character 6: "));
        assert!(error("日本 {{item.a").starts_with("at character 4: "));
    }
}
