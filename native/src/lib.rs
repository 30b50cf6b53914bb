//! `stacklens_native`: the hot loop of `stacklens.ingest.tokenize` in Rust.
//!
//! `tokenize(datas, fmt, years, patterns, max_line_chars, max_raw_chars, task_bytes)` takes the
//! bytes of a batch of files of one format and returns `(events, quarantine, counts)`: events as
//! an Arrow stream of struct arrays (`__arrow_c_stream__`, one chunk per task), quarantine as one
//! struct array (`__arrow_c_array__`) — `pl.Series(obj).struct.unnest()` gives either frame
//! without copying — and per-file counters `(lines, long_line, non_utf8, blank_line,
//! shell_trace)`. The GIL is released while it runs.
//!
//! The module knows no log format by name: `patterns` carries every format rule as data
//! (`stacklens.ingest.tokenize.native_patterns`). The rules that stay code here (timestamps,
//! request context) and the constants the fast paths were written for are exported
//! (`oslo_ts`, `syslog_ts`, `context`, `constants`) so `tests/test_native_drift.py` can compare
//! them with the Python rules.

mod arrow;
mod episodes;
mod fast;
mod redact;
mod rules;
#[cfg(test)]
mod testrng;
mod tok;
mod ts;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyCapsule, PyTuple};

use arrow::{ArrowArray, ArrowArrayStream, ArrowSchema, Column, Fields};

/// A table exported once through `__arrow_c_array__`.
#[pyclass(module = "stacklens_native")]
struct ArrowTable {
    cols: Mutex<Option<Vec<(&'static str, Column)>>>,
    n: usize,
}

#[pymethods]
impl ArrowTable {
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let _ = requested_schema;
        let cols = self
            .cols
            .lock()
            .unwrap()
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("ArrowTable was already exported"))?;
        let (schema, array) = arrow::export_table(cols);
        let sc = PyCapsule::new_with_value_and_destructor(py, schema, c"arrow_schema", |mut s: ArrowSchema, _| {
            s.release_if_owned()
        })?;
        let ac = PyCapsule::new_with_value_and_destructor(py, array, c"arrow_array", |mut a: ArrowArray, _| {
            a.release_if_owned()
        })?;
        PyTuple::new(py, [sc.into_any(), ac.into_any()])
    }

    fn __len__(&self) -> usize {
        self.n
    }
}

/// Per file: lines, long_line, non_utf8, blank_line, shell_trace.
type FileCounts = (u64, u64, u64, u64, u64);

/// Named columns of one chunk.
type Table = Vec<(&'static str, Column)>;

/// A table exported once through `__arrow_c_stream__`, one struct array per chunk.
#[pyclass(module = "stacklens_native")]
struct ArrowChunks {
    parts: Mutex<Option<(Fields, Vec<Table>)>>,
    n: usize,
}

#[pymethods]
impl ArrowChunks {
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let (fields, chunks) = self
            .parts
            .lock()
            .unwrap()
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("ArrowChunks was already exported"))?;
        let stream = ArrowArrayStream::new(fields, chunks);
        PyCapsule::new_with_value_and_destructor(py, stream, c"arrow_array_stream", |mut s: ArrowArrayStream, _| {
            s.release_if_owned()
        })
    }

    fn __len__(&self) -> usize {
        self.n
    }
}

type RxKey = (String, Vec<(String, String)>, usize, usize);

fn compiled(fmt: &str, patterns: HashMap<String, String>, max_line: usize, max_raw: usize) -> PyResult<Arc<tok::Rx>> {
    static CACHE: OnceLock<Mutex<HashMap<RxKey, Arc<tok::Rx>>>> = OnceLock::new();
    let mut items: Vec<(String, String)> = patterns.clone().into_iter().collect();
    items.sort();
    let key = (fmt.to_string(), items, max_line, max_raw);
    let cache = CACHE.get_or_init(Default::default);
    if let Some(rx) = cache.lock().unwrap().get(&key) {
        return Ok(rx.clone());
    }
    let rx = Arc::new(tok::Rx::new(fmt, &patterns, max_line, max_raw).map_err(PyValueError::new_err)?);
    cache.lock().unwrap().insert(key, rx.clone());
    Ok(rx)
}

