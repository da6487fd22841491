//! The provenance file: one HDF5 file shared by all AD ranks through
//! parallel HDF5 (MPI-IO). With `read` (which reads files back), the only
//! code that calls HDF5, and the only `unsafe` code of the output room: the
//! few raw C calls the safe wrapper cannot express (null-terminated string
//! types, reading rows of a type known only at run time) are here, so their
//! invariants are checked in one place. This file is long because of that:
//! every raw HDF5 call of the project and the file's life cycle (create,
//! grow, rewrite rows, flush by reopening, close) live here together.
//!
//! Rules of parallel HDF5 this module follows:
//! - every rank makes the same metadata calls in the same order (create,
//!   open, resize, attributes, flush, close) — they are collective;
//! - each rank writes its own rows independently into a hyperslab that the
//!   collectives computed (offsets by exclusive scan), so no two ranks ever
//!   write the same bytes;
//! - variable-length data cannot be written in parallel (HDF5 1.10), hence
//!   fixed-length strings in the tables; in the file they are
//!   null-terminated (not null-padded, the Rust wrapper's default), so that
//!   `h5dump` and C readers stop at the end of the text (attributes may be
//!   variable-length: they are written collectively with identical values);
//! - every table describes itself: its row type's description and each
//!   column's description and unit become attributes of the dataset when
//!   it is created (see `super::columns`).
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
use std::ffi::{c_void, CString};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use hdf5::file::MetadataCacheConfig;
use hdf5::types::VarLenUnicode;
use hdf5::{Dataset, H5Type};
use hdf5_sys::h5::{hsize_t, H5free_memory};
use hdf5_sys::h5d::{H5D_fill_time_t, H5Dclose, H5Dcreate2, H5Dread, H5Dwrite};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5p::{
    H5Pclose, H5Pcreate, H5Pset_chunk, H5Pset_fill_time, H5P_CLS_DATASET_CREATE, H5P_DEFAULT,
};
use hdf5_sys::h5s::{
    H5S_seloper_t, H5Sclose, H5Screate_simple, H5Sselect_hyperslab, H5S_UNLIMITED,
};
use hdf5_sys::h5t::{
    H5T_class_t, H5T_str_t, H5Tclose, H5Tcopy, H5Tcreate, H5Tget_class, H5Tget_member_name,
    H5Tget_member_offset, H5Tget_member_type, H5Tget_nmembers, H5Tget_size, H5Tinsert,
    H5Tis_variable_str, H5Tset_strpad,
};

