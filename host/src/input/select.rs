//! Which items of a dataset a run grades: `--filter`, `max_samples`, and those `--resume`
//! skips, selected in the dataset's order.

use serde::Deserialize;

use crate::input::dataset::{Item, ItemError, Items, parse_id};
use crate::input::sample::{RawId, SampleId};
use crate::input::shard::{Shard, shard_of};

/// Which items of the stream to grade.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Grade at most this many (after filtering); letta-evals' `max_samples` (0 = no limit).
    pub max_samples: Option<u64>,
    /// Keep items whose id or tags match any filter (`id:X`, `tag:Y`, or a bare value for
    /// either).
    pub filters: Vec<Filter>,
    /// Skip this many selected items (they are in `results.jsonl` already).
    pub skip: u64,
    /// `--shard`: of the items selected by the filters and `max_samples`, only those whose id
    /// hashes to this shard.
    pub shard: Option<Shard>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    Id(String),
    Tag(String),
    Either(String),
}

impl std::fmt::Display for Filter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Filter::Id(id) => write!(f, "id:{id}"),
            Filter::Tag(tag) => write!(f, "tag:{tag}"),
            Filter::Either(value) => f.write_str(value),
        }
    }
}

impl Filter {
    pub fn parse(text: &str) -> Filter {
        if let Some(id) = text.strip_prefix("id:") {
            Filter::Id(id.to_string())
        } else if let Some(tag) = text.strip_prefix("tag:") {
            Filter::Tag(tag.to_string())
        } else {
            Filter::Either(text.to_string())
        }
    }

    fn matches(&self, id: &str, tags: &[String]) -> bool {
        match self {
            Filter::Id(want) => want == id,
            Filter::Tag(want) => tags.iter().any(|t| t == want),
            Filter::Either(want) => want == id || tags.iter().any(|t| t == want),
        }
    }
}

#[derive(Deserialize)]
struct IdTags<'a> {
    #[serde(default, borrow)]
    sample_id: Option<RawId<'a>>,
    #[serde(default, borrow)]
    id: Option<RawId<'a>>,
    #[serde(default)]
    tags: Option<Vec<String>>,
}

/// The selected items of a stream, in order.
pub struct Selected {
    items: Items,
    selection: Selection,
    /// Items selected by the filters, whichever shard holds them: `max_samples` counts them.
    seen: u64,
    /// Items selected, of this shard.
    taken: u64,
    /// Items taken already and returned again before the rest ([`Selected::again`]).
    again: std::collections::VecDeque<Result<Item, ItemError>>,
}

impl Selected {
    pub fn new(items: Items, selection: Selection) -> Selected {
        Selected {
            items,
            selection,
            seen: 0,
            taken: 0,
            again: std::collections::VecDeque::new(),
        }
    }

    /// These selected items, `items` first: items this selection returned last, read again
    /// without reading the stream again.
    pub fn again(mut self, items: impl IntoIterator<Item = Result<Item, ItemError>>) -> Selected {
        let mut again: std::collections::VecDeque<_> = items.into_iter().collect();
        again.append(&mut self.again);
        self.again = again;
        self
    }

    /// Once every item is read, the dataset's rows that no recorded run was joined to, when
    /// every item was selected (no filter, `max_samples`, shard or skip leaving rows unread).
    pub fn rows_without_run(&self) -> Option<(&std::path::Path, Vec<(usize, &SampleId)>)> {
        let Selection {
            max_samples,
            filters,
            skip,
            shard,
        } = &self.selection;
        let all = max_samples.is_none_or(|max| max == 0)
            && filters.is_empty()
            && *skip == 0
            && shard.is_none();
        all.then(|| self.items.rows_without_run()).flatten()
    }

    /// Whether every item is in memory already, so that reading them never waits.
    pub fn held(&self) -> bool {
        self.items.held()
    }

    /// The place among the selected items (its line in `results.jsonl`) of the item
    /// [`Selected::next_item`] returned last.
    pub fn position(&self) -> u64 {
        self.taken.saturating_sub(1)
    }

