//! Batches from a spreadsheet: a CSV file read into the `values` of a job request, one
//! video per row. The header row names the columns: a variable by its name or id, or
//! `external_id` and `title`. UTF-8 with or without a byte order mark; fields separated
//! by commas, semicolons or tabs (whichever the header row uses most), quoted as
//! spreadsheets quote them. An empty cell leaves its variable at the template's content.
//!
//! Problems name what they are about as a job's would, with the column as given:
//! `values[ROW].COLUMN` (`ROW` counts the rows after the header from 0, as `values`
//! does), `header` for the header row, `values` for the file as a whole.
//!
//! Reading is linear in the file: the header may have one column per variable, the
//! `external_id` and `title` columns and [`MAX_EMPTY_COLUMNS`] columns without a name
//! (and is refused beyond that before any row is read), and a column named twice is found
//! through a map.

use std::collections::HashMap;

use reelfarm_domain::error_key::ErrorKey;
use reelfarm_domain::template::{variable_by_key, TemplateVariable};
use serde_json::{json, Map, Value};

use super::request::MAX_VALUES;
use crate::error::FieldError;

/// Columns without a name a header row may have (a spreadsheet's trailing separators).
pub const MAX_EMPTY_COLUMNS: usize = 32;

/// A CSV file read against a template's variables.
#[derive(Debug)]
pub struct Sheet {
    columns: Vec<Column>,
    rows: Vec<Row>,
}

/// What a column of the file fills.
#[derive(Debug, Clone, PartialEq)]
enum Column {
    /// A variable, by id, as the header names it.
    Variable {
        id: String,
        header: String,
    },
    ExternalId,
    Title,
    /// No header and no cell: a spreadsheet's trailing separators.
    Empty,
}

#[derive(Debug)]
struct Row {
    /// The record's row number in the file, the header's being 1, as a spreadsheet
    /// numbers it.
    line: usize,
    cells: Vec<String>,
}

impl Sheet {
    /// Reads `bytes` as a CSV file for a template with `variables`; `Err` lists every
    /// problem found.
    pub fn read(bytes: &[u8], variables: &[TemplateVariable]) -> Result<Sheet, Vec<FieldError>> {
        let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
        let text = std::str::from_utf8(bytes).map_err(|e| {
            let line = bytes[..e.valid_up_to()].iter().filter(|b| **b == b'\n').count() + 1;
            let message = format!("is not UTF-8 text (row {line}); save the sheet as CSV UTF-8");
            vec![FieldError::new("values", ErrorKey::Invalid, message)]
        })?;
        let mut reader = csv::ReaderBuilder::new()
            .delimiter(delimiter(text))
            .has_headers(false)
            .flexible(true)
            .from_reader(text.as_bytes());
        let mut records = reader.records();
        let header = match records.next() {
            Some(Ok(header)) => header,
            _ => {
                return Err(vec![FieldError::new(
                    "values",
                    ErrorKey::Required,
                    "the file is empty: it needs a header row",
                )])
            }
        };
        let most = variables.len() + 2 + MAX_EMPTY_COLUMNS;
        if header.len() > most {
            let message = format!(
                "has {} columns; this template's files have at most {most}: one per variable, external_id, title and \
                 {MAX_EMPTY_COLUMNS} without a name",
                header.len()
            );
            return Err(vec![FieldError::new("header", ErrorKey::Invalid, message)]);
        }
        let mut errors = Vec::new();
        let columns = columns(header.iter().collect(), variables, &mut errors);
        let mut rows = Vec::new();
        for (line, record) in (2..).zip(records) {
            let record = match record {
                Ok(record) => record,
                Err(e) => {
                    let message = format!("cannot be read: {e}");
                    errors.push(FieldError::new(format!("values[{}]", rows.len()), ErrorKey::Invalid, message));
                    break;
                }
            };
            let cells: Vec<String> = record.iter().map(|c| c.trim().to_string()).collect();
            if cells.iter().all(String::is_empty) {
                continue;
            }
            if let Some(extra) = cells.iter().skip(columns.len()).position(|c| !c.is_empty()) {
                let message = format!(
                    "row {line} has a value in column {} but the header names only {} columns",
                    columns.len() + extra + 1,
                    columns.len()
                );
                errors.push(FieldError::new(format!("values[{}]", rows.len()), ErrorKey::Invalid, message));
            }
            for (column, cell) in columns.iter().zip(&cells) {
                if *column == Column::Empty && !cell.is_empty() {
                    let message = format!("row {line} has a value in a column without a name in the header row");
                    errors.push(FieldError::new(format!("values[{}]", rows.len()), ErrorKey::Invalid, message));
                }
            }
            rows.push(Row { line, cells });
        }
        if rows.is_empty() {
            errors.push(FieldError::new("values", ErrorKey::Required, "the file has no rows after its header row"));
        } else if rows.len() > MAX_VALUES {
            let message = format!("the file has {} rows; a job makes at most {MAX_VALUES} videos", rows.len());
            errors.push(FieldError::new("values", ErrorKey::Invalid, message));
        }
        if errors.is_empty() {
            Ok(Sheet { columns, rows })
        } else {
            Err(errors)
        }
    }