use crate::collectives::Collectives;
use crate::provenance::columns::{array_description, clean_doc, DescribedRow};
use crate::util::same_on_every_rank::SameOnEveryRank;

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
    /// The open file; `None` once closed in place, or once a flush could
    /// not close or open it again (every later call then fails).
    file: Option<hdf5::File>,
    path: PathBuf,
    /// The communicator the file was opened on (to open it again after a
    /// flush).
    comm: crate::collectives::RawComm,
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
            return Err(SameOnEveryRank::wrap(anyhow::anyhow!("{problem}")));
        }
        let comm = coll.raw_comm();
        let file = file_options(comm)
            .create(path)
            .with_context(|| format!("creating provenance file {}", path.display()))?;
        Ok(ProvenanceFile {
            file: Some(file),
            path: path.to_path_buf(),
            comm,
            tables: HashMap::new(),
        })
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open file, or an error once it is closed (a flush that could
    /// not open it again, or [`ProvenanceFile::close_in_place`]).
    fn h5(&self) -> anyhow::Result<&hdf5::File> {
        self.file.as_ref().with_context(|| {
            format!(
                "{} is closed (or was not opened again after a flush)",
                self.path.display()
            )
        })
    }

    /// Creates the groups on the way to `name` (collective).
    fn ensure_groups(&self, name: &str) -> anyhow::Result<()> {
        let file = self.h5()?;
        let mut prefix = String::new();
        let parts: Vec<&str> = name.split('/').collect();
        for part in &parts[..parts.len().saturating_sub(1)] {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            if !file.link_exists(&prefix) {
                file.create_group(&prefix)
                    .with_context(|| format!("creating group {prefix}"))?;
            }
        }
        Ok(())
    }

    /// Creates an empty appendable table (collective; idempotent).
    pub fn create_table<T: DescribedRow>(&mut self, name: &str) -> anyhow::Result<()> {
        if self.tables.contains_key(name) {
            return Ok(());
        }
        self.ensure_groups(name)?;
        let chunk = (CHUNK_BYTES / std::mem::size_of::<T>().max(1)).max(16);
        let ds = self
            .create_dataset::<T>(name, 0, Some(chunk))
            .with_context(|| format!("creating table {name}"))?;
        self.tables.insert(name.to_owned(), (ds, 0));
        Ok(())
    }

    /// Creates dataset `name` of `len` rows of `T` (appendable and chunked
    /// when `chunk` is given), with null-terminated strings and its
    /// description attributes (collective). The safe wrapper builds
    /// datasets only from Rust types, whose strings are null-padded, hence
    /// the raw calls; the rows are still written as `T` and HDF5 converts
    /// the padding on the way.
    fn create_dataset<T: DescribedRow>(
        &self,
        name: &str,
        len: u64,
        chunk: Option<usize>,
    ) -> anyhow::Result<Dataset> {
        let file_type = null_terminated_type::<T>()?;
        let cname = CString::new(name).context("table name with a NUL byte")?;
        let dims = [len as hsize_t];
        let max = [if chunk.is_some() {
            H5S_UNLIMITED
        } else {
            len as hsize_t
        }];
        // SAFETY: plain HDF5 C calls on identifiers this function creates
        // and closes (the `Raw` guards), with pointers to live locals.
        unsafe {
            let space = Raw::new(H5Screate_simple(1, dims.as_ptr(), max.as_ptr()), H5Sclose)?;
            let dcpl = Raw::new(H5Pcreate(*H5P_CLS_DATASET_CREATE), H5Pclose)?;
            if let Some(c) = chunk {
                check(H5Pset_chunk(dcpl.0, 1, [c as hsize_t].as_ptr()))?;
            }
            check(H5Pset_fill_time(
                dcpl.0,
                H5D_fill_time_t::H5D_FILL_TIME_NEVER,
            ))?;
            let ds = H5Dcreate2(
                self.h5()?.id(),
                cname.as_ptr(),
                file_type.0,
                space.0,
                H5P_DEFAULT,
                dcpl.0,
                H5P_DEFAULT,
            );
            drop(Raw::new(ds, H5Dclose)?);
        }
        let ds = self.h5()?.dataset(name)?;
        describe::<T>(&ds, name)?;
        Ok(ds)
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

    /// The dataset of table `name`; an error when it was never created.
    fn dataset(&self, name: &str) -> anyhow::Result<&Dataset> {
        let (ds, _) = self
            .tables
            .get(name)
            .with_context(|| format!("table {name} was never created"))?;
        Ok(ds)
    }

    /// Writes this rank's `rows` at row `start` of table `name`
    /// (independent: no other rank takes part). With a type holding a
    /// subset of the table's fields only those are written: HDF5 matches
    /// compound members by name.
    pub fn write_rows<T: H5Type>(&self, name: &str, start: u64, rows: &[T]) -> anyhow::Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let ds = self.dataset(name)?;
        write_block(ds, &null_terminated_type::<T>()?, start, rows)
            .with_context(|| format!("writing {} rows to {name}", rows.len()))
    }

    /// Writes `rows[k]` at row `at[k]` of table `name`, for rows scattered
    /// over the table (independent): the provenance writer's rewrite of the
    /// global tables' rows that changed. Rows close together go as one
    /// block, the unchanged rows between them read back first (see
    /// [`super::spans`]); a point selection would cost a file write per row.
    pub fn write_rows_at<T: H5Type + Clone>(
        &self,
        name: &str,
        at: &[u64],
        rows: &[T],
    ) -> anyhow::Result<()> {
        self.write_spans(name, at, rows, super::spans::MAX_GAP_BYTES)
    }

    /// [`ProvenanceFile::write_rows_at`] that writes the listed rows and no
    /// other: adjacent ones as one block, and nothing read back, for rows
    /// between which other ranks write theirs at the same time.
    pub fn write_rows_exactly_at<T: H5Type + Clone>(
        &self,
        name: &str,
        at: &[u64],
        rows: &[T],
    ) -> anyhow::Result<()> {
        self.write_spans(name, at, rows, 0)
    }

    /// The rows of [`ProvenanceFile::write_rows_at`], in spans with at most
    /// `max_gap_bytes` of unlisted rows between listed ones.
    fn write_spans<T: H5Type + Clone>(
        &self,
        name: &str,
        at: &[u64],
        rows: &[T],
        max_gap_bytes: u64,
    ) -> anyhow::Result<()> {
        if at.len() != rows.len() {
            bail!("{} rows for {} places in {name}", rows.len(), at.len());
        }
        if rows.is_empty() {
            return Ok(());
        }
        let ds = self.dataset(name)?;
        let (order, spans) = super::spans::plan(at, std::mem::size_of::<T>(), max_gap_bytes);
        let ty = null_terminated_type::<T>()?;
        let mut block: Vec<T> = Vec::new();
        for s in spans {
            let what = || format!("writing rows {}..{} of {name}", s.first, s.first + s.len);
            if s.is_dense() && order[s.from..s.to].windows(2).all(|w| w[0] + 1 == w[1]) {
                write_block(ds, &ty, s.first, &rows[order[s.from]..=order[s.to - 1]])
                    .with_context(what)?;
                continue;
            }
            block.clear();
            block.resize(s.len as usize, rows[order[s.from]].clone());
            if !s.is_dense() {
                read_rows(ds, &ty, s.first, &mut block).with_context(what)?;
            }
            for &k in &order[s.from..s.to] {
                block[(at[k] - s.first) as usize] = rows[k].clone();
            }
            write_block(ds, &ty, s.first, &block).with_context(what)?;
        }
        Ok(())
    }

    /// Replaces a whole (small, global) table by an empty one of `len`
    /// rows (collective); fill it with [`ProvenanceFile::write_rows`].
    pub fn recreate<T: DescribedRow>(&mut self, name: &str, len: u64) -> anyhow::Result<()> {
        self.ensure_groups(name)?;
        self.tables.remove(name);
        let file = self.h5()?;
        if file.link_exists(name) {
            file.unlink(name)
                .with_context(|| format!("replacing {name}"))?;
        }
        let ds = self
            .create_dataset::<T>(name, len, None)
            .with_context(|| format!("creating {name}"))?;
        self.tables.insert(name.to_owned(), (ds, len));
        Ok(())
    }

    /// Sets attributes of the root group (collective; same values on every
    /// rank).
    pub fn set_attrs(&self, attrs: &[(&str, FileAttr)]) -> anyhow::Result<()> {
        let file = self.h5()?;
        for (name, value) in attrs {
            if file.attr(name).is_ok() {
                file.delete_attr(name)
                    .with_context(|| format!("replacing attribute {name}"))?;
            }
            let res = match value {
                FileAttr::Str(s) => {
                    let v: VarLenUnicode = s.replace('\0', " ").parse().unwrap_or_default();
                    file.new_attr::<VarLenUnicode>()
                        .create(*name)
                        .and_then(|a| a.write_scalar(&v))
                }
                FileAttr::U64(x) => file
                    .new_attr::<u64>()
                    .create(*name)
                    .and_then(|a| a.write_scalar(x)),
                FileAttr::F64(x) => file
                    .new_attr::<f64>()
                    .create(*name)
                    .and_then(|a| a.write_scalar(x)),
            };
            res.with_context(|| format!("writing attribute {name}"))?;
        }
        Ok(())
    }

    /// Pushes everything to the file system (collective): HDF5 writes the
    /// metadata it caches, so that the file is complete as it stands, by
    /// closing the file and opening it again. Not `H5Fflush`: with MPI-IO
    /// that also forces the file onto the storage device on every rank
    /// (`MPI_File_sync`, an fsync each), which took 50–300 ms per flush at
    /// 30,000 functions (half of the flush), and which the promise of a
    /// flush does not need: once written, the file's bytes are the file
    /// system's (page cache, or a parallel file system's client cache) and
    /// outlive the process, so a killed run keeps every flushed step. Only
    /// a crash of the node itself can lose what the device has not stored
    /// yet, as for any program that does not sync.
    pub fn flush(&mut self) -> anyhow::Result<()> {
        let lengths = self
            .close_tables_and_file()
            .with_context(|| format!("flushing {}", self.path.display()))?;
        let file = file_options(self.comm)
            .open_rw(&self.path)
            .with_context(|| format!("flushing {} (opening it again)", self.path.display()))?;
        for (name, len) in lengths {
            let ds = file
                .dataset(&name)
                .with_context(|| format!("opening table {name} again after a flush"))?;
            self.tables.insert(name, (ds, len));
        }
        self.file = Some(file);
        Ok(())
    }

    /// Closes the file now (collective) but keeps this handle, so that the
    /// caller can agree on the outcome with the other ranks first; every
    /// later call fails, and [`ProvenanceFile::close`] has nothing left to
    /// do.
    pub fn close_in_place(&mut self) -> anyhow::Result<()> {
        self.close_tables_and_file().map(drop)
    }

    /// Closes the tables and the file (collective); returns the tables'
    /// lengths.
    fn close_tables_and_file(&mut self) -> anyhow::Result<Vec<(String, u64)>> {
        let lengths: Vec<(String, u64)> = self
            .tables
            .drain()
            .map(|(name, (_, len))| (name, len))
            .collect();
        let path = self.path.display();
        let file = self
            .file
            .take()
            .with_context(|| format!("{path} is already closed"))?;
        file.close().with_context(|| format!("closing {path}"))?;
        Ok(lengths)
    }

    /// Closes the file (collective).
    pub fn close(mut self) -> anyhow::Result<()> {
        match self.file {
            Some(_) => self.close_tables_and_file().map(drop),
            None => Ok(()),
        }
    }
}

