//! One provenance record and its link tables: the execution itself, its
//! call stack up to the root, counters, window, GPU location and host
//! parent, and the node state at its exit.

use super::*;

/// `gpu_parent.error` of a kernel whose launch's correlation id was never
/// seen (the reference's message).
const NO_HOST_ID: &str = "Chimbuko error: Correlation ID of host parent event was not recorded";

/// `gpu_parent.error` of a kernel with more than one correlation id (the
/// reference's message).
pub const MULTIPLE_HOST_IDS: &str =
    "Chimbuko error: Multiple host parent event correlation IDs found, likely due to trace corruption";

impl StreamProvenance {
    pub(super) fn record(&self, ctx: &StepContext<'_>, i: usize, out: &mut CollectionTables) {
        let execs = &ctx.events.executions;
        let e = &execs[i];
        let v = ctx.verdicts[i];
        let prediction = Prediction::of_execution(ctx.predictions, i);
        let rec_index = out.records.len() as u64;
        let step = StepOfRecord {
            io_step: ctx.step,
            io_step_tstart: ctx.events.first_ts.unwrap_or(0),
            io_step_tend: ctx.events.last_ts.unwrap_or(0),
            labelled_step: ctx.step,
        };
        let mut record = self.open_record(e, v, prediction, ctx.names, step, out);
        self.push_call_stack(ctx, e, rec_index, 0, &mut out.call_stack);

        out.counter_events
            .extend(ctx.events.counters_of(e).iter().map(|c| CounterEventRow {
                record: rec_index,
                pid: e.program,
                rid: e.rank(),
                tid: e.thread,
                counter_idx: c.counter,
                counter_value: c.value,
                ts: c.ts,
            }));

        for (offset, w) in self.window(ctx, i) {
            out.exec_window.push(ExecWindowRow {
                record: rec_index,
                offset,
                fid: w.fid,
                func: fixed(ctx.names.functions.name(w.fid)),
                event_id: id_str(e.program, &w.id),
                entry: w.entry,
                exit: w.exit,
                parent_event_id: parent_str(e.program, w.parent),
                is_anomaly: w.is_anomaly as u8,
            });
            for c in &w.comms {
                out.comm_window.push(comm_row(rec_index, e, c, &w.id));
            }
        }

        if e.is_gpu {
            if let Some(loc) = ctx.stream.gpu_location(e.thread) {
                let s = |v: &Option<String>| fixed(v.as_deref().unwrap_or(""));
                out.gpu_location.push(GpuLocationRow {
                    record: rec_index,
                    context: s(&loc.context),
                    device: s(&loc.device),
                    stream: s(&loc.stream),
                    thread: e.thread,
                });
            }
        }
        if e.is_gpu {
            // A kernel with several correlation ids cannot name its launch
            // for sure (the first id was paired, as a recoverable issue).
            let host = if ctx.events.correlation_ids_of(e).len() > 1 {
                Err(MULTIPLE_HOST_IDS)
            } else {
                ctx.events.gpu_partner_of(i).ok_or(NO_HOST_ID)
            };
            let row = self.gpu_parent(ctx, e.program, host, rec_index, &mut out.call_stack);
            out.gpu_parent.push(row);
        }

        self.push_node_state(ctx, e.exit, rec_index, &mut out.node_state);
        close_record_links(&mut record, out);
        out.records.push(record);
    }

    /// A record for an execution labelled after its step (its function's
    /// model was too thin when it completed): the step's context is gone,
    /// so it has no window, counters or parents beyond itself.
    #[allow(clippy::too_many_arguments)]
    pub fn record_detached(
        &self,
        e: &Execution,
        v: Verdict,
        prediction: Option<Prediction>,
        exit_step: u64,
        labelled_step: u64,
        names: &GlobalNames,
        out: &mut CollectionTables,
    ) {
        let rec_index = out.records.len() as u64;
        let step = StepOfRecord {
            io_step: exit_step,
            io_step_tstart: 0,
            io_step_tend: 0,
            labelled_step,
        };
        let mut record = self.open_record(e, v, prediction, names, step, out);
        out.call_stack.push(CallStackRow {
            record: rec_index,
            of_gpu_parent: 0,
            level: 0,
            fid: e.function,
            func: fixed(names.functions.name(e.function)),
            entry: e.entry,
            exit: e.exit,
            event_id: id_str(e.program, &e.id),
            is_anomaly: (v.label == Label::Anomaly) as u8,
        });
        close_record_links(&mut record, out);
        out.records.push(record);
    }

