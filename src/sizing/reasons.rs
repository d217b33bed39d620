//! A plan's reasons, shared between its copies.
//!
//! Composers are handed a copy of a remembered plan for every XR that asks
//! for it (thousands on a platform), and each copy reaches the XR's status.
//! Sizing's reasons are a dozen sentences: the copies share them, and hold
//! only the sentences a composer adds for its own XR.

use std::borrow::Cow;
use std::sync::Arc;

/// The reasons in order, those sizing gave first.
pub(crate) type Iter<'a> =
    std::iter::Chain<std::slice::Iter<'a, String>, std::slice::Iter<'a, String>>;

/// Why a plan is what it is, in the order the decisions were made: those
/// sizing gave, then those added since.
#[derive(Clone, Default)]
pub struct Reasons {
    sized: Arc<[String]>,
    added: Vec<String>,
}

impl Reasons {
    pub fn push(&mut self, reason: String) {
        self.added.push(reason);
    }

    pub fn iter(&self) -> Iter<'_> {
        self.sized.iter().chain(&self.added)
    }

    pub(crate) fn len(&self) -> usize {
        self.sized.len() + self.added.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl From<Vec<String>> for Reasons {
    fn from(reasons: Vec<String>) -> Self {
        Self {
            sized: reasons.into(),
            added: Vec::new(),
        }
    }
}

impl Extend<String> for Reasons {
    fn extend<I: IntoIterator<Item = String>>(&mut self, reasons: I) {
        self.added.extend(reasons);
    }
}

impl<'a> IntoIterator for &'a Reasons {
    type Item = &'a String;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl std::ops::Index<usize> for Reasons {
    type Output = String;

    fn index(&self, i: usize) -> &String {
        match i.checked_sub(self.sized.len()) {
            None => &self.sized[i],
            Some(j) => &self.added[j],
        }
    }
}

/// Equal when they say the same, whichever part holds which sentence.
impl PartialEq for Reasons {
    fn eq(&self, other: &Self) -> bool {
        // Copies of one remembered plan share their sizing sentences.
        if Arc::ptr_eq(&self.sized, &other.sized) {
            return self.added == other.added;
        }
        self.iter().eq(other.iter())
    }
}

impl Eq for Reasons {}

impl std::fmt::Debug for Reasons {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// A list of strings, as the `Vec<String>` it replaces.
impl serde::Serialize for Reasons {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> serde::Deserialize<'de> for Reasons {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<String>::deserialize(deserializer).map(Self::from)
    }
}

impl schemars::JsonSchema for Reasons {
    fn inline_schema() -> bool {
        <Vec<String>>::inline_schema()
    }

    fn schema_name() -> Cow<'static, str> {
        <Vec<String>>::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        <Vec<String>>::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <Vec<String>>::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sized_then_added() -> Reasons {
        let mut reasons = Reasons::from(vec!["a".to_string(), "b".to_string()]);
        reasons.push("c".into());
        reasons.extend(["d".to_string()]);
        reasons
    }

    #[test]
    fn added_reasons_follow_those_of_sizing() {
        let reasons = sized_then_added();
        assert_eq!(reasons.iter().collect::<Vec<_>>(), ["a", "b", "c", "d"]);
        assert_eq!(
            (reasons.len(), &reasons[1], &reasons[2]),
            (4, &"b".to_string(), &"c".to_string())
        );
        assert_eq!(format!("{reasons:?}"), r#"["a", "b", "c", "d"]"#);
    }

    #[test]
    fn reasons_read_and_write_as_a_list_of_strings() {
        let reasons = sized_then_added();
        let json = serde_json::to_value(&reasons).unwrap();
        assert_eq!(json, serde_json::json!(["a", "b", "c", "d"]));
        let read: Reasons = serde_json::from_value(json).unwrap();
        assert_eq!(read, reasons);
        assert_eq!(
            schemars::schema_for!(Reasons),
            schemars::schema_for!(Vec<String>)
        );
    }

    #[test]
    fn a_copy_shares_what_sizing_gave() {
        let reasons = sized_then_added();
        let mut copy = reasons.clone();
        copy.push("e".into());
        assert!(Arc::ptr_eq(&reasons.sized, &copy.sized));
        assert_eq!((reasons.len(), copy.len()), (4, 5));
        assert_ne!(reasons, copy);
    }
}
