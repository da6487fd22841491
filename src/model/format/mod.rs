//! Model files: Eiger's text format ([`eiger`], current and legacy) and
//! the project's JSON form ([`json`]), read with the format detected from
//! the content, so `model test`, `model convert` and the detector take
//! any of them.

pub mod eiger;
pub mod json;

use std::fmt;
use std::path::Path;

use crate::model::model::Model;

/// A model file that could not be read, with the place that says why.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelFileError {
    /// The file.
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ModelFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}, line {l}: {}", self.file, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for ModelFileError {}

/// The formats a model can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelFormat {
    /// Eiger's text format (as Eiger writes it since November 2013).
    Eiger,
    /// Eiger's format before November 2013 (read only).
    EigerLegacy,
    /// The project's JSON form (keeps the target, the weights' standard
    /// errors and how the model was trained).
    Json,
}

impl ModelFormat {
    /// The format of a name (`eiger`, `json`), case-insensitive.
    pub fn parse(s: &str) -> Result<ModelFormat, String> {
        match s.to_ascii_lowercase().as_str() {
            "eiger" | "model" | "text" => Ok(ModelFormat::Eiger),
            "json" => Ok(ModelFormat::Json),
            "eiger-legacy" | "legacy" => {
                Err("the legacy Eiger format is read, not written; write `eiger` or `json`".into())
            }
            _ => Err(format!("unknown model format {s:?} (eiger, json)")),
        }
    }

    /// The format a path's extension suggests: `.json` is JSON, anything
    /// else Eiger's text.
    pub fn from_path(path: &Path) -> ModelFormat {
        if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"))
        {
            ModelFormat::Json
        } else {
            ModelFormat::Eiger
        }
    }
}

/// Parses a model from text, detecting its format; `file` names it in
/// errors. The model is checked for consistency (`Model::validate`).
pub fn parse_model(text: &str, file: &str) -> Result<(Model, ModelFormat), ModelFileError> {
    let first = text.trim_start();
    let (model, format) = if first.starts_with('{') {
        (json::parse(text, file)?, ModelFormat::Json)
    } else if eiger::is_legacy(text) {
        (eiger::parse_legacy(text, file)?, ModelFormat::EigerLegacy)
    } else {
        (eiger::parse(text, file)?, ModelFormat::Eiger)
    };
    model.validate().map_err(|message| ModelFileError {
        file: file.to_owned(),
        line: None,
        message,
    })?;
    Ok((model, format))
}

/// Reads a model file of any supported format.
pub fn read_model(path: &Path) -> Result<(Model, ModelFormat), ModelFileError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ModelFileError {
        file: file.clone(),
        line: None,
        message: format!("cannot read: {e}"),
    })?;
    parse_model(&text, &file)
}

/// The model as text in a format.
pub fn model_text(model: &Model, format: ModelFormat) -> String {
    match format {
        ModelFormat::Json => json::write(model),
        ModelFormat::Eiger | ModelFormat::EigerLegacy => eiger::write(model),
    }
}
