//! Eiger's text model format (reference §4): the input metric count and
//! names, the rotated inputs' means and stds, the rotation, then per
//! cluster its centre, weights and encoded functions. Arrays are written
//! `[dims](values)` and always parsed by their dims prefix. Header numbers
//! are written as Eiger writes them (`%.12g`, `.0` added to integers),
//! weights as Python's `repr` (shortest round trip).
//!
//! The legacy format (before November 2013) has only the rotation (with
//! trailing commas), the weights, the functions and the metric names to
//! the end of the file, sometimes after a `Model 0` line.

use crate::model::format::ModelFileError;
use crate::model::function::Function;
use crate::model::model::{ClusterModel, Model, Term};
use crate::model::pyfmt::{eiger_header, py_repr};

/// The lines of a model file with their numbers, blank lines skipped.
struct Lines<'a> {
    file: &'a str,
    lines: Vec<(usize, &'a str)>,
    at: usize,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str, file: &'a str) -> Lines<'a> {
        let lines = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty())
            .collect();
        Lines { file, lines, at: 0 }
    }

    fn error(&self, line: Option<usize>, message: impl Into<String>) -> ModelFileError {
        ModelFileError {
            file: self.file.to_owned(),
            line,
            message: message.into(),
        }
    }

    /// The next line, or an error saying the file ends before `what`.
    fn next(&mut self, what: &str) -> Result<(usize, &'a str), ModelFileError> {
        let l = self.lines.get(self.at).copied().ok_or_else(|| {
            let last = self.lines.last().map(|(n, _)| *n);
            self.error(
                last,
                format!("the file ends where {what} was expected (cut short?)"),
            )
        })?;
        self.at += 1;
        Ok(l)
    }

    fn peek(&self) -> Option<(usize, &'a str)> {
        self.lines.get(self.at).copied()
    }

    /// The next line as an array of the given rank.
    fn array(&mut self, what: &str, rank: usize) -> Result<(Vec<usize>, Vec<f64>), ModelFileError> {
        let (n, l) = self.next(what)?;
        let (dims, values) =
            parse_array(l).map_err(|m| self.error(Some(n), format!("{what}: {m}")))?;
        if dims.len() != rank {
            return Err(self.error(
                Some(n),
                format!(
                    "{what}: an array of {} dimensions where {rank} was expected",
                    dims.len()
                ),
            ));
        }
        Ok((dims, values))
    }
}

/// Parses `[d1,d2](…)`: the dims and the values in row-major order
/// (parentheses nest by rows; commas separate; trailing commas and
/// spaces are allowed).
pub fn parse_array(text: &str) -> Result<(Vec<usize>, Vec<f64>), String> {
    let rest = text
        .strip_prefix('[')
        .ok_or("an array starts with [dims]")?;
    let (dims, body) = rest.split_once(']').ok_or("no ] after the array's dims")?;
    let dims: Vec<usize> = dims
        .split(',')
        .map(|d| {
            d.trim()
                .parse::<usize>()
                .map_err(|_| format!("dims {dims:?} are not counts"))
        })
        .collect::<Result<_, _>>()?;
    let body = body.trim();
    if !body.starts_with('(') || !body.ends_with(')') {
        return Err("the values are not in parentheses (cut short?)".into());
    }
    let opens = body.matches('(').count();
    if opens != body.matches(')').count() {
        return Err("unbalanced parentheses (cut short?)".into());
    }
    let values: Vec<f64> = body
        .split([',', '(', ')'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<f64>()
                .map_err(|_| format!("{s:?} is not a number"))
        })
        .collect::<Result<_, _>>()?;
    let want: usize = dims.iter().product();
    if values.len() != want {
        return Err(format!(
            "{} values where the dims {dims:?} say {want}",
            values.len()
        ));
    }
    if let Some(v) = values.iter().find(|v| !v.is_finite()) {
        return Err(format!("{v} is not a finite number"));
    }
    Ok((dims, values))
}

