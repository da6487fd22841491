//! Safe layer over the ADIOS2 C API.
//!
//! This module is the only caller of ADIOS2 and the only `unsafe` code of the
//! trace room (libc's is in `sys`, one MPI query in `collectives`): it owns the
//! raw ADIOS2 handles and exposes streams as [`StreamReader`] and
//! [`StreamWriter`] values that close themselves on drop. Everything above it
//! (the TAU reader, `synth`, `dump`) works with plain Rust types.
//!
//! This file is long because it is the whole safe layer over one C API:
//! every `unsafe` call of the trace room stays in one file, so that the
//! invariants it relies on are checked in one place.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
#[cfg_attr(not(adios2_has_string_data), allow(unused_imports))]
use std::os::raw::c_char;
use std::os::raw::c_void;
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use adios2_sys as sys;

/// ADIOS2 engines we read and write.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Engine {
    /// Reading: the engine the stream itself says — BP4 or BP5 from the
    /// version byte of a BP directory's index header (`md.idx`), BPFile for
    /// a single-file BP3 stream, SST when `<name>.sst` appears. Writing:
    /// BPFile.
    #[default]
    Auto,
    /// BP4 files (what TAU writes by default for post-hoc analysis).
    BP4,
    /// BP5 files.
    BP5,
    /// File engine that detects BP3/BP4/BP5 on read (writes BP5).
    BPFile,
    /// Sustainable Staging Transport: in situ, writer and reader rendezvous
    /// through a `<name>.sst` contact file.
    SST,
}

impl Engine {
    /// The engine name ADIOS2 expects.
    pub fn adios_name(self) -> &'static str {
        match self {
            Engine::Auto => "auto",
            Engine::BP4 => "BP4",
            Engine::BP5 => "BP5",
            Engine::BPFile => "BPFile",
            Engine::SST => "SST",
        }
    }

    /// True for engines that store data in files (as opposed to staging);
    /// `Auto` counts as a file engine until a stream turns out to be SST.
    pub fn is_file(self) -> bool {
        !matches!(self, Engine::SST)
    }

    /// The engine to read `stream` with, once it exists (`None`: nothing
    /// there yet). `Auto` picks the engine the stream says it needs; an
    /// explicit BP4 or BP5 on a BP directory of the other version is an
    /// error that says so, instead of ADIOS2's failure to open it.
    pub fn for_reading(self, stream: &Path) -> Result<Option<Engine>> {
        let version = bp_version(stream);
        let mismatch = |found: u8| AdiosError::EngineMismatch {
            path: stream.display().to_string(),
            given: self,
            found,
        };
        match self {
            Engine::Auto => Ok(if stream.is_dir() {
                Some(match version {
                    Some(4) => Engine::BP4,
                    Some(5) => Engine::BP5,
                    _ => Engine::BPFile,
                })
            } else if stream.exists() {
                Some(Engine::BPFile)
            } else if Engine::SST.rendezvous_path(stream).exists() {
                Some(Engine::SST)
            } else {
                None
            }),
            Engine::BP4 | Engine::BP5 => {
                let want = if self == Engine::BP4 { 4 } else { 5 };
                match version {
                    Some(v) if v != want => Err(mismatch(v)),
                    _ => Ok(stream.exists().then_some(self)),
                }
            }
            _ => Ok(self.rendezvous_path(stream).exists().then_some(self)),
        }
    }

    /// The path whose existence tells that a writer has started: the BP
    /// directory itself, or the SST contact file `<name>.sst`.
    pub fn rendezvous_path(self, stream: &Path) -> PathBuf {
        match self {
            Engine::SST => {
                let mut s = stream.as_os_str().to_owned();
                s.push(".sst");
                PathBuf::from(s)
            }
            _ => stream.to_path_buf(),
        }
    }
}

impl std::str::FromStr for Engine {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match s.to_ascii_uppercase().as_str() {
            "AUTO" => Ok(Engine::Auto),
            "BP4" => Ok(Engine::BP4),
            "BP5" => Ok(Engine::BP5),
            "BPFILE" | "FILE" => Ok(Engine::BPFile),
            "SST" => Ok(Engine::SST),
            other => Err(format!(
                "unknown ADIOS2 engine '{other}' (expected auto, BP4, BP5, BPFile or SST)"
            )),
        }
    }
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.adios_name())
    }
}

/// An error from the ADIOS2 layer, always naming the stream and operation.
#[derive(Debug, thiserror::Error)]
pub enum AdiosError {
    /// An ADIOS2 C call returned an error.
    #[error("{path}: ADIOS2 {op} failed (error code {code})")]
    Call {
        /// The stream.
        path: String,
        /// The call that failed, e.g. `adios2_begin_step`.
        op: String,
        /// ADIOS2's error code (-1 when the call returned a null handle).
        code: i64,
    },
    /// The stream did not appear within the open timeout.
    #[error("{path}: stream not found: waited {waited:.1} s for {what} to appear")]
    NotFound {
        /// The stream.
        path: String,
        /// The path waited for (the BP directory or the SST contact file).
        what: String,
        /// Seconds waited.
        waited: f64,
    },
    /// The stream exists but ADIOS2 could not open it with this engine.
    #[error("{path}: ADIOS2 could not open the stream with engine {engine} (is it an ADIOS2 {engine} stream?){}", detail_suffix(.detail))]
    Open {
        /// The stream.
        path: String,
        /// The engine tried.
        engine: Engine,
        /// What ADIOS2 printed about it, cleaned (empty if nothing).
        detail: String,
    },
    /// An explicit BP4/BP5 engine on a BP directory of the other version.
    #[error("{path}: this is a BP{found} stream (its index header says so) but --engine is {given}: leave --engine at auto (the default) or give BP{found}")]
    EngineMismatch {
        /// The stream.
        path: String,
        /// The engine asked for.
        given: Engine,
        /// The BP version in the stream's index header.
        found: u8,
    },
    /// A name with a NUL byte, or a variable of the wrong type or shape.
    #[error("{path}: {msg}")]
    Invalid {
        /// The stream.
        path: String,
        /// What was wrong.
        msg: String,
    },
}