    /// How many videos the file asks for.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// The job request's `values`: one element per row.
    pub fn values(&self) -> Vec<Value> {
        self.rows
            .iter()
            .map(|row| {
                let mut variables = Map::new();
                let mut element = json!({});
                for (column, cell) in self.columns.iter().zip(&row.cells).filter(|(_, cell)| !cell.is_empty()) {
                    match column {
                        Column::Variable { id, .. } => {
                            variables.insert(id.clone(), json!(cell));
                        }
                        Column::ExternalId => element["external_id"] = json!(cell),
                        Column::Title => element["title"] = json!(cell),
                        Column::Empty => {}
                    }
                }
                element["template_variables"] = Value::Object(variables);
                element
            })
            .collect()
    }

    /// The header (as given) and the first `n` rows with their row numbers, each as wide
    /// as the header: what the console shows before the file is sent.
    pub fn head(&self, n: usize) -> (Vec<String>, Vec<(usize, Vec<String>)>) {
        let header = self.columns.iter().map(Column::header).collect();
        let rows = self.rows.iter().take(n).map(|row| {
            (row.line, (0..self.columns.len()).map(|i| row.cells.get(i).cloned().unwrap_or_default()).collect())
        });
        (header, rows.collect())
    }

    /// The job's `problems` as the file's: `values[ROW].template_variables.ID` becomes
    /// `values[ROW].COLUMN`, and each row's problem says its row number in the file.
    pub fn rename(&self, problems: Vec<FieldError>) -> Vec<FieldError> {
        problems
            .into_iter()
            .map(|mut problem| {
                let Some((row, rest)) = row_of(&problem.field) else { return problem };
                let Some(line) = self.rows.get(row).map(|r| r.line) else { return problem };
                if let Some(id) = rest.strip_prefix(".template_variables.") {
                    let header = self.columns.iter().find_map(|c| match c {
                        Column::Variable { id: of, header } if id.starts_with(of.as_str()) => Some(header),
                        _ => None,
                    });
                    if let Some(header) = header {
                        problem.field = format!("values[{row}].{header}");
                    }
                }
                problem.message = format!("row {line}: {}", problem.message);
                problem
            })
            .collect()
    }
}

impl Column {
    fn header(&self) -> String {
        match self {
            Column::Variable { header, .. } => header.clone(),
            Column::ExternalId => "external_id".into(),
            Column::Title => "title".into(),
            Column::Empty => String::new(),
        }
    }
}

/// `values[ROW]…` as the row and what follows it.
fn row_of(field: &str) -> Option<(usize, &str)> {
    let rest = field.strip_prefix("values[")?;
    let (row, rest) = rest.split_once(']')?;
    Some((row.parse().ok()?, rest))
}

/// The separator the header row uses most: `,`, `;` or a tab (`,` when it has none).
fn delimiter(text: &str) -> u8 {
    let mut quoted = false;
    let mut counts = [0usize; 3];
    for c in text.chars() {
        match c {
            '"' => quoted = !quoted,
            '\n' | '\r' if !quoted => break,
            ',' if !quoted => counts[0] += 1,
            ';' if !quoted => counts[1] += 1,
            '\t' if !quoted => counts[2] += 1,
            _ => {}
        }
    }
    let most = (0..3).max_by_key(|&i| (counts[i], std::cmp::Reverse(i))).unwrap_or(0);
    [b',', b';', b'\t'][most]
}

