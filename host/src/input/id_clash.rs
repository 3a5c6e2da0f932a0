//! Ids rows share without meaning to: a row without an id takes its 0-based index, as
//! letta-evals gives it, and when that is another row's id the two rows are one sample. Found
//! as the rows are read, keeping only what a later row could clash with; each format says what
//! a clash means to it (a CSV file is refused, a JSONL row warned of).

use std::collections::BTreeMap;

/// A row's id, as far as a clash can be found from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowId {
    /// The row has none: it takes its index.
    Missing,
    /// A whole number, which a row without an id may take.
    Whole(i64),
    /// Text, or a number no index can be.
    Other,
}

/// A row without an id whose index is another row's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clash {
    /// The index the row without an id takes, which the other row gives as its id.
    pub index: i64,
    /// The line of the row without an id.
    pub unnamed: usize,
    /// The line of the row giving the id.
    pub named: usize,
    /// Whether the row giving the id is the one read second.
    pub named_second: bool,
}

/// The rows read so far, as far as a later row could clash with them.
#[derive(Debug, Default)]
pub struct Clashes {
    /// Whole-number ids above the index of the row last read (those a later row without an id
    /// could take), each with the line of the first row giving it.
    ahead: BTreeMap<i64, usize>,
    /// The rows read without an id, as runs of consecutive indexes on consecutive lines.
    unnamed: Vec<Unnamed>,
}

/// Rows without an id at the indexes `first..=last`, the first on `line`, each next on the next
/// line.
#[derive(Debug)]
struct Unnamed {
    first: i64,
    last: i64,
    line: usize,
}

impl Clashes {
    /// Notes the row at `index` on `line`, its id `id`, read after every row noted before (each
    /// at a lower index, on an earlier line): its clash with an earlier row. A row without an id
    /// is paired with the first earlier row giving its index; a row giving an id, with the
    /// earlier row without one that takes it.
    pub fn note(&mut self, index: i64, line: usize, id: RowId) -> Option<Clash> {
        while let Some(entry) = self.ahead.first_entry() {
            if *entry.key() >= index {
                break;
            }
            entry.remove();
        }
        match id {
            RowId::Missing => {
                if let Some(&named) = self.ahead.get(&index) {
                    return Some(Clash {
                        index,
                        unnamed: line,
                        named,
                        named_second: false,
                    });
                }
                match self.unnamed.last_mut() {
                    Some(run) if run.last + 1 == index && run.line_of(run.last) + 1 == line => {
                        run.last = index;
                    }
                    _ => self.unnamed.push(Unnamed {
                        first: index,
                        last: index,
                        line,
                    }),
                }
            }
            RowId::Whole(id) if id > index => {
                self.ahead.entry(id).or_insert(line);
            }
            RowId::Whole(id) if id < index => {
                let at = self.unnamed.partition_point(|run| run.last < id);
                let run = self.unnamed.get(at)?;
                if run.first <= id {
                    return Some(Clash {
                        index: id,
                        unnamed: run.line_of(id),
                        named: line,
                        named_second: true,
                    });
                }
            }
            RowId::Whole(_) | RowId::Other => {}
        }
        None
    }
}

impl Unnamed {
    /// The line of the row at `index`, one of the run's.
    fn line_of(&self, index: i64) -> usize {
        self.line + (index - self.first) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The clashes found noting `rows`, each its index, line and id.
    fn clashes(rows: &[(i64, usize, RowId)]) -> Vec<Clash> {
        let mut clashes = Clashes::default();
        rows.iter()
            .filter_map(|&(index, line, id)| clashes.note(index, line, id))
            .collect()
    }

    #[test]
    fn a_row_without_an_id_clashes_with_rows_giving_its_index_before_or_after_it() {
        use RowId::{Missing, Other, Whole};
        let clash = |index, unnamed, named, named_second| Clash {
            index,
            unnamed,
            named,
            named_second,
        };
        // Lines apart from indexes, as a CSV file's rows are (a header, a cell over two lines).
        assert_eq!(
            clashes(&[
                (0, 2, Whole(2)),
                (1, 3, Missing),
                (2, 5, Missing),
                (3, 6, Whole(1)),
                (4, 7, Whole(1)),
                (5, 8, Other),
            ]),
            [
                clash(2, 5, 2, false),
                clash(1, 3, 6, true),
                clash(1, 3, 7, true)
            ]
        );
        // Only the first earlier row giving an index is paired; an id a row gives as its own
        // index, or no later row can take, is none of a clash.
        assert_eq!(
            clashes(&[
                (0, 1, Whole(3)),
                (1, 2, Whole(1)),
                (2, 3, Whole(3)),
                (3, 4, Missing),
                (4, 5, Whole(-1)),
            ]),
            [clash(3, 4, 1, false)]
        );
        // Runs of rows without an id break where their lines do, and each row's line is kept.
        assert_eq!(
            clashes(&[
                (0, 2, Missing),
                (1, 4, Missing),
                (2, 5, Missing),
                (3, 6, Whole(2)),
                (4, 7, Whole(1)),
                (5, 8, Whole(0)),
            ]),
            [
                clash(2, 5, 6, true),
                clash(1, 4, 7, true),
                clash(0, 2, 8, true)
            ]
        );
    }
}
