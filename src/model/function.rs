//! The candidate functions of a model, their encodings in Eiger's model
//! files, and the pools forward selection chooses from.
//!
//! Every function is of the rotated input columns `x_i` (column `i` of
//! `X @ R`). Eiger's conventions are kept so that its files evaluate the
//! same here: powers and logarithms take the absolute value, and give 1.0
//! at zero (so `x^-1` at 0 is 1, not infinity); products and quotients keep
//! the sign.

use std::fmt;

use crate::model::pyfmt::py_repr;

/// One candidate function of the input columns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Function {
    /// The constant 1.0 (encoding `0`).
    Constant,
    /// `|x_i|^n`, 1.0 where `x_i = 0` (encoding `1 i n`).
    Power {
        /// Column.
        i: usize,
        /// Exponent.
        n: f64,
    },
    /// `x_i · x_j` (encoding `2 i j`).
    Product {
        /// First column.
        i: usize,
        /// Second column.
        j: usize,
    },
    /// `sqrt|x_i|` (encoding `3 i`; decodable, never generated).
    Sqrt {
        /// Column.
        i: usize,
    },
    /// `log2|x_i|`, 1.0 where `x_i = 0` (encoding `4 i`).
    Log2 {
        /// Column.
        i: usize,
    },
    /// `x_i / x_j` (encoding `5 i j`, Eiger 2016).
    Quotient {
        /// Numerator column.
        i: usize,
        /// Denominator column.
        j: usize,
    },
}

impl Function {
    /// The function's value on one row of rotated inputs. Overflow and
    /// division by zero give infinities or NaN; the caller decides what
    /// they mean (an error in `eiger-2013`, 0 in `eiger-2016`).
    pub fn eval(&self, x: &[f64]) -> f64 {
        match *self {
            Function::Constant => 1.0,
            Function::Power { i, n } => {
                if x[i] == 0.0 {
                    1.0
                } else if n == 1.0 {
                    // `pow(x, 1)` is `x` exactly; linear terms are the most
                    // common, and the model detector evaluates them for
                    // every execution of a modelled function.
                    x[i].abs()
                } else {
                    x[i].abs().powf(n)
                }
            }
            Function::Product { i, j } => x[i] * x[j],
            Function::Sqrt { i } => x[i].abs().sqrt(),
            Function::Log2 { i } => {
                if x[i] == 0.0 {
                    1.0
                } else {
                    x[i].abs().log2()
                }
            }
            Function::Quotient { i, j } => x[i] / x[j],
        }
    }

    /// The highest column index the function reads, if any.
    pub fn max_column(&self) -> Option<usize> {
        match *self {
            Function::Constant => None,
            Function::Power { i, .. } | Function::Sqrt { i } | Function::Log2 { i } => Some(i),
            Function::Product { i, j } | Function::Quotient { i, j } => Some(i.max(j)),
        }
    }

    /// Eiger's encoding: `0`, `1 i n`, `2 i j`, `3 i`, `4 i`, `5 i j`, with
    /// exponents written as Python writes them (`2`, `0.5`, `-0.5`).
    pub fn encode(&self) -> String {
        match *self {
            Function::Constant => "0".into(),
            Function::Power { i, n } => format!("1 {i} {}", exponent_text(n)),
            Function::Product { i, j } => format!("2 {i} {j}"),
            Function::Sqrt { i } => format!("3 {i}"),
            Function::Log2 { i } => format!("4 {i}"),
            Function::Quotient { i, j } => format!("5 {i} {j}"),
        }
    }

