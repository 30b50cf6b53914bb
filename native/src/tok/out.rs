//! The tokenizer's outputs: the event and quarantine columns one task fills, the per-file
//! counters, the per-piece row ends used to fix line numbers afterwards, and the assembly of a
//! batch's Arrow columns (`event_columns`, `concat_q`). Split out of `tok.rs`; no parsing here.

use crate::arrow::{Column, Fields, PrimCol, StrCol};

#[derive(Default)]
pub struct Events {
    pub fidx: Vec<u32>,
    pub line_no: Vec<i64>,
    pub ts: Vec<i64>,
    pub host: StrCol,
    pub svc: StrCol,
    pub pid: PrimCol<i32>,
    pub level: StrCol,
    pub logger: StrCol,
    pub request_id: StrCol,
    pub global_request_id: StrCol,
    pub user: StrCol,
    pub project: StrCol,
    pub instance_uuid: StrCol,
    pub message: StrCol,
    pub continuation: StrCol,
    pub n_lines: Vec<i32>,
}

#[derive(Default)]
pub struct Quarantine {
    pub fidx: Vec<u32>,
    pub line_no: Vec<i64>,
    pub reason: Vec<u8>,
    pub raw: StrCol,
}

pub const REASONS: [&str; 4] = ["binary", "before_first_record", "bad_timestamp", "merged_other"];

impl Quarantine {
    pub(super) fn push(&mut self, fidx: u32, line_no: i64, reason: u8, raw: &str) {
        self.fidx.push(fidx);
        self.line_no.push(line_no);
        self.reason.push(reason);
        self.raw.push(Some(raw));
    }
}

/// Per-file counters: lines, long_line, non_utf8, blank_line, shell_trace.
pub type Counts = [u64; 5];

/// What one piece added to its task's output (row ends, to fix line numbers afterwards).
pub(super) struct Seg {
    pub(super) fidx: u32,
    pub(super) counts: Counts,
    pub(super) ends: [usize; 4],
}

/// The output of a task: consecutive pieces processed by one thread.
#[derive(Default)]
pub(super) struct TaskOut {
    pub(super) segs: Vec<Seg>,
    pub(super) ev: Events,
    pub(super) q_body: Quarantine,
    pub(super) q_bad_head: Quarantine,
    pub(super) q_bad_line: Quarantine,
}

impl TaskOut {
    pub(super) fn line_cols(&mut self) -> [&mut Vec<i64>; 4] {
        [
            &mut self.ev.line_no,
            &mut self.q_body.line_no,
            &mut self.q_bad_head.line_no,
            &mut self.q_bad_line.line_no,
        ]
    }
}

/// The result of one batch.
pub struct Batch {
    pub event_fields: Fields,
    pub events: Vec<Vec<(&'static str, Column)>>,
    pub quarantine: Vec<(&'static str, Column)>,
    pub counts: Vec<Counts>,
}

pub(super) fn concat_q(parts: Vec<Quarantine>) -> Quarantine {
    let mut q = Quarantine::default();
    let mut raws = Vec::with_capacity(parts.len());
    for p in parts {
        q.fidx.extend(p.fidx);
        q.line_no.extend(p.line_no);
        q.reason.extend(p.reason);
        raws.push(p.raw);
    }
    q.raw = StrCol::concat(raws);
    q
}

pub(super) fn event_columns(e: Events) -> Vec<(&'static str, Column)> {
    vec![
        ("fidx", Column::U32(PrimCol::all_valid(e.fidx))),
        ("line_no", Column::I64(PrimCol::all_valid(e.line_no))),
        ("ts_ns", Column::I64(PrimCol::all_valid(e.ts))),
        ("host", Column::Str(e.host)),
        ("svc", Column::Str(e.svc)),
        ("pid", Column::I32(e.pid)),
        ("level", Column::Str(e.level)),
        ("logger", Column::Str(e.logger)),
        ("request_id", Column::Str(e.request_id)),
        ("global_request_id", Column::Str(e.global_request_id)),
        ("user", Column::Str(e.user)),
        ("project", Column::Str(e.project)),
        ("instance_uuid", Column::Str(e.instance_uuid)),
        ("message", Column::Str(e.message)),
        ("continuation", Column::Str(e.continuation)),
        ("n_lines", Column::I32(PrimCol::all_valid(e.n_lines))),
    ]
}
