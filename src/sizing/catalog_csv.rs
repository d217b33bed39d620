//! How the embedded catalogs (`data/*.csv`) are read: `|`-separated rows
//! under a header, `#` comments, deserialized into typed rows by serde. A
//! malformed row is a bug in the repository, caught by the tests, so reading
//! panics with the row instead of returning an error to users.

use serde::Deserialize;
use serde::de::{DeserializeOwned, Deserializer, Error};

/// Every row of `text`, the catalog `file`.
pub(super) fn rows<T: DeserializeOwned>(file: &str, text: &str) -> Vec<T> {
    csv::ReaderBuilder::new()
        .delimiter(b'|')
        .comment(Some(b'#'))
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes())
        .deserialize()
        .enumerate()
        .map(|(i, row)| row.unwrap_or_else(|e| panic!("{file}: row {}: {e}", i + 1)))
        .collect()
}

/// `yes` or `no`.
pub(super) fn yes_no<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    match String::deserialize(d)?.as_str() {
        "yes" => Ok(true),
        "no" => Ok(false),
        other => Err(D::Error::custom(format!("{other:?} is neither yes nor no"))),
    }
}

/// A `;`-separated list; empty or `-` for none.
pub(super) fn list<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<String, Error: std::fmt::Display>,
{
    match String::deserialize(d)?.as_str() {
        "" | "-" => Ok(Vec::new()),
        items => items
            .split(';')
            .map(|item| T::try_from(item.to_string()).map_err(D::Error::custom))
            .collect(),
    }
}

/// A value, or `-` for none.
pub(super) fn dash_is_none<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<String, Error: std::fmt::Display>,
{
    match String::deserialize(d)? {
        dash if dash == "-" => Ok(None),
        value => T::try_from(value).map(Some).map_err(D::Error::custom),
    }
}
