//! A set of per-function models, as the model detector loads it
//! (`run --algorithm model --models FILE_OR_DIR`) and `model train
//! --all-functions -o DIR` writes it: a directory with `index.json`
//! (function name → model file, with the model's scores), or one JSON
//! model file that names its function.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::model::format::{read_model, ModelFileError};
use crate::model::model::Model;

/// The name of a model directory's index.
pub const INDEX: &str = "index.json";

/// One entry of a model directory's index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexEntry {
    /// The traced function.
    pub function: String,
    /// The model file, relative to the directory.
    pub file: String,
    /// The modelled feature.
    #[serde(default)]
    pub target: String,
    /// Rows the model was trained on.
    #[serde(default)]
    pub rows: usize,
    /// R² of the model.
    #[serde(default)]
    pub r2: f64,
    /// MAPE of the model on its training rows (%).
    #[serde(default)]
    pub mape: f64,
    /// The chosen terms in words.
    #[serde(default)]
    pub terms: Vec<String>,
}

/// The index document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Index {
    /// One entry per modelled function.
    pub models: Vec<IndexEntry>,
}

/// Models by function name.
#[derive(Debug, Clone, Default)]
pub struct ModelLibrary {
    /// The models, keyed by function name.
    pub models: BTreeMap<String, Model>,
    /// Where they were loaded from.
    pub source: PathBuf,
}

fn error(file: &Path, message: String) -> ModelFileError {
    ModelFileError {
        file: file.display().to_string(),
        line: None,
        message,
    }
}

impl ModelLibrary {
    /// Loads a directory with `index.json`, or one JSON model that names
    /// its function.
    pub fn load(path: &Path) -> Result<ModelLibrary, ModelFileError> {
        let mut lib = ModelLibrary {
            models: BTreeMap::new(),
            source: path.to_owned(),
        };
        if path.is_dir() {
            let index_path = path.join(INDEX);
            let text = std::fs::read_to_string(&index_path).map_err(|e| {
                error(&index_path, format!("cannot read the model index ({e}); `model train --all-functions -o DIR` writes one"))
            })?;
            let index: Index = serde_json::from_str(&text)
                .map_err(|e| error(&index_path, format!("not a model index: {e}")))?;
            for entry in index.models {
                let (mut model, _) = read_model(&path.join(&entry.file))?;
                model.function = Some(entry.function.clone());
                lib.models.insert(entry.function, model);
            }
        } else {
            let (model, _) = read_model(path)?;
            let Some(function) = model.function.clone() else {
                return Err(error(
                    path,
                    "the model does not say which function it models (only the JSON form can); give a directory written by `model train --all-functions`".into(),
                ));
            };
            lib.models.insert(function, model);
        }
        if lib.models.is_empty() {
            return Err(error(path, "no models".into()));
        }
        Ok(lib)
    }

    /// Writes `index.json` into a directory.
    pub fn write_index(dir: &Path, index: &Index) -> std::io::Result<()> {
        let mut text = serde_json::to_string_pretty(index).unwrap_or_default();
        text.push('\n');
        std::fs::write(dir.join(INDEX), text)
    }
}

/// A file name for a function's model: the name with every character that
/// is not a letter, digit, `.`, `-` or `_` replaced by `_`, cut to 80
/// characters, and made unique with the entry's number.
pub fn model_file_name(function: &str, number: usize) -> String {
    let safe: String = function
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    format!("{number:04}-{safe}.json")
}
