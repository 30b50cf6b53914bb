//! Columns built in Rust and handed to Polars without copying, through the Arrow C Data
//! Interface (<https://arrow.apache.org/docs/format/CDataInterface.html>) and the Arrow PyCapsule
//! protocol (`__arrow_c_array__`). A table is exported as one struct array whose children are the
//! columns; the consumer (Polars) releases the buffers when it drops them.

use std::collections::VecDeque;
use std::ffi::{c_char, c_int, c_void, CString};
use std::ptr;

/// A growable validity bitmap (LSB first, 1 = valid); `None` until the first null.
#[derive(Default)]
pub struct Validity {
    bits: Option<Vec<u8>>,
    len: usize,
    nulls: usize,
}

impl Validity {
    #[inline]
    pub fn push(&mut self, valid: bool) {
        if !valid && self.bits.is_none() {
            let mut v = vec![0xffu8; self.len.div_ceil(8)];
            if self.len % 8 != 0 {
                let last = v.len() - 1;
                v[last] = (1u8 << (self.len % 8)) - 1;
            }
            self.bits = Some(v);
        }
        if let Some(bits) = self.bits.as_mut() {
            if self.len % 8 == 0 {
                bits.push(0);
            }
            if valid {
                bits[self.len / 8] |= 1 << (self.len % 8);
            }
        }
        if !valid {
            self.nulls += 1;
        }
        self.len += 1;
    }

    fn get(&self, i: usize) -> bool {
        match &self.bits {
            None => true,
            Some(b) => b[i / 8] & (1 << (i % 8)) != 0,
        }
    }

    /// Append all of `other` (bit by bit only when either side has nulls).
    pub fn extend(&mut self, other: &Validity) {
        if self.bits.is_none() && other.bits.is_none() {
            self.len += other.len;
            return;
        }
        for i in 0..other.len {
            self.push(other.get(i));
        }
    }
}

/// A nullable string column (Arrow LargeUtf8).
pub struct StrCol {
    pub offsets: Vec<i64>,
    pub data: Vec<u8>,
    pub valid: Validity,
}

impl Default for StrCol {
    fn default() -> Self {
        StrCol {
            offsets: vec![0],
            data: Vec::new(),
            valid: Validity::default(),
        }
    }
}

impl StrCol {
    #[inline]
    pub fn push(&mut self, v: Option<&str>) {
        if let Some(s) = v {
            self.data.extend_from_slice(s.as_bytes());
        }
        self.offsets.push(self.data.len() as i64);
        self.valid.push(v.is_some());
    }

    /// Close a value written directly into `data` since the last push.
    #[inline]
    pub fn close(&mut self, valid: bool) {
        self.offsets.push(self.data.len() as i64);
        self.valid.push(valid);
    }

    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn concat(parts: Vec<StrCol>) -> StrCol {
        let n: usize = parts.iter().map(|p| p.len()).sum();
        let bytes: usize = parts.iter().map(|p| p.data.len()).sum();
        let mut out = StrCol {
            offsets: Vec::with_capacity(n + 1),
            data: Vec::with_capacity(bytes),
            valid: Validity::default(),
        };
        out.offsets.push(0);
        for p in parts {
            let base = out.data.len() as i64;
            out.offsets.extend(p.offsets[1..].iter().map(|o| o + base));
            out.data.extend_from_slice(&p.data);
            out.valid.extend(&p.valid);
        }
        out
    }
}

/// A nullable primitive column.
pub struct PrimCol<T> {
    pub values: Vec<T>,
    pub valid: Validity,
}

impl<T> Default for PrimCol<T> {
    fn default() -> Self {
        PrimCol {
            values: Vec::new(),
            valid: Validity::default(),
        }
    }
}

impl<T: Copy + Default> PrimCol<T> {
    pub fn all_valid(values: Vec<T>) -> PrimCol<T> {
        let len = values.len();
        PrimCol {
            values,
            valid: Validity {
                bits: None,
                len,
                nulls: 0,
            },
        }
    }

    #[inline]
    pub fn push(&mut self, v: Option<T>) {
        self.values.push(v.unwrap_or_default());
        self.valid.push(v.is_some());
    }
}

/// One exported column: an Arrow format string and its buffers.
pub enum Column {
    I64(PrimCol<i64>),
    I32(PrimCol<i32>),
    U32(PrimCol<u32>),
    Str(StrCol),
}

impl Column {
    pub fn len(&self) -> usize {
        match self {
            Column::I64(c) => c.values.len(),
            Column::I32(c) => c.values.len(),
            Column::U32(c) => c.values.len(),
            Column::Str(c) => c.len(),
        }
    }
}

#[repr(C)]
pub struct ArrowSchema {
    format: *const c_char,
    name: *const c_char,
    metadata: *const c_char,
    flags: i64,
    n_children: i64,
    children: *mut *mut ArrowSchema,
    dictionary: *mut ArrowSchema,
    release: Option<unsafe extern "C" fn(*mut ArrowSchema)>,
    private_data: *mut c_void,
}

