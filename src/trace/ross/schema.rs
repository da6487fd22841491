//! User-supplied layouts of the model's payload bytes.
//!
//! ROSS stores whatever bytes a model's callbacks write, with only their
//! length: the layout is described nowhere in the output. A schema file
//! (TOML) says, per LP type, which fields the model writes, in order:
//!
//! ```toml
//! # Used for every LP that no [[lp_type]] covers (optional).
//! [default]
//! model = [{ name = "packets", type = "u64" }]
//!
//! [[lp_type]]
//! name = "router"
//! lps = [[0, 15], [32, 47]]          # global LP ids, inclusive ranges
//! model = [                          # payload of -model.bin samples
//!   { name = "busy_ns", type = "f64" },
//!   { name = "port", type = "u16" },
//!   { type = "pad:6" },              # C struct padding: skipped
//!   { name = "queued", type = "u64" },
//! ]
//! event = [{ name = "kind", type = "i32" }]  # -evtrace.bin payload
//! vt = [{ name = "load", type = "f32" }]     # VT model samples
//! ```
//!
//! Types: `u8`, `u16`, `u32`, `u64`, `i32`, `i64`, `f32`, `f64` (native
//! little-endian) and `pad:N` (N bytes skipped, for struct padding, which
//! the schema must spell out). `event` describes whichever trace callback
//! the run used (full and commit traces use the event callback, the
//! rollback trace its own).
//!
//! An LP's layout is that of the first `[[lp_type]]` whose ranges hold it;
//! if that type has no layout for the payload kind, the payload stays raw
//! bytes. LPs no type covers use `[default]`, or stay raw without one. A
//! payload shorter than its layout is an error; bytes past the layout's end
//! are ignored.

use std::fmt;
use std::path::Path;

use serde::Deserialize;

use super::error::{RossError, RossErrorKind};

/// Longest layout a schema may describe: a payload is at most one ROSS
/// buffer, and a bigger number is a typo, not a model.
pub const MAX_LAYOUT_LEN: usize = 1 << 30;

/// Type of one field of a payload layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
    /// Unsigned 8-bit.
    U8,
    /// Unsigned 16-bit.
    U16,
    /// Unsigned 32-bit.
    U32,
    /// Unsigned 64-bit.
    U64,
    /// Signed 32-bit.
    I32,
    /// Signed 64-bit.
    I64,
    /// IEEE single precision.
    F32,
    /// IEEE double precision.
    F64,
    /// This many bytes skipped.
    Pad(usize),
}

impl FieldType {
    /// Bytes the field takes.
    pub fn size(self) -> usize {
        match self {
            FieldType::U8 => 1,
            FieldType::U16 => 2,
            FieldType::U32 | FieldType::I32 | FieldType::F32 => 4,
            FieldType::U64 | FieldType::I64 | FieldType::F64 => 8,
            FieldType::Pad(n) => n,
        }
    }

    /// Parses a type name as the schema spells it (`u32`, `pad:4`, ...).
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "u8" => FieldType::U8,
            "u16" => FieldType::U16,
            "u32" => FieldType::U32,
            "u64" => FieldType::U64,
            "i32" => FieldType::I32,
            "i64" => FieldType::I64,
            "f32" => FieldType::F32,
            "f64" => FieldType::F64,
            _ => {
                let n: usize = s.strip_prefix("pad:")?.parse().ok()?;
                (n > 0).then_some(FieldType::Pad(n))?
            }
        })
    }
}

/// A decoded field value (integers and floats widened without loss).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// An unsigned integer field.
    U64(u64),
    /// A signed integer field.
    I64(i64),
    /// A floating-point field.
    F64(f64),
}

impl Value {
    /// The value as `f64` (64-bit integers above 2^53 lose precision).
    pub fn as_f64(self) -> f64 {
        match self {
            Value::U64(v) => v as f64,
            Value::I64(v) => v as f64,
            Value::F64(v) => v,
        }
    }
}

