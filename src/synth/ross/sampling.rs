//! The samplers of the `synth ross` generator: real-time samples in a
//! PE's active time, GVT samples closing each interval, and the final
//! real-time sample (`ts = DBL_MAX`) with the last flush of every file.

use std::io::{self, Write};

use super::emit::{Point, Shape};
use super::generator::{Plan, RossGenerator};
use super::scenario::ModelMode;

impl<W: Write> RossGenerator<'_, W> {
    pub(super) fn shape(&self, pe: u32) -> Shape {
        let f = &self.sc.ross.files;
        Shape {
            pe,
            lps_per_kp: self.sc.ross.lps_per_kp as usize,
            lp0: pe * self.sc.lps_per_pe(),
            pe_data: f.pe_data,
            kp_data: f.kp_data,
            lp_data: f.lp_data,
        }
    }

    /// The real-time samples of PE `p` that fall in its active time.
    pub(super) fn rt_samples(&mut self, p: usize, plan: &Plan) -> io::Result<()> {
        let r = &self.sc.ross;
        let (t, end) = (self.t, self.t + plan.active);
        let gvt = f64::from(self.interval) * r.gvt_step;
        let shape = self.shape(p as u32);
        let st = &mut self.pes[p];
        let mut next = st.last_rt.map_or(t, |l| (l + r.rt_interval_s).max(t));
        while next <= end {
            let point = Point {
                ts: gvt,
                gvt,
                real_time: next,
                frac: ((next - t) / plan.active).clamp(0.0, 1.0),
                pq_qsize: st.pq,
                kp_vt: &st.kp_vt,
            };
            if let Some(w) = &mut self.w.rt {
                st.c.engine_sample(&shape, &point, true, w)?;
            }
            if matches!(r.files.model, ModelMode::Rt | ModelMode::Both) {
                if let Some(w) = &mut self.w.model {
                    st.c.model_samples(&shape, &point, true, w)?;
                }
            }
            st.last_rt = Some(next);
            next += r.rt_interval_s;
        }
        Ok(())
    }

    /// The GVT sample of PE `p` closing the interval.
    pub(super) fn gvt_sample(&mut self, p: usize, d: f64) -> io::Result<()> {
        let r = &self.sc.ross;
        let gvt = f64::from(self.interval + 1) * r.gvt_step;
        let shape = self.shape(p as u32);
        let st = &mut self.pes[p];
        let point = Point {
            ts: gvt,
            gvt,
            real_time: self.t + d,
            frac: 1.0,
            pq_qsize: st.pq,
            kp_vt: &st.kp_vt,
        };
        if let Some(w) = &mut self.w.gvt {
            st.c.engine_sample(&shape, &point, false, w)?;
        }
        if matches!(r.files.model, ModelMode::Gvt | ModelMode::Both) {
            if let Some(w) = &mut self.w.model {
                st.c.model_samples(&shape, &point, false, w)?;
            }
        }
        Ok(())
    }

    /// The final real-time sample of every PE (`ts = DBL_MAX`), then the
    /// last flush of every file.
    pub(super) fn finish(&mut self) -> io::Result<()> {
        let gvt = self.sc.end_gvt();
        for p in 0..self.pes.len() {
            let shape = self.shape(p as u32);
            let st = &mut self.pes[p];
            let real_time = st.last_rt.unwrap_or(self.t).max(self.t) + 1e-3;
            let point = Point {
                ts: f64::MAX,
                gvt,
                real_time,
                frac: 0.0,
                pq_qsize: 0,
                kp_vt: &st.kp_vt,
            };
            if let Some(w) = &mut self.w.rt {
                st.c.engine_sample(&shape, &point, true, w)?;
            }
        }
        for w in [
            &mut self.w.gvt,
            &mut self.w.rt,
            &mut self.w.evtrace,
            &mut self.w.model,
        ]
        .into_iter()
        .flatten()
        {
            w.flush_blocks()?;
        }
        Ok(())
    }
}
