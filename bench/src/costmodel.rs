//! The cost model of the collectives per step, its fit to this machine and
//! its projection to 10^3 … 10^5 AD ranks.
//!
//! Per step a rank makes `c` collective calls. The one that carries the
//! payload `m` (the model reduction and the status vector; sent =
//! received) is an allreduce, modelled by whichever of the two standard
//! algorithms is cheaper, as MPI libraries choose: recursive doubling,
//! `log2(P) · (α + β·m)`, for small payloads, or Rabenseifner's
//! reduce-scatter + allgather, `2·log2(P)·α + 2·β·m·(P−1)/P`, for large
//! ones. Each other call costs one latency per round of a logarithmic
//! algorithm, `log2(P) · α`, and the name agreement adds `β · R` for the
//! `R` bytes a rank receives. That is exact for the small allreduces and
//! the all-to-alls of counts (recursive doubling, Bruck), but the
//! agreement's two `MPI_Alltoallv` and its `MPI_Allgatherv` of the union
//! are, in MPI libraries' defaults at large P, linear or pairwise
//! exchanges and a ring: `P − 1` messages each over the communicator they
//! run on. From 16 ranks on they run in two hops over an R × C grid of
//! ranks (`collectives/routed.rs`), over rows then columns: `(R − 1) +
//! (C − 1)` messages each. The `linear` variant of a step with new names
//! charges those three exchanges that many latencies (exact for the
//! pairwise and ring algorithms; an upper bound for the linear one, whose
//! messages overlap).

/// Latency and inverse bandwidth of an interconnect (seconds, s/byte).
#[derive(Clone, Copy)]
pub(crate) struct Net {
    pub(crate) alpha: f64,
    pub(crate) beta: f64,
}

/// The cluster interconnect of the projections: 2 µs, 10 GB/s.
pub(crate) const CLUSTER: Net = Net {
    alpha: 2e-6,
    beta: 1e-10,
};

/// Collective calls the agreement makes when some rank has a new name,
/// beyond the one small allreduce of every step: two all-to-alls of
/// counts, two of data, the allgather's lengths and data, and the check
/// for lost names (`Collectives::agree_names`).
pub(crate) const AGREE_EXTRA_CALLS: f64 = 7.0;

/// Bytes a rank receives in the agreement's length words and small
/// allreduces: 4 bytes from every other rank it exchanges with in each of
/// the two all-to-alls and the allgather (every rank, or over the grid its
/// row and column), and two 8-byte allreduces.
pub(crate) fn agree_overhead(p: f64) -> f64 {
    12.0 * exchange_messages(p) + 16.0
}

/// One allreduce of `m` bytes: the cheaper of recursive doubling and
/// Rabenseifner's algorithm.
pub(crate) fn allreduce(p: f64, m: f64, net: Net) -> f64 {
    let l = p.log2();
    let doubling = l * (net.alpha + net.beta * m);
    let rabenseifner = 2.0 * l * net.alpha + 2.0 * net.beta * m * (p - 1.0) / p;
    doubling.min(rabenseifner)
}

/// Collective seconds per step: `calls` calls, one of them the allreduce
/// of `payload` bytes, and `received` bytes of name agreement.
pub(crate) fn step_seconds(p: f64, calls: f64, payload: f64, received: f64, net: Net) -> f64 {
    if p <= 1.0 {
        return 0.0;
    }
    allreduce(p, payload, net) + (calls - 1.0).max(0.0) * p.log2() * net.alpha + net.beta * received
}

/// The per-step payload of a case, as measured, for the projections.
#[derive(Clone, Copy)]
pub(crate) struct Payload {
    /// Reduction and status bytes per step (sent = received).
    pub(crate) reduce: f64,
    /// Collective calls of a step in which every name is new.
    pub(crate) calls_first: f64,
    /// Agreement bytes received when every name is new, less the length
    /// words and small allreduces ([`agree_overhead`]).
    pub(crate) agree: f64,
}

impl Payload {
    /// The step in which every name is new.
    pub(crate) fn first(&self, p: f64, net: Net) -> f64 {
        step_seconds(
            p,
            self.calls_first,
            self.reduce,
            self.agree + agree_overhead(p),
            net,
        )
    }

    /// A later step: no new name, the agreement one 8-byte allreduce.
    pub(crate) fn later(&self, p: f64, net: Net) -> f64 {
        step_seconds(
            p,
            self.calls_first - AGREE_EXTRA_CALLS,
            self.reduce,
            8.0,
            net,
        )
    }

    /// The step in which every name is new, with linear-latency
    /// algorithms for the agreement's two all-to-allv and its allgatherv
    /// (`(P − 1) · α` each instead of `log2(P) · α`).
    pub(crate) fn first_linear(&self, p: f64, net: Net) -> f64 {
        self.first(p, net) + LINEAR_CALLS * (exchange_messages(p) - p.log2()).max(0.0) * net.alpha
    }
}

