//! Quantities (`16Gi`, `500M`) and durations (`500ms`, `2h`) as users
//! write them in XR specs. Kubernetes types carry them as strings; the
//! composers need numbers to compare sizes and to fill integer fields such
//! as an autoscaler's stabilization window.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube_quantity::ParsedQuantity;

/// Bytes in one GiB.
pub(crate) const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// The value of a Kubernetes quantity (`16Gi`, `17G`, `500m`, `1e3`,
/// `+1Gi`), read as the API server reads it (kube_quantity), or an error
/// saying what a quantity looks like. Every quantity in our specs is a size,
/// a count of CPUs or bytes, so a negative one is refused as well.
pub(crate) fn parse_quantity(q: &str) -> Result<f64, String> {
    let quantity = Quantity(q.trim().to_string());
    ParsedQuantity::try_from(&quantity)
        .ok()
        .and_then(|p| p.to_bytes_f64())
        .filter(|value| *value >= 0.0)
        .ok_or_else(|| {
            format!(
                "{} is not a quantity; write one like 16Gi, 40G or 500Mi",
                crate::quote::shown(q)
            )
        })
}

/// A duration as Go writes one (`500ms`, `30s`, `5m`, `1h30m`), the form
/// Kubernetes and Crossplane read: kube_core parses it.
pub(crate) fn parse_duration(d: &str) -> Result<kube_core::Duration, String> {
    let s = d.trim();
    // kube_core reads "" as zero; Go refuses it.
    (!s.is_empty())
        .then(|| s.parse().ok())
        .flatten()
        .ok_or_else(|| {
            format!(
                "{} is not a duration; write one like 500ms, 30s, 5m or 1h30m",
                crate::quote::shown(d)
            )
        })
}

/// Seconds in a duration (see [`parse_duration`]); negative ones are below 0.
pub(crate) fn parse_duration_seconds(d: &str) -> Result<f64, String> {
    let duration = parse_duration(d)?;
    let seconds = std::time::Duration::from(duration).as_secs_f64();
    Ok(if duration.is_negative() {
        -seconds
    } else {
        seconds
    })
}

/// Seconds in a duration that must be above zero (a timeout, a latency
/// objective, a lifetime), or an error naming `field`.
pub(crate) fn positive_duration_seconds(field: &str, d: &str) -> Result<f64, String> {
    let seconds = parse_duration_seconds(d).map_err(|e| format!("{field}: {e}"))?;
    if seconds > 0.0 {
        Ok(seconds)
    } else {
        Err(format!(
            "{field} is {}; use a duration above zero, such as 500ms, 30s or 1h, or omit it",
            crate::quote::shown(d)
        ))
    }
}

/// `seconds` (written `written` at `field`) in the whole seconds, at least
/// `least`, that `whose` counts, with a note when rounding changes them.
pub(crate) fn whole_seconds(
    field: &str,
    written: &str,
    seconds: f64,
    least: i64,
    whose: &str,
    notes: &mut Vec<String>,
) -> i64 {
    let whole = (seconds.round() as i64).max(least);
    if whole as f64 != seconds {
        notes.push(format!(
            "{field} {written} is rounded to {whole}s: {whose} counts whole seconds"
        ));
    }
    whole
}

/// GiB rounded up to a whole number, at least 1, as a quantity (`18Gi`).
pub(crate) fn gib_quantity(gib: f64) -> String {
    format!("{}Gi", gib.ceil().max(1.0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities() {
        let cases = [
            ("16Gi", 16.0 * GIB),
            ("1.5Gi", 1.5 * GIB),
            ("17G", 17e9),
            ("500m", 0.5),
            ("30", 30.0),
            ("512Mi", 512.0 * 1024.0 * 1024.0),
            ("1e3", 1000.0),
            ("+1Gi", GIB),
        ];
        for (q, want) in cases {
            assert_eq!(parse_quantity(q).unwrap(), want, "{q}");
        }
        assert_eq!(
            parse_quantity("16GB").unwrap_err(),
            "\"16GB\" is not a quantity; write one like 16Gi, 40G or 500Mi"
        );
        assert!(parse_quantity("lots").is_err());
        assert!(parse_quantity("-16Gi").is_err());
    }

    #[test]
    fn durations() {
        let cases = [
            ("500ms", 0.5),
            ("10s", 10.0),
            ("5m", 300.0),
            ("2h", 7200.0),
            ("1h30m", 5400.0),
            ("1.5s", 1.5),
            ("0", 0.0),
        ];
        for (d, want) in cases {
            assert_eq!(parse_duration_seconds(d).unwrap(), want, "{d}");
        }
        // Go reads no days and no bare numbers: neither does the API server.
        for bad in ["", "soon", "5x", "m5", "1d", "45"] {
            assert!(parse_duration_seconds(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn whole_gib() {
        assert_eq!(gib_quantity(14.96), "15Gi");
        assert_eq!(gib_quantity(0.2), "1Gi");
    }
}