/// Result of the ADIOS2 layer.
pub type Result<T> = std::result::Result<T, AdiosError>;

/// Rows per ADIOS2 read of a 2-D array (64 Ki rows = 3 MiB for TAU's
/// function rows).
const READ_CHUNK_ROWS: usize = 1 << 16;

/// Rows per get within one perform of a chunked read (4 Ki rows = 192 KiB
/// of function rows): see [`StreamReader::get_rows_in_parts`].
const READ_PART_ROWS: usize = 1 << 12;

/// The longest pause between two polls of an SST stream for its next step
/// (see [`StreamReader::begin_step`]): the most a step's arrival can go
/// unnoticed.
const SST_POLL_MAX: Duration = Duration::from_millis(8);

/// Outcome of [`StreamReader::begin_step`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepStatus {
    /// A new step is open for reading.
    Ready,
    /// No step arrived within the timeout; the stream is still open.
    NotReady,
    /// The writer closed the stream: no more steps will come.
    EndOfStream,
}

/// The ADIOS2 element type of a variable, as far as the TAU format needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarType {
    /// `int8_t`.
    I8,
    /// `int16_t`.
    I16,
    /// `int32_t` (TAU's definition counts).
    I32,
    /// `int64_t`.
    I64,
    /// `uint8_t`.
    U8,
    /// `uint16_t`.
    U16,
    /// `uint32_t`.
    U32,
    /// `uint64_t` (TAU's row arrays and row counts).
    U64,
    /// Any other type, by its raw `adios2_type` code.
    Other(i32),
}

impl ScalarType {
    fn from_raw(t: sys::adios2_type) -> Self {
        match t {
            sys::adios2_type_int8_t => ScalarType::I8,
            sys::adios2_type_int16_t => ScalarType::I16,
            sys::adios2_type_int32_t => ScalarType::I32,
            sys::adios2_type_int64_t => ScalarType::I64,
            sys::adios2_type_uint8_t => ScalarType::U8,
            sys::adios2_type_uint16_t => ScalarType::U16,
            sys::adios2_type_uint32_t => ScalarType::U32,
            sys::adios2_type_uint64_t => ScalarType::U64,
            other => ScalarType::Other(other),
        }
    }
}

/// Value of an attribute. TAU writes only single strings; other kinds are
/// kept in a printable form so `dump` can show them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdiosAttrValue {
    /// A single string value.
    Text(String),
    /// Any other attribute, as a description of its type and size.
    Other(String),
}

impl AdiosAttrValue {
    /// The string, or the description for non-string attributes.
    pub fn as_text(&self) -> &str {
        match self {
            AdiosAttrValue::Text(s) | AdiosAttrValue::Other(s) => s,
        }
    }
}

/// Types that can be written as ADIOS2 scalars.
pub trait AdiosScalar: Copy {
    #[doc(hidden)]
    const RAW_TYPE: sys::adios2_type;
}
impl AdiosScalar for u64 {
    const RAW_TYPE: sys::adios2_type = sys::adios2_type_uint64_t;
}
impl AdiosScalar for i32 {
    const RAW_TYPE: sys::adios2_type = sys::adios2_type_int32_t;
}
impl AdiosScalar for i64 {
    const RAW_TYPE: sys::adios2_type = sys::adios2_type_int64_t;
}
impl AdiosScalar for u32 {
    const RAW_TYPE: sys::adios2_type = sys::adios2_type_uint32_t;
}

/// Owns an `adios2_adios` context (one per stream, so streams are independent).
struct Context {
    adios: *mut sys::adios2_adios,
    io: *mut sys::adios2_io,
}

impl Context {
    fn new(path: &str, io_name: &str, engine: Engine, params: &[(String, String)]) -> Result<Self> {
        // SAFETY: plain constructor; NULL is checked.
        let adios = unsafe { sys::adios2_init_serial() };
        if adios.is_null() {
            return Err(call_err(path, "adios2_init_serial", -1));
        }
        let ctx_guard = Context {
            adios,
            io: ptr::null_mut(),
        };
        let io_c = cstring(path, io_name)?;
        // SAFETY: adios is valid; io_c outlives the call.
        let io = unsafe { sys::adios2_declare_io(adios, io_c.as_ptr()) };
        if io.is_null() {
            return Err(call_err(path, "adios2_declare_io", -1));
        }
        let mut ctx = ctx_guard;
        ctx.io = io;
        let engine_c = cstring(path, engine.adios_name())?;
        // SAFETY: io valid, strings valid for the call.
        check(path, "adios2_set_engine", unsafe {
            sys::adios2_set_engine(io, engine_c.as_ptr())
        })?;
        for (k, v) in params {
            let (kc, vc) = (cstring(path, k)?, cstring(path, v)?);
            // SAFETY: as above.
            check(path, "adios2_set_parameter", unsafe {
                sys::adios2_set_parameter(io, kc.as_ptr(), vc.as_ptr())
            })?;
        }
        Ok(ctx)
    }
}

/// One at a time in the process: opening an SST stream, and the end of
/// any engine (its last step, its close, its context's finalize).
///
/// Each stream has its own ADIOS2 object, but SST's streams in one process
/// share one network manager and a list of blocks it frees at exit, and
/// the open and the close of a stream change them unguarded (in ADIOS2
/// 2.12 `SstReaderOpen` reallocs that list; `SstStreamDestroy` drops the
/// stream's connections). An AD rank reads each of its streams on a thread
/// of its own, and streams opened or closed together corrupted the heap:
/// "double free or corruption" in `SstStreamDestroy`, "realloc(): invalid
/// next size" in `SstReaderOpen`, in 7 of 24 launches of 8 SST streams into
/// one AD rank; none in 55 (8 and 12 streams) with this lock. Steps are
/// read in parallel: a writer that stops answering mid-step then holds up
/// its own stream only. One that stops while its stream is being opened
/// holds up the opens of the process' other SST streams.
///
/// An open takes about 0.18 s, most of it waiting: the pip wheel's EVPath
/// sockets keep Nagle's algorithm on (strace: no `TCP_NODELAY` on either
/// end), so each exchange whose message goes out as two writes (format,
/// then data) waits 40 ms for the peer's delayed acknowledgement. Turning
/// it off on the reader's end from here saved a quarter of that; the
/// writer's end is the application's.
static ENGINE_CALLS: Mutex<()> = Mutex::new(());

