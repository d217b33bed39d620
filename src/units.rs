//! Quantities (`16Gi`, `500M`) and durations (`500ms`, `2h`, `1d`) as users
//! write them in XR specs. Kubernetes types carry them as strings; the
//! composers need numbers to compare sizes and to fill integer fields such
//! as an autoscaler's stabilization window.

/// Bytes in one GiB.
pub(crate) const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// The value of a Kubernetes quantity (`16Gi`, `17G`, `500m`, `1.5`), or an
/// error saying what a quantity looks like.
pub(crate) fn parse_quantity(q: &str) -> Result<f64, String> {
    let s = q.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{q:?} is not a quantity; write one like 16Gi, 40G or 500Mi"))?;
    let factor = match suffix {
        "" => 1.0,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024.0f64.powi(2),
        "Gi" => 1024.0f64.powi(3),
        "Ti" => 1024.0f64.powi(4),
        "Pi" => 1024.0f64.powi(5),
        "Ei" => 1024.0f64.powi(6),
        _ => {
            return Err(format!(
                "{q:?} has an unknown unit {suffix:?}; use Ki, Mi, Gi, Ti (or k, M, G, T)"
            ));
        }
    };
    Ok(value * factor)
}

/// Seconds in a duration such as `500ms`, `10s`, `5m`, `2h`, `1d` or
/// `1h30m`; a bare number means seconds.
pub(crate) fn parse_duration_seconds(d: &str) -> Result<f64, String> {
    let invalid = || format!("{d:?} is not a duration; write one like 500ms, 30s, 5m, 2h or 1d");
    let s = d.trim();
    if s.is_empty() {
        return Err(invalid());
    }
    if let Ok(seconds) = s.parse::<f64>() {
        return Ok(seconds);
    }
    let mut total = 0.0;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(invalid)?;
        if digits == 0 {
            return Err(invalid());
        }
        let value: f64 = rest[..digits].parse().map_err(|_| invalid())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let factor = match &rest[..unit_len] {
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "d" => 86400.0,
            _ => return Err(invalid()),
        };
        total += value * factor;
        rest = &rest[unit_len..];
    }
    Ok(total)
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
        ];
        for (q, want) in cases {
            assert_eq!(parse_quantity(q).unwrap(), want, "{q}");
        }
        assert_eq!(
            parse_quantity("16GB").unwrap_err(),
            "\"16GB\" has an unknown unit \"GB\"; use Ki, Mi, Gi, Ti (or k, M, G, T)"
        );
        assert!(parse_quantity("lots").is_err());
    }

    #[test]
    fn durations() {
        let cases = [
            ("500ms", 0.5),
            ("10s", 10.0),
            ("5m", 300.0),
            ("2h", 7200.0),
            ("1d", 86400.0),
            ("1h30m", 5400.0),
            ("45", 45.0),
        ];
        for (d, want) in cases {
            assert_eq!(parse_duration_seconds(d).unwrap(), want, "{d}");
        }
        for bad in ["", "soon", "5x", "m5"] {
            assert!(parse_duration_seconds(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn whole_gib() {
        assert_eq!(gib_quantity(14.96), "15Gi");
        assert_eq!(gib_quantity(0.2), "1Gi");
    }
}