/// How every rank opens the provenance file: MPI-IO on `comm`, metadata
/// operations collective, a bounded metadata cache.
fn file_options(comm: crate::collectives::RawComm) -> hdf5::file::FileBuilder {
    // HDF5's metadata cache grows adaptively up to 32 MiB as the tables
    // grow; 4 MiB holds what our appends touch, so memory stays flat over
    // long runs.
    let mdc = MetadataCacheConfig {
        max_size: 4 << 20,
        min_size: 1 << 20,
        initial_size: 2 << 20,
        ..Default::default()
    };
    let mut builder = hdf5::File::with_options();
    builder.with_fapl(|p| {
        p.mpio(comm, None)
            .all_coll_metadata_ops(true)
            .mdc_config(&mdc)
    });
    builder
}

/// An HDF5 identifier closed when dropped.
struct Raw(hid_t, unsafe extern "C" fn(hid_t) -> i32);

impl Raw {
    /// Takes ownership of `id`, or fails when the call that made it did.
    fn new(id: hid_t, close: unsafe extern "C" fn(hid_t) -> i32) -> anyhow::Result<Raw> {
        if id < 0 {
            bail!("HDF5 call failed (see the HDF5 error stack)");
        }
        Ok(Raw(id, close))
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        // SAFETY: `self.0` is a valid identifier owned by this guard.
        unsafe {
            (self.1)(self.0);
        }
    }
}