/// Takes [`ENGINE_CALLS`]. A thread that panicked while holding it left
/// nothing half-done that the lock guards, so poisoning is ignored.
fn engine_calls() -> MutexGuard<'static, ()> {
    ENGINE_CALLS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Drop for Context {
    fn drop(&mut self) {
        let _one_at_a_time = engine_calls();
        // SAFETY: adios came from adios2_init_serial and is finalized once.
        unsafe {
            sys::adios2_finalize(self.adios);
        }
    }
}

fn call_err(path: &str, op: &str, code: i64) -> AdiosError {
    AdiosError::Call {
        path: path.to_owned(),
        op: op.to_owned(),
        code,
    }
}

fn check(path: &str, op: &str, code: sys::adios2_error) -> Result<()> {
    if code == sys::adios2_error_none {
        Ok(())
    } else {
        Err(call_err(path, op, code as i64))
    }
}

fn cstring(path: &str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| AdiosError::Invalid {
        path: path.to_owned(),
        msg: format!("name contains a NUL byte: {s:?}"),
    })
}

/// The BP version of a BP4/BP5 directory: byte 37 of the 64-byte header
/// of its index table `md.idx` (which starts with `ADIOS-BP v`); `None`
/// when there is no such header (not a BP4/BP5 directory, or not yet
/// written).
pub fn bp_version(stream: &Path) -> Option<u8> {
    use std::io::Read;
    let mut head = [0u8; 38];
    let mut f = std::fs::File::open(stream.join("md.idx")).ok()?;
    f.read_exact(&mut head).ok()?;
    head.starts_with(b"ADIOS-BP v").then_some(head[37])
}

