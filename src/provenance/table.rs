//! Reading a provenance file's parts whole: every row of one table, and
//! the root attributes as text. What the readers of TAU files
//! (`read.rs`), of ROSS files (`ross/`), of incidents and of model samples
//! share.

use std::collections::BTreeMap;

use anyhow::Context;
use hdf5::H5Type;

/// The root attributes as text (those that are not text or numbers are
/// skipped).
pub(crate) fn root_attrs(f: &hdf5::File) -> BTreeMap<String, String> {
    let mut attrs = BTreeMap::new();
    for name in f.attr_names().unwrap_or_default() {
        let Ok(a) = f.attr(&name) else { continue };
        // Floats first by their type: HDF5 would convert one read as an
        // integer.
        let is_float = matches!(
            a.dtype().and_then(|t| t.to_descriptor()),
            Ok(hdf5::types::TypeDescriptor::Float(_))
        );
        let text = if let Ok(s) = a.read_scalar::<hdf5::types::VarLenUnicode>() {
            s.as_str().to_owned()
        } else if is_float {
            match a.read_scalar::<f64>() {
                Ok(x) => x.to_string(),
                Err(_) => continue,
            }
        } else if let Ok(x) = a.read_scalar::<u64>() {
            x.to_string()
        } else if let Ok(x) = a.read_scalar::<f64>() {
            x.to_string()
        } else {
            continue;
        };
        attrs.insert(name, text);
    }
    attrs
}

/// Every row of table `name` (a missing table reads as empty).
pub(crate) fn table<T: H5Type>(f: &hdf5::File, name: &str) -> anyhow::Result<Vec<T>> {
    if !f.link_exists(name) {
        return Ok(Vec::new());
    }
    f.dataset(name)
        .and_then(|d| d.read_raw::<T>())
        .with_context(|| format!("reading {name}"))
}