/// One field of a layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Field name (empty for padding).
    pub name: String,
    /// Field type.
    pub ty: FieldType,
}

/// The ordered fields of one payload kind of one LP type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadLayout {
    fields: Vec<Field>,
    len: usize,
    type_name: String,
}

/// A payload shorter than the layout it is decoded with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadError {
    /// The LP type whose layout was used (`default` for the default).
    pub lp_type: String,
    /// Bytes the layout needs.
    pub needed: usize,
    /// Bytes the payload has.
    pub got: usize,
}

impl fmt::Display for PayloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "payload of {} bytes is shorter than the {} bytes of LP type {:?}'s layout",
            self.got, self.needed, self.lp_type
        )
    }
}

impl std::error::Error for PayloadError {}

impl PayloadError {
    /// This error as a [`RossError`] about the record at byte `offset` of
    /// `path`.
    pub fn at(&self, path: &Path, offset: u64) -> RossError {
        RossError::new(RossErrorKind::Payload, path, Some(offset), self.to_string())
    }
}

impl PayloadLayout {
    /// Bytes the layout covers, padding included.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the layout covers no bytes (never true of a parsed schema).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Names of the value fields (padding left out), in decode order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.fields
            .iter()
            .filter(|f| !matches!(f.ty, FieldType::Pad(_)))
            .map(|f| f.name.as_str())
    }

    /// Decodes `payload` into `out` (cleared first), one value per named
    /// field; reusing `out` avoids an allocation per record.
    pub fn decode_into(&self, payload: &[u8], out: &mut Vec<Value>) -> Result<(), PayloadError> {
        out.clear();
        if payload.len() < self.len {
            return Err(PayloadError {
                lp_type: self.type_name.clone(),
                needed: self.len,
                got: payload.len(),
            });
        }
        let mut at = 0;
        for f in &self.fields {
            let b = &payload[at..at + f.ty.size()];
            at += f.ty.size();
            let arr = |n: usize| {
                let mut a = [0u8; 8];
                a[..n].copy_from_slice(b);
                a
            };
            out.push(match f.ty {
                FieldType::Pad(_) => continue,
                FieldType::U8 => Value::U64(u64::from(b[0])),
                FieldType::U16 => Value::U64(u64::from_le_bytes(arr(2))),
                FieldType::U32 => Value::U64(u64::from_le_bytes(arr(4))),
                FieldType::U64 => Value::U64(u64::from_le_bytes(arr(8))),
                FieldType::I32 => {
                    Value::I64(i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])))
                }
                FieldType::I64 => Value::I64(i64::from_le_bytes(arr(8))),
                FieldType::F32 => {
                    Value::F64(f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
                }
                FieldType::F64 => Value::F64(f64::from_le_bytes(arr(8))),
            });
        }
        Ok(())
    }
}

/// Which callback wrote a payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadKind {
    /// A GVT- or real-time model sample (`-model.bin`).
    Model,
    /// An event-trace record (`-evtrace.bin`), by destination LP.
    Event,
    /// A VT model sample (`-analysis-lps.bin`).
    VtModel,
}