/// ADIOS2's own message, as it prints it on stderr, cleaned to plain
/// text on one line. ADIOS2 colours its output with terminal escape codes
/// and wraps each (nested) exception in a `[timestamp] [ADIOS2 EXCEPTION]
/// <Component> <Class> <Function> :` header; what a user needs is the text
/// after those headers. Escape sequences, bracketed timestamps and tags,
/// `<...>` component names and C++ stream noise (`iostream error`) go;
/// blank parts are dropped.
pub fn clean_adios_message(raw: &str) -> String {
    let mut text = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            // CSI sequence: ESC [ parameters final byte.
            '\u{1b}' => {
                if chars.peek() == Some(&'[') {
                    chars.next();
                    for d in chars.by_ref() {
                        if ('@'..='~').contains(&d) {
                            break;
                        }
                    }
                }
            }
            // `[timestamp]`, `[ADIOS2 ERROR]`: dropped whole.
            '[' => {
                let rest: String = chars.clone().take_while(|&d| d != ']').collect();
                if rest.starts_with("ADIOS2") || rest.chars().filter(|d| *d == ':').count() >= 2 {
                    for d in chars.by_ref() {
                        if d == ']' {
                            break;
                        }
                    }
                } else {
                    text.push(c);
                }
            }
            // `<Engine>`, `<BP5Reader>`: component names of the header.
            '<' => {
                let rest: String = chars.clone().take_while(|&d| d != '>').collect();
                if !rest.is_empty()
                    && rest
                        .chars()
                        .all(|d| d.is_alphanumeric() || "_:".contains(d))
                {
                    for d in chars.by_ref() {
                        if d == '>' {
                            break;
                        }
                    }
                } else {
                    text.push(c);
                }
            }
            '\n' | '\r' | '\t' => text.push(' '),
            _ => text.push(c),
        }
    }
    let text = text.replace("iostream error", " ");
    let parts: Vec<&str> = text
        .split(" : ")
        .flat_map(|p| p.split(": :"))
        .map(|p| p.trim().trim_matches(':').trim())
        .filter(|p| !p.is_empty() && *p != "adios2_open")
        .collect();
    parts
        .join(": ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn detail_suffix(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

/// Makes reads past the end of a data file an error instead of a wait.
///
/// By default ADIOS2's file transport waits for data beyond the end of a
/// file to appear (a writer may still be adding it), without end: a stream
/// whose `data.0` was cut short hangs its reader forever. The metadata of a
/// step is written after its data, so data a step's metadata points to is
/// there unless the file was truncated; with `FailOnEOF` the transport
/// retries with growing pauses (about 45 s in all, for slow parallel file
/// systems) and then fails, which we report as the stream's error.
fn fail_on_eof(ctx: &Context, path: &str) -> Result<()> {
    let file = cstring(path, "File")?;
    let (key, value) = (cstring(path, "FailOnEOF")?, cstring(path, "true")?);
    let mut index = 0usize;
    // SAFETY: io valid; the strings outlive the calls; `index` is a valid
    // out pointer.
    unsafe {
        check(
            path,
            "adios2_add_transport",
            sys::adios2_add_transport(&mut index, ctx.io, file.as_ptr()),
        )?;
        check(
            path,
            "adios2_set_transport_parameter",
            sys::adios2_set_transport_parameter(ctx.io, index, key.as_ptr(), value.as_ptr()),
        )
    }
}

/// Waits until `stream` exists in a form `engine` can read, or `timeout`
/// passes; returns the engine to read it with (see
/// [`Engine::for_reading`]).
fn wait_for_stream(path: &str, stream: &Path, engine: Engine, timeout: Duration) -> Result<Engine> {
    let start = Instant::now();
    loop {
        if let Some(e) = engine.for_reading(stream)? {
            return Ok(e);
        }
        if start.elapsed() >= timeout {
            let what = match engine {
                Engine::Auto => format!(
                    "{} (BP files) or {} (SST)",
                    stream.display(),
                    Engine::SST.rendezvous_path(stream).display()
                ),
                e => e.rendezvous_path(stream).display().to_string(),
            };
            return Err(AdiosError::NotFound {
                path: path.to_owned(),
                what,
                waited: start.elapsed().as_secs_f64(),
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Options for opening a stream for reading.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// ADIOS2 IO name (TAU uses `tau-metrics`).
    pub io_name: String,
    /// How long to wait for the stream (file or SST contact file) to appear.
    pub open_timeout: Duration,
    /// Extra engine parameters.
    pub params: Vec<(String, String)>,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            io_name: "tau-metrics".into(),
            open_timeout: Duration::from_secs(60),
            params: Vec::new(),
        }
    }
}

/// A 2-D `uint64` variable of this step checked by
/// [`StreamReader::row_array`], with its name for error messages.
#[derive(Debug, Clone, Copy)]
struct RowArray<'n> {
    /// The variable's handle.
    var: *mut sys::adios2_variable,
    /// Its name.
    name: &'n str,
}

/// A stream opened for step-by-step reading. Closed on drop.
pub struct StreamReader {
    // Field order matters: the engine must close before the context finalizes.
    engine: *mut sys::adios2_engine,
    ctx: Context,
    path: String,
    in_step: bool,
    engine_kind: Engine,
}

impl StreamReader {
    /// An [`AdiosError::Invalid`] about this stream.
    fn invalid(&self, msg: String) -> AdiosError {
        AdiosError::Invalid {
            path: self.path.clone(),
            msg,
        }
    }

    /// Opens `path` for streaming read with `engine`, waiting up to
    /// `opts.open_timeout` for the writer to create it.
    pub fn open(path: &Path, engine: Engine, opts: &ReadOptions) -> Result<Self> {
        let path_s = path.display().to_string();
        let engine = wait_for_stream(&path_s, path, engine, opts.open_timeout)?;
        let mut params = opts.params.clone();
        let secs = opts.open_timeout.as_secs_f64().max(1.0).to_string();
        if !params
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("OpenTimeoutSecs"))
        {
            params.push(("OpenTimeoutSecs".into(), secs));
        }
        // File engines look for steps a writer appends no more often than
        // this (ADIOS2's default is 1 s, longer than the waits of our
        // step loop, so appended steps were never seen).
        if engine.is_file()
            && !params
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("BeginStepPollingFrequencySecs"))
        {
            params.push(("BeginStepPollingFrequencySecs".into(), "0.05".into()));
        }
        // BP5 splits a perform with several gets over threads it starts
        // for that perform, as many as the node has cores; the stream
        // already has a thread of its own, and the AD rank's cores are busy.
        if engine.is_file()
            && !params
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("Threads"))
        {
            params.push(("Threads".into(), "1".into()));
        }
        let ctx = Context::new(&path_s, &opts.io_name, engine, &params)?;
        if engine.is_file() {
            fail_on_eof(&ctx, &path_s)?;
        }
        let name_c = cstring(&path_s, &path_s)?;
        // SAFETY: io valid; name_c valid for the call.
        let open = || unsafe { sys::adios2_open(ctx.io, name_c.as_ptr(), sys::adios2_mode_read) };
        // ADIOS2 prints why an open failed instead of returning it: catch
        // that text for the error (file engines only: their open returns
        // at once, while SST's waits for the writer).
        let (eng, printed) = if engine.is_file() {
            crate::sys::stderr_capture::capture_stderr(open)
        } else {
            let _one_at_a_time = engine_calls();
            (open(), String::new())
        };
        let detail = clean_adios_message(&printed);
        if eng.is_null() {
            return Err(AdiosError::Open {
                path: path_s,
                engine,
                detail,
            });
        }
        if !detail.is_empty() {
            eprintln!("{path_s}: ADIOS2: {detail}");
        }
        Ok(StreamReader {
            engine: eng,
            ctx,
            path: path_s,
            in_step: false,
            engine_kind: engine,
        })
    }

    /// The stream's path, for messages.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Waits up to `timeout` for the next step.
    ///
    /// SST is polled instead of waited on: a `BeginStep` with a zero
    /// time-out returns at once and leaves nothing behind, while in ADIOS2
    /// 2.12 one whose time-out expires leaves a timer behind that crashes
    /// the next `BeginStep` (segfault in EVPath's `remove_periodic`), and
    /// one without a time-out keeps a stream that is given up on from
    /// closing until its writer sends a step. The polls start 1 ms apart
    /// and back off to [`SST_POLL_MAX`].
    pub fn begin_step(&mut self, timeout: Duration) -> Result<StepStatus> {
        if self.in_step {
            self.end_step()?;
        }
        if self.engine_kind != Engine::SST {
            return self.try_begin_step(timeout.as_secs_f32());
        }
        let deadline = Instant::now() + timeout;
        let mut pause = Duration::from_millis(1);
        loop {
            let status = self.try_begin_step(0.0)?;
            let now = Instant::now();
            if status != StepStatus::NotReady || now >= deadline {
                return Ok(status);
            }
            std::thread::sleep(pause.min(deadline - now));
            pause = (pause * 2).min(SST_POLL_MAX);
        }
    }

    /// One `BeginStep` with ADIOS2's time-out in seconds.
    fn try_begin_step(&mut self, timeout_secs: f32) -> Result<StepStatus> {
        let mut status: sys::adios2_step_status = sys::adios2_step_status_other_error;
        // SAFETY: engine valid; status is a valid out pointer.
        let err = unsafe {
            sys::adios2_begin_step(
                self.engine,
                sys::adios2_step_mode_read,
                timeout_secs,
                &mut status,
            )
        };
        check(&self.path, "adios2_begin_step", err)?;
        match status {
            sys::adios2_step_status_ok => {
                self.in_step = true;
                Ok(StepStatus::Ready)
            }
            sys::adios2_step_status_not_ready => Ok(StepStatus::NotReady),
            sys::adios2_step_status_end_of_stream => Ok(StepStatus::EndOfStream),
            other => Err(call_err(
                &self.path,
                "adios2_begin_step (step status)",
                other as i64,
            )),
        }
    }

    /// The ADIOS2 step number of the open step.
    pub fn current_step(&self) -> Result<usize> {
        let mut step = 0usize;
        // SAFETY: engine valid; out pointer valid.
        check(&self.path, "adios2_current_step", unsafe {
            sys::adios2_current_step(&mut step, self.engine)
        })?;
        Ok(step)
    }

    fn variable(&self, name: &str) -> Result<Option<*mut sys::adios2_variable>> {
        let c = cstring(&self.path, name)?;
        // SAFETY: io valid; returns NULL when the variable is absent this step.
        let v = unsafe { sys::adios2_inquire_variable(self.ctx.io, c.as_ptr()) };
        Ok((!v.is_null()).then_some(v))
    }

    fn variable_type(&self, var: *mut sys::adios2_variable, name: &str) -> Result<ScalarType> {
        let mut t: sys::adios2_type = 0;
        // SAFETY: var came from inquire_variable in this step.
        check(
            &self.path,
            &format!("adios2_variable_type({name})"),
            unsafe { sys::adios2_variable_type(&mut t, var) },
        )?;
        Ok(ScalarType::from_raw(t))
    }

    /// Global shape of a variable in the current step, `None` if absent.
    pub fn shape(&self, name: &str) -> Result<Option<Vec<usize>>> {
        let Some(var) = self.variable(name)? else {
            return Ok(None);
        };
        let mut ndims = 0usize;
        // SAFETY: var valid; out pointers valid and sized from ndims.
        check(
            &self.path,
            &format!("adios2_variable_ndims({name})"),
            unsafe { sys::adios2_variable_ndims(&mut ndims, var) },
        )?;
        let mut shape = vec![0usize; ndims.max(1)];
        if ndims > 0 {
            check(
                &self.path,
                &format!("adios2_variable_shape({name})"),
                unsafe { sys::adios2_variable_shape(shape.as_mut_ptr(), var) },
            )?;
        }
        shape.truncate(ndims);
        Ok(Some(shape))
    }

    /// Reads an integer scalar of the current step as `i128` (so that every
    /// ADIOS2 integer type fits); `None` if the variable is absent.
    pub fn read_integer(&mut self, name: &str) -> Result<Option<i128>> {
        let Some(var) = self.variable(name)? else {
            return Ok(None);
        };
        let t = self.variable_type(var, name)?;
        let mut buf = [0u8; 8];
        let op = format!("adios2_get({name})");
        // SAFETY: buf has room for any 8-byte scalar; sync get completes before return.
        check(&self.path, &op, unsafe {
            sys::adios2_get(
                self.engine,
                var,
                buf.as_mut_ptr() as *mut c_void,
                sys::adios2_mode_sync,
            )
        })?;
        let v = match t {
            ScalarType::I8 => i8::from_ne_bytes([buf[0]]) as i128,
            ScalarType::U8 => buf[0] as i128,
            ScalarType::I16 => i16::from_ne_bytes([buf[0], buf[1]]) as i128,
            ScalarType::U16 => u16::from_ne_bytes([buf[0], buf[1]]) as i128,
            ScalarType::I32 => i32::from_ne_bytes(buf[..4].try_into().unwrap_or([0; 4])) as i128,
            ScalarType::U32 => u32::from_ne_bytes(buf[..4].try_into().unwrap_or([0; 4])) as i128,
            ScalarType::I64 => i64::from_ne_bytes(buf) as i128,
            ScalarType::U64 => u64::from_ne_bytes(buf) as i128,
            ScalarType::Other(code) => {
                return Err(self.invalid(format!(
                    "variable {name} has non-integer ADIOS2 type {code}"
                )))
            }
        };
        Ok(Some(v))
    }

    /// Reads rows `0..n` of a 2-D `uint64` variable `[N, W]` in the current
    /// step with an explicit selection (shapes change every step).
    /// `None` if the variable is absent this step.
    pub fn read_rows<const W: usize>(
        &mut self,
        name: &str,
        n: usize,
    ) -> Result<Option<Vec<[u64; W]>>> {
        let mut rows = Vec::new();
        Ok(self.read_rows_into(name, n, &mut rows)?.then_some(rows))
    }

    /// Like [`read_rows`](Self::read_rows) but into `out` (cleared first),
    /// reusing its allocation: steady-state reading allocates nothing.
    /// Returns `false` if the variable is absent this step.
    pub fn read_rows_into<const W: usize>(
        &mut self,
        name: &str,
        n: usize,
        out: &mut Vec<[u64; W]>,
    ) -> Result<bool> {
        out.clear();
        let Some(array) = self.row_array::<W>(name, n)? else {
            return Ok(false);
        };
        out.reserve(n);
        // Read in chunks: the engine stages each read in a buffer of the
        // read's size, so chunking bounds that extra copy to a few MiB
        // instead of a second copy of the whole step.
        let mut done = 0usize;
        while done < n {
            let rows = (n - done).min(READ_CHUNK_ROWS);
            // SAFETY: `out` has capacity for n rows, so rows done..done+rows
            // fit; they are marked initialised only after the gets filled them.
            unsafe {
                self.get_rows_in_parts::<W>(array, done, rows, out.as_mut_ptr().add(done))?;
                out.set_len(done + rows);
            }
            done += rows;
        }
        Ok(true)
    }

    /// Reads rows `0..n` of a 2-D `uint64` variable `[N, W]` a chunk of at
    /// most `chunk_rows` rows at a time through `scratch`, handing each chunk
    /// and the index of its first row to `each`. For callers that keep a
    /// reduced form of the rows: the step's rows are never all in memory at
    /// their full width. Returns `false` if the variable is absent.
    pub fn read_rows_chunked<const W: usize>(
        &mut self,
        name: &str,
        n: usize,
        chunk_rows: usize,
        scratch: &mut Vec<[u64; W]>,
        mut each: impl FnMut(&[[u64; W]], usize),
    ) -> Result<bool> {
        let Some(array) = self.row_array::<W>(name, n)? else {
            return Ok(false);
        };
        let chunk_rows = chunk_rows.max(1);
        scratch.clear();
        scratch.reserve(n.min(chunk_rows));
        let mut done = 0usize;
        while done < n {
            let rows = (n - done).min(chunk_rows);
            scratch.clear();
            // SAFETY: `scratch` has capacity for min(n, chunk_rows) >= rows
            // rows; they are marked initialised only after the gets.
            unsafe {
                self.get_rows_in_parts::<W>(array, done, rows, scratch.as_mut_ptr())?;
                scratch.set_len(rows);
            }
            each(scratch, done);
            done += rows;
        }
        Ok(true)
    }

    /// The variable `name` if it is a `uint64` array of shape `[>= n, W]`;
    /// `None` if it is absent this step.
    fn row_array<'n, const W: usize>(
        &mut self,
        name: &'n str,
        n: usize,
    ) -> Result<Option<RowArray<'n>>> {
        let Some(var) = self.variable(name)? else {
            return Ok(None);
        };
        let t = self.variable_type(var, name)?;
        if !matches!(t, ScalarType::U64 | ScalarType::I64) {
            return Err(self.invalid(format!("variable {name} has type {t:?}, expected uint64")));
        }
        let shape = self.shape(name)?.unwrap_or_default();
        if shape.len() != 2 || shape[1] != W || shape[0] < n {
            return Err(self.invalid(format!(
                "variable {name} has shape {shape:?}, expected [>= {n}, {W}]"
            )));
        }
        Ok(Some(RowArray { var, name }))
    }

    /// Selects rows `start..start + rows` of `array` and gets them into
    /// `dst` in `mode` (a deferred get is complete after the next perform).
    ///
    /// # Safety
    /// `array` comes from [`row_array`](Self::row_array) for this step with
    /// `start + rows` within its shape, and `dst` is valid for writing
    /// `rows` rows of `W` `u64` (`[u64; W]` has no padding) until the get
    /// completes.
    unsafe fn get_rows<const W: usize>(
        &mut self,
        array: RowArray<'_>,
        mode: sys::adios2_mode,
        start: usize,
        rows: usize,
        dst: *mut [u64; W],
    ) -> Result<()> {
        let RowArray { var, name } = array;
        let sel_start = [start, 0usize];
        let count = [rows, W];
        let op = format!("adios2_set_selection({name})");
        // SAFETY: var valid; start/count arrays of length 2 match ndims.
        check(&self.path, &op, unsafe {
            sys::adios2_set_selection(var, 2, sel_start.as_ptr(), count.as_ptr())
        })?;
        let op = format!("adios2_get({name})");
        // SAFETY: dst is valid for the selection until the get completes
        // (caller's contract).
        check(&self.path, &op, unsafe {
            sys::adios2_get(self.engine, var, dst as *mut c_void, mode)
        })
    }

    /// Reads rows `start..start + rows` of `var` into `dst` as deferred gets
    /// of at most [`READ_PART_ROWS`] rows each, completed by one perform:
    /// the engine stages each get through a buffer it clears once per
    /// perform, sized for the largest get, so small parts in one perform
    /// cost one small clear and keep the staging buffer in cache.
    ///
    /// # Safety
    /// As for [`get_rows`](Self::get_rows).
    unsafe fn get_rows_in_parts<const W: usize>(
        &mut self,
        array: RowArray<'_>,
        start: usize,
        rows: usize,
        dst: *mut [u64; W],
    ) -> Result<()> {
        if rows <= READ_PART_ROWS {
            // SAFETY: the caller's contract; the sync get completes here.
            return unsafe { self.get_rows::<W>(array, sys::adios2_mode_sync, start, rows, dst) };
        }
        let mut part = 0usize;
        while part < rows {
            let len = (rows - part).min(READ_PART_ROWS);
            // SAFETY: dst + part is valid for `len` rows (caller's contract)
            // and is written by the perform below, before this returns.
            unsafe {
                let deferred = sys::adios2_mode_deferred;
                self.get_rows::<W>(array, deferred, start + part, len, dst.add(part))?;
            }
            part += len;
        }
        let op = format!("adios2_perform_gets({})", array.name);
        // SAFETY: engine valid; completes the deferred gets above.
        check(&self.path, &op, unsafe {
            sys::adios2_perform_gets(self.engine)
        })
    }

    /// Names of all attributes visible now.
    pub fn attribute_names(&self) -> Result<Vec<String>> {
        let mut size = 0usize;
        // SAFETY: io valid. The returned array and its strings are malloc'ed
        // by ADIOS2 and freed here.
        let arr = unsafe { sys::adios2_available_attributes(self.ctx.io, &mut size) };
        let mut names = Vec::with_capacity(size);
        if arr.is_null() {
            return Ok(names);
        }
        for i in 0..size {
            // SAFETY: i < size; each entry is a NUL-terminated string or NULL.
            unsafe {
                let p = *arr.add(i);
                if !p.is_null() {
                    names.push(CStr::from_ptr(p).to_string_lossy().into_owned());
                    libc_free(p as *mut c_void);
                }
            }
        }
        // SAFETY: arr was allocated by ADIOS2 with malloc.
        unsafe { libc_free(arr as *mut c_void) };
        Ok(names)
    }

    /// Drops every attribute the IO holds (they were read): the engine
    /// installs each step's new attributes, so the next listing holds only
    /// those instead of every attribute defined so far.
    pub fn forget_attributes(&self) -> Result<()> {
        // SAFETY: io valid; no handle to an attribute is kept past this
        // call (the reader copies names and values out before).
        check(&self.path, "adios2_remove_all_attributes", unsafe {
            sys::adios2_remove_all_attributes(self.ctx.io)
        })
    }

    /// Reads one attribute's value; `None` if it does not exist.
    pub fn attribute(&self, name: &str) -> Result<Option<AdiosAttrValue>> {
        let c = cstring(&self.path, name)?;
        // SAFETY: io valid; NULL if absent.
        let attr = unsafe { sys::adios2_inquire_attribute(self.ctx.io, c.as_ptr()) };
        if attr.is_null() {
            return Ok(None);
        }
        let mut t: sys::adios2_type = 0;
        // SAFETY: attr valid.
        check(&self.path, "adios2_attribute_type", unsafe {
            sys::adios2_attribute_type(&mut t, attr)
        })?;
        let mut is_value: sys::adios2_bool = 0;
        check(&self.path, "adios2_attribute_is_value", unsafe {
            sys::adios2_attribute_is_value(&mut is_value, attr)
        })?;
        if t == sys::adios2_type_string && is_value == sys::adios2_true {
            return Ok(Some(AdiosAttrValue::Text(
                self.string_attribute(attr, name)?,
            )));
        }
        let mut n = 0usize;
        check(&self.path, "adios2_attribute_size", unsafe {
            sys::adios2_attribute_size(&mut n, attr)
        })?;
        Ok(Some(AdiosAttrValue::Other(format!(
            "<attribute of ADIOS2 type {t}, {n} element(s)>"
        ))))
    }

    #[cfg(adios2_has_string_data)]
    fn string_attribute(&self, attr: *mut sys::adios2_attribute, name: &str) -> Result<String> {
        let mut len = 0usize;
        let op = format!("adios2_attribute_string_data({name})");
        // SAFETY: two-call pattern: NULL buffer returns the length, then a
        // buffer of len+1 bytes receives the data.
        check(&self.path, &op, unsafe {
            sys::adios2_attribute_string_data(attr, ptr::null_mut(), &mut len)
        })?;
        let mut buf = vec![0u8; len + 1];
        check(&self.path, &op, unsafe {
            sys::adios2_attribute_string_data(attr, buf.as_mut_ptr() as *mut c_char, &mut len)
        })?;
        buf.truncate(len.min(buf.len()));
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    #[cfg(not(adios2_has_string_data))]
    fn string_attribute(&self, attr: *mut sys::adios2_attribute, name: &str) -> Result<String> {
        // Older ADIOS2 has no length query for string attributes; TAU's values
        // are short, and 1 MiB is far beyond any of them.
        let mut buf = vec![0u8; 1 << 20];
        let mut len = 0usize;
        let op = format!("adios2_attribute_data({name})");
        // SAFETY: buf is large enough for any attribute TAU writes.
        check(&self.path, &op, unsafe {
            sys::adios2_attribute_data(buf.as_mut_ptr() as *mut c_void, &mut len, attr)
        })?;
        buf.truncate(len.min(buf.len()));
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    /// Ends the open step (no-op if none is open).
    pub fn end_step(&mut self) -> Result<()> {
        if !self.in_step {
            return Ok(());
        }
        self.in_step = false;
        // SAFETY: engine valid and inside a step.
        check(&self.path, "adios2_end_step", unsafe {
            sys::adios2_end_step(self.engine)
        })
    }
}

impl Drop for StreamReader {
    fn drop(&mut self) {
        let _one_at_a_time = engine_calls();
        // SAFETY: engine valid; closed exactly once, before the context.
        unsafe {
            if self.in_step {
                sys::adios2_end_step(self.engine);
            }
            sys::adios2_close(self.engine);
        }
    }
}

extern "C" {
    #[link_name = "free"]
    fn libc_free(p: *mut c_void);
}

/// Options for opening a stream for writing.
#[derive(Debug, Clone)]
pub struct WriteOptions {
    /// ADIOS2 IO name (TAU's is `tau-metrics`, the default).
    pub io_name: String,
    /// ADIOS2 engine parameters as `(key, value)` pairs.
    pub params: Vec<(String, String)>,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            io_name: "tau-metrics".into(),
            params: Vec::new(),
        }
    }
}

