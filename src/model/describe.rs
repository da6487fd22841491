//! A model's formula in words, as `model show` prints it:
//! `runtime ≈ |1.00e-5·size² − 8.86e-3·size + 0.186·√size − 0.158·log2 size|`
//! (the bars say that Eiger's prediction is the absolute value), with the
//! rotated columns spelt out when the rotation is not the identity.

use crate::model::format::json::column_names;
use crate::model::model::{Model, Term};

/// A number with 3 significant digits, in exponent form when small or
/// large (`1.00e-5`, `0.186`, `42.0`).
pub fn short_number(v: f64) -> String {
    let a = v.abs();
    if a != 0.0 && !(1e-2..1e4).contains(&a) {
        let s = format!("{a:.2e}");
        s.replace("e-0", "e-")
    } else if a == 0.0 {
        "0".into()
    } else {
        let digits = (2 - a.log10().floor() as i32).max(0) as usize;
        format!("{a:.digits$}")
    }
}

/// The formula of one cluster's terms.
pub fn formula(model: &Model, cluster: usize) -> String {
    let names = column_names(model);
    let target = model.target.clone().unwrap_or_else(|| "y".into());
    let terms = &model.clusters[cluster].terms;
    if terms.is_empty() {
        return format!("{target} ≈ 0 (no term was selected)");
    }
    let mut s = String::new();
    for (i, t) in terms.iter().enumerate() {
        let sign = if t.weight < 0.0 { "−" } else { "+" };
        if i == 0 {
            if t.weight < 0.0 {
                s.push('−');
            }
        } else {
            s.push_str(&format!(" {sign} "));
        }
        s.push_str(&term_magnitude(t, &names));
    }
    format!("{target} ≈ |{s}|")
}

/// A term without its sign: `1.00e-5·size²`, or the bare weight for the
/// constant.
pub fn term_magnitude(t: &Term, names: &[String]) -> String {
    match t.function.describe(names).as_str() {
        "1" => short_number(t.weight),
        f => format!("{}·{f}", short_number(t.weight)),
    }
}

/// A term with its sign in front when negative: `−0.158·log2 size`.
pub fn signed_term(t: &Term, names: &[String]) -> String {
    let sign = if t.weight < 0.0 { "−" } else { "" };
    format!("{sign}{}", term_magnitude(t, names))
}

/// Everything `model show` prints: inputs, the rotated columns when the
/// rotation is not the identity, each cluster's formula and terms, and
/// how the model was trained.
pub fn describe(model: &Model) -> String {
    let mut out = String::new();
    out.push_str(&format!("inputs: {}\n", model.metrics.join(", ")));
    let names = column_names(model);
    if names != model.metrics {
        for (c, name) in names.iter().enumerate() {
            let parts: Vec<String> = model
                .metrics
                .iter()
                .zip(&model.rotation)
                .filter(|(_, r)| r[c].abs() > 1e-12)
                .map(|(m, r)| format!("{}·{m}", short_number(r[c])).replace("1.00·", ""))
                .map(|t| t.to_string())
                .collect();
            out.push_str(&format!("{name} = {}\n", parts.join(" + ")));
        }
    }
    for (c, cl) in model.clusters.iter().enumerate() {
        if model.clusters.len() > 1 {
            out.push_str(&format!("cluster {c} (centre {:?}):\n", cl.centre));
        }
        out.push_str(&formula(model, c));
        out.push('\n');
        for t in &cl.terms {
            let se = match t.stderr {
                Some(s) if s.is_finite() => format!("  ± {}", short_number(s)),
                _ => String::new(),
            };
            out.push_str(&format!(
                "  {:<10} {:<16} weight {:>24}{se}\n",
                t.function.encode(),
                t.function.describe(&names),
                format!("{:e}", t.weight)
            ));
        }
    }
    if let Some(t) = &model.training {
        out.push_str(&format!(
            "trained: profile {}, threshold {}, cross-validation {}, {} rows of {}, R² {:.6}, adjusted R² {:.6}",
            t.profile, t.threshold, t.cross_validation, t.rows, t.table, t.r2, t.adjusted_r2
        ));
        if let Some(cv) = t.cv_adjusted_r2 {
            out.push_str(&format!(", held-out adjusted R² {cv:.6}"));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::format::eiger::parse;

    #[test]
    fn gold_formula_in_words() {
        let text = "1\nsize\n[1](255.0)\n[1](145.773797371)\n[1,1]((1.0))\nModel 0\n[1](1.7763568394e-17)\n[4](1.0037181792658046e-05, -0.0088573713956641049, 0.18572017261061566, -0.15834192882186315)\n1 0 2\n1 0 1\n1 0 0.5\n4 0\n";
        let mut m = parse(text, "gold").unwrap();
        m.target = Some("runtime".into());
        assert_eq!(
            formula(&m, 0),
            "runtime ≈ |1.00e-5·size² − 8.86e-3·size + 0.186·√size − 0.158·log2 size|"
        );
    }
}
