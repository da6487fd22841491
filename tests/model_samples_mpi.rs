//! `run --model-samples N` and `run --tag` under mpirun: the same sample
//! for 1, 2 and 4 AD ranks, at most N per function, features that agree
//! with the executions, and tags that read back.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use chimbuko_mpi::model::features::{self, FIXED};
use chimbuko_mpi::provenance::read_model::{
    function_means, read_model_sample_rows, read_model_samples, read_run_tag_texts, read_run_tags,
};
use chimbuko_mpi::util::csv::split_csv;
use common::*;

const N: usize = 6;

fn synth(dir: &Path) {
    let mut c = Command::new(exe());
    c.arg("synth")
        .arg("--out")
        .arg(dir)
        .args(["--steps", "4", "--events-per-step", "2000"]);
    run_ok(&mut c);
}

fn run_samples(np: usize, data: &Path, out: &Path, labels: &Path) {
    let mut c = mpirun(np);
    c.arg(exe())
        .args(["run", "--quiet", "--input"])
        .arg(data.join("tau-metrics-demo-{rank}.bp"))
        .arg("--out")
        .arg(out)
        .arg("--labels-out")
        .arg(labels)
        .args(["--model-samples", &N.to_string()])
        .args([
            "--tag",
            "nodes=3",
            "--tag",
            "input=small deck",
            "--tag",
            "size=1.5e3",
        ])
        .args(["--flush-steps", "2"]);
    run_ok(&mut c);
}

/// (inclusive, exclusive) of every labelled execution, by (rank, event id).
fn runtimes(labels: &Path) -> BTreeMap<(u64, String), (u64, u64)> {
    sorted_labels(labels)
        .iter()
        .map(|l| {
            let f = split_csv(l);
            (
                (f[1].parse().unwrap(), f[3].clone()),
                (f[7].parse().unwrap(), f[8].parse().unwrap()),
            )
        })
        .collect()
}

#[test]
fn samples_are_the_same_for_any_number_of_ad_ranks_and_tags_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    synth(&data);
    let mut tables = Vec::new();
    let mut raw = Vec::new();
    for np in [1usize, 2, 4] {
        // The same file name in each run: the tables name their file.
        let run_dir = dir.path().join(format!("np{np}"));
        std::fs::create_dir_all(&run_dir).unwrap();
        let out = run_dir.join("prov.h5");
        let labels = run_dir.join("labels");
        run_samples(np, &data, &out, &labels);

        let t = read_model_samples(&out).unwrap();
        let (rows, counters) = read_model_sample_rows(&out).unwrap();
        raw.push(format!("{rows:?}\n{counters:?}"));

        // Tags: the automatic ones and the given ones, numbers as numbers.
        let tags = read_run_tags(&out).unwrap();
        assert_eq!(tags["app_ranks"], 4.0);
        assert_eq!(tags["ad_ranks"], np as f64);
        assert_eq!(tags["nodes"], 3.0);
        assert_eq!(tags["size"], 1500.0);
        assert!(!tags.contains_key("input"), "text tags are not numbers");
        assert_eq!(read_run_tag_texts(&out).unwrap()["input"], "small deck");

        // At most N per function; exactly N where the run had more.
        let means = function_means(&out).unwrap();
        assert!(means.len() >= 9, "{means:?}");
        for (name, table) in &t {
            let (count, mean_ex, mean_inc) = means[name];
            assert_eq!(table.rows.len(), N.min(count as usize), "{name}");
            assert!(mean_ex <= mean_inc, "{name}");
            assert!(table.source.ends_with(&format!("model_samples of {name}")));
        }
        assert_eq!(t.len(), means.len(), "every function is sampled");

        // Features agree with the executions (the label files say each
        // one's runtimes) and with the scenario.
        let by_id = runtimes(&labels);
        let col = |table: &chimbuko_mpi::model::table::Table, name: &str| {
            table.column_index(name).unwrap()
        };
        for (k, r) in rows.iter().enumerate() {
            // The file's ids carry the program (`pid:rank:step:idx`), the label
            // files Chimbuko's `rank:step:idx`.
            let id = chimbuko_mpi::inspect::export_json::chimbuko_event_id(r.event_id.as_str());
            let (inc, ex) = by_id[&(r.rank, id.to_owned())];
            assert_eq!((r.inclusive_us, r.exclusive_us), (inc, ex), "row {k}");
            assert_eq!(r.children_us, inc - ex);
            assert!(r.exclusive_us <= r.inclusive_us);
            assert_eq!(r.n_children == 0, r.children_us == 0, "row {k}");
        }
        let get = |name: &str| &t.iter().find(|(n, _)| n == name).unwrap().1;
        let isend = get("MPI_Isend");
        assert_eq!(isend.columns, FIXED.map(String::from).to_vec());
        for row in &isend.rows {
            assert_eq!(row[col(isend, features::BYTES_SENT)], 65536.0);
            assert_eq!(row[col(isend, features::BYTES_RECEIVED)], 0.0);
        }
        let irecv = get("MPI_Irecv");
        for row in &irecv.rows {
            assert_eq!(row[col(irecv, features::BYTES_RECEIVED)], 65536.0);
        }
        let compute = get("compute");
        let ins = col(compute, &features::counter_feature("PAPI_TOT_INS"));
        assert_eq!(ins, FIXED.len());
        for row in &compute.rows {
            assert!(row[ins] > 5e5, "{row:?}");
            assert_eq!(row[col(compute, features::N_CHILDREN)], 2.0);
            assert!(row[col(compute, features::DEPTH)] >= 2.0);
        }
        tables.push(t);
    }
    assert_eq!(tables[0], tables[1], "1 vs 2 AD ranks");
    assert_eq!(tables[0], tables[2], "1 vs 4 AD ranks");
    assert_eq!(raw[0], raw[1], "model_samples, 1 vs 2 AD ranks");
    assert_eq!(raw[0], raw[2], "model_samples, 1 vs 4 AD ranks");
}