    /// The record of `e` with every link table starting at its current end
    /// and empty; [`close_record_links`] sets the lengths once the rows of
    /// the record are pushed.
    fn open_record(
        &self,
        e: &Execution,
        v: Verdict,
        prediction: Option<Prediction>,
        names: &GlobalNames,
        step: StepOfRecord,
        out: &CollectionTables,
    ) -> ExecRecord {
        ExecRecord {
            event_id: id_str(e.program, &e.id),
            event_rank: e.id.rank,
            event_step: e.id.step,
            event_idx: e.id.idx,
            pid: e.program,
            rid: e.rank(),
            tid: e.thread,
            fid: e.function,
            func: fixed(names.functions.name(e.function)),
            entry: e.entry,
            exit: e.exit,
            runtime_total: e.inclusive(),
            runtime_exclusive: e.exclusive,
            io_step: step.io_step,
            io_step_tstart: step.io_step_tstart,
            io_step_tend: step.io_step_tend,
            labelled_step: step.labelled_step,
            label: label_code(v.label),
            outlier_score: v.score,
            outlier_severity: e.exclusive as f64,
            final_label: label_code(v.label),
            final_score: v.score,
            is_gpu_event: e.is_gpu as u8,
            size_class: e.size_class,
            hostname: fixed(&self.hostname),
            parent_event_id: parent_str(e.program, e.parent()),
            depth: e.depth,
            n_children: e.n_children,
            // The function index until the writer maps it to a model row.
            model_row: e.function as u64,
            model_prediction_us: prediction.map_or(f64::NAN, |p| p.predicted_us),
            model_ratio: prediction.map_or(f64::NAN, |p| p.ratio()),
            dropped_attachments: e.dropped_attachments(),
            // Every link table starts at its current end, and is empty
            // until `close_record_links` counts the rows pushed since.
            call_stack_start: out.call_stack.len() as u64,
            counter_events_start: out.counter_events.len() as u64,
            exec_window_start: out.exec_window.len() as u64,
            comm_window_start: out.comm_window.len() as u64,
            gpu_location_start: out.gpu_location.len() as u64,
            gpu_parent_start: out.gpu_parent.len() as u64,
            node_state_start: out.node_state.len() as u64,
            call_stack_len: 0,
            counter_events_len: 0,
            exec_window_len: 0,
            comm_window_len: 0,
            gpu_location_len: 0,
            gpu_parent_len: 0,
            node_state_len: 0,
        }
    }

    /// The execution, then its parents: completed this step, or still open.
    fn push_call_stack(
        &self,
        ctx: &StepContext<'_>,
        e: &Execution,
        record: u64,
        of_gpu_parent: u8,
        out: &mut Vec<CallStackRow>,
    ) {
        let execs = &ctx.events.executions;
        let open: Vec<_> = ctx.stream.open_calls_of(e.thread).collect();
        let mut level = 0u32;
        let mut push = |fid: u32, entry: u64, exit: u64, id: &ExecId, anomaly: bool| {
            out.push(CallStackRow {
                record,
                of_gpu_parent,
                level,
                fid,
                func: fixed(ctx.names.functions.name(fid)),
                entry,
                exit,
                event_id: id_str(e.program, id),
                is_anomaly: anomaly as u8,
            });
            level += 1;
        };
        let is_anomaly = |j: usize| ctx.verdicts[j].label == Label::Anomaly;
        let me = ctx.events.find(ctx.step, e.id);
        push(
            e.function,
            e.entry,
            e.exit,
            &e.id,
            me.is_some_and(is_anomaly),
        );
        let mut next = e.parent();
        // Depth bounds the walk even if parent links were ever cyclic.
        for _ in 0..=e.depth {
            let Some(p) = next else { break };
            if let Some(j) = ctx.events.find(ctx.step, p) {
                let pe = &execs[j];
                push(pe.function, pe.entry, pe.exit, &pe.id, is_anomaly(j));
                next = pe.parent();
            } else if let Some(d) = open.iter().position(|o| o.id == p) {
                let o = &open[d];
                push(o.function, o.entry, 0, &o.id, false);
                next = d.checked_sub(1).map(|d| open[d].id);
            } else {
                break;
            }
        }
    }

