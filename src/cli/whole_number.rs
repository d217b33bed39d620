//! The parser of every whole-number flag, saying what to write: clap's own
//! says "invalid digit found in string" of `32k` and "0 is not in 1..=64"
//! of 0.

/// A parser of whole numbers from `min` to `max`; `of` names what they
/// count (" of tokens"), for the message.
pub(crate) fn whole_number<T>(
    min: u64,
    max: u64,
    of: &'static str,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: TryFrom<u64> + Clone + Send + Sync + 'static,
{
    move |written| {
        written
            .parse::<u64>()
            .ok()
            .filter(|n| (min..=max).contains(n))
            .and_then(|n| T::try_from(n).ok())
            .ok_or_else(|| format!("use a whole number{of} from {min} to {max}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_the_range_and_says_what_else_to_write() {
        let gpus = whole_number::<u32>(1, 64, " of GPUs");
        assert_eq!(gpus("1"), Ok(1));
        assert_eq!(gpus("64"), Ok(64));
        for written in ["0", "65", "two", "2.0", "32k", "", "18446744073709551616"] {
            assert_eq!(
                gpus(written),
                Err("use a whole number of GPUs from 1 to 64".to_string()),
                "{written:?}"
            );
        }
        // A range wider than the type stops at the type's end.
        let small = whole_number::<u8>(0, 1000, "");
        assert_eq!(small("255"), Ok(255));
        assert!(small("256").is_err());
    }
}