    /// Parses Eiger's encoding (see [`Function::encode`]).
    pub fn decode(text: &str) -> Result<Function, String> {
        let parts: Vec<&str> = text.split_whitespace().collect();
        let col = |k: usize| -> Result<usize, String> {
            parts
                .get(k)
                .ok_or_else(|| format!("function {text:?}: missing field {}", k + 1))?
                .parse::<usize>()
                .map_err(|_| format!("function {text:?}: field {} is not a column index", k + 1))
        };
        let arity = |n: usize| -> Result<(), String> {
            if parts.len() == n {
                Ok(())
            } else {
                Err(format!(
                    "function {text:?}: {} fields where its kind has {n}",
                    parts.len()
                ))
            }
        };
        match parts.first().copied() {
            Some("0") => arity(1).map(|_| Function::Constant),
            Some("1") => {
                arity(3)?;
                let n: f64 = parts[2]
                    .parse()
                    .map_err(|_| format!("function {text:?}: exponent is not a number"))?;
                if !n.is_finite() {
                    return Err(format!("function {text:?}: exponent is not finite"));
                }
                Ok(Function::Power { i: col(1)?, n })
            }
            Some("2") => arity(3).and_then(|_| {
                Ok(Function::Product {
                    i: col(1)?,
                    j: col(2)?,
                })
            }),
            Some("3") => arity(2).and_then(|_| Ok(Function::Sqrt { i: col(1)? })),
            Some("4") => arity(2).and_then(|_| Ok(Function::Log2 { i: col(1)? })),
            Some("5") => arity(3).and_then(|_| {
                Ok(Function::Quotient {
                    i: col(1)?,
                    j: col(2)?,
                })
            }),
            Some(k) => Err(format!("function {text:?}: unknown kind {k} (0 to 5)")),
            None => Err("empty function line".into()),
        }
    }

    /// The function in words, with `names[i]` for column `i`:
    /// `size²`, `√size`, `log2 size`, `a·b`, `a/b`, `1/size`.
    pub fn describe(&self, names: &[String]) -> String {
        let name = |i: usize| names.get(i).cloned().unwrap_or_else(|| format!("x{i}"));
        match *self {
            Function::Constant => "1".into(),
            Function::Power { i, n } => {
                let x = name(i);
                let named = [
                    (1.0, x.clone()),
                    (2.0, format!("{x}²")),
                    (3.0, format!("{x}³")),
                    (0.5, format!("√{x}")),
                    (-1.0, format!("1/{x}")),
                    (-2.0, format!("1/{x}²")),
                    (-0.5, format!("1/√{x}")),
                ];
                named
                    .into_iter()
                    .find(|(e, _)| *e == n)
                    .map(|(_, s)| s)
                    .unwrap_or_else(|| format!("{x}^{}", exponent_text(n)))
            }
            Function::Product { i, j } if i == j => format!("{}²", name(i)),
            Function::Product { i, j } => format!("{}·{}", name(i), name(j)),
            Function::Sqrt { i } => format!("√{}", name(i)),
            Function::Log2 { i } => format!("log2 {}", name(i)),
            Function::Quotient { i, j } => format!("{}/{}", name(i), name(j)),
        }
    }
}

impl fmt::Display for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.encode())
    }
}

/// An exponent as Python prints the mixed int/float list Eiger uses:
/// integers without a point (`2`, `-1`), fractions as floats (`0.5`).
fn exponent_text(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        py_repr(n)
    }
}

/// Which families of functions a pool holds, and in which order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolOrder {
    /// Eiger 2013: per column `x^-2, x^-1, x^-0.5, log2, x^0.5, x, x^2`,
    /// then the products `x_i·x_j` (j ≥ i).
    Eiger2013,
    /// Eiger 2016: per column `x^-2, x^-1, x^-0.5, x^0.5, x, x^2, log2`,
    /// then the products, then the quotients `x_i/x_j` and `x_j/x_i`
    /// (j ≥ i, including i = j as Eiger does).
    Eiger2016,
    /// The project's default: Eiger 2016's families without the duplicate
    /// quotients (`x_i/x_i` is the constant again).
    Default,
}

/// The families a pool may leave out (`--no-products`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolFamilies {
    /// Powers and logarithms of single columns.
    pub unary: bool,
    /// Products of two columns.
    pub products: bool,
    /// Quotients of two columns (Eiger 2016 and the default only).
    pub quotients: bool,
}

impl Default for PoolFamilies {
    fn default() -> Self {
        PoolFamilies {
            unary: true,
            products: true,
            quotients: true,
        }
    }
}