#[allow(clippy::too_many_arguments)]
#[pyfunction]
#[pyo3(signature = (datas, fmt, years, patterns, max_line_chars, max_raw_chars, task_bytes=4 << 20))]
fn tokenize(
    py: Python<'_>,
    datas: Vec<PyBackedBytes>,
    fmt: &str,
    years: Vec<i32>,
    patterns: HashMap<String, String>,
    max_line_chars: usize,
    max_raw_chars: usize,
    task_bytes: usize,
) -> PyResult<(ArrowChunks, ArrowTable, Vec<FileCounts>)> {
    if years.len() != datas.len() {
        return Err(PyValueError::new_err("datas and years differ in length"));
    }
    let rx = compiled(fmt, patterns, max_line_chars, max_raw_chars)?;
    let batch = py.detach(|| {
        let slices: Vec<&[u8]> = datas.iter().map(|d| &d[..]).collect();
        tok::tokenize(&rx, &slices, &years, task_bytes.max(1 << 16))
    });
    let n_ev = batch.events.iter().map(|cols| cols[0].1.len()).sum();
    let n_q = batch.quarantine.first().map_or(0, |(_, c)| c.len());
    let counts = batch.counts.iter().map(|c| (c[0], c[1], c[2], c[3], c[4])).collect();
    Ok((
        ArrowChunks {
            parts: Mutex::new(Some((batch.event_fields, batch.events))),
            n: n_ev,
        },
        ArrowTable {
            cols: Mutex::new(Some(batch.quarantine)),
            n: n_q,
        },
        counts,
    ))
}

/// Physical lines of `data`: its '\n' bytes, plus one for an unterminated last line (the count
/// of `grep -c ''` and of the tokenizer). SIMD search with the GIL released; Python's
/// `bytes.count` holds the GIL and is several times slower.
#[pyfunction]
fn count_lines(py: Python<'_>, data: PyBackedBytes) -> u64 {
    py.detach(|| {
        let b: &[u8] = &data;
        let n = memchr::memchr_iter(b'\n', b).count() as u64;
        n + u64::from(b.last().is_some_and(|&c| c != b'\n'))
    })
}

/// The trace stage's episode assignment (`episodes.rs`; reference: `stacklens.trace.spans.
/// _assign`) over little-endian arrays of one length: `group` and `rpc` u32, `kind`, `marker`
/// and `access` u8. Returns the episodes as an Arrow table with one Int64 column `episode`.
/// ValueError when the lengths differ. The GIL is released while it runs.
#[pyfunction]
#[pyo3(name = "episodes")]
fn assign_episodes(
    py: Python<'_>,
    group: PyBackedBytes,
    kind: PyBackedBytes,
    rpc: PyBackedBytes,
    marker: PyBackedBytes,
    access: PyBackedBytes,
) -> PyResult<ArrowTable> {
    let n = kind.len();
    if group.len() != 4 * n || rpc.len() != 4 * n || marker.len() != n || access.len() != n {
        return Err(PyValueError::new_err("episodes: arrays of different lengths"));
    }
    let out = py.detach(|| {
        let u32s = |b: &[u8]| -> Vec<u32> {
            b.chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        };
        episodes::assign(&u32s(&group), &kind, &u32s(&rpc), &marker, &access)
    });
    Ok(ArrowTable {
        cols: Mutex::new(Some(vec![("episode", Column::I64(arrow::PrimCol::all_valid(out)))])),
        n,
    })
}

/// `{name: on}` for the hand-written fast paths the given patterns allow; a fast path is off when
/// a pattern differs from the one it was written (and tested) for: results stay the same, only
/// slower (see native/README.md).
#[pyfunction]
#[pyo3(signature = (fmt, patterns, max_line_chars=65_536, max_raw_chars=4_096))]
fn fast_paths(
    fmt: &str,
    patterns: HashMap<String, String>,
    max_line_chars: usize,
    max_raw_chars: usize,
) -> PyResult<HashMap<&'static str, bool>> {
    Ok(compiled(fmt, patterns, max_line_chars, max_raw_chars)?
        .fast_paths()
        .into_iter()
        .collect())
}