/// Messages per rank of one of the agreement's exchanges with linear
/// algorithms: `P − 1`, or over the grid of the two-hop exchange `(R − 1) +
/// (C − 1)` (198 at 10^4 ranks).
pub(crate) fn exchange_messages(p: f64) -> f64 {
    match chimbuko_mpi::collectives::grid_shape(p as usize) {
        Some((r, c)) => (r + c - 2) as f64,
        None => p - 1.0,
    }
}

/// The agreement's collectives that MPI libraries run with `P − 1`
/// messages by default at large P: two `MPI_Alltoallv`, one
/// `MPI_Allgatherv`.
pub(crate) const LINEAR_CALLS: f64 = 3.0;

/// Least squares for `t ≈ a·x + b·y` with `a, b ≥ 0`: the unconstrained
/// solution if it is non-negative, otherwise the better of the two
/// one-constant fits (a negative per-call latency or per-byte cost is
/// measurement noise, not a property of the machine).
pub(crate) fn fit_nonnegative(points: &[(f64, f64, f64)]) -> (f64, f64) {
    let (mut sxx, mut sxy, mut syy, mut sxt, mut syt, mut stt) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for &(x, y, t) in points {
        sxx += x * x;
        sxy += x * y;
        syy += y * y;
        sxt += x * t;
        syt += y * t;
        stt += t * t;
    }
    let residual = |a: f64, b: f64| {
        stt - 2.0 * (a * sxt + b * syt) + a * a * sxx + 2.0 * a * b * sxy + b * b * syy
    };
    let det = sxx * syy - sxy * sxy;
    if det.abs() > 1e-12 * (sxx * syy).max(f64::MIN_POSITIVE) {
        let (a, b) = ((sxt * syy - syt * sxy) / det, (sxx * syt - sxy * sxt) / det);
        if a >= 0.0 && b >= 0.0 {
            return (a, b);
        }
    }
    let only_a = (if sxx > 0.0 { (sxt / sxx).max(0.0) } else { 0.0 }, 0.0);
    let only_b = (0.0, if syy > 0.0 { (syt / syy).max(0.0) } else { 0.0 });
    if residual(only_a.0, only_a.1) <= residual(only_b.0, only_b.1) {
        only_a
    } else {
        only_b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cost_fit_recovers_exact_constants() {
        let points: Vec<(f64, f64, f64)> = [(1.0, 100.0), (2.0, 50.0), (3.0, 400.0)]
            .iter()
            .map(|&(x, y)| (x, y, 2.0 * x + 0.5 * y))
            .collect();
        let (a, b) = fit_nonnegative(&points);
        assert!((a - 2.0).abs() < 1e-9 && (b - 0.5).abs() < 1e-9, "{a} {b}");
    }

    #[test]
    fn the_cost_fit_never_reports_a_negative_constant() {
        // Unconstrained least squares gives a < 0 here.
        let points = [(1.0, 10.0, 5.0), (2.0, 10.0, 4.0), (1.0, 20.0, 10.0)];
        let (a, b) = fit_nonnegative(&points);
        assert_eq!(a, 0.0);
        assert!((b - 290.0 / 600.0).abs() < 1e-12, "{b}");
    }

    #[test]
    fn allreduce_picks_the_cheaper_algorithm() {
        let net = CLUSTER;
        // 8 bytes on 1024 ranks: recursive doubling, 10 rounds.
        let small = allreduce(1024.0, 8.0, net);
        assert!((small - 10.0 * (2e-6 + 8e-10)).abs() < 1e-15, "{small}");
        // 10 MB: Rabenseifner, about 2·m·β.
        let big = allreduce(1024.0, 1e7, net);
        let rab = 20.0 * 2e-6 + 2.0 * 1e-10 * 1e7 * 1023.0 / 1024.0;
        assert!((big - rab).abs() < 1e-12, "{big} {rab}");
    }

    #[test]
    fn a_step_on_two_ranks_is_linear_in_the_constants() {
        // On 2 ranks every call is one round and the allreduce is
        // recursive doubling: t = α·calls + β·(payload + received), the
        // form the fit assumes.
        let net = Net {
            alpha: 3e-6,
            beta: 2e-10,
        };
        let t = step_seconds(2.0, 10.0, 1000.0, 500.0, net);
        assert!((t - (10.0 * 3e-6 + 1500.0 * 2e-10)).abs() < 1e-15, "{t}");
        assert_eq!(step_seconds(1.0, 10.0, 1000.0, 500.0, net), 0.0);
    }

    #[test]
    fn later_steps_cost_less_than_the_first() {
        let pay = Payload {
            reduce: 4e6,
            calls_first: 20.0,
            agree: 1e6,
        };
        for p in [1e3, 1e4, 1e5] {
            assert!(pay.later(p, CLUSTER) < pay.first(p, CLUSTER));
            assert!(pay.first(p, CLUSTER) < pay.first_linear(p, CLUSTER));
        }
    }
}