/// A stream opened for writing, step by step. Closed on drop.
pub struct StreamWriter {
    engine: *mut sys::adios2_engine,
    ctx: Context,
    path: String,
    vars: HashMap<String, *mut sys::adios2_variable>,
    in_step: bool,
    closed: bool,
}

impl StreamWriter {
    /// Creates (or truncates) the stream. For SST this blocks until the
    /// engine's `RendezvousReaderCount` readers (default 1) have connected.
    pub fn create(path: &Path, engine: Engine, opts: &WriteOptions) -> Result<Self> {
        let path_s = path.display().to_string();
        let engine = if engine == Engine::Auto {
            Engine::BPFile
        } else {
            engine
        };
        let ctx = Context::new(&path_s, &opts.io_name, engine, &opts.params)?;
        let name_c = cstring(&path_s, &path_s)?;
        // SAFETY: io valid; name valid for the call.
        let eng = unsafe { sys::adios2_open(ctx.io, name_c.as_ptr(), sys::adios2_mode_write) };
        if eng.is_null() {
            return Err(AdiosError::Open {
                path: path_s,
                engine,
                detail: String::new(),
            });
        }
        Ok(StreamWriter {
            engine: eng,
            ctx,
            path: path_s,
            vars: HashMap::new(),
            in_step: false,
            closed: false,
        })
    }

