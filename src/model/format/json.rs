//! The project's JSON form of a model: everything Eiger's text format
//! holds, plus what it cannot (the target's name, each weight's standard
//! error, how the model was trained), with each function both encoded
//! (Eiger's `1 0 2`) and in words (`size²`).

use serde::{Deserialize, Serialize};

use crate::model::format::ModelFileError;
use crate::model::function::Function;
use crate::model::model::{ClusterModel, Model, Term, TrainingInfo};

/// The document's `format` value.
pub const FORMAT: &str = "chimbuko-mpi-model";

#[derive(Serialize, Deserialize)]
struct JsonTerm {
    /// Eiger's encoding of the function.
    function: String,
    /// The function in words (ignored when read).
    #[serde(default)]
    description: String,
    weight: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stderr: Option<f64>,
}

#[derive(Serialize, Deserialize)]
struct JsonCluster {
    centre: Vec<f64>,
    terms: Vec<JsonTerm>,
}

#[derive(Serialize, Deserialize)]
struct JsonModel {
    format: String,
    version: u32,
    #[serde(default)]
    target: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    function: Option<String>,
    metrics: Vec<String>,
    #[serde(default)]
    means: Vec<f64>,
    #[serde(default)]
    stds: Vec<f64>,
    rotation: Vec<Vec<f64>>,
    clusters: Vec<JsonCluster>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    training: Option<TrainingInfo>,
}

/// The names the functions are described with: the metric names when the
/// rotation is the identity, else `r0`, `r1`, … for the rotated columns.
pub fn column_names(model: &Model) -> Vec<String> {
    let p = model.rotated_columns();
    let identity = p == model.metrics.len()
        && model.rotation.iter().enumerate().all(|(r, row)| {
            row.iter()
                .enumerate()
                .all(|(c, v)| *v == if r == c { 1.0 } else { 0.0 })
        });
    if identity {
        model.metrics.clone()
    } else {
        (0..p).map(|c| format!("r{c}")).collect()
    }
}

/// The model as a JSON document.
pub fn write(model: &Model) -> String {
    let names = column_names(model);
    let doc = JsonModel {
        format: FORMAT.into(),
        version: 1,
        target: model.target.clone(),
        function: model.function.clone(),
        metrics: model.metrics.clone(),
        means: model.means.clone(),
        stds: model.stds.clone(),
        rotation: model.rotation.clone(),
        clusters: model
            .clusters
            .iter()
            .map(|c| JsonCluster {
                centre: c.centre.clone(),
                terms: c
                    .terms
                    .iter()
                    .map(|t| JsonTerm {
                        function: t.function.encode(),
                        description: t.function.describe(&names),
                        weight: t.weight,
                        stderr: t.stderr.filter(|s| s.is_finite()),
                    })
                    .collect(),
            })
            .collect(),
        training: model.training.clone(),
    };
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}

/// Parses the JSON form.
pub fn parse(text: &str, file: &str) -> Result<Model, ModelFileError> {
    let err = |line: Option<usize>, message: String| ModelFileError {
        file: file.to_owned(),
        line,
        message,
    };
    let doc: JsonModel = serde_json::from_str(text)
        .map_err(|e| err(Some(e.line()), format!("not a model document: {e}")))?;
    if doc.format != FORMAT {
        return Err(err(
            None,
            format!("format {:?}, not {FORMAT:?}", doc.format),
        ));
    }
    let mut clusters = Vec::new();
    for c in doc.clusters {
        let mut terms = Vec::new();
        for t in c.terms {
            let function = Function::decode(&t.function).map_err(|m| err(None, m))?;
            terms.push(Term {
                function,
                weight: t.weight,
                stderr: t.stderr,
            });
        }
        clusters.push(ClusterModel {
            centre: c.centre,
            terms,
        });
    }
    Ok(Model {
        metrics: doc.metrics,
        target: doc.target,
        function: doc.function,
        means: doc.means,
        stds: doc.stds,
        rotation: doc.rotation,
        clusters,
        training: doc.training,
    })
}