/// Fails when an HDF5 call returned a negative status.
fn check(status: i32) -> anyhow::Result<()> {
    if status < 0 {
        bail!("HDF5 call failed (see the HDF5 error stack)");
    }
    Ok(())
}

/// The file datatype of a table of `T`: `T`'s compound with every
/// fixed-length string member null-terminated instead of null-padded
/// (same sizes and offsets, so HDF5 converts row by row on write and read).
fn null_terminated_type<T: H5Type>() -> anyhow::Result<Raw> {
    let mem = hdf5::Datatype::from_type::<T>()?;
    let id = mem.id();
    // SAFETY: HDF5 C calls on `mem` (alive for the whole block) and on
    // identifiers owned by `Raw` guards; member names are freed with
    // HDF5's own allocator, as its documentation requires.
    unsafe {
        if H5Tget_class(id) != H5T_class_t::H5T_COMPOUND {
            return Raw::new(H5Tcopy(id), H5Tclose);
        }
        let out = Raw::new(
            H5Tcreate(H5T_class_t::H5T_COMPOUND, H5Tget_size(id)),
            H5Tclose,
        )?;
        for i in 0..H5Tget_nmembers(id).max(0) as u32 {
            let member = Raw::new(H5Tget_member_type(id, i), H5Tclose)?;
            let member = Raw::new(H5Tcopy(member.0), H5Tclose)?;
            if H5Tget_class(member.0) == H5T_class_t::H5T_STRING
                && H5Tis_variable_str(member.0) == 0
            {
                check(H5Tset_strpad(member.0, H5T_str_t::H5T_STR_NULLTERM))?;
            }
            let name = H5Tget_member_name(id, i);
            if name.is_null() {
                bail!("HDF5 call failed (member name)");
            }
            let status = H5Tinsert(out.0, name, H5Tget_member_offset(id, i), member.0);
            H5free_memory(name as *mut c_void);
            check(status)?;
        }
        Ok(out)
    }
}