/// The oslo timestamp rule (`fields.timestamp`, oslo branch): `date`, `time` -> ns or None.
#[pyfunction]
fn oslo_ts(date: &str, time: &str, year_min: i64, year_max: i64) -> Option<i64> {
    ts::oslo_ts(date, time, (year_min, year_max))
}

/// The syslog timestamp rule (`fields.timestamp`, syslog branch): `year`, `sysdate` -> ns or None.
#[pyfunction]
fn syslog_ts(year: i32, sysdate: &str, year_min: i64, year_max: i64) -> Option<i64> {
    ts::syslog_ts(year, sysdate, (year_min, year_max))
}

/// The request-context rule (`fields.context`): context text (None: no context) ->
/// `(global_request_id, request_id, user, project)`.
#[pyfunction]
#[pyo3(signature = (ctx))]
#[allow(clippy::type_complexity)]
fn context(ctx: Option<&str>) -> (Option<String>, Option<String>, Option<String>, Option<String>) {
    let [a, b, c, d] = rules::context(ctx);
    let own = |v: Option<&str>| v.map(str::to_owned);
    (own(a), own(b), own(c), own(d))
}

/// The patterns the hand-written fast paths implement (`{name: pattern}`); the Python side
/// must pass exactly these for the fast paths to run (else the regexes do, same results).
#[pyfunction]
fn constants() -> HashMap<&'static str, &'static str> {
    HashMap::from([
        ("oslo_header", fast::OSLO_HEADER),
        ("oslo_trace", fast::OSLO_TRACE),
        ("debug_suffix", fast::DEBUG_SUFFIX),
        ("oslo_tb_line", fast::OSLO_TB_LINE),
        ("binary", rules::BINARY),
        ("instance", rules::INSTANCE),
        ("redact_secret", redact::SECRET),
        ("redact_cheap", redact::CHEAP),
    ])
}

/// `redact()` of `stacklens/ingest/redact.py` on each text, for tests: `windowed` true runs the
/// windowed fast path (`redact.rs`; needs `cheap` and `secret` to be its constants, else
/// ValueError), false the plain regexes (`secret.replace_all` where `cheap` matches). Invalid
/// patterns raise ValueError. The GIL is released while it runs.
#[pyfunction]
#[pyo3(signature = (texts, cheap, secret, replacement, windowed))]
#[pyo3(name = "redact")]
fn redact_texts(
    py: Python<'_>,
    texts: Vec<String>,
    cheap: &str,
    secret: &str,
    replacement: &str,
    windowed: bool,
) -> PyResult<Vec<String>> {
    let c = regex::Regex::new(cheap).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let s = regex::Regex::new(secret).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let w = if windowed {
        if cheap != redact::CHEAP || secret != redact::SECRET {
            return Err(PyValueError::new_err(
                "windowed redaction needs the patterns it was written for",
            ));
        }
        Some(redact::Windowed::new().map_err(PyValueError::new_err)?)
    } else {
        None
    };
    Ok(py.detach(|| {
        texts
            .iter()
            .map(|t| match &w {
                Some(w) => w.redact(&c, &s, replacement, t).into_owned(),
                None if c.is_match(t) => s.replace_all(t, replacement).into_owned(),
                None => t.clone(),
            })
            .collect()
    }))
}

#[pymodule]
fn stacklens_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(tokenize, m)?)?;
    m.add_function(wrap_pyfunction!(fast_paths, m)?)?;
    m.add_function(wrap_pyfunction!(count_lines, m)?)?;
    m.add_function(wrap_pyfunction!(assign_episodes, m)?)?;
    m.add_function(wrap_pyfunction!(oslo_ts, m)?)?;
    m.add_function(wrap_pyfunction!(syslog_ts, m)?)?;
    m.add_function(wrap_pyfunction!(context, m)?)?;
    m.add_function(wrap_pyfunction!(constants, m)?)?;
    m.add_function(wrap_pyfunction!(redact_texts, m)?)?;
    m.add_class::<ArrowTable>()?;
    m.add_class::<ArrowChunks>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