/// Whether the text is in the legacy format: its first line is neither a
/// metric count nor anything but `Model 0` or an array.
pub fn is_legacy(text: &str) -> bool {
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    first.starts_with('[') || first.starts_with("Model")
}

/// The K encoded functions after a weights line.
fn functions(lines: &mut Lines, k: usize) -> Result<Vec<Function>, ModelFileError> {
    (0..k)
        .map(|i| {
            let (n, l) = lines.next(&format!("function {} of {k}", i + 1))?;
            Function::decode(l).map_err(|m| {
                // A bad last line is most often a file cut mid-line.
                let last = lines.peek().is_none();
                let hint = if last {
                    " (the file ends here: cut short?)"
                } else {
                    ""
                };
                lines.error(Some(n), format!("{m}{hint}"))
            })
        })
        .collect()
}

fn terms(fs: Vec<Function>, weights: Vec<f64>) -> Vec<Term> {
    fs.into_iter()
        .zip(weights)
        .map(|(function, weight)| Term {
            function,
            weight,
            stderr: None,
        })
        .collect()
}

/// Parses the current format.
pub fn parse(text: &str, file: &str) -> Result<Model, ModelFileError> {
    let mut lines = Lines::new(text, file);
    let (n, l) = lines.next("the number of input metrics")?;
    let m: usize = l
        .parse()
        .map_err(|_| lines.error(Some(n), format!("{l:?} is not the number of input metrics")))?;
    let mut metrics = Vec::with_capacity(m);
    for i in 0..m {
        metrics.push(
            lines
                .next(&format!("metric name {} of {m}", i + 1))?
                .1
                .to_owned(),
        );
    }
    let (_, means) = lines.array("the means", 1)?;
    let (_, stds) = lines.array("the standard deviations", 1)?;
    let (n, _) = lines.peek().unwrap_or((0, ""));
    let (dims, r) = lines.array("the rotation", 2)?;
    if dims[0] != m {
        return Err(lines.error(
            Some(n),
            format!("the rotation has {} rows for {m} metrics", dims[0]),
        ));
    }
    let rotation: Vec<Vec<f64>> = r.chunks(dims[1].max(1)).map(<[f64]>::to_vec).collect();
    let mut clusters = Vec::new();
    while let Some((n, l)) = lines.peek() {
        let expected = format!("Model {}", clusters.len());
        if l != expected {
            return Err(lines.error(Some(n), format!("{l:?} where {expected:?} was expected")));
        }
        lines.next(&expected)?;
        let (_, centre) = lines.array("the cluster centre", 1)?;
        let (dims, weights) = lines.array("the weights", 1)?;
        let fs = functions(&mut lines, dims[0])?;
        clusters.push(ClusterModel {
            centre,
            terms: terms(fs, weights),
        });
    }
    if clusters.is_empty() {
        return Err(lines.error(None, "no `Model 0` block: the file is cut short"));
    }
    Ok(Model {
        metrics,
        target: None,
        function: None,
        means,
        stds,
        rotation,
        clusters,
        training: None,
    })
}

/// Parses the legacy format.
pub fn parse_legacy(text: &str, file: &str) -> Result<Model, ModelFileError> {
    let mut lines = Lines::new(text, file);
    if lines.peek().is_some_and(|(_, l)| l.starts_with("Model")) {
        lines.next("Model 0")?;
    }
    let (dims, r) = lines.array("the rotation", 2)?;
    let rotation: Vec<Vec<f64>> = r.chunks(dims[1].max(1)).map(<[f64]>::to_vec).collect();
    let (dims_w, weights) = lines.array("the weights", 1)?;
    let fs = functions(&mut lines, dims_w[0])?;
    let mut metrics = Vec::new();
    while let Some((_, l)) = lines.peek() {
        metrics.push(l.to_owned());
        lines.next("a metric name")?;
    }
    if metrics.len() != dims[0] {
        return Err(lines.error(
            None,
            format!(
                "{} metric names at the end for a rotation of {} rows (cut short?)",
                metrics.len(),
                dims[0]
            ),
        ));
    }
    let p = dims[1];
    Ok(Model {
        metrics,
        target: None,
        function: None,
        means: Vec::new(),
        stds: Vec::new(),
        rotation,
        clusters: vec![ClusterModel {
            centre: vec![0.0; p],
            terms: terms(fs, weights),
        }],
        training: None,
    })
}

