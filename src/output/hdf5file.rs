//! The provenance file: one HDF5 file shared by all AD ranks through
//! parallel HDF5 (MPI-IO). With `read` (which reads files back), the only
//! code that calls HDF5.
//!
//! Rules of parallel HDF5 this module follows:
//! - every rank makes the same metadata calls in the same order (create,
//!   open, resize, attributes, flush, close) — they are collective;
//! - each rank writes its own rows independently into a hyperslab that the
//!   collectives computed (offsets by exclusive scan), so no two ranks ever
//!   write the same bytes;
//! - variable-length data cannot be written in parallel, hence fixed-length
//!   strings in the tables (attributes may be variable-length: they are
//!   written collectively with identical values).
//!
//! A collective call that fails on one rank while the others wait inside it
//! would hang the job, so the writer (`super::ProvenanceWriter`) separates
//! collective metadata calls from independent data writes and agrees on
//! success (an allreduce) after each phase: once any rank failed, no rank
//! makes another HDF5 call but the final close. Datasets are created with
//! fill time "never", so growing a table writes no data: disk-full errors
//! surface in the independent writes and flushes, where they are caught and
//! shared.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use hdf5::dataset::FillTime;
use hdf5::file::MetadataCacheConfig;
use hdf5::types::VarLenUnicode;
use hdf5::{Dataset, H5Type};

use crate::collectives::Collectives;

/// Bytes per chunk of an appendable table: large enough for efficient I/O,
/// small enough that the many small tables of a short run stay small
/// (a chunk is allocated whole as soon as one row lands in it).
const CHUNK_BYTES: usize = 64 << 10;

/// An attribute value of the root group.
#[derive(Debug, Clone)]
pub enum FileAttr {
    /// A variable-length UTF-8 string (NUL bytes become spaces).
    Str(String),
    /// An unsigned 64-bit integer.
    U64(u64),
    /// A 64-bit float.
    F64(f64),
}

/// The open provenance file.
pub struct ProvenanceFile {
    file: hdf5::File,
    path: PathBuf,
    /// Appendable tables by path, with their current length in rows.
    tables: HashMap<String, (Dataset, u64)>,
}

impl ProvenanceFile {
    /// Creates the file on every rank (collective). Fails on every rank, with
    /// the same message, when it exists and `overwrite` is off or when its
    /// directory is not writable.
    pub fn create(path: &Path, coll: &Collectives, overwrite: bool) -> anyhow::Result<Self> {
        // Checked by rank 0 and shared, so that all ranks agree.
        let problem = if coll.rank() == 0 {
            precheck(path, overwrite)
        } else {
            String::new()
        };
        let problem = coll.rank0_string(&problem);
        if !problem.is_empty() {
            bail!("{problem}");
        }
        let comm = coll.raw_comm();
        // HDF5's metadata cache grows adaptively up to 32 MiB as the tables
        // grow; 4 MiB holds what our appends touch, so memory stays flat
        // over long runs.
        let mdc = MetadataCacheConfig {
            max_size: 4 << 20,
            min_size: 1 << 20,
            initial_size: 2 << 20,
            ..Default::default()
        };
        let file = hdf5::File::with_options()
            .with_fapl(|p| {
                p.mpio(comm, None)
                    .all_coll_metadata_ops(true)
                    .mdc_config(&mdc)
            })
            .create(path)
            .with_context(|| format!("creating provenance file {}", path.display()))?;
        Ok(ProvenanceFile {
            file,
            path: path.to_path_buf(),
            tables: HashMap::new(),
        })
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Creates the groups on the way to `name` (collective).
    fn ensure_groups(&self, name: &str) -> anyhow::Result<()> {
        let mut prefix = String::new();
        let parts: Vec<&str> = name.split('/').collect();
        for part in &parts[..parts.len().saturating_sub(1)] {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            if !self.file.link_exists(&prefix) {
                self.file
                    .create_group(&prefix)
                    .with_context(|| format!("creating group {prefix}"))?;
            }
        }
        Ok(())
    }

    /// Creates an empty appendable table (collective; idempotent).
    pub fn create_table<T: H5Type>(&mut self, name: &str) -> anyhow::Result<()> {
        if self.tables.contains_key(name) {
            return Ok(());
        }
        self.ensure_groups(name)?;
        let ds = self
            .file
            .new_dataset::<T>()
            .chunk((CHUNK_BYTES / std::mem::size_of::<T>().max(1)).max(16))
            .fill_time(FillTime::Never)
            .shape(0..)
            .create(name)
            .with_context(|| format!("creating table {name}"))?;
        self.tables.insert(name.to_owned(), (ds, 0));
        Ok(())
    }

    /// Current number of rows of an appendable table.
    pub fn len(&self, name: &str) -> u64 {
        self.tables.get(name).map_or(0, |t| t.1)
    }

    /// Grows table `name` by `total` rows (collective: every rank calls it
    /// with the same `total`); returns the length before. New chunks are
    /// not filled (fill time "never"), so this writes no data.
    pub fn grow(&mut self, name: &str, total: u64) -> anyhow::Result<u64> {
        let (ds, len) = self
            .tables
            .get_mut(name)
            .with_context(|| format!("table {name} was never created"))?;
        let base = *len;
        if total > 0 {
            ds.resize(((base + total) as usize,))
                .with_context(|| format!("extending {name} to {} rows", base + total))?;
            *len = base + total;
        }
        Ok(base)
    }

    /// Writes this rank's `rows` at row `start` of table `name`
    /// (independent: no other rank takes part). With a type holding a
    /// subset of the table's fields only those are written: HDF5 matches
    /// compound members by name.
    pub fn write_rows<T: H5Type>(&self, name: &str, start: u64, rows: &[T]) -> anyhow::Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let (ds, _) = self
            .tables
            .get(name)
            .with_context(|| format!("table {name} was never created"))?;
        let s = start as usize;
        ds.as_writer()
            .write_slice(rows, s..s + rows.len())
            .with_context(|| format!("writing {} rows to {name}", rows.len()))
    }