/// Writes the description attributes of table `name` (collective: the
/// same values on every rank): `description`, and per column
/// `<column>.description` and `<column>.unit`.
fn describe<T: DescribedRow>(ds: &Dataset, name: &str) -> anyhow::Result<()> {
    let put = |key: &str, text: &str| -> anyhow::Result<()> {
        let v: VarLenUnicode = text.replace('\0', " ").parse().unwrap_or_default();
        ds.new_attr::<VarLenUnicode>()
            .create(key)
            .and_then(|a| a.write_scalar(&v))
            .with_context(|| format!("writing attribute {key} of {name}"))
    };
    let description = match clean_doc(T::DESCRIPTION) {
        d if d.is_empty() => array_description(name).to_owned(),
        d => d,
    };
    put("description", &description)?;
    for c in T::COLUMNS {
        put(
            &format!("{}.description", c.name),
            &clean_doc(c.description),
        )?;
        put(&format!("{}.unit", c.name), c.unit)?;
    }
    Ok(())
}

/// The file dataspace of `ds` with rows `start .. start + count` selected.
fn rows_selected(ds: &Dataset, start: u64, count: u64) -> anyhow::Result<hdf5::Dataspace> {
    let file_space = ds.space()?;
    let offset = [start as hsize_t];
    let len = [count as hsize_t];
    // SAFETY: a plain HDF5 C call on a dataspace `file_space` owns, with
    // pointers to live one-element arrays.
    unsafe {
        check(H5Sselect_hyperslab(
            file_space.id(),
            H5S_seloper_t::H5S_SELECT_SET,
            offset.as_ptr(),
            std::ptr::null(),
            len.as_ptr(),
            std::ptr::null(),
        ))
        .with_context(|| format!("selecting rows {start}..{}", start + count))?;
    }
    Ok(file_space)
}

/// A 1-D memory dataspace of `count` rows.
fn memory_space(count: u64) -> anyhow::Result<Raw> {
    let len = [count as hsize_t];
    // SAFETY: a plain HDF5 C call with a pointer to a live one-element
    // array; the new dataspace is owned by the returned guard.
    unsafe {
        Raw::new(
            H5Screate_simple(1, len.as_ptr(), std::ptr::null()),
            H5Sclose,
        )
    }
    .with_context(|| format!("making a dataspace of {count} rows"))
}

