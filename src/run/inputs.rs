//! The streams of a run: expanding the input patterns, agreeing on the
//! list across AD ranks, and giving each rank its contiguous block.

use std::path::PathBuf;

use anyhow::{bail, Context};

use super::options::RunOptions;
pub use crate::trace::source::StreamSpec;

/// The stream path patterns: `--input` with `{binary}` filled in, or TAU's
/// default names from `--binary`, `--trace-dir` and `--prefix`.
pub fn input_patterns(opts: &RunOptions) -> anyhow::Result<Vec<String>> {
    if opts.inputs.is_empty() {
        if opts.binaries.is_empty() {
            bail!(
                "no input: give --input 'DIR/tau-metrics-APP-{{rank}}.bp' (repeatable), or \
                 --binary APP (TAU's naming <trace-dir>/<prefix>-APP-<rank>.bp)"
            );
        }
        return Ok(opts
            .binaries
            .iter()
            .map(|b| {
                opts.trace_dir
                    .join(format!("{}-{b}-{{rank}}.bp", opts.prefix))
                    .display()
                    .to_string()
            })
            .collect());
    }
    let mut out = Vec::new();
    for (i, pattern) in opts.inputs.iter().enumerate() {
        if pattern.contains("{binary}") {
            let b = match opts.binaries.len() {
                1 => &opts.binaries[0],
                n if i < n => &opts.binaries[i],
                _ => bail!(
                    "--input {pattern:?} contains {{binary}}: give --binary (one, or one per --input)"
                ),
            };
            out.push(pattern.replace("{binary}", b));
        } else {
            out.push(pattern.clone());
        }
    }
    Ok(out)
}

/// All streams of the run, in input order then application rank.
///
/// With file engines and no `--app-ranks`, the streams of each input are
/// counted once its rank-0 stream exists, waiting up to `--open-timeout`
/// for it (the application may still be starting).
pub fn expand_inputs(opts: &RunOptions) -> anyhow::Result<Vec<StreamSpec>> {
    let patterns = input_patterns(opts)?;
    let n = patterns.len();
    let pick = |v: &[u64], i: usize| -> Option<u64> {
        match v.len() {
            0 => None,
            1 => Some(v[0]),
            _ => v.get(i).copied(),
        }
    };
    if opts.app_ranks.len() > 1 && opts.app_ranks.len() != n {
        bail!("--app-ranks: give one value, or one per --input ({n})");
    }
    if !opts.program_idx.is_empty() && opts.program_idx.len() != n {
        bail!("--program-idx: give one value per --input ({n})");
    }
    let mut out: Vec<StreamSpec> = Vec::new();
    let mut seen = std::collections::HashMap::new();
    for (i, pattern) in patterns.iter().enumerate() {
        if !pattern.contains("{rank}") {
            bail!("--input {pattern:?} must contain {{rank}} where the application rank goes");
        }
        let program = opts.program_idx.get(i).copied().unwrap_or(i as u32);
        let count = match pick(&opts.app_ranks, i) {
            Some(c) => c,
            None if opts.engine.is_file() => {
                let wait = opts.open_timeout;
                count_files_within(pattern, wait)
            }
            None => bail!("--app-ranks is required with engine {} (streams appear only when the application starts)", opts.engine),
        };
        if count == 0 {
            bail!(
                "--input {pattern:?}: no stream found within the open timeout ({} s): {} does not exist",
                opts.open_timeout.as_secs_f64(),
                pattern.replace("{rank}", "0")
            );
        }
        for r in 0..count {
            let path = PathBuf::from(pattern.replace("{rank}", &r.to_string()));
            if let Some(other) = seen.insert(path.clone(), i) {
                bail!(
                    "stream {} is named by --input {} and --input {} ({:?} and {:?}): each stream can be read by one AD rank only",
                    path.display(),
                    other + 1,
                    i + 1,
                    patterns[other],
                    pattern
                );
            }
            out.push(StreamSpec {
                program,
                app_rank: r,
                path,
                global_index: out.len(),
                input: i,
            });
        }
    }
    Ok(out)
}

