//! Who an incident is about: an execution of a TAU trace, or a PE, KP or
//! LP of a ROSS run (or every PE of it).

use serde::Serialize;

/// What an entity of an incident is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EntityKind {
    /// One function execution of a TAU trace.
    Execution,
    /// A ROSS PE (MPI rank).
    Pe,
    /// A ROSS KP.
    Kp,
    /// A ROSS LP.
    Lp,
    /// Every PE of a ROSS run: nothing singles one out.
    EveryPe,
}

impl EntityKind {
    /// The snake_case name used in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            EntityKind::Execution => "execution",
            EntityKind::Pe => "pe",
            EntityKind::Kp => "kp",
            EntityKind::Lp => "lp",
            EntityKind::EveryPe => "every_pe",
        }
    }
}

/// A root or member of an incident. Fields that do not apply to its kind
/// are `None`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entity {
    /// What it is.
    pub kind: EntityKind,
    /// TAU: program index of the stream.
    pub program: Option<u32>,
    /// TAU: application rank.
    pub rank: Option<u64>,
    /// TAU: thread.
    pub thread: Option<u64>,
    /// TAU: function name.
    pub function: Option<String>,
    /// TAU: the execution's id, `"program:rank:step:idx"`, as in the
    /// provenance file's `event_id`.
    pub event_id: Option<String>,
    /// ROSS: PE.
    pub pe: Option<u32>,
    /// ROSS: KP (local to its PE).
    pub kp: Option<u32>,
    /// ROSS: global LP id.
    pub lp: Option<u32>,
}

impl Entity {
    fn empty(kind: EntityKind) -> Entity {
        Entity {
            kind,
            program: None,
            rank: None,
            thread: None,
            function: None,
            event_id: None,
            pe: None,
            kp: None,
            lp: None,
        }
    }

    /// A TAU execution.
    pub fn execution(
        program: u32,
        rank: u64,
        thread: u64,
        function: &str,
        event_id: String,
    ) -> Self {
        Entity {
            program: Some(program),
            rank: Some(rank),
            thread: Some(thread),
            function: Some(function.to_owned()),
            event_id: Some(event_id),
            ..Entity::empty(EntityKind::Execution)
        }
    }

    /// A ROSS PE.
    pub fn pe(pe: u32) -> Self {
        Entity {
            pe: Some(pe),
            ..Entity::empty(EntityKind::Pe)
        }
    }

    /// A ROSS KP of a PE.
    pub fn kp(pe: u32, kp: u32) -> Self {
        Entity {
            pe: Some(pe),
            kp: Some(kp),
            ..Entity::empty(EntityKind::Kp)
        }
    }

    /// A ROSS LP, with its PE and KP when known.
    pub fn lp(pe: Option<u32>, kp: Option<u32>, lp: u32) -> Self {
        Entity {
            pe,
            kp,
            lp: Some(lp),
            ..Entity::empty(EntityKind::Lp)
        }
    }

    /// Every PE of a ROSS run.
    pub fn every_pe() -> Self {
        Entity::empty(EntityKind::EveryPe)
    }

    /// The rank (TAU) or PE (ROSS) the entity belongs to, if one.
    pub fn rank_or_pe(&self) -> Option<u64> {
        self.rank.or(self.pe.map(u64::from))
    }

    /// How people name it: `rank 1 thread 0: MPI_Send()`, `PE 2`,
    /// `LP 37 (PE 2, KP 1)`, `every PE`.
    pub fn label(&self) -> String {
        match self.kind {
            EntityKind::Execution => {
                let prog = match self.program {
                    Some(p) if p > 0 => format!("program {p} "),
                    _ => String::new(),
                };
                let thread = match self.thread {
                    Some(t) if t > 0 => format!(" thread {t}"),
                    _ => String::new(),
                };
                format!(
                    "{prog}rank {}{thread}: {}",
                    self.rank.unwrap_or(0),
                    self.function.as_deref().unwrap_or("?")
                )
            }
            EntityKind::Pe => format!("PE {}", self.pe.unwrap_or(0)),
            EntityKind::Kp => format!("PE {} KP {}", self.pe.unwrap_or(0), self.kp.unwrap_or(0)),
            EntityKind::Lp => match (self.pe, self.kp) {
                (Some(p), Some(k)) => format!("LP {} (PE {p}, KP {k})", self.lp.unwrap_or(0)),
                (Some(p), None) => format!("LP {} (PE {p})", self.lp.unwrap_or(0)),
                _ => format!("LP {}", self.lp.unwrap_or(0)),
            },
            EntityKind::EveryPe => "every PE".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_say_who() {
        let e = Entity::execution(0, 1, 0, "MPI_Send()", "0:1:2:3".into());
        assert_eq!(e.label(), "rank 1: MPI_Send()");
        assert_eq!(
            Entity::lp(Some(2), Some(1), 37).label(),
            "LP 37 (PE 2, KP 1)"
        );
        assert_eq!(Entity::pe(3).label(), "PE 3");
        assert_eq!(Entity::every_pe().label(), "every PE");
    }
}
