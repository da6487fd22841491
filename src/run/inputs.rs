//! The streams of a run: the list the trace source makes (on rank 0, at
//! one moment of one file-system view), agreed by every AD rank, and each
//! rank's contiguous block of it.

use anyhow::{bail, Context};

use super::options::RunOptions;
use crate::trace::source::SourceOpener;
pub use crate::trace::source::StreamSpec;

/// The streams of the run, the same on every AD rank: rank 0 lists them
/// through `sources` and shares the list or its error; every rank also
/// checks that all were started with the same settings, and that there are
/// at least as many streams as AD ranks. Every rank returns the same error.
pub fn agree_on_streams(
    coll: &crate::collectives::Collectives,
    opts: &RunOptions,
    sources: &dyn SourceOpener,
) -> anyhow::Result<Vec<StreamSpec>> {
    let mine = if coll.rank() == 0 {
        match sources.list_streams() {
            Ok(specs) => serde_json::json!({ "ok": specs }),
            Err(e) => serde_json::json!({ "err": format!("{e:#}") }),
        }
    } else {
        serde_json::Value::Null
    };
    // Listing can wait the whole open timeout for late streams: the other
    // ranks wait for it without spinning a core each.
    coll.idle_barrier();
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

/// The contiguous block of streams of AD rank `rank` of `size`.
pub fn block_of(all: &[StreamSpec], rank: usize, size: usize) -> Vec<StreamSpec> {
    let n = all.len();
    let (lo, hi) = (rank * n / size, (rank + 1) * n / size);
    all[lo..hi].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn spec(i: usize) -> StreamSpec {
        StreamSpec {
            waited_in_vain: false,
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
}