    fn define(&mut self, name: &str, t: sys::adios2_type, width: Option<usize>) -> Result<()> {
        if self.vars.contains_key(name) {
            return Ok(());
        }
        let c = cstring(&self.path, name)?;
        // SAFETY: io valid; shape/start/count arrays have ndims entries.
        let var = unsafe {
            match width {
                None => sys::adios2_define_variable(
                    self.ctx.io,
                    c.as_ptr(),
                    t,
                    0,
                    ptr::null(),
                    ptr::null(),
                    ptr::null(),
                    sys::adios2_constant_dims_true,
                ),
                Some(w) => {
                    let shape = [1usize, w];
                    let start = [0usize, 0];
                    let count = [1usize, w];
                    sys::adios2_define_variable(
                        self.ctx.io,
                        c.as_ptr(),
                        t,
                        2,
                        shape.as_ptr(),
                        start.as_ptr(),
                        count.as_ptr(),
                        sys::adios2_constant_dims_false,
                    )
                }
            }
        };
        if var.is_null() {
            return Err(call_err(
                &self.path,
                &format!("adios2_define_variable({name})"),
                -1,
            ));
        }
        self.vars.insert(name.to_owned(), var);
        Ok(())
    }

    /// Defines a string attribute (TAU's names and metadata).
    pub fn define_attribute(&mut self, name: &str, value: &str) -> Result<()> {
        let (n, v) = (cstring(&self.path, name)?, cstring(&self.path, value)?);
        // SAFETY: io valid; value is a NUL-terminated string as ADIOS2 expects
        // for adios2_type_string.
        let a = unsafe {
            sys::adios2_define_attribute(
                self.ctx.io,
                n.as_ptr(),
                sys::adios2_type_string,
                v.as_ptr() as *const c_void,
            )
        };
        if a.is_null() {
            return Err(call_err(
                &self.path,
                &format!("adios2_define_attribute({name})"),
                -1,
            ));
        }
        Ok(())
    }

