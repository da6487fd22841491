//! The end of a run: what is still held is labelled against the final
//! model, and in-situ anomalies are re-judged against it (as the reference
//! does before its final write: early steps have thin models, so some calls
//! flagged then are ordinary once the whole run is known). Then the
//! outputs finish (collectively), the ranks check that they hold the same
//! model, and the run's summary gets the run's headline numbers.

use anyhow::{bail, Context};

use super::attributes::unix_seconds;
use super::collective_failure;
use super::pipeline::{judge, Pipeline, RunState};
use super::streams::StreamState;
use super::timings::Stage;
use crate::output::consumer::RunEnd;
use crate::output::summary::{CollectiveBytes, RunSummary};

impl Pipeline<'_> {
    /// Decides the incidents' last nodes and ranks them against the run's
    /// total rank time (the streams' spans, summed over every rank;
    /// collective).
    fn conclude_incidents(&mut self) {
        let st = &mut self.state;
        st.incidents.finish();
        let mine: u64 = st
            .streams
            .iter()
            .filter_map(|s| s.span)
            .map(|(a, b)| b.saturating_sub(a))
            .sum();
        let total_us = st.coll.allreduce_sum(&[mine])[0];
        let names = &st.names;
        let (all, below) = st
            .incidents
            .incidents(total_us, &|f| names.functions.name(f).to_owned());
        st.incident_list = Some(crate::incidents::IncidentList::rank(
            all,
            total_us as f64 / 1e6,
            st.opts.incident_floor,
            below.occurrences,
            below.cost_us as f64 / 1e6,
        ));
    }

    /// Finishes the run after its last step.
    pub(super) fn finish(mut self) -> anyhow::Result<()> {
        let calls_in_steps = self.state.coll.calls_made() - self.state.calls_before;
        let RunState {
            held,
            filter,
            detector,
            opts,
            names,
            steps_done,
            ..
        } = &mut self.state;
        let (late, pruned) = held.judge_at_end(*steps_done, |e, p| {
            judge(filter, detector.as_ref(), opts.use_inclusive, e, p)
        });
        self.outputs.late_labels(&late, names);
        let mut open_calls = 0u64;
        for s in &mut self.state.streams {
            open_calls += s.calls.open_calls() as u64;
            let unfinished = s.calls.finish();
            self.state.issues.merge(&unfinished);
        }

        self.conclude_incidents();

        let end = RunEnd {
            steps: self.state.steps_done,
            ended_at: self.state.coll.allreduce_max(&[unix_seconds()])[0],
            completed: true,
            stopped_by: None,
        };
        // The last append and the re-evaluation count as writing.
        let failure = self.timed(Stage::Write, |p| {
            let ctx = p.state.context();
            p.outputs.finish(&ctx, &end)
        });
        let st = &self.state;
        let coll = st.coll;
        let failed = coll.allreduce_sum(&[failure.is_some() as u64])[0];
        if failed > 0 {
            return Err(collective_failure(coll, failure.as_deref()));
        }

        // Final reductions: model identity, totals, timings.
        let pruned = coll.allreduce_sum(&[pruned])[0];
        let digest = st.detector.digest();
        let dmin = coll.allreduce_min(&[digest])[0];
        let dmax = coll.allreduce_max(&[digest])[0];
        if dmin != dmax {
            bail!(
                "internal error: global models differ across AD ranks (digests {dmin:x} vs {dmax:x})"
            );
        }
        let count =
            |f: fn(&StreamState) -> bool| st.streams.iter().filter(|s| f(&s.state)).count() as u64;
        let totals = coll.allreduce_sum(&[
            open_calls,
            st.issues.total(),
            count(|s| matches!(s, StreamState::Failed { .. })),
            count(|s| matches!(s, StreamState::Stalled { .. })),
        ]);
        let stage_max = st.timings.reduce_max(coll);
        let peak_rss_kb = coll.allreduce_max(&[crate::sys::allocator::peak_rss_kb()])[0];
        let traffic = coll.allreduce_max(&[
            st.timings.bytes(Stage::Agree),
            st.timings.bytes(Stage::Reduce),
            st.timings.bytes(Stage::Status),
            st.timings.bytes(Stage::Link),
        ]);
        let traffic_in = coll.allreduce_max(&[
            st.timings.received(Stage::Agree),
            st.timings.received(Stage::Reduce),
            st.timings.received(Stage::Status),
            st.timings.received(Stage::Link),
        ]);
        let mut summary = RunSummary {
            ad_ranks: coll.size(),
            streams: st.all_streams,
            steps: st.steps_done,
            rows: st.rows,
            executions: st.executions,
            anomalies_in_situ: st.anomalies,
            // The run's summary fills in the final anomalies and the truth.
            anomalies: 0,
            anomalies_pruned_at_end: pruned,
            open_calls_at_end: totals[0],
            event_issues: totals[1],
            streams_failed: totals[2],
            streams_stalled: totals[3],
            seconds: st.start.elapsed().as_secs_f64(),
            model_digest: format!("{digest:016x}"),
            peak_rss_mb: peak_rss_kb as f64 / 1024.0,
            timings: stage_max,
            truth: None,
            incident_truth: match (&st.incident_list, st.opts.truth.first()) {
                (Some(list), Some(t)) => {
                    match crate::output::truth_incidents::IncidentTruth::beside(t) {
                        Some(p) => Some(
                            crate::output::truth_incidents::IncidentTruth::load(&p)?.score(list),
                        ),
                        None => None,
                    }
                }
                _ => None,
            },
            provenance: st.provenance.as_ref().map(|p| p.display().to_string()),
            collective_bytes_per_step: CollectiveBytes::per_step(&traffic, st.steps_done),
            collective_bytes_received_per_step: CollectiveBytes::per_step(
                &traffic_in,
                st.steps_done,
            ),
            name_hash_collisions: coll.name_hash_collisions(),
            collective_calls_per_step: calls_in_steps as f64 / st.steps_done.max(1) as f64,
            active_functions_per_step: st.active_functions as f64 / st.steps_done.max(1) as f64,
        };
        let failed = super::StreamsFailed {
            failed: summary.streams_failed,
            stalled: summary.streams_stalled,
            streams: st.all_streams as u64,
            none_read: summary.rows == 0,
            with_file: st.provenance.is_some(),
        };
        let allowed = st.opts.allow_failed_streams;
        self.outputs.report(&st.context(), &mut summary)?;
        // The HTML page of the file just closed (rank 0; no collective
        // follows, so only rank 0's exit status says if it failed).
        if let (Some(html), Some(prov), 0) = (&st.opts.report, &st.provenance, coll.rank()) {
            let w = crate::report::write_report(prov, html)
                .with_context(|| format!("writing the report of {}", prov.display()))?;
            eprintln!(
                "run: report written to {} ({:.1} MB)",
                w.path.display(),
                w.bytes as f64 / 1e6
            );
        }
        if failed.failed + failed.stalled > 0 && (failed.none_read || !allowed) {
            return Err(failed.into());
        }
        Ok(())
    }
}
