//! `export --csv`: every table of a provenance file (of a TAU run or a ROSS
//! analysis) as one CSV file, for spreadsheets, R and `awk`.
//!
//! The tables are read generically, from the types stored in the file
//! rather than from our Rust row types, so the export also works on files
//! of other schema versions. One CSV per dataset, named after its path
//! (`anomalies/records` → `anomalies.records.csv`), with a header row of
//! the column names; strings are written as text (quoted when they hold a
//! comma, a quote or a line break), floats in their shortest exact form.
//! Plain arrays (histogram bins, JSON bytes) get a single column `value`.
//! Tables are read in blocks, so memory stays bounded on large files.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use hdf5::types::{FloatSize, IntSize, TypeDescriptor};

use super::hdf5file::read_block;
use crate::util::csv::csv_field;

/// Rows read at a time.
const BLOCK_ROWS: usize = 16 * 1024;

/// How one column is stored in a row's bytes.
struct Field {
    name: String,
    offset: usize,
    ty: TypeDescriptor,
}

/// Writes every table of the file at `path` as CSV into `out_dir`
/// (created if missing); returns the files written with their row counts.
pub fn export_csv(path: &Path, out_dir: &Path) -> anyhow::Result<Vec<(String, usize)>> {
    let file = hdf5::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    std::fs::create_dir_all(out_dir)
        .with_context(|| format!("creating directory {}", out_dir.display()))?;
    let mut names = Vec::new();
    collect_datasets(&file, "", &mut names)?;
    let mut written = Vec::new();
    for name in names {
        let file_name = format!("{}.csv", name.replace('/', "."));
        let target = out_dir.join(&file_name);
        let rows = export_table(&file, &name, &target).with_context(|| {
            format!(
                "{}: exporting {name} to {}",
                path.display(),
                target.display()
            )
        })?;
        written.push((file_name, rows));
    }
    Ok(written)
}

/// Paths of every dataset below `group`, sorted.
fn collect_datasets(
    group: &hdf5::Group,
    prefix: &str,
    out: &mut Vec<String>,
) -> anyhow::Result<()> {
    let mut members = group.member_names()?;
    members.sort();
    for m in members {
        let full = if prefix.is_empty() {
            m.clone()
        } else {
            format!("{prefix}/{m}")
        };
        if let Ok(g) = group.group(&m) {
            collect_datasets(&g, &full, out)?;
        } else if group.dataset(&m).is_ok() {
            out.push(full);
        }
    }
    Ok(())
}

/// Writes one table; returns its row count.
fn export_table(file: &hdf5::File, name: &str, target: &PathBuf) -> anyhow::Result<usize> {
    let ds = file.dataset(name)?;
    let desc = ds.dtype()?.to_descriptor()?;
    let (fields, row_size) = match &desc {
        TypeDescriptor::Compound(c) => (
            c.fields
                .iter()
                .map(|f| Field {
                    name: f.name.clone(),
                    offset: f.offset,
                    ty: f.ty.clone(),
                })
                .collect::<Vec<_>>(),
            c.size,
        ),
        other => (
            vec![Field {
                name: "value".into(),
                offset: 0,
                ty: other.clone(),
            }],
            other.size(),
        ),
    };
    for f in &fields {
        if format_value(&f.ty, &vec![0u8; f.ty.size()]).is_none() {
            bail!(
                "column {} has a type this export does not write ({:?})",
                f.name,
                f.ty
            );
        }
    }
    let shape = ds.shape();
    if shape.len() != 1 {
        bail!("not a table (a {}-dimensional dataset)", shape.len());
    }
    let n = shape[0];
    let mem_type = hdf5::Datatype::from_descriptor(&desc)?;
    let out = File::create(target).context("creating the CSV file")?;
    let mut w = BufWriter::new(out);
    let header: Vec<String> = fields.iter().map(|f| csv_field(&f.name)).collect();
    writeln!(w, "{}", header.join(","))?;
    let mut buf = vec![0u8; BLOCK_ROWS.min(n.max(1)) * row_size];
    let mut line = String::new();
    let mut start = 0;
    while start < n {
        let count = BLOCK_ROWS.min(n - start);
        read_block(
            &ds,
            mem_type.id(),
            start,
            count,
            &mut buf[..count * row_size],
        )?;
        for row in buf[..count * row_size].chunks_exact(row_size) {
            line.clear();
            for (k, f) in fields.iter().enumerate() {
                if k > 0 {
                    line.push(',');
                }
                let bytes = &row[f.offset..f.offset + f.ty.size()];
                line.push_str(&format_value(&f.ty, bytes).unwrap_or_default());
            }
            writeln!(w, "{line}")?;
        }
        start += count;
    }
    w.flush()?;
    Ok(n)
}

/// One value as CSV text, or `None` for a type this export does not
/// write (variable-length data, nested compounds, arrays).
fn format_value(ty: &TypeDescriptor, b: &[u8]) -> Option<String> {
    macro_rules! num {
        ($t:ty) => {
            <$t>::from_ne_bytes(b.try_into().ok()?).to_string()
        };
    }
    Some(match ty {
        TypeDescriptor::Integer(IntSize::U1) => num!(i8),
        TypeDescriptor::Integer(IntSize::U2) => num!(i16),
        TypeDescriptor::Integer(IntSize::U4) => num!(i32),
        TypeDescriptor::Integer(IntSize::U8) => num!(i64),
        TypeDescriptor::Unsigned(IntSize::U1) => num!(u8),
        TypeDescriptor::Unsigned(IntSize::U2) => num!(u16),
        TypeDescriptor::Unsigned(IntSize::U4) => num!(u32),
        TypeDescriptor::Unsigned(IntSize::U8) => num!(u64),
        TypeDescriptor::Float(FloatSize::U4) => num!(f32),
        TypeDescriptor::Float(FloatSize::U8) => num!(f64),
        TypeDescriptor::Boolean => (b.first()? != &0).to_string(),
        TypeDescriptor::FixedAscii(_) | TypeDescriptor::FixedUnicode(_) => {
            let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
            csv_field(&String::from_utf8_lossy(&b[..end]))
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_quoted_only_when_needed() {
        assert_eq!(csv_field("carriage\rreturn"), "\"carriage\rreturn\"");
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
    }

    #[test]
    fn values_decode_from_native_bytes() {
        let f = format_value(&TypeDescriptor::Float(FloatSize::U8), &0.1f64.to_ne_bytes());
        assert_eq!(f.as_deref(), Some("0.1"));
        let i = format_value(&TypeDescriptor::Integer(IntSize::U1), &[0xff]);
        assert_eq!(i.as_deref(), Some("-1"));
        let s = format_value(&TypeDescriptor::FixedUnicode(8), b"f(x,y)\0\0");
        assert_eq!(s.as_deref(), Some("\"f(x,y)\""));
        assert!(format_value(&TypeDescriptor::VarLenUnicode, &[0; 8]).is_none());
        assert!(format_value(&TypeDescriptor::Float(FloatSize::U8), &[0; 3]).is_none());
    }
}
