//! Names and their descriptions, aligned in two columns.

pub fn print_table<'a>(rows: impl Iterator<Item = (&'a str, &'a str)> + Clone) {
    let width = rows.clone().map(|(n, _)| n.len()).max().unwrap_or(0);
    for (name, description) in rows {
        println!("  {name:width$}  {description}");
    }
}
