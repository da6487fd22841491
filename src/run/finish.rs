//! The end of a run: what is still held is labelled against the final
//! model, and in-situ anomalies are re-judged against it (as the reference
//! does before its final write: early steps have thin models, so some calls
//! flagged then are ordinary once the whole run is known). Then the
//! outputs finish (collectively), the ranks check that they hold the same
//! model, and the run's summary gets the run's headline numbers.

use anyhow::{bail, Context};

use super::attributes::unix_seconds;
use super::collective_failure;
use super::pipeline::{Pipeline, RunState};
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
        st.links.tracker.finish();
        let mine: u64 = st.streams.iter().map(|s| s.covered_us()).sum();
        let total_us = st.run.coll.allreduce_sum(&[mine])[0];
        let names = &st.names;
        let (all, below) = st
            .links
            .tracker
            .incidents(total_us, &|f| names.functions.name(f).to_owned());
        st.links.list = Some(crate::incidents::IncidentList::rank(
            all,
            total_us as f64 / 1e6,
            st.run.opts.incident_floor,
            below.occurrences,
            below.cost_us as f64 / 1e6,
        ));
    }

    /// Finishes the run after its last step.
    pub(super) fn finish(mut self) -> anyhow::Result<()> {
        let run = &self.state.run;
        let calls_in_steps = run.coll.calls_made() - run.calls_before;
        let (pruned, open_calls) = self.label_what_is_held();
        self.conclude_incidents();
        self.finish_outputs()?;
        let mut summary = self.state.summary(calls_in_steps, pruned, open_calls)?;
        let st = &self.state;
        let failed = super::StreamsFailed {
            failed: summary.streams_failed,
            stalled: summary.streams_stalled,
            streams: st.run.all_streams as u64,
            none_read: summary.rows == 0,
            with_file: st.run.provenance.is_some(),
        };
        let allowed = st.run.opts.allow_failed_streams;
        self.outputs.report(&st.context(), &mut summary)?;
        // The HTML page of the file just closed (rank 0; no collective
        // follows, so only rank 0's exit status says if it failed).
        if let (Some(html), Some(prov), 0) =
            (&st.run.opts.report, &st.run.provenance, st.run.coll.rank())
        {
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

    /// Labels what is still held against the final model (and re-judges
    /// the stored in-situ anomalies), hands the late labels to the outputs
    /// and closes the calls still open; returns the anomalies pruned and
    /// the calls that were open on this rank.
    fn label_what_is_held(&mut self) -> (u64, u64) {
        let RunState {
            held,
            model,
            run,
            names,
            totals,
            ..
        } = &mut self.state;
        let inclusive = run.opts.use_inclusive;
        // No later agreement: calls of size classes never agreed are
        // judged with their function's calls of every size.
        model.detector.end_size_classes();
        let (late, pruned) =
            held.judge_at_end(totals.steps_done, |e, p| model.judge(inclusive, e, p));
        self.outputs.late_labels(&late, names);
        let mut open_calls = 0u64;
        for s in &mut self.state.streams {
            open_calls += s.calls.open_calls() as u64;
            let unfinished = s.calls.finish();
            self.state.issues.merge(&unfinished);
        }
        (pruned, open_calls)
    }

    /// The outputs' last appends and the re-evaluation (collective; timed
    /// as writing); an error of any rank stops every rank.
    fn finish_outputs(&mut self) -> anyhow::Result<()> {
        let end = RunEnd {
            steps: self.state.totals.steps_done,
            ended_at: self.state.run.coll.allreduce_max(&[unix_seconds()])[0],
            completed: true,
            stopped_by: None,
        };
        let failure = self.timed(Stage::Write, |p| {
            let ctx = p.state.context();
            p.outputs.finish(&ctx, &end)
        });
        let coll = self.state.run.coll;
        let failed = coll.allreduce_sum(&[failure.is_some() as u64])[0];
        if failed > 0 {
            return Err(collective_failure(coll, failure.as_deref()));
        }
        Ok(())
    }
}

impl RunState<'_> {
    /// The run's headline numbers, reduced over the ranks (collective):
    /// after checking that every rank holds the same model.
    fn summary(
        &self,
        calls_in_steps: u64,
        pruned: u64,
        open_calls: u64,
    ) -> anyhow::Result<RunSummary> {
        let coll = self.run.coll;
        let pruned = coll.allreduce_sum(&[pruned])[0];
        let digest = self.model.detector.digest();
        let dmin = coll.allreduce_min(&[digest])[0];
        let dmax = coll.allreduce_max(&[digest])[0];
        if dmin != dmax {
            bail!(
                "internal error: global models differ across AD ranks (digests {dmin:x} vs {dmax:x})"
            );
        }
        let count = |f: fn(&StreamState) -> bool| {
            self.streams.iter().filter(|s| f(s.state())).count() as u64
        };
        let totals = coll.allreduce_sum(&[
            open_calls,
            self.issues.total(),
            count(|s| matches!(s, StreamState::Failed { .. })),
            count(|s| matches!(s, StreamState::Stalled { .. })),
        ]);
        let stage_max = self.timings.reduce_max(coll);
        let peak_rss_kb = coll.allreduce_max(&[crate::sys::allocator::peak_rss_kb()])[0];
        let (traffic, traffic_in) = self.collective_traffic();
        let (run_totals, steps_done) = (&self.totals, self.totals.steps_done);
        let steps = steps_done.max(1) as f64;
        Ok(RunSummary {
            ad_ranks: coll.size(),
            streams: self.run.all_streams,
            steps: steps_done,
            rows: run_totals.rows,
            executions: run_totals.executions,
            anomalies_in_situ: run_totals.anomalies,
            // The run's summary fills in the final anomalies and the truth.
            anomalies: 0,
            anomalies_pruned_at_end: pruned,
            open_calls_at_end: totals[0],
            event_issues: totals[1],
            streams_failed: totals[2],
            streams_stalled: totals[3],
            seconds: self.run.start.elapsed().as_secs_f64(),
            model_digest: format!("{digest:016x}"),
            peak_rss_mb: peak_rss_kb as f64 / 1024.0,
            timings: stage_max,
            truth: None,
            incident_truth: self.incident_truth()?,
            provenance: self
                .run
                .provenance
                .as_ref()
                .map(|p| p.display().to_string()),
            collective_bytes_per_step: CollectiveBytes::per_step(&traffic, steps_done),
            collective_bytes_received_per_step: CollectiveBytes::per_step(&traffic_in, steps_done),
            name_hash_collisions: coll.name_hash_collisions(),
            collective_calls_per_step: calls_in_steps as f64 / steps,
            active_functions_per_step: run_totals.active_functions as f64 / steps,
        })
    }

    /// The largest rank's collective bytes sent and received in the
    /// stages that exchange (agree, reduce, status, link; collective).
    fn collective_traffic(&self) -> (Vec<u64>, Vec<u64>) {
        let t = &self.timings;
        let exchanging = [Stage::Agree, Stage::Reduce, Stage::Status, Stage::Link];
        let sent: Vec<u64> = exchanging.iter().map(|&s| t.bytes(s)).collect();
        let received: Vec<u64> = exchanging.iter().map(|&s| t.received(s)).collect();
        (
            self.run.coll.allreduce_max(&sent),
            self.run.coll.allreduce_max(&received),
        )
    }

    /// The incidents scored against the ground truth beside the first
    /// `--truth` file, when there is one.
    fn incident_truth(
        &self,
    ) -> anyhow::Result<Option<crate::output::truth_incidents::IncidentScore>> {
        use crate::output::truth_incidents::IncidentTruth;
        let (Some(list), Some(t)) = (&self.links.list, self.run.opts.truth.first()) else {
            return Ok(None);
        };
        match IncidentTruth::beside(t) {
            Some(p) => Ok(Some(IncidentTruth::load(&p)?.score(list))),
            None => Ok(None),
        }
    }
}
