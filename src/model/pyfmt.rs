//! Numbers written the way Eiger's files write them: Python's `repr` of a
//! float (the shortest string that reads back to the same double:
//! `255.0`, `1.3574000149674248e-05`), and C's `%.12g` with `.0` added to
//! integral values (the header numbers of Eiger's model files:
//! `145.773797371`).

/// The shortest round-trip decimal digits of a finite, non-zero `v` and
/// its decimal exponent: `v = 0.d1d2… × 10^(exp+1)`, i.e. `d1.d2… × 10^exp`.
fn shortest_digits(v: f64) -> (String, i32) {
    let s = format!("{:e}", v.abs());
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    (digits, exp.parse().unwrap_or(0))
}

/// Places `digits` (d1 d2 …, the first before the point at exponent
/// `exp`) in fixed notation, with at least one digit after the point.
fn fixed(digits: &str, exp: i32) -> String {
    let point = exp + 1; // digits before the decimal point
    let mut out = String::new();
    if point <= 0 {
        out.push_str("0.");
        for _ in 0..(-point) {
            out.push('0');
        }
        out.push_str(digits);
    } else {
        let p = point as usize;
        if digits.len() <= p {
            out.push_str(digits);
            for _ in digits.len()..p {
                out.push('0');
            }
            out.push_str(".0");
        } else {
            out.push_str(&digits[..p]);
            out.push('.');
            out.push_str(&digits[p..]);
        }
    }
    out
}

/// A C/Python exponent suffix: `e-05`, `e+16`.
fn exponent(exp: i32) -> String {
    let sign = if exp < 0 { '-' } else { '+' };
    format!("e{sign}{:02}", exp.abs())
}

/// Python's `repr(float)`.
pub fn py_repr(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if v == 0.0 {
        return if v.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    let sign = if v < 0.0 { "-" } else { "" };
    let (digits, exp) = shortest_digits(v);
    // Python switches to exponent notation when the decimal point would
    // sit more than 4 places left of the first digit or past the 16th.
    if (-4..16).contains(&exp) {
        format!("{sign}{}", fixed(&digits, exp))
    } else {
        let mut m = digits[..1].to_owned();
        if digits.len() > 1 {
            m.push('.');
            m.push_str(&digits[1..]);
        }
        format!("{sign}{m}{}", exponent(exp))
    }
}

/// C's `%.{precision}g`.
pub fn c_g(v: f64, precision: usize) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let p = precision.max(1);
    let e = format!("{:.*e}", p - 1, v);
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let x: i32 = exp.parse().unwrap_or(0);
    let strip = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s.to_owned()
        }
    };
    if x < -4 || x >= p as i32 {
        format!("{}{}", strip(mant), exponent(x))
    } else {
        let decimals = (p as i32 - 1 - x).max(0) as usize;
        strip(&format!("{:.*}", decimals, v))
    }
}

/// A header number of Eiger's model files: `%.12g`, with `.0` added when
/// that reads as an integer (`255.0`, `1.0`, `145.773797371`).
pub fn eiger_header(v: f64) -> String {
    let s = c_g(v, 12);
    if s.chars().all(|c| c.is_ascii_digit() || c == '-') {
        format!("{s}.0")
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repr_matches_python() {
        for (v, s) in [
            (10.0, "10.0"),
            (1.3574000149674248e-05, "1.3574000149674248e-05"),
            (8.635300036985427e-05, "8.635300036985427e-05"),
            (0.00028152900631539524, "0.00028152900631539524"),
            (0.0001, "0.0001"),
            (1e-5, "1e-05"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (-0.008857371395664105, "-0.008857371395664105"),
            (123.456, "123.456"),
            (0.5, "0.5"),
            (-2.0, "-2.0"),
            (0.0, "0.0"),
        ] {
            assert_eq!(py_repr(v), s, "{v}");
        }
    }

    #[test]
    fn g12_matches_c() {
        assert_eq!(eiger_header(255.0), "255.0");
        assert_eq!(eiger_header(145.77379737113703), "145.773797371");
        assert_eq!(eiger_header(1.0), "1.0");
        assert_eq!(eiger_header(1.7763568394002505e-17), "1.7763568394e-17");
        assert_eq!(c_g(0.0001, 12), "0.0001");
        assert_eq!(c_g(1e12, 12), "1e+12");
        assert_eq!(c_g(123456789012.0, 12), "123456789012");
        assert_eq!(c_g(-0.5, 12), "-0.5");
        assert_eq!(eiger_header(0.0), "0.0");
    }
}