    /// Starts a new output step.
    pub fn begin_step(&mut self) -> Result<()> {
        let mut status: sys::adios2_step_status = 0;
        // SAFETY: engine valid.
        check(&self.path, "adios2_begin_step", unsafe {
            sys::adios2_begin_step(self.engine, sys::adios2_step_mode_append, -1.0, &mut status)
        })?;
        self.in_step = true;
        Ok(())
    }

    /// Writes a scalar in the current step.
    pub fn put_scalar<T: AdiosScalar>(&mut self, name: &str, value: T) -> Result<()> {
        self.define(name, T::RAW_TYPE, None)?;
        let var = self.vars[name];
        // SAFETY: value lives across the sync put.
        check(&self.path, &format!("adios2_put({name})"), unsafe {
            sys::adios2_put(
                self.engine,
                var,
                &value as *const T as *const c_void,
                sys::adios2_mode_sync,
            )
        })
    }

    /// Writes `rows` as a 2-D `uint64` array `[rows.len(), W]` in the current
    /// step. Like TAU, an empty array is not written at all.
    pub fn put_rows<const W: usize>(&mut self, name: &str, rows: &[[u64; W]]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        self.define(name, sys::adios2_type_uint64_t, Some(W))?;
        let var = self.vars[name];
        let shape = [rows.len(), W];
        let start = [0usize, 0];
        // SAFETY: var valid; arrays have 2 entries; rows is contiguous n*W
        // u64 and outlives the sync put.
        unsafe {
            check(
                &self.path,
                &format!("adios2_set_shape({name})"),
                sys::adios2_set_shape(var, 2, shape.as_ptr()),
            )?;
            check(
                &self.path,
                &format!("adios2_set_selection({name})"),
                sys::adios2_set_selection(var, 2, start.as_ptr(), shape.as_ptr()),
            )?;
            check(
                &self.path,
                &format!("adios2_put({name})"),
                sys::adios2_put(
                    self.engine,
                    var,
                    rows.as_ptr() as *const c_void,
                    sys::adios2_mode_sync,
                ),
            )
        }
    }