    /// The GPU parent row of a kernel: its host launch (with that launch's
    /// call stack), or the reference's message for why there is none.
    fn gpu_parent(
        &self,
        ctx: &StepContext<'_>,
        pid: u32,
        host: Result<ExecId, &str>,
        record: u64,
        call_stack: &mut Vec<CallStackRow>,
    ) -> GpuParentRow {
        let mut row = GpuParentRow {
            record,
            event_id: fixed(""),
            tid: 0,
            fid: 0,
            call_stack_start: call_stack.len() as u64,
            call_stack_len: 0,
            error: fixed(""),
        };
        let host = match host {
            Ok(h) => h,
            Err(why) => {
                row.error = fixed(why);
                return row;
            }
        };
        row.event_id = id_str(pid, &host);
        match ctx.events.find(ctx.step, host) {
            Some(j) => {
                let h = &ctx.events.executions[j];
                row.tid = h.thread;
                row.fid = h.function;
                self.push_call_stack(ctx, h, record, 1, call_stack);
                row.call_stack_len = (call_stack.len() as u64 - row.call_stack_start) as u32;
            }
            None => {
                row.error = fixed("Chimbuko error: Host parent event could not be reached");
            }
        }
        row
    }

    /// Node state at `at`: the latest value of each monitoring counter.
    fn push_node_state(
        &self,
        ctx: &StepContext<'_>,
        at: u64,
        record: u64,
        out: &mut Vec<NodeStateRow>,
    ) {
        let mut state = self.node_state.clone();
        for s in ctx.events.node_state.iter().filter(|s| s.ts <= at) {
            let cur = state.entry(s.counter).or_insert((s.value, s.ts));
            if s.ts >= cur.1 {
                *cur = (s.value, s.ts);
            }
        }
        for (counter, (value, ts)) in state {
            let name = ctx.names.counters.name(counter);
            out.push(NodeStateRow {
                record,
                field: fixed(name.strip_prefix(MONITORING_PREFIX).unwrap_or(name)),
                value,
                timestamp: ts,
            });
        }
    }
}

/// Where in the I/O stream a record was seen and labelled.
#[derive(Debug, Clone, Copy)]
pub(super) struct StepOfRecord {
    io_step: u64,
    io_step_tstart: u64,
    io_step_tend: u64,
    labelled_step: u64,
}

pub(super) fn comm_row(record: u64, e: &Execution, c: &CommEvent, owner: &ExecId) -> CommWindowRow {
    CommWindowRow {
        record,
        kind: match c.direction {
            CommDirection::Send => 0,
            CommDirection::Recv => 1,
        },
        pid: e.program,
        rid: e.rank(),
        tid: e.thread,
        src: c.src,
        tar: c.dst,
        bytes: c.bytes.unwrap_or(u64::MAX),
        tag: c.tag,
        timestamp: c.ts,
        execdata_key: id_str(e.program, owner),
    }
}

/// Sets each link length of `record` to the rows pushed since
/// [`StreamProvenance::open_record`].
pub(super) fn close_record_links(record: &mut ExecRecord, out: &CollectionTables) {
    let len = |end: usize, start: u64| (end as u64 - start) as u32;
    record.call_stack_len = len(out.call_stack.len(), record.call_stack_start);
    record.counter_events_len = len(out.counter_events.len(), record.counter_events_start);
    record.exec_window_len = len(out.exec_window.len(), record.exec_window_start);
    record.comm_window_len = len(out.comm_window.len(), record.comm_window_start);
    record.gpu_location_len = len(out.gpu_location.len(), record.gpu_location_start);
    record.gpu_parent_len = len(out.gpu_parent.len(), record.gpu_parent_start);
    record.node_state_len = len(out.node_state.len(), record.node_state_start);
}
