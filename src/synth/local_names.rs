//! A simulated rank's local numbering of its functions and counters: the
//! indices its TAU stream names them by (`timer 7`, `counter 2`), and which
//! of them the stream has defined so far.
//!
//! Like TAU, a rank numbers its functions and counters in the order it
//! first uses them: ranks calling them in different orders number them
//! differently, and indices stay dense however many functions the scenario
//! has. Without first-use order (`shuffle_indices = false`) the local
//! index is the scenario's.

/// The local numbering of one rank.
pub(super) struct LocalNames {
    first_use_order: bool,
    /// The local index of each function, once defined.
    functions: Numbering,
    /// The local index of each counter, once defined.
    counters: Numbering,
}

/// Local indices of one kind of name (functions or counters).
struct Numbering {
    local: Vec<Option<u64>>,
    /// Names of this kind defined so far.
    defined: u64,
}

impl Numbering {
    fn new(len: usize) -> Numbering {
        Numbering {
            local: vec![None; len],
            defined: 0,
        }
    }

    /// The local index of scenario index `i`, and whether this use defines
    /// it (its stream must then name it).
    fn index(&mut self, i: usize, first_use_order: bool) -> (u64, bool) {
        if let Some(local) = self.local[i] {
            return (local, false);
        }
        let local = if first_use_order {
            self.defined
        } else {
            i as u64
        };
        (self.local[i], self.defined) = (Some(local), self.defined + 1);
        (local, true)
    }
}

impl LocalNames {
    /// A rank's numbering of `functions` functions and `counters` counters,
    /// none defined yet.
    pub fn new(first_use_order: bool, functions: usize, counters: usize) -> LocalNames {
        LocalNames {
            first_use_order,
            functions: Numbering::new(functions),
            counters: Numbering::new(counters),
        }
    }

    /// The local index of function `f`, and whether this use defines it.
    pub fn function(&mut self, f: usize) -> (u64, bool) {
        self.functions.index(f, self.first_use_order)
    }

    /// The local index of counter `c`, and whether this use defines it.
    pub fn counter(&mut self, c: usize) -> (u64, bool) {
        self.counters.index(c, self.first_use_order)
    }
}