/// Writes `rows` at row `start` of `ds`, described to HDF5 as `mem_type`:
/// [`null_terminated_type`], the file's own string type, so that HDF5
/// copies the rows as they are (converting the padding instead would go
/// through HDF5's conversion buffers, megabytes per write, for nothing:
/// every string we store already ends in a NUL, see `records::fixed`).
/// Building that type costs more than writing a few rows, so callers build
/// it once per batch.
fn write_block<T: H5Type>(
    ds: &Dataset,
    mem_type: &Raw,
    start: u64,
    rows: &[T],
) -> anyhow::Result<()> {
    let spaces = row_spaces(ds, start, rows.len() as u64)?;
    // SAFETY: `rows` holds exactly the selected number of values of the
    // `repr(C)` type `mem_type` describes (the same sizes and offsets as
    // `T`'s own type).
    unsafe { transfer_rows(ds, mem_type.0, &spaces, RawRows::From(rows.as_ptr().cast())) }
}

/// Reads rows `start .. start + buf.len()` of `ds` into `buf`, as
/// [`write_block`] writes them.
fn read_rows<T: H5Type>(
    ds: &Dataset,
    mem_type: &Raw,
    start: u64,
    buf: &mut [T],
) -> anyhow::Result<()> {
    let spaces = row_spaces(ds, start, buf.len() as u64)?;
    // SAFETY: `buf` holds exactly the selected number of values of the
    // `repr(C)` type `mem_type` describes; every bit pattern HDF5 writes
    // there is one the file holds for that type (the rows we wrote, or
    // fill values: zeros).
    unsafe {
        transfer_rows(
            ds,
            mem_type.0,
            &spaces,
            RawRows::Into(buf.as_mut_ptr().cast()),
        )
    }
}

/// Reads rows `start .. start + count` of `ds` into `buf` as `mem_type`
/// (a row type known only at run time: `export --csv`).
pub(super) fn read_block(
    ds: &hdf5::Dataset,
    mem_type: hid_t,
    start: usize,
    count: usize,
    buf: &mut [u8],
) -> anyhow::Result<()> {
    let spaces = row_spaces(ds, start as u64, count as u64)?;
    let into = RawRows::Into(buf.as_mut_ptr().cast());
    // SAFETY: `buf` holds exactly `count` rows of `mem_type` (the caller
    // sizes it), the number of rows selected.
    unsafe { transfer_rows(ds, mem_type, &spaces, into) }
        .with_context(|| format!("reading rows {start}..{}", start + count))
}

/// The memory rows of [`transfer_rows`] come from or go to.
enum RawRows {
    /// Rows to write to the file.
    From(*const c_void),
    /// Room for the rows read from the file.
    Into(*mut c_void),
}

/// The file and memory dataspaces of a transfer of rows `start .. start +
/// count` of `ds`.
fn row_spaces(ds: &Dataset, start: u64, count: u64) -> anyhow::Result<(hdf5::Dataspace, Raw)> {
    Ok((rows_selected(ds, start, count)?, memory_space(count)?))
}

/// Writes or reads the rows of `ds` that `spaces` ([`row_spaces`]) select,
/// held in memory as `rows` says, described to HDF5 as `mem_type`: the one
/// raw data transfer of the file, shared by [`write_block`], [`read_rows`]
/// and [`read_block`].
///
/// # Safety
///
/// The memory of `rows` must hold exactly the selected number of values of
/// the `repr(C)` layout `mem_type` describes; when reading, every bit
/// pattern HDF5 may write there must be a valid value of the caller's type.
unsafe fn transfer_rows(
    ds: &Dataset,
    mem_type: hid_t,
    spaces: &(hdf5::Dataspace, Raw),
    rows: RawRows,
) -> anyhow::Result<()> {
    let (mem, file) = (spaces.1 .0, spaces.0.id());
    // SAFETY: the caller vouches for the memory; the spaces select as many
    // rows on both sides.
    check(unsafe {
        match rows {
            RawRows::From(p) => H5Dwrite(ds.id(), mem_type, mem, file, H5P_DEFAULT, p),
            RawRows::Into(p) => H5Dread(ds.id(), mem_type, mem, file, H5P_DEFAULT, p),
        }
    })
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
