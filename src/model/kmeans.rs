//! Seeded k-means for `--clusters K`: rows whose (normalised, rotated)
//! inputs fall in different regimes get a model each. Initialisation is
//! k-means++ from the seed, then Lloyd's iterations until no row changes
//! cluster (at most 300), so a seed gives the same clusters everywhere.
//! With one cluster every row is in cluster 0 and the centre is the mean.

use crate::model::folds::SplitMix;

/// Cluster centres and the cluster of each row.
#[derive(Debug, Clone, PartialEq)]
pub struct Clusters {
    /// One centre per cluster.
    pub centres: Vec<Vec<f64>>,
    /// The cluster of each row.
    pub assignment: Vec<usize>,
}

/// Squared Euclidean distance.
fn dist2(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// The index of the centre nearest to `row` (the first on ties).
pub fn nearest<'a>(centres: impl IntoIterator<Item = &'a [f64]>, row: &[f64]) -> usize {
    let mut best = (0, f64::INFINITY);
    for (c, centre) in centres.into_iter().enumerate() {
        let d = dist2(centre, row);
        if d < best.1 {
            best = (c, d);
        }
    }
    best.0
}

/// The mean of the rows `members` of `rows` (dimension `dim`).
fn mean_of(rows: &[Vec<f64>], members: impl Iterator<Item = usize>, dim: usize) -> Vec<f64> {
    let mut sum = vec![0.0; dim];
    let mut n = 0usize;
    for r in members {
        for (s, v) in sum.iter_mut().zip(&rows[r]) {
            *s += v;
        }
        n += 1;
    }
    sum.iter().map(|s| s / n.max(1) as f64).collect()
}

/// k-means of `rows` into `k` clusters (k ≥ 1, k ≤ rows).
pub fn kmeans(rows: &[Vec<f64>], k: usize, seed: u64) -> Clusters {
    let dim = rows.first().map_or(0, Vec::len);
    if k <= 1 || rows.len() <= 1 {
        return Clusters {
            centres: vec![mean_of(rows, 0..rows.len(), dim)],
            assignment: vec![0; rows.len()],
        };
    }
    let mut rng = SplitMix::new(seed);
    // k-means++: each next centre with probability proportional to the
    // squared distance to the nearest centre chosen so far.
    let mut centres = vec![rows[rng.below(rows.len())].clone()];
    while centres.len() < k {
        let d: Vec<f64> = rows
            .iter()
            .map(|r| dist2(&centres[nearest(centres.iter().map(Vec::as_slice), r)], r))
            .collect();
        let total: f64 = d.iter().sum();
        if total == 0.0 {
            break; // fewer distinct rows than clusters
        }
        let mut target = rng.uniform() * total;
        let mut pick = d.len() - 1;
        for (i, di) in d.iter().enumerate() {
            if target < *di {
                pick = i;
                break;
            }
            target -= di;
        }
        centres.push(rows[pick].clone());
    }
    let mut assignment: Vec<usize> = rows
        .iter()
        .map(|r| nearest(centres.iter().map(Vec::as_slice), r))
        .collect();
    for _ in 0..300 {
        for (c, centre) in centres.iter_mut().enumerate() {
            if assignment.contains(&c) {
                *centre = mean_of(rows, (0..rows.len()).filter(|&r| assignment[r] == c), dim);
            }
        }
        let next: Vec<usize> = rows
            .iter()
            .map(|r| nearest(centres.iter().map(Vec::as_slice), r))
            .collect();
        if next == assignment {
            break;
        }
        assignment = next;
    }
    Clusters {
        centres,
        assignment,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_separated_groups_are_found() {
        let rows: Vec<Vec<f64>> = (0..20)
            .map(|i| vec![if i < 10 { -5.0 } else { 5.0 } + (i % 3) as f64 * 0.1])
            .collect();
        let c = kmeans(&rows, 2, 3);
        assert!(c.assignment[..10].iter().all(|&a| a == c.assignment[0]));
        assert!(c.assignment[10..].iter().all(|&a| a == c.assignment[10]));
        assert_ne!(c.assignment[0], c.assignment[10]);
        assert_eq!(c, kmeans(&rows, 2, 3));
    }

    #[test]
    fn one_cluster_is_the_mean() {
        let c = kmeans(&[vec![1.0], vec![3.0]], 1, 0);
        assert_eq!(c.centres, vec![vec![2.0]]);
        assert_eq!(c.assignment, [0, 0]);
    }
}
