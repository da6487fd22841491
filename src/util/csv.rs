//! The two halves of CSV that the project's files need: quoting one field
//! for writing, and splitting one line (RFC 4180 quoting) for reading.

/// A field as written in a CSV line: quoted when it holds a comma, a quote
/// or a line break (function names can hold all three; RFC 4180 counts a
/// carriage return as one too).
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// Splits one CSV line (RFC 4180 quoting).
pub fn split_csv(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_fields_round_trip() {
        let names = ["plain", "a,b", "say \"hi\"", "two\nlines"];
        let line: Vec<String> = names.iter().map(|n| csv_field(n)).collect();
        assert_eq!(split_csv(&line.join(",")), names);
    }
}
