//! What each table of the provenance file means, stored in the file itself.
//!
//! Every row type is declared through [`described_row!`], which keeps the
//! struct exactly as written and also records, from the same source text,
//! the table's description (the struct's doc comment) and each column's
//! description (the field's doc comment) and unit (an optional
//! `#[unit = "µs"]` line after the doc comment). The writer turns them into
//! attributes of the dataset when it creates the table, so `h5dump -A`,
//! h5py's `ds.attrs` and HDFView explain the file without our docs:
//!
//! - `description`: what one row is;
//! - `<column>.description`: what the column holds;
//! - `<column>.unit`: its unit (`µs`, `s`, `bytes`, `MiB`, ...), or the
//!   empty string for counts, indices, labels, scores and text.
//!
//! One declaration, so the attributes cannot drift from the Rust docs.

/// One column of a table.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    /// The compound member's name.
    pub name: &'static str,
    /// Its unit, or "" when it has none.
    pub unit: &'static str,
    /// Its doc comment, as written (see [`clean_doc`]).
    pub description: &'static str,
}

/// A row type whose table documents itself (implemented by
/// [`described_row!`]).
pub trait DescribedRow: hdf5::H5Type {
    /// The row type's doc comment, as written.
    const DESCRIPTION: &'static str;
    /// One entry per compound member, in declaration order.
    const COLUMNS: &'static [Column];
}

/// Plain numeric arrays (histogram bins, JSON bytes) have no columns; their
/// description comes from [`array_description`].
impl DescribedRow for u64 {
    const DESCRIPTION: &'static str = "";
    const COLUMNS: &'static [Column] = &[];
}

impl DescribedRow for u8 {
    const DESCRIPTION: &'static str = "";
    const COLUMNS: &'static [Column] = &[];
}

/// The description of a table that is a plain array, by its path.
pub fn array_description(table: &str) -> &'static str {
    if table.ends_with("_hist") {
        "Bin counts of the histogram models: rows hist_start .. hist_start + hist_len \
         belong to the model row that names them."
    } else if table.ends_with("_json") {
        "UTF-8 bytes of JSON documents: bytes json_start .. json_start + json_len \
         belong to the row that names them."
    } else {
        ""
    }
}

/// Doc-comment text as one paragraph: `///` lines arrive one literal per
/// line with a leading space; joined with single spaces, Markdown code
/// ticks kept.
pub fn clean_doc(doc: &str) -> String {
    doc.split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Declares a row type (a `#[repr(C)]` struct deriving `H5Type`) and
/// implements [`DescribedRow`] for it from its doc comments and the
/// optional `#[unit = "..."]` line of each field.
macro_rules! described_row {
    (
        $(#[doc = $sdoc:literal])*
        #[derive($($derive:path),* $(,)?)]
        #[repr(C)]
        pub struct $name:ident {
            $(
                $(#[doc = $doc:literal])*
                $(#[unit = $unit:literal])?
                pub $field:ident : $ty:ty
            ),* $(,)?
        }
    ) => {
        $(#[doc = $sdoc])*
        #[derive($($derive),*)]
        #[repr(C)]
        pub struct $name {
            $(
                $(#[doc = $doc])*
                pub $field: $ty,
            )*
        }

        impl $crate::provenance::columns::DescribedRow for $name {
            const DESCRIPTION: &'static str = concat!($($sdoc, "\n"),*);
            const COLUMNS: &'static [$crate::provenance::columns::Column] = &[
                $(
                    $crate::provenance::columns::Column {
                        name: stringify!($field),
                        unit: described_row!(@unit $($unit)?),
                        description: concat!($($doc, "\n"),*),
                    },
                )*
            ];
        }
    };
    (@unit) => {
        ""
    };
    (@unit $unit:literal) => {
        $unit
    };
}

pub(crate) use described_row;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provenance::records::{CallStackRow, ExecRecord, PerfRow};

    #[test]
    fn columns_follow_the_struct_and_its_docs() {
        let names: Vec<&str> = CallStackRow::COLUMNS.iter().map(|c| c.name).collect();
        let h5 = <CallStackRow as hdf5::H5Type>::type_descriptor();
        let hdf5::types::TypeDescriptor::Compound(ct) = h5 else {
            panic!("a row type is a compound");
        };
        let h5_names: Vec<&str> = ct.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, h5_names);
        let entry = ExecRecord::COLUMNS.iter().find(|c| c.name == "entry");
        let entry = entry.expect("entry column");
        assert_eq!(entry.unit, "µs");
        assert!(clean_doc(entry.description).starts_with("Entry timestamp"));
        let rss = PerfRow::COLUMNS.iter().find(|c| c.name == "rss_mb");
        assert_eq!(rss.map(|c| c.unit), Some("MiB"));
        assert!(clean_doc(ExecRecord::DESCRIPTION).starts_with("One function execution"));
    }

    #[test]
    fn clean_doc_joins_lines() {
        assert_eq!(
            clean_doc(" First line\n second line.\n"),
            "First line second line."
        );
    }
}