    fn limit_reached(&self) -> bool {
        match self.selection.max_samples {
            Some(max) if max > 0 => self.seen >= max,
            _ => false,
        }
    }

    /// The next selected item not to be skipped; `Err` for an item that cannot be read.
    pub fn next_item(&mut self) -> Option<Result<Item, ItemError>> {
        if let Some(again) = self.again.pop_front() {
            return Some(again);
        }
        loop {
            let next = self.next_of_any_shard()?;
            let held = (self.selection.shard)
                .is_none_or(|shard| shard_of_next(&next, shard.count) == shard.index);
            if !held {
                continue;
            }
            self.taken += 1;
            if self.selection.skip > 0 {
                self.selection.skip -= 1;
                continue;
            }
            return Some(next);
        }
    }

    /// The next item the filters and `max_samples` select, whichever shard holds it.
    pub fn next_of_any_shard(&mut self) -> Option<Result<Item, ItemError>> {
        loop {
            if self.limit_reached() {
                return None;
            }
            let next = self.items.next_item()?;
            if let Ok(item) = &next
                && !self.selection.filters.is_empty()
                && !self.selected(item)
            {
                continue;
            }
            self.seen += 1;
            return Some(next);
        }
    }

    fn selected(&self, item: &Item) -> bool {
        // An unreadable row, or one whose id cannot be read, is kept so that it is reported,
        // not silently dropped.
        let Some((id, fields)) = id_of(item) else {
            return true;
        };
        let row_tags = if item.run.is_some() {
            serde_json::from_str::<IdTags>(&item.row.text)
                .ok()
                .and_then(|f| f.tags)
        } else {
            fields.tags
        };
        let tags = row_tags.unwrap_or_default();
        self.selection.filters.iter().any(|f| f.matches(&id, &tags))
    }
}

/// The shard of `count` that grades `next`: the one its id hashes to, or, when its id cannot be
/// read, its line's 0-based index as text; an item that cannot be read at all is
/// the first shard's, which reports it.
pub fn shard_of_next(next: &Result<Item, ItemError>, count: u32) -> u32 {
    match next {
        Ok(item) => shard_of(
            &result_id(item).unwrap_or_else(|| item.line_id().to_string()),
            count,
        ),
        Err(_) => 0,
    }
}

/// The id of `item` as results.jsonl writes it; `None` when the row or its id cannot be read.
pub fn result_id(item: &Item) -> Option<String> {
    id_of(item).map(|(id, _)| id)
}

/// The id of `item` as results.jsonl writes it, parsed as the row's sample is (so that `id:café`
/// matches `"caf\u00e9"` and `id:100` matches `100.0`), with the fields it was read from;
/// `None` when the row or its id cannot be read.
fn id_of(item: &Item) -> Option<(String, IdTags<'_>)> {
    let source = item.run.as_ref().unwrap_or(&item.row);
    let fields = serde_json::from_str::<IdTags>(&source.text).ok()?;
    let id = match fields.sample_id.or(fields.id).map(parse_id) {
        Some(Ok(id)) => id.to_string(),
        Some(Err(_)) => return None,
        None => item.line_id().to_string(),
    };
    Some((id, fields))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::dataset::Reading;

    #[test]
    fn items_given_again_come_first_then_the_rest_of_the_stream() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rows.jsonl");
        let rows: String = (1..=4).map(|i| format!("{{\"id\": {i}}}\n")).collect();
        std::fs::write(&path, rows).unwrap();
        let ids = |selected: &mut Selected| {
            std::iter::from_fn(|| selected.next_item())
                .map(|item| result_id(&item.unwrap()).unwrap())
                .collect::<Vec<_>>()
        };
        let mut selected = Selected::new(
            Items::open(&path, &[], Reading::default()).unwrap(),
            Selection::default(),
        );
        let read: Vec<_> = (0..3).map(|_| selected.next_item().unwrap()).collect();
        let mut selected = selected.again(read.into_iter().skip(1));
        assert_eq!(ids(&mut selected), ["2", "3", "4"]);
    }
}
