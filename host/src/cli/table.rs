//! Names and their descriptions, aligned in two columns, shown as [`printable`] texts.

use gavel::terminal::printable;

pub fn print_table<'a>(rows: impl Iterator<Item = (&'a str, &'a str)>) {
    let rows: Vec<(String, String)> = rows
        .map(|(name, description)| (printable(name), printable(description)))
        .collect();
    let width = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    for (name, description) in rows {
        println!("  {name:width$}  {description}");
    }
}