    /// Replaces a whole (small, global) table by an empty one of `len`
    /// rows (collective); fill it with [`ProvenanceFile::write_rows`].
    pub fn recreate<T: H5Type>(&mut self, name: &str, len: u64) -> anyhow::Result<()> {
        self.ensure_groups(name)?;
        self.tables.remove(name);
        if self.file.link_exists(name) {
            self.file
                .unlink(name)
                .with_context(|| format!("replacing {name}"))?;
        }
        let ds = self
            .file
            .new_dataset::<T>()
            .fill_time(FillTime::Never)
            .shape((len as usize,))
            .create(name)
            .with_context(|| format!("creating {name}"))?;
        self.tables.insert(name.to_owned(), (ds, len));
        Ok(())
    }

    /// Sets attributes of the root group (collective; same values on every
    /// rank).
    pub fn set_attrs(&self, attrs: &[(&str, FileAttr)]) -> anyhow::Result<()> {
        for (name, value) in attrs {
            if self.file.attr(name).is_ok() {
                self.file
                    .delete_attr(name)
                    .with_context(|| format!("replacing attribute {name}"))?;
            }
            let res = match value {
                FileAttr::Str(s) => {
                    let v: VarLenUnicode = s.replace('\0', " ").parse().unwrap_or_default();
                    self.file
                        .new_attr::<VarLenUnicode>()
                        .create(*name)
                        .and_then(|a| a.write_scalar(&v))
                }
                FileAttr::U64(x) => self
                    .file
                    .new_attr::<u64>()
                    .create(*name)
                    .and_then(|a| a.write_scalar(x)),
                FileAttr::F64(x) => self
                    .file
                    .new_attr::<f64>()
                    .create(*name)
                    .and_then(|a| a.write_scalar(x)),
            };
            res.with_context(|| format!("writing attribute {name}"))?;
        }
        Ok(())
    }

    /// Pushes everything to the file system (collective).
    pub fn flush(&self) -> anyhow::Result<()> {
        self.file
            .flush()
            .with_context(|| format!("flushing {}", self.path.display()))
    }

    /// Closes the file (collective).
    pub fn close(self) -> anyhow::Result<()> {
        let path = self.path.clone();
        drop(self.tables);
        self.file
            .close()
            .with_context(|| format!("closing {}", path.display()))
    }
}

/// Why the file cannot be created ("" when it can).
fn precheck(path: &Path, overwrite: bool) -> String {
    if path.exists() && !overwrite {
        return format!(
            "provenance file {} exists; give --overwrite to replace it, or another --out",
            path.display()
        );
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        return format!(
            "cannot write provenance file {}: directory {} does not exist",
            path.display(),
            dir.display()
        );
    }
    // Probe: the only reliable writability test is to create a file.
    let probe = dir.join(format!(".chimbuko-probe-{}", std::process::id()));
    match std::fs::File::create(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            String::new()
        }
        Err(e) => format!(
            "cannot write provenance file {}: directory {} is not writable ({e})",
            path.display(),
            dir.display()
        ),
    }
}