/// The header row's columns, each named once.
fn columns(header: Vec<&str>, variables: &[TemplateVariable], errors: &mut Vec<FieldError>) -> Vec<Column> {
    let mut columns: Vec<Column> = Vec::with_capacity(header.len());
    // What each named column fills (a variable's id, or the column itself), and where.
    let mut named: HashMap<String, usize> = HashMap::new();
    for (i, name) in header.iter().map(|n| n.trim()).enumerate() {
        let column = match name.to_ascii_lowercase().as_str() {
            "" => Column::Empty,
            "external_id" => Column::ExternalId,
            "title" => Column::Title,
            _ => match variable_by_key(variables, name) {
                Ok(variable) => Column::Variable { id: variable.id.to_string(), header: name.to_string() },
                Err(problem) => {
                    errors.push(FieldError::new("header", ErrorKey::Invalid, format!("column {}: {problem}", i + 1)));
                    Column::Empty
                }
            },
        };
        let fills = match &column {
            Column::Variable { id, .. } => Some(id.clone()),
            Column::ExternalId | Column::Title => Some(column.header()),
            Column::Empty => None,
        };
        let twice = fills.and_then(|fills| match named.entry(fills) {
            std::collections::hash_map::Entry::Occupied(first) => Some(*first.get()),
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(i);
                None
            }
        });
        if let Some(first) = twice {
            let message = format!("columns {} and {} fill the same {name:?}", first + 1, i + 1);
            errors.push(FieldError::new("header", ErrorKey::Invalid, message));
        }
        columns.push(column);
    }
    columns
}

#[cfg(test)]
mod tests {
    use reelfarm_domain::template::{Requirements, VariableType};
    use uuid::Uuid;

    use super::*;

    const QUOTE: &str = "6f1b0e9a-3c2d-4e5f-8a7b-1c2d3e4f5a6b";
    const AUTHOR: &str = "0a1b2c3d-4e5f-4a7b-8c9d-0e1f2a3b4c5d";

    fn variables() -> Vec<TemplateVariable> {
        let variable = |id: &str, name: &str| TemplateVariable {
            id: Uuid::parse_str(id).unwrap(),
            name: name.into(),
            weight: 0.0,
            kind: VariableType::Text,
            requirements: Requirements::Text { multiline: true, minimum_length: 1, maximum_length: 200 },
            default: String::new(),
            clip_id: "c".into(),
        };
        vec![variable(QUOTE, "Quote"), variable(AUTHOR, "Author")]
    }

    fn read(text: &str) -> Result<Sheet, Vec<String>> {
        Sheet::read(text.as_bytes(), &variables())
            .map_err(|errors| errors.into_iter().map(|e| format!("{}: {}", e.field, e.message)).collect())
    }

    /// A cell's text: separators, quotes and a line break inside it, none at its ends
    /// (white space around a cell is not kept).
    const CELL: &str = "[a-zA-Z0-9,;\"]{1,4}(\n[a-zA-Z0-9,;\"]{1,4})?";
    /// A cell's text, or an empty cell.
    const MAYBE_CELL: &str = "([a-zA-Z0-9,;\"]{1,4}(\n[a-zA-Z0-9,;\"]{1,4})?)?";

    proptest::proptest! {
        /// Any bytes read as a spreadsheet give rows or problems, never a panic.
        #[test]
        fn any_file_settles(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2048)) {
            let _ = Sheet::read(&bytes, &variables());
        }