/// The streams of the run, the same on every AD rank: rank 0 expands the
/// inputs (counting files at one moment on one file system view) and shares
/// the list or its error; every rank also checks that all were started
/// with the same settings, and that there are at least as many streams as
/// AD ranks. Every rank returns the same error.
pub fn agree_on_streams(
    coll: &crate::collectives::Collectives,
    opts: &RunOptions,
) -> anyhow::Result<Vec<StreamSpec>> {
    let mine = if coll.rank() == 0 {
        match expand_inputs(opts) {
            Ok(specs) => serde_json::json!({ "ok": specs }),
            Err(e) => serde_json::json!({ "err": format!("{e:#}") }),
        }
    } else {
        serde_json::Value::Null
    };
    let settings = serde_json::to_string(&opts.settings).unwrap_or_default();
    let mut msg = serde_json::to_vec(&serde_json::json!({ "streams": mine, "settings": settings }))
        .unwrap_or_default();
    msg.shrink_to_fit();
    let all = coll.allgather_bytes(&msg);
    let decode = |b: &[u8]| serde_json::from_slice::<serde_json::Value>(b).unwrap_or_default();
    let first = decode(&all[0]);
    let differing: Vec<usize> = all
        .iter()
        .enumerate()
        .filter(|(_, b)| decode(b)["settings"] != first["settings"])
        .map(|(r, _)| r)
        .collect();
    if !differing.is_empty() {
        bail!(
            "AD ranks {differing:?} were started with settings that differ from AD rank 0's \
             (in an MPMD launch give every AD rank the same flags and environment)"
        );
    }
    if let Some(e) = first["streams"]["err"].as_str() {
        bail!("{e}");
    }
    let specs: Vec<StreamSpec> = serde_json::from_value(first["streams"]["ok"].clone())
        .context("decoding the stream list shared by AD rank 0")?;
    let size = coll.size();
    if specs.len() < size {
        bail!(
            "{size} AD ranks but only {} stream(s): each stream is read by exactly one AD rank, \
             so use at most {} AD rank(s)",
            specs.len(),
            specs.len()
        );
    }
    Ok(specs)
}

/// Streams of a file pattern, once rank 0's exists (waiting up to `wait`).
fn count_files_within(pattern: &str, wait: std::time::Duration) -> u64 {
    let start = std::time::Instant::now();
    loop {
        let n = count_files(pattern);
        if n > 0 || start.elapsed() >= wait {
            return n;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

fn count_files(pattern: &str) -> u64 {
    let mut r = 0u64;
    while std::path::Path::new(&pattern.replace("{rank}", &r.to_string())).exists() {
        r += 1;
    }
    r
}

/// The contiguous block of streams of AD rank `rank` of `size`.
pub fn block_of(all: &[StreamSpec], rank: usize, size: usize) -> Vec<StreamSpec> {
    let n = all.len();
    let (lo, hi) = (rank * n / size, (rank + 1) * n / size);
    all[lo..hi].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::adios::Engine;

    fn spec(i: usize) -> StreamSpec {
        StreamSpec {
            program: 0,
            app_rank: i as u64,
            path: PathBuf::new(),
            global_index: i,
            input: 0,
        }
    }

    #[test]
    fn blocks_cover_every_stream_once() {
        let all: Vec<StreamSpec> = (0..7).map(spec).collect();
        for size in 1..=7 {
            let got: Vec<usize> = (0..size)
                .flat_map(|r| block_of(&all, r, size))
                .map(|s| s.global_index)
                .collect();
            assert_eq!(got, (0..7).collect::<Vec<_>>());
        }
    }

    #[test]
    fn engine_file_check() {
        assert!(Engine::BP5.is_file() && !Engine::SST.is_file());
    }
}