/// `[n](a,b,…)` with header-number formatting.
fn header_array(values: &[f64]) -> String {
    let v: Vec<String> = values.iter().map(|x| eiger_header(*x)).collect();
    format!("[{}]({})", values.len(), v.join(","))
}

/// Writes the current format. A model read from the legacy format (no
/// means, stds or centres) is written with means 0, stds 1 and centre 0,
/// which evaluate the same for its single cluster.
pub fn write(model: &Model) -> String {
    let p = model.rotated_columns();
    let mut out = format!("{}\n", model.metrics.len());
    for name in &model.metrics {
        out.push_str(name);
        out.push('\n');
    }
    let (means, stds) = if model.means.is_empty() {
        (vec![0.0; p], vec![1.0; p])
    } else {
        (model.means.clone(), model.stds.clone())
    };
    out.push_str(&header_array(&means));
    out.push('\n');
    out.push_str(&header_array(&stds));
    out.push('\n');
    let rows: Vec<String> = model
        .rotation
        .iter()
        .map(|r| {
            let v: Vec<String> = r.iter().map(|x| eiger_header(*x)).collect();
            format!("({})", v.join(","))
        })
        .collect();
    out.push_str(&format!(
        "[{},{}]({})\n",
        model.metrics.len(),
        p,
        rows.join(",")
    ));
    for (c, cl) in model.clusters.iter().enumerate() {
        out.push_str(&format!("Model {c}\n"));
        let centre = if cl.centre.len() == p {
            cl.centre.clone()
        } else {
            vec![0.0; p]
        };
        out.push_str(&header_array(&centre));
        out.push('\n');
        let w: Vec<String> = cl.terms.iter().map(|t| py_repr(t.weight)).collect();
        out.push_str(&format!("[{}]({})\n", w.len(), w.join(", ")));
        for t in &cl.terms {
            out.push_str(&t.function.encode());
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOLD: &str = "1\nsize\n[1](255.0)\n[1](145.773797371)\n[1,1]((1.0))\nModel 0\n[1](1.7763568394e-17)\n[4](1.0037181792658046e-05, -0.0088573713956641049, 0.18572017261061566, -0.15834192882186315)\n1 0 2\n1 0 1\n1 0 0.5\n4 0\n";

    #[test]
    fn arrays_parse_by_their_dims() {
        assert_eq!(parse_array("[1](255.0)").unwrap(), (vec![1], vec![255.0]));
        assert_eq!(
            parse_array("[2,2]((1.0,2.0,),(3,4,),)").unwrap().1,
            vec![1.0, 2.0, 3.0, 4.0]
        );
        assert!(parse_array("[2](1.0)").is_err());
        assert!(parse_array("[2](1.0, 2.0").is_err());
        assert!(parse_array("[1](x)").is_err());
    }

    #[test]
    fn gold_round_trips_with_its_header_lines() {
        let m = parse(GOLD, "gold.model").unwrap();
        let text = write(&m);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            &lines[..6],
            &[
                "1",
                "size",
                "[1](255.0)",
                "[1](145.773797371)",
                "[1,1]((1.0))",
                "Model 0"
            ]
        );
        assert_eq!(parse(&text, "again").unwrap(), m);
    }

    #[test]
    fn cut_short_files_say_where() {
        let cut: String = GOLD.lines().take(9).map(|l| format!("{l}\n")).collect();
        let e = parse(&cut, "cut.model").unwrap_err();
        assert!(
            e.to_string().contains("cut.model, line 9") && e.message.contains("cut short"),
            "{e}"
        );
        let e = parse("1\nsize\n[1](255.0)\n", "c.model").unwrap_err();
        assert!(e.message.contains("cut short"), "{e}");
    }
}
