//! A small deterministic PRNG (xoshiro256**, seeded by splitmix64) so that a
//! scenario and seed give the same trace on every machine and version.

use crate::util::hash::splitmix64;

/// xoshiro256** state (with a spare normal deviate from Box–Muller pairs).
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
    spare_normal: Option<f64>,
}

impl Rng {
    /// A generator for one stream of randomness, e.g. `(seed, rank, thread)`.
    pub fn new(parts: &[u64]) -> Rng {
        let mut x = 0x243F_6A88_85A3_08D3u64;
        for p in parts {
            x ^= splitmix64(&mut p.wrapping_add(x));
            splitmix64(&mut x);
        }
        let s = [
            splitmix64(&mut x),
            splitmix64(&mut x),
            splitmix64(&mut x),
            splitmix64(&mut x),
        ];
        Rng {
            s,
            spare_normal: None,
        }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Standard normal (Box–Muller, both values used).
    pub fn normal(&mut self) -> f64 {
        if let Some(z) = self.spare_normal.take() {
            return z;
        }
        let u1 = 1.0 - self.uniform(); // (0, 1]
        let u2 = self.uniform();
        let r = (-2.0 * u1.ln()).sqrt();
        let (s, c) = (2.0 * std::f64::consts::PI * u2).sin_cos();
        self.spare_normal = Some(r * s);
        r * c
    }

    /// Index of a weighted pick (weights > 0, at least one): one uniform
    /// draw, the last index if rounding leaves the draw past the total.
    pub(super) fn weighted(&mut self, weights: impl Iterator<Item = f64> + Clone) -> usize {
        let total: f64 = weights.clone().sum();
        let mut u = self.uniform() * total;
        let mut last = 0;
        for (i, w) in weights.enumerate() {
            if u < w {
                return i;
            }
            u -= w;
            last = i;
        }
        last
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::scenario::Dist;

    #[test]
    fn deterministic_and_distinct_streams() {
        let a: Vec<u64> = (0..4).map(|_| Rng::new(&[1, 2]).next_u64()).collect();
        assert!(a.iter().all(|x| *x == a[0]));
        assert_ne!(Rng::new(&[1, 2]).next_u64(), Rng::new(&[1, 3]).next_u64());
    }

    #[test]
    fn normal_moments() {
        let mut r = Rng::new(&[7]);
        let n = 200_000;
        let xs: Vec<f64> = (0..n).map(|_| r.normal()).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.01, "mean {mean}");
        assert!((var - 1.0).abs() < 0.02, "var {var}");
    }

    #[test]
    fn choice_and_lognormal_modes_pick_by_weight() {
        let mut r = Rng::new(&[11]);
        let n = 100_000;
        let choice = Dist::Choice {
            values: vec![64.0, 1e6],
            weights: Some(vec![9.0, 1.0]),
        };
        let big = (0..n)
            .map(|_| choice.sample(&mut r))
            .inspect(|x| assert!(*x == 64.0 || *x == 1e6))
            .filter(|x| *x == 1e6)
            .count();
        assert!((big as f64 / n as f64 - 0.1).abs() < 0.005, "{big}");
        let equal = Dist::Choice {
            values: vec![1.0, 2.0, 3.0, 4.0],
            weights: None,
        };
        let ones = (0..n).filter(|_| equal.sample(&mut r) == 1.0).count();
        assert!((ones as f64 / n as f64 - 0.25).abs() < 0.01, "{ones}");
        let modes = Dist::LognormalModes {
            modes: vec![
                crate::synth::scenario::LogMode {
                    weight: 93.0,
                    median: 2048.0,
                    sigma: 1.0,
                },
                crate::synth::scenario::LogMode {
                    weight: 7.0,
                    median: 1048576.0,
                    sigma: 0.4,
                },
            ],
        };
        // The modes are apart by 2^9: above 2^17, nearly only the large one.
        let large = (0..n).filter(|_| modes.sample(&mut r) > 131072.0).count();
        assert!((large as f64 / n as f64 - 0.07).abs() < 0.005, "{large}");
    }
}