#[repr(C)]
pub struct ArrowArray {
    length: i64,
    null_count: i64,
    offset: i64,
    n_buffers: i64,
    n_children: i64,
    buffers: *mut *const c_void,
    children: *mut *mut ArrowArray,
    dictionary: *mut ArrowArray,
    release: Option<unsafe extern "C" fn(*mut ArrowArray)>,
    private_data: *mut c_void,
}

// The structs are only ever touched by one thread at a time (moved into a capsule, then read
// by the consumer); they own their private data.
unsafe impl Send for ArrowSchema {}
unsafe impl Send for ArrowArray {}

impl ArrowSchema {
    /// Release unless the consumer moved the struct out (then `release` is null).
    pub fn release_if_owned(&mut self) {
        if let Some(r) = self.release {
            unsafe { r(self) }
        }
    }
}

impl ArrowArray {
    /// Release unless the consumer moved the struct out (then `release` is null).
    pub fn release_if_owned(&mut self) {
        if let Some(r) = self.release {
            unsafe { r(self) }
        }
    }
}

const FLAG_NULLABLE: i64 = 2;

struct SchemaPrivate {
    _format: CString,
    _name: CString,
    children: Vec<*mut ArrowSchema>,
}

unsafe extern "C" fn release_schema(s: *mut ArrowSchema) {
    if s.is_null() || (*s).release.is_none() {
        return;
    }
    let private = Box::from_raw((*s).private_data as *mut SchemaPrivate);
    for &c in &private.children {
        if let Some(r) = (*c).release {
            r(c);
        }
        drop(Box::from_raw(c));
    }
    drop(private);
    (*s).release = None;
}

enum Buf {
    I64(Vec<i64>),
    I32(Vec<i32>),
    U32(Vec<u32>),
    U8(Vec<u8>),
}

impl Buf {
    fn ptr(&self) -> *const c_void {
        match self {
            Buf::I64(v) => v.as_ptr() as *const c_void,
            Buf::I32(v) => v.as_ptr() as *const c_void,
            Buf::U32(v) => v.as_ptr() as *const c_void,
            Buf::U8(v) => v.as_ptr() as *const c_void,
        }
    }
}

struct ArrayPrivate {
    _bufs: Vec<Buf>,
    _ptrs: Vec<*const c_void>,
    children: Vec<*mut ArrowArray>,
}

unsafe extern "C" fn release_array(a: *mut ArrowArray) {
    if a.is_null() || (*a).release.is_none() {
        return;
    }
    let private = Box::from_raw((*a).private_data as *mut ArrayPrivate);
    for &c in &private.children {
        if let Some(r) = (*c).release {
            r(c);
        }
        drop(Box::from_raw(c));
    }
    drop(private);
    (*a).release = None;
}

fn schema(format: &str, name: &str, flags: i64, children: Vec<ArrowSchema>) -> ArrowSchema {
    let format = CString::new(format).expect("format");
    let name = CString::new(name).expect("name");
    let mut kids: Vec<*mut ArrowSchema> = children.into_iter().map(|c| Box::into_raw(Box::new(c))).collect();
    let n_children = kids.len() as i64;
    let children_ptr = if kids.is_empty() {
        ptr::null_mut()
    } else {
        kids.as_mut_ptr()
    };
    let private = Box::new(SchemaPrivate {
        _format: format,
        _name: name,
        children: kids,
    });
    ArrowSchema {
        format: private._format.as_ptr(),
        name: private._name.as_ptr(),
        metadata: ptr::null(),
        flags,
        n_children,
        children: children_ptr,
        dictionary: ptr::null_mut(),
        release: Some(release_schema),
        private_data: Box::into_raw(private) as *mut c_void,
    }
}

fn array(length: usize, null_count: usize, bufs: Vec<Option<Buf>>, children: Vec<ArrowArray>) -> ArrowArray {
    let mut ptrs: Vec<*const c_void> = bufs
        .iter()
        .map(|b| b.as_ref().map_or(ptr::null(), |b| b.ptr()))
        .collect();
    let kept: Vec<Buf> = bufs.into_iter().flatten().collect();
    let mut kids: Vec<*mut ArrowArray> = children.into_iter().map(|c| Box::into_raw(Box::new(c))).collect();
    let n_buffers = ptrs.len() as i64;
    let n_children = kids.len() as i64;
    let buffers = ptrs.as_mut_ptr();
    let children_ptr = if kids.is_empty() {
        ptr::null_mut()
    } else {
        kids.as_mut_ptr()
    };
    let private = Box::new(ArrayPrivate {
        _bufs: kept,
        _ptrs: ptrs,
        children: kids,
    });
    ArrowArray {
        length: length as i64,
        null_count: null_count as i64,
        offset: 0,
        n_buffers,
        n_children,
        buffers,
        children: children_ptr,
        dictionary: ptr::null_mut(),
        release: Some(release_array),
        private_data: Box::into_raw(private) as *mut c_void,
    }
}

