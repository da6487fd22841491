//! Families of functions that differ by name only (`[[family]]` in a
//! scenario), as template instantiations do in C++ codes: the scenario's
//! side (its members added as functions; the table is
//! `scenario::FamilySpec`) and the generator's (drawing the member a call
//! calls).

use super::rng::Rng;
use super::scenario::{FamilySpec, FunctionSpec, Scenario};

/// Adds every family's members to the scenario's functions, after its
/// `[[function]]`s (each member: the family's self time, no children).
pub(super) fn add_members(s: &mut Scenario) {
    let members: Vec<FunctionSpec> = s
        .families
        .iter()
        .flat_map(|fam| {
            (0..fam.count).map(move |k| FunctionSpec {
                name: fam.member(k),
                runtime: Some(fam.runtime.clone()),
                runtime_law: None,
                message_bytes: None,
                drift_per_step: 0.0,
                children: Vec::new(),
                comm: Vec::new(),
                counters: Vec::new(),
            })
        })
        .collect();
    s.functions.extend(members);
}

impl Scenario {
    /// The family named `name`, with the index of its first member among
    /// the functions (once [`Scenario::from_toml`] has added them).
    pub fn family(&self, name: &str) -> Option<(&FamilySpec, usize)> {
        let declared = self.functions.len() - self.families.iter().map(|f| f.count).sum::<usize>();
        let mut first = declared;
        for f in &self.families {
            if f.name == name {
                return Some((f, first));
            }
            first += f.count;
        }
        None
    }
}

/// One child call of a function: a fixed function, or one member of a
/// family drawn at each call.
#[derive(Clone)]
pub(super) enum Child {
    /// This function.
    Fixed(usize),
    /// A member of the family whose members start at function `first`.
    Pick(usize),
}

/// A family's draw: where its members start, the cumulative Zipf weights
/// (normalised to 1) and whether ranks rotate the members.
pub(super) struct FamilyDraw {
    first: usize,
    cdf: Vec<f64>,
    by_rank: bool,
    rotate_per_step: usize,
}

impl FamilyDraw {
    /// The function called in `step`: member `k` of the Zipf draw, rotated
    /// by rank and by step.
    pub(super) fn draw(&self, rng: &mut Rng, rank: u64, step: u64) -> usize {
        let u = rng.uniform();
        let k = self.cdf.partition_point(|&c| c < u).min(self.cdf.len() - 1);
        let n = self.cdf.len();
        let k = if self.by_rank {
            // A stride coprime with nothing in particular: ranks' favourite
            // members spread over the family.
            (k + (rank as usize).wrapping_mul(7919)) % n
        } else {
            k
        };
        let shift = (self.rotate_per_step as u128 * u128::from(step)) % n as u128;
        self.first + (k + shift as usize) % n
    }
}

impl FamilyDraw {
    /// The draw of family `fam` of scenario `sc` (members already added).
    pub(super) fn new(sc: &Scenario, fam: &FamilySpec) -> FamilyDraw {
        let first = sc.family(&fam.name).map_or(0, |f| f.1);
        let weights: Vec<f64> = (0..fam.count)
            .map(|k| 1.0 / ((k + 1) as f64).powf(fam.zipf))
            .collect();
        let total: f64 = weights.iter().sum();
        let cdf = weights
            .iter()
            .scan(0.0, |acc, w| {
                *acc += w / total;
                Some(*acc)
            })
            .collect();
        FamilyDraw {
            first,
            cdf,
            by_rank: fam.by_rank,
            rotate_per_step: fam.rotate_per_step,
        }
    }
}
