//! Stage 2, agree: the names first seen in this step, on any rank, are
//! agreed by all ranks (`Collectives::agree_names`: each rank receives the
//! union of the new names once, whatever the number of ranks), so that
//! every rank numbers functions and counters the same way whatever streams
//! it reads.

use crate::detect::size_classes::{class_name, parse_class_name};
use crate::events::names::GlobalNames;
use crate::run::pipeline::{ModelState, RunSetup};
use crate::run::streams::OwnedStream;
use crate::trace::step::TraceStep;

/// Extends the global name tables, the model's functions and each
/// stream's local → global map by the names new in `traces` (collective).
pub(super) fn agree(
    run: &RunSetup<'_>,
    step: u64,
    traces: &[(usize, TraceStep)],
    (names, model, streams): (&mut GlobalNames, &mut ModelState, &mut [OwnedStream]),
) {
    let mut unknown = Vec::new();
    // Per stream, the names already agreed (looked up once).
    let mut found = vec![Vec::new(); traces.len()];
    for ((i, trace), found) in traces.iter().zip(&mut found) {
        let program = streams[*i].spec.program;
        names.unknown_names(program, &trace.new_attributes, found, &mut unknown);
    }
    // The message-size classes this rank saw in the last step that have
    // no id yet, as functions of their own (`detect::size_classes`).
    for (f, class) in model.detector.take_new_size_classes() {
        if (f as usize) < names.functions.len() {
            let name = class_name(names.functions.name(f), class);
            unknown.push((names.functions.program(f), name));
        }
    }
    // Duplicates (a name new to several streams) are dropped by the
    // agreement itself.
    let collisions = run.coll.name_hash_collisions();
    let agreed = run.coll.agree_names(&unknown);
    if run.coll.name_hash_collisions() > collisions && run.coll.rank() == 0 && !run.opts.quiet {
        // Harmless (the names were agreed the slow way), but a user
        // comparing the collective traffic of runs should know why
        // this step's was larger.
        eprintln!(
            "warning: step {}: two different new names share a 64-bit name hash; \
             this step's names were agreed by allgather (results unaffected)",
            step
        );
    }
    let counters_before = names.counters.len() as u32;
    let new_functions = names.extend(agreed);
    for &key in &new_functions {
        let program = names.functions.program(key);
        if let Some((function, class)) = parse_class_name(names.functions.name(key)) {
            if let Some(f) = names.functions.find(program, function) {
                model.detector.add_size_class(f, class, key);
            }
        }
    }
    // Names first: the model detector knows its functions by name, and
    // a threshold of the rules goes to the model that judges them.
    if let Some(models) = model.detector.predictor_mut() {
        for &f in &new_functions {
            models.function_named(f, names.functions.name(f));
        }
        for c in counters_before..names.counters.len() as u32 {
            models.counter_named(c, names.counters.name(c));
        }
    }
    for &f in &new_functions {
        let i = f as usize;
        if model.modelled.len() <= i {
            model.modelled.resize(i + 1, false);
        }
        model.modelled[i] = model.detector.predictor().is_some_and(|m| m.predicts(f));
    }
    model
        .filter
        .add_functions(&new_functions, names, model.detector.as_mut());
    model.detector.ensure_functions(names.functions.len());
    for ((i, trace), found) in traces.iter().zip(&found) {
        let s = &mut streams[*i];
        names.update_map(s.spec.program, &trace.new_attributes, found, &mut s.map);
    }
}