        /// Rows written as spreadsheets write them (each cell quoted, quotes doubled,
        /// newlines kept) read back as the values they hold.
        #[test]
        fn rows_written_read_back(
            rows in proptest::collection::vec((CELL, MAYBE_CELL), 1..20)
        ) {
            let quoted = |cell: &str| format!("\"{}\"", cell.replace('"', "\"\""));
            let mut text = String::from("Quote,Author\r\n");
            for (quote, author) in &rows {
                text += &format!("{},{}\r\n", quoted(quote), quoted(author));
            }
            let expected: Vec<Value> = rows
                .iter()
                .map(|(quote, author)| {
                    let mut variables = json!({ QUOTE: quote });
                    if !author.is_empty() {
                        variables[AUTHOR] = json!(author);
                    }
                    json!({ "template_variables": variables })
                })
                .collect();
            proptest::prop_assert_eq!(read(&text).unwrap().values(), expected);
        }
    }

    #[test]
    fn rows_become_values_by_name_or_id_with_quotes_bom_and_semicolons() {
        let text = format!(
            "\u{feff}Quote;{AUTHOR};external_id;Title\r\n\"Be; \"\"bold\"\"\nnow\";Ada;7;\r\n;;;\r\n;Alan;;T\r\n"
        );
        let sheet = read(&text).unwrap();
        assert_eq!(sheet.len(), 2, "the row of separators only is skipped");
        assert_eq!(
            sheet.values(),
            [
                json!({ "external_id": "7", "template_variables": { QUOTE: "Be; \"bold\"\nnow", AUTHOR: "Ada" } }),
                json!({ "title": "T", "template_variables": { AUTHOR: "Alan" } }),
            ]
        );
        let (header, rows) = sheet.head(1);
        assert_eq!(header, ["Quote", AUTHOR, "external_id", "title"]);
        assert_eq!((rows.len(), rows[0].0), (1, 2), "the first row, the file's second");
        assert_eq!(rows[0].1, ["Be; \"bold\"\nnow", "Ada", "7", ""]);
        let commas = read("author,quote\nAda,\"a, b\"\n").unwrap();
        assert_eq!(commas.values()[0]["template_variables"][QUOTE], "a, b");
    }

    #[test]
    fn problems_name_the_row_and_the_column() {
        assert_eq!(read("").unwrap_err(), ["values: the file is empty: it needs a header row"]);
        assert_eq!(read("Quote\n").unwrap_err(), ["values: the file has no rows after its header row"]);
        let errors = read("Quote,Price,quote\nx,1,y\n").unwrap_err();
        assert!(errors[0].starts_with("header: column 2: \"Price\" is no variable"), "{errors:?}");
        assert_eq!(errors[1], "header: columns 1 and 3 fill the same \"quote\"");
        assert_eq!(
            read("Quote\nx,y\n").unwrap_err(),
            ["values[0]: row 2 has a value in column 2 but the header names only 1 columns"]
        );
        let bad = Sheet::read(b"Quote\nok\n\xff\n", &variables()).unwrap_err();
        assert_eq!(bad[0].message, "is not UTF-8 text (row 3); save the sheet as CSV UTF-8");
        let many = format!("Quote\n{}", "x\n".repeat(MAX_VALUES + 1));
        assert!(read(&many).unwrap_err()[0].contains("a job makes at most"));
        let twice = read("external_id,Quote,External_ID\nx,y,z\n").unwrap_err();
        assert_eq!(twice, ["header: columns 1 and 3 fill the same \"External_ID\""]);
    }

    #[test]
    fn a_header_of_a_million_columns_is_refused_at_once() {
        let commas = ",".repeat(2_000_000);
        let errors = read(&format!("{commas}\nx\n")).unwrap_err();
        assert_eq!(
            errors,
            ["header: has 2000001 columns; this template's files have at most 36: one per variable, \
                            external_id, title and 32 without a name"]
        );
        let trailing = format!("Quote{}\nx{}\n", ",".repeat(MAX_EMPTY_COLUMNS), ",".repeat(MAX_EMPTY_COLUMNS));
        assert_eq!(read(&trailing).unwrap().len(), 1, "trailing separators are spreadsheets' habit");
    }

    #[test]
    fn an_unknown_column_is_named_briefly() {
        let long = "y".repeat(100_000);
        let errors = read(&format!("{long}\nx\n")).unwrap_err();
        assert!(errors[0].len() < 400, "{} bytes", errors[0].len());
        assert!(errors[0].contains("is no variable of this template (its variables: Quote, Author)"), "{}", errors[0]);
    }

    #[test]
    fn the_jobs_problems_are_renamed_to_the_files_columns() {
        let sheet = read("Author\n\nAda\nAlan\n").unwrap();
        let problem = |field: &str| FieldError::new(field, ErrorKey::Invalid, "is too long");
        let renamed = sheet.rename(vec![
            problem(&format!("values[1].template_variables.{AUTHOR}")),
            problem("values[0].title"),
            problem("options.quality"),
        ]);
        let renamed: Vec<_> = renamed.iter().map(|e| (e.field.as_str(), e.message.as_str())).collect();
        assert_eq!(
            renamed,
            [
                ("values[1].Author", "row 3: is too long"),
                ("values[0].title", "row 2: is too long"),
                ("options.quality", "is too long")
            ]
        );
    }
}