    /// Ends the current step (makes it visible to readers).
    pub fn end_step(&mut self) -> Result<()> {
        self.in_step = false;
        // SAFETY: engine valid and inside a step.
        check(&self.path, "adios2_end_step", unsafe {
            sys::adios2_end_step(self.engine)
        })
    }

    /// Closes the stream, reporting errors (drop closes silently).
    pub fn close(mut self) -> Result<()> {
        self.closed = true;
        let _one_at_a_time = engine_calls();
        // SAFETY: engine valid; closed once (Drop sees `closed`).
        unsafe {
            if self.in_step {
                check(
                    &self.path,
                    "adios2_end_step",
                    sys::adios2_end_step(self.engine),
                )?;
            }
            check(&self.path, "adios2_close", sys::adios2_close(self.engine))
        }
    }
}

impl Drop for StreamWriter {
    fn drop(&mut self) {
        if self.closed {
            return;
        }
        let _one_at_a_time = engine_calls();
        // SAFETY: engine valid; closed once.
        unsafe {
            if self.in_step {
                sys::adios2_end_step(self.engine);
            }
            sys::adios2_close(self.engine);
        }
    }
}

/// Version of the ADIOS2 library headers we were built against.
pub fn adios2_version() -> &'static str {
    sys::ADIOS2_HEADER_VERSION
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adios_messages_lose_colours_timestamps_and_headers() {
        let raw = "\u{1b}[1;36m [Wed Nov 25 16:59:40 2026]\u{1b}[0m\u{1b}[1;34m [ADIOS2 EXCEPTION]\u{1b}[0m <Helper> <adiosSystem> <ExceptionToError> : adios2_open: [Wed Nov 25 16:59:40 2026] [ADIOS2 EXCEPTION] <Engine> <BP4Reader> <OpenFiles> : File /d/x.bp could not be found: errno=2\u{1b}[0m\niostream error\n";
        assert_eq!(
            clean_adios_message(raw),
            "File /d/x.bp could not be found: errno=2"
        );
        assert_eq!(clean_adios_message(""), "");
        assert_eq!(
            clean_adios_message("plain [text] and <a b>"),
            "plain [text] and <a b>"
        );
    }

    #[test]
    fn bp_versions_come_from_the_index_header() {
        let dir = std::env::temp_dir().join(format!("bpver-{}", std::process::id()));
        let bp = dir.join("s.bp");
        std::fs::create_dir_all(&bp).unwrap();
        let mut head = b"ADIOS-BP v2.<.1 Index Table".to_vec();
        head.resize(64, 0);
        head[37] = 5;
        std::fs::write(bp.join("md.idx"), &head).unwrap();
        assert_eq!(bp_version(&bp), Some(5));
        assert_eq!(Engine::Auto.for_reading(&bp).unwrap(), Some(Engine::BP5));
        assert_eq!(Engine::BP5.for_reading(&bp).unwrap(), Some(Engine::BP5));
        let err = Engine::BP4.for_reading(&bp).unwrap_err().to_string();
        assert!(
            err.contains("BP5 stream") && err.contains("--engine is BP4"),
            "{err}"
        );
        head[37] = 4;
        std::fs::write(bp.join("md.idx"), &head).unwrap();
        assert_eq!(Engine::Auto.for_reading(&bp).unwrap(), Some(Engine::BP4));
        // Nothing there yet; then an SST contact file.
        let sst = dir.join("live.bp");
        assert_eq!(Engine::Auto.for_reading(&sst).unwrap(), None);
        std::fs::write(dir.join("live.bp.sst"), b"").unwrap();
        assert_eq!(Engine::Auto.for_reading(&sst).unwrap(), Some(Engine::SST));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
