//! Where each key and value of a YAML document is: a dotted field path (`graders.x.function`,
//! `items[2]`) to its line and column, so that a mistake found after parsing (an unknown grader
//! name, a metric key the gate cannot find) is reported where it was written.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

/// Line and column (1-based) of a node.
pub type At = (u64, u64);

/// The positions of a document's keys and values, by field path.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Positions {
    /// (path, where its key is, where its value is), in document order.
    entries: Vec<(String, At, At)>,
}

impl Positions {
    /// The positions in YAML `text`; none when it does not parse (its parse error says where).
    pub fn of(text: &str) -> Positions {
        let mut positions = Positions::default();
        if let Ok(root) = serde_saphyr::from_str::<Spanned<Node>>(text) {
            positions.walk(String::new(), &root.value);
        }
        positions
    }

    /// Where the key of `path` is written, if it is.
    pub fn key(&self, path: &str) -> Option<At> {
        self.entries
            .iter()
            .find(|(p, _, _)| p == path)
            .map(|(_, key, _)| *key)
    }

    /// Where the value at `path` is written, else its closest enclosing path's.
    pub fn value(&self, path: &str) -> Option<At> {
        let mut path = path;
        loop {
            if let Some((_, _, value)) = self.entries.iter().find(|(p, _, _)| p == path) {
                return Some(*value);
            }
            path = &path[..path.rfind(['.', '['])?];
        }
    }

    fn walk(&mut self, prefix: String, node: &Node) {
        let children: Vec<(String, At, &Spanned<Node>)> = match node {
            Node::Map(entries) => entries
                .iter()
                .map(|(key, value)| {
                    let path = if prefix.is_empty() {
                        key.value.clone()
                    } else {
                        format!("{prefix}.{}", key.value)
                    };
                    (path, at(&key.referenced), value)
                })
                .collect(),
            Node::Seq(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| (format!("{prefix}[{i}]"), at(&item.referenced), item))
                .collect(),
            Node::Leaf => Vec::new(),
        };
        for (path, key, value) in children {
            self.entries
                .push((path.clone(), key, at(&value.referenced)));
            self.walk(path, &value.value);
        }
    }
}

fn at(location: &serde_saphyr::Location) -> At {
    (location.line(), location.column())
}

/// A YAML node with its children's positions; scalars are not kept.
enum Node {
    Map(Vec<(Spanned<String>, Spanned<Node>)>),
    Seq(Vec<Spanned<Node>>),
    Leaf,
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Node, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML node")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<Key>>()? {
            let value = map.next_value::<Spanned<Node>>()?;
            let key = Spanned::new(key.value.0, key.referenced, key.defined);
            entries.push((key, value));
        }
        Ok(Node::Map(entries))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Node>>()? {
            items.push(item);
        }
        Ok(Node::Seq(items))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Node, E> {
        Ok(Node::Leaf)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Node, E> {
        Ok(Node::Leaf)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Node, E> {
        Ok(Node::Leaf)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Node, E> {
        Ok(Node::Leaf)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Node, E> {
        Ok(Node::Leaf)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Leaf)
    }
    fn visit_none<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Leaf)
    }
}

/// A mapping key as text, whatever its scalar type.
struct Key(String);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key, D::Error> {
        // As written: `y`, `on` and `1` are keys of these names (PyYAML reads `y` as text).
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl Visitor<'_> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a scalar key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
        Ok(Key(v.to_string()))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Key, E> {
        Ok(Key(v.to_string()))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Key, E> {
        Ok(Key(v.to_string()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Key, E> {
        Ok(Key(v.to_string()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Key, E> {
        Ok(Key(v.to_string()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Key, E> {
        Ok(Key("null".to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_find_their_values_and_fall_back_to_the_enclosing_one() {
        let text = "name: s\ngraders:\n  correct:\n    kind: tool\n    function: containz\nitems:\n  - a\n  - b: 1\n";
        let p = Positions::of(text);
        assert_eq!(p.value("graders.correct.function"), Some((5, 15)));
        assert_eq!(p.value("graders.correct"), Some((4, 5)));
        assert_eq!(p.value("items[1].b"), Some((8, 8)));
        // Not written: where the closest enclosing field is.
        assert_eq!(p.value("graders.correct.extractor"), Some((4, 5)));
        assert_eq!(p.value("gate"), None);
        assert_eq!(Positions::of("a: [unclosed"), Positions::default());
        assert_eq!(p.key("graders.correct.function"), Some((5, 5)));
        assert_eq!(p.key("graders.correct.extractor"), None);
    }
}