/// The candidate functions over `p` rotated columns, the constant first.
pub fn pool(p: usize, order: PoolOrder, families: PoolFamilies) -> Vec<Function> {
    let mut out = vec![Function::Constant];
    if families.unary {
        for i in 0..p {
            let pw = |n: f64| Function::Power { i, n };
            match order {
                PoolOrder::Eiger2013 => out.extend([
                    pw(-2.0),
                    pw(-1.0),
                    pw(-0.5),
                    Function::Log2 { i },
                    pw(0.5),
                    pw(1.0),
                    pw(2.0),
                ]),
                PoolOrder::Eiger2016 | PoolOrder::Default => out.extend([
                    pw(-2.0),
                    pw(-1.0),
                    pw(-0.5),
                    pw(0.5),
                    pw(1.0),
                    pw(2.0),
                    Function::Log2 { i },
                ]),
            }
        }
    }
    if families.products {
        for i in 0..p {
            for j in i..p {
                out.push(Function::Product { i, j });
            }
        }
    }
    if families.quotients && order != PoolOrder::Eiger2013 {
        for i in 0..p {
            for j in i..p {
                if i == j && order == PoolOrder::Default {
                    continue;
                }
                out.push(Function::Quotient { i, j });
                out.push(Function::Quotient { i: j, j: i });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_round_trip() {
        for text in [
            "0", "1 0 2", "1 0 0.5", "1 3 -0.5", "1 0 -2", "2 0 1", "3 2", "4 0", "5 1 0",
        ] {
            let f = Function::decode(text).unwrap();
            assert_eq!(f.encode(), text);
        }
        assert!(Function::decode("7 1").is_err());
        assert!(Function::decode("1 0").is_err());
        assert!(Function::decode("2 a 1").is_err());
        assert!(Function::decode("").is_err());
    }

    #[test]
    fn eiger_semantics_at_zero_and_negative() {
        let x = [0.0, -4.0];
        assert_eq!(Function::Power { i: 0, n: -1.0 }.eval(&x), 1.0);
        assert_eq!(Function::Power { i: 1, n: 0.5 }.eval(&x), 2.0);
        assert_eq!(Function::Log2 { i: 0 }.eval(&x), 1.0);
        assert_eq!(Function::Log2 { i: 1 }.eval(&x), 2.0);
        assert_eq!(Function::Product { i: 1, j: 1 }.eval(&x), 16.0);
        assert!(Function::Quotient { i: 1, j: 0 }.eval(&x).is_infinite());
    }

    #[test]
    fn powers_are_pow_bit_for_bit() {
        // The linear shortcut gives what `pow` gives, for any value.
        let pow = |x: f64, n: f64| if x == 0.0 { 1.0 } else { x.abs().powf(n) };
        let mut x = 0.123_456_789f64;
        for k in 0..2000 {
            x = x * 1.618_033_988_7 + (k as f64) * 1e-3;
            let v = if k % 2 == 0 { x } else { -x / 7.0 };
            for xr in [[v, 0.0], [0.0, v], [1e-300 * v, v * 1e150]] {
                for n in [1.0, 2.0, 0.5, 3.0, -1.0] {
                    for i in 0..2 {
                        let f = Function::Power { i, n };
                        assert_eq!(
                            f.eval(&xr).to_bits(),
                            pow(xr[i], n).to_bits(),
                            "{f:?} {xr:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn pools_have_the_documented_sizes() {
        // 1 + 7 per column + p(p+1)/2 products (+ p(p+1) quotients in 2016).
        assert_eq!(
            pool(1, PoolOrder::Eiger2013, PoolFamilies::default()).len(),
            9
        );
        assert_eq!(
            pool(3, PoolOrder::Eiger2013, PoolFamilies::default()).len(),
            1 + 21 + 6
        );
        assert_eq!(
            pool(3, PoolOrder::Eiger2016, PoolFamilies::default()).len(),
            1 + 21 + 6 + 12
        );
        assert_eq!(
            pool(3, PoolOrder::Default, PoolFamilies::default()).len(),
            1 + 21 + 6 + 6
        );
        let p = pool(1, PoolOrder::Eiger2013, PoolFamilies::default());
        let enc: Vec<String> = p.iter().map(Function::encode).collect();
        assert_eq!(
            enc,
            ["0", "1 0 -2", "1 0 -1", "1 0 -0.5", "4 0", "1 0 0.5", "1 0 1", "1 0 2", "2 0 0"]
        );
    }
}
