//! `--format`: the one output-format flag every command shares.
//!
//! A command builds one serialisable value and renders it: `text` for a person, `json` from
//! the value's `Serialize` impl (never hand-listed fields), `csv` where the output is a table
//! (one row per record, the header being the record's field names in declaration order).
//! A command that prints no table refuses `csv` with [`Format::text_or_json`].
//!
//! JSON objects print their keys sorted ([`json_pretty`] goes through [`serde_json::Value`],
//! which keeps keys in a `BTreeMap`), so reordering a struct's fields changes no output.

use std::fmt;
use std::io;

use anyhow::bail;
use serde::Serialize;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};

/// Output format: `--format text|json|csv`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// For a person: the command's report, tables aligned.
    Text,
    /// One JSON document.
    Json,
    /// Comma-separated values with a header line (commands whose output is a table).
    Csv,
    /// A Markdown table for the documentation (`lbsim features`: `docs/parameters.md`).
    Markdown,
    /// compare-mmtests.pl's table (`lbsim compare`).
    Mmtests,
    /// The kernel test robot's (LKP) comparison (`lbsim compare`).
    Lkp,
}

/// The formats of a command whose output is not one table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextOrJson {
    /// `--format text`.
    Text,
    /// `--format json`.
    Json,
}

impl Format {
    /// The flag's spelling.
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Markdown => "markdown",
            Format::Mmtests => "mmtests",
            Format::Lkp => "lkp",
        }
    }

    /// Parses `--format TEXT` for a command that takes only `allowed` (checked after clap, so
    /// the error is one line: "--format `xml`: expected csv or json").
    pub fn one_of(text: &str, allowed: &[Format]) -> anyhow::Result<Format> {
        let text = text.trim();
        match allowed.iter().copied().find(|f| f.name() == text) {
            Some(f) => Ok(f),
            None => {
                let names: Vec<&str> = allowed.iter().map(|f| f.name()).collect();
                bail!("--format `{text}`: expected {}", names.join(" or "))
            }
        }
    }

    /// The format of `command`, whose output is not one table: `csv` is an error.
    pub fn text_or_json(self, command: &str) -> anyhow::Result<TextOrJson> {
        match self {
            Format::Text => Ok(TextOrJson::Text),
            Format::Json => Ok(TextOrJson::Json),
            Format::Csv => {
                bail!("--format csv: `lbsim {command}` prints no table (use text or json)")
            }
            Format::Markdown => {
                bail!("--format markdown: only `lbsim features` writes Markdown (use text or json)")
            }
            Format::Mmtests | Format::Lkp => bail!(
                "--format {}: only `lbsim compare` (and `lbsim sweep` for mmtests) prints that table (use text or json)",
                self.name()
            ),
        }
    }
}

/// `value` as pretty-printed JSON, keys sorted, with a final newline.
pub fn json_pretty<T: Serialize>(value: &T) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(&serde_json::to_value(value)?)? + "\n")
}

/// Writes records as CSV: a header of the first record's field names (declaration order),
/// then one line per record. Numbers print as JSON prints them, `null` as an empty cell; a
/// text cell with a comma, quote or line break is quoted.
pub fn write_csv<T: Serialize>(
    out: &mut impl io::Write,
    records: impl IntoIterator<Item = T>,
) -> io::Result<()> {
    let mut header = false;
    for r in records {
        let fields = fields(&r).map_err(io::Error::other)?;
        if !header {
            let names: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
            writeln!(out, "{}", names.join(","))?;
            header = true;
        }
        let cells: Vec<String> = fields.iter().map(|(_, v)| cell(v)).collect();
        writeln!(out, "{}", cells.join(","))?;
    }
    Ok(())
}

fn fields<T: Serialize>(record: &T) -> serde_json::Result<Vec<(String, serde_json::Value)>> {
    let Fields(f) = serde_json::from_str(&serde_json::to_string(record)?)?;
    Ok(f)
}

fn cell(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(t) if t.contains([',', '"', '\n', '\r']) => {
            format!("\"{}\"", t.replace('"', "\"\""))
        }
        serde_json::Value::String(t) => t.clone(),
        other => other.to_string(),
    }
}

/// A JSON object's fields in the order they were written.
struct Fields(Vec<(String, serde_json::Value)>);

impl<'de> Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Fields, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Fields;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a record (a JSON object)")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
                let mut v = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    v.push(entry);
                }
                Ok(Fields(v))
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Row {
        time_ns: u64,
        name: &'static str,
        ratio: Option<f64>,
    }

    #[test]
    fn csv_keeps_field_order_and_quotes_text() {
        let rows = [
            Row {
                time_ns: 3,
                name: "a,b",
                ratio: Some(0.5),
            },
            Row {
                time_ns: 1,
                name: "c",
                ratio: None,
            },
        ];
        let mut out = Vec::new();
        write_csv(&mut out, &rows).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "time_ns,name,ratio\n3,\"a,b\",0.5\n1,c,\n"
        );
    }

    #[test]
    fn json_keys_are_sorted() {
        let r = Row {
            time_ns: 1,
            name: "x",
            ratio: None,
        };
        assert_eq!(
            json_pretty(&r).unwrap(),
            "{\n  \"name\": \"x\",\n  \"ratio\": null,\n  \"time_ns\": 1\n}\n"
        );
    }

    #[test]
    fn one_of_names_the_allowed_formats() {
        let allowed = [Format::Csv, Format::Json];
        assert_eq!(Format::one_of("json", &allowed).unwrap(), Format::Json);
        assert_eq!(
            Format::one_of("xml", &allowed).unwrap_err().to_string(),
            "--format `xml`: expected csv or json"
        );
    }

    #[test]
    fn csv_is_refused_where_there_is_no_table() {
        assert_eq!(Format::Json.text_or_json("run").unwrap(), TextOrJson::Json);
        assert_eq!(
            Format::Csv.text_or_json("run").unwrap_err().to_string(),
            "--format csv: `lbsim run` prints no table (use text or json)"
        );
    }
}