fn export_column(name: &str, col: Column) -> (ArrowSchema, ArrowArray) {
    let n = col.len();
    let (fmt, valid, bufs): (&str, Validity, Vec<Option<Buf>>) = match col {
        Column::I64(c) => ("l", c.valid, vec![Some(Buf::I64(c.values))]),
        Column::I32(c) => ("i", c.valid, vec![Some(Buf::I32(c.values))]),
        Column::U32(c) => ("I", c.valid, vec![Some(Buf::U32(c.values))]),
        Column::Str(c) => ("U", c.valid, vec![Some(Buf::I64(c.offsets)), Some(Buf::U8(c.data))]),
    };
    let nulls = valid.nulls;
    let mut all = vec![if nulls > 0 { valid.bits.map(Buf::U8) } else { None }];
    all.extend(bufs);
    (schema(fmt, name, FLAG_NULLABLE, vec![]), array(n, nulls, all, vec![]))
}

impl Column {
    fn format(&self) -> &'static str {
        match self {
            Column::I64(_) => "l",
            Column::I32(_) => "i",
            Column::U32(_) => "I",
            Column::Str(_) => "U",
        }
    }
}

/// A table's columns: names and Arrow formats.
pub type Fields = Vec<(&'static str, &'static str)>;

pub fn fields(cols: &[(&'static str, Column)]) -> Fields {
    cols.iter().map(|(n, c)| (*n, c.format())).collect()
}

fn table_schema(fields: &Fields) -> ArrowSchema {
    let kids = fields
        .iter()
        .map(|(n, f)| schema(f, n, FLAG_NULLABLE, vec![]))
        .collect();
    schema("+s", "", 0, kids)
}

fn table_array(cols: Vec<(&'static str, Column)>) -> ArrowArray {
    let n = cols.first().map_or(0, |(_, c)| c.len());
    let arrays = cols
        .into_iter()
        .map(|(name, col)| {
            assert_eq!(col.len(), n, "column {name} has a different length");
            let (mut s, a) = export_column(name, col);
            s.release_if_owned();
            a
        })
        .collect();
    array(n, 0, vec![None], arrays)
}

/// Export named columns of equal length as one struct array.
pub fn export_table(cols: Vec<(&'static str, Column)>) -> (ArrowSchema, ArrowArray) {
    (table_schema(&fields(&cols)), table_array(cols))
}

/// `struct ArrowArrayStream` of the C stream interface.
#[repr(C)]
pub struct ArrowArrayStream {
    get_schema: Option<unsafe extern "C" fn(*mut ArrowArrayStream, *mut ArrowSchema) -> c_int>,
    get_next: Option<unsafe extern "C" fn(*mut ArrowArrayStream, *mut ArrowArray) -> c_int>,
    get_last_error: Option<unsafe extern "C" fn(*mut ArrowArrayStream) -> *const c_char>,
    release: Option<unsafe extern "C" fn(*mut ArrowArrayStream)>,
    private_data: *mut c_void,
}

unsafe impl Send for ArrowArrayStream {}

struct StreamPrivate {
    fields: Fields,
    chunks: VecDeque<Vec<(&'static str, Column)>>,
}

unsafe extern "C" fn stream_schema(s: *mut ArrowArrayStream, out: *mut ArrowSchema) -> c_int {
    let private = &*((*s).private_data as *const StreamPrivate);
    ptr::write(out, table_schema(&private.fields));
    0
}

unsafe extern "C" fn stream_next(s: *mut ArrowArrayStream, out: *mut ArrowArray) -> c_int {
    let private = &mut *((*s).private_data as *mut StreamPrivate);
    match private.chunks.pop_front() {
        Some(cols) => ptr::write(out, table_array(cols)),
        None => {
            // end of stream: a released array
            let mut end = array(0, 0, vec![], vec![]);
            end.release_if_owned();
            ptr::write(out, end);
        }
    }
    0
}

unsafe extern "C" fn stream_error(_: *mut ArrowArrayStream) -> *const c_char {
    ptr::null()
}

unsafe extern "C" fn release_stream(s: *mut ArrowArrayStream) {
    if s.is_null() || (*s).release.is_none() {
        return;
    }
    drop(Box::from_raw((*s).private_data as *mut StreamPrivate));
    (*s).release = None;
}

impl ArrowArrayStream {
    /// A stream of struct arrays with columns `fields`, one per chunk.
    pub fn new(fields: Fields, chunks: Vec<Vec<(&'static str, Column)>>) -> ArrowArrayStream {
        let private = Box::new(StreamPrivate {
            fields,
            chunks: chunks.into(),
        });
        ArrowArrayStream {
            get_schema: Some(stream_schema),
            get_next: Some(stream_next),
            get_last_error: Some(stream_error),
            release: Some(release_stream),
            private_data: Box::into_raw(private) as *mut c_void,
        }
    }

    pub fn release_if_owned(&mut self) {
        if let Some(r) = self.release {
            unsafe { r(self) }
        }
    }
}