/// A payload decoded with a schema, or left as bytes.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload<'a, 's> {
    /// No layout applies: the bytes as written.
    Raw(&'a [u8]),
    /// One `(name, value)` per named field of the layout.
    Fields(Vec<(&'s str, Value)>),
}

/// Layouts of one LP type.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Layouts {
    model: Option<PayloadLayout>,
    event: Option<PayloadLayout>,
    vt: Option<PayloadLayout>,
}

impl Layouts {
    fn get(&self, kind: PayloadKind) -> Option<&PayloadLayout> {
        match kind {
            PayloadKind::Model => self.model.as_ref(),
            PayloadKind::Event => self.event.as_ref(),
            PayloadKind::VtModel => self.vt.as_ref(),
        }
    }
}

/// A parsed payload schema: LP types by LP-id range, and a default.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Schema {
    /// `(first lpid, last lpid, type index)`, sorted by first lpid.
    ranges: Vec<(u64, u64, usize)>,
    types: Vec<(String, Layouts)>,
    default: Option<Layouts>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    default: Option<LayoutsSpec>,
    #[serde(default)]
    lp_type: Vec<TypeSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LayoutsSpec {
    model: Option<Vec<FieldSpec>>,
    event: Option<Vec<FieldSpec>>,
    vt: Option<Vec<FieldSpec>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TypeSpec {
    name: String,
    lps: Vec<[u64; 2]>,
    model: Option<Vec<FieldSpec>>,
    event: Option<Vec<FieldSpec>>,
    vt: Option<Vec<FieldSpec>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FieldSpec {
    name: Option<String>,
    #[serde(rename = "type")]
    ty: String,
}

impl Schema {
    /// Reads and parses a schema file.
    pub fn load(path: &Path) -> Result<Self, RossError> {
        let text = std::fs::read_to_string(path).map_err(|e| RossError::io(path, None, &e))?;
        Self::parse(&text, path)
    }

    /// Parses schema text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &Path) -> Result<Self, RossError> {
        let err = |m: String| RossError::new(RossErrorKind::Schema, origin, None, m);
        let spec: FileSpec = toml::from_str(text).map_err(|e| err(e.to_string()))?;
        let mut schema = Schema::default();
        if let Some(d) = spec.default {
            schema.default = Some(layouts("default", d.model, d.event, d.vt).map_err(err)?);
        }
        for t in spec.lp_type {
            let l = layouts(&t.name, t.model, t.event, t.vt).map_err(err)?;
            let idx = schema.types.len();
            for [lo, hi] in t.lps {
                if lo > hi {
                    return Err(err(format!(
                        "LP type {:?}: range [{lo}, {hi}] is reversed",
                        t.name
                    )));
                }
                schema.ranges.push((lo, hi, idx));
            }
            schema.types.push((t.name, l));
        }
        schema.ranges.sort_unstable();
        for w in schema.ranges.windows(2) {
            if w[1].0 <= w[0].1 {
                let (a, b) = (&schema.types[w[0].2].0, &schema.types[w[1].2].0);
                return Err(err(format!(
                    "LP ranges overlap: [{}, {}] of {a:?} and [{}, {}] of {b:?}",
                    w[0].0, w[0].1, w[1].0, w[1].1
                )));
            }
        }
        Ok(schema)
    }

    /// Name of the LP type that covers `lpid`, if one does.
    pub fn lp_type(&self, lpid: u64) -> Option<&str> {
        self.type_index(lpid).map(|i| self.types[i].0.as_str())
    }

    /// The layout for a payload of `kind` written for LP `lpid`, if any.
    pub fn layout(&self, kind: PayloadKind, lpid: u64) -> Option<&PayloadLayout> {
        match self.type_index(lpid) {
            Some(i) => self.types[i].1.get(kind),
            None => self.default.as_ref()?.get(kind),
        }
    }

    /// Decodes `payload` of `kind` for LP `lpid` (allocates the field list;
    /// see [`PayloadLayout::decode_into`] for a reusable buffer).
    pub fn decode<'a, 's>(
        &'s self,
        kind: PayloadKind,
        lpid: u64,
        payload: &'a [u8],
    ) -> Result<Payload<'a, 's>, PayloadError> {
        let Some(layout) = self.layout(kind, lpid) else {
            return Ok(Payload::Raw(payload));
        };
        let mut values = Vec::new();
        layout.decode_into(payload, &mut values)?;
        Ok(Payload::Fields(layout.names().zip(values).collect()))
    }

    fn type_index(&self, lpid: u64) -> Option<usize> {
        let i = self.ranges.partition_point(|r| r.0 <= lpid);
        let (_, hi, idx) = *self.ranges.get(i.checked_sub(1)?)?;
        (lpid <= hi).then_some(idx)
    }
}

fn layouts(
    type_name: &str,
    model: Option<Vec<FieldSpec>>,
    event: Option<Vec<FieldSpec>>,
    vt: Option<Vec<FieldSpec>>,
) -> Result<Layouts, String> {
    let one = |kind: &str, spec: Option<Vec<FieldSpec>>| -> Result<Option<PayloadLayout>, String> {
        let Some(spec) = spec else { return Ok(None) };
        let mut fields: Vec<Field> = Vec::with_capacity(spec.len());
        for f in spec {
            let ty = FieldType::parse(&f.ty).ok_or_else(|| {
                format!(
                    "LP type {type_name:?} {kind}: unknown field type {:?} (u8, u16, u32, u64, \
                     i32, i64, f32, f64 or pad:N)",
                    f.ty
                )
            })?;
            let name = f.name.unwrap_or_default();
            if !matches!(ty, FieldType::Pad(_)) {
                if name.is_empty() {
                    return Err(format!(
                        "LP type {type_name:?} {kind}: a {} field needs a name",
                        f.ty
                    ));
                }
                if fields.iter().any(|g| g.name == name) {
                    return Err(format!(
                        "LP type {type_name:?} {kind}: field {name:?} twice"
                    ));
                }
            }
            fields.push(Field { name, ty });
        }
        if fields.is_empty() {
            return Err(format!("LP type {type_name:?} {kind}: no fields"));
        }
        let len = fields
            .iter()
            .try_fold(0usize, |n, f| n.checked_add(f.ty.size()))
            .filter(|&n| n <= MAX_LAYOUT_LEN)
            .ok_or_else(|| {
                format!("LP type {type_name:?} {kind}: longer than {MAX_LAYOUT_LEN} bytes")
            })?;
        Ok(Some(PayloadLayout {
            fields,
            len,
            type_name: type_name.to_owned(),
        }))
    };
    Ok(Layouts {
        model: one("model", model)?,
        event: one("event", event)?,
        vt: one("vt", vt)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_types_parse() {
        assert_eq!(FieldType::parse("pad:12"), Some(FieldType::Pad(12)));
        assert_eq!(FieldType::parse("pad:0"), None);
        assert_eq!(FieldType::parse("pad:-1"), None);
        assert_eq!(FieldType::parse("U32"), None);
        assert_eq!(FieldType::parse("i32").map(FieldType::size), Some(4));
    }

    #[test]
    fn every_type_decodes_little_endian() {
        let text = r#"
            [default]
            event = [
              { name = "a", type = "u8" }, { type = "pad:1" }, { name = "b", type = "u16" },
              { name = "c", type = "i32" }, { name = "d", type = "f32" }, { name = "e", type = "u32" },
              { name = "f", type = "u64" }, { name = "g", type = "i64" }, { name = "h", type = "f64" },
            ]
        "#;
        let s = Schema::parse(text, Path::new("t.toml")).unwrap();
        let mut p = vec![200u8, 0xff];
        p.extend(513u16.to_le_bytes());
        p.extend((-7i32).to_le_bytes());
        p.extend(0.25f32.to_le_bytes());
        p.extend(u32::MAX.to_le_bytes());
        p.extend(u64::MAX.to_le_bytes());
        p.extend(i64::MIN.to_le_bytes());
        p.extend((-1.5f64).to_le_bytes());
        let layout = s.layout(PayloadKind::Event, 99).unwrap();
        assert_eq!(layout.len(), p.len());
        let mut out = Vec::new();
        layout.decode_into(&p, &mut out).unwrap();
        use Value::*;
        assert_eq!(
            out,
            [
                U64(200),
                U64(513),
                I64(-7),
                F64(0.25),
                U64(u32::MAX.into()),
                U64(u64::MAX),
                I64(i64::MIN),
                F64(-1.5)
            ]
        );
        assert!(layout.decode_into(&p[..p.len() - 1], &mut out).is_err());
        assert!(out.is_empty(), "cleared on error");
    }
}
