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
    #[inline(always)]
    pub fn push(&mut self, valid: bool) {
        // no null so far and none now: only the length moves (most values of most columns)
        if valid && self.bits.is_none() {
            self.len += 1;
            return;
        }
        self.push_bit(valid);
    }

    #[inline(always)]
    fn push_bit(&mut self, valid: bool) {
        let len = self.len;
        let bits = match self.bits.as_mut() {
            Some(bits) => bits,
            None => Self::first_null(&mut self.bits, len),
        };
        let bit = len % 8;
        if bit == 0 {
            bits.push(valid as u8);
        } else if let Some(last) = bits.last_mut() {
            // the byte of bit `len` is the last one: `len / 8 + 1` bytes are there
            *last |= (valid as u8) << bit;
        }
        self.nulls += !valid as usize;
        self.len += 1;
    }

    /// The bitmap of the `len` valid values before the first null, put in `bits`.
    #[cold]
    fn first_null(bits: &mut Option<Vec<u8>>, len: usize) -> &mut Vec<u8> {
        let mut v = vec![0xffu8; len.div_ceil(8)];
        if len % 8 != 0 {
            let last = v.len() - 1;
            v[last] = (1u8 << (len % 8)) - 1;
        }
        bits.insert(v)
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

/// A nullable string column, built as offsets and data (Arrow LargeUtf8 layout) and exported
/// as Utf8View ([`string_view_buffers`]).
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
    U128(Vec<u128>),
    /// A pointer into another buffer of the same array (kept alive by it; not owned).
    At(*const c_void),
}

impl Buf {
    fn ptr(&self) -> *const c_void {
        match self {
            Buf::I64(v) => v.as_ptr() as *const c_void,
            Buf::I32(v) => v.as_ptr() as *const c_void,
            Buf::U32(v) => v.as_ptr() as *const c_void,
            Buf::U8(v) => v.as_ptr() as *const c_void,
            Buf::U128(v) => v.as_ptr() as *const c_void,
            Buf::At(p) => *p,
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

/// The Utf8View buffers of a string column given as offsets and data (Arrow columnar format,
/// "Variable-size Binary View Layout", Arrow 1.4 / C Data Interface format `vu`): the views
/// (16 bytes each: length; the bytes themselves up to 12, else their first 4, the data buffer's
/// index and the offset in it), the data split into buffers of at most `i32::MAX` bytes at value
/// boundaries (pointers into the one `data` allocation: nothing copied), and the buffers'
/// sizes (i64). Polars keeps strings as views, so it takes these without a copy, where a
/// LargeUtf8 column was converted (every string copied).
fn string_view_buffers(offsets: &[i64], data: Vec<u8>) -> Vec<Option<Buf>> {
    view_buffers_split(offsets, data, i32::MAX as usize)
}

/// [`string_view_buffers`] with data buffers of at most `limit` bytes (a value longer than
/// `limit` gets a buffer of its own).
fn view_buffers_split(offsets: &[i64], data: Vec<u8>, limit: usize) -> Vec<Option<Buf>> {
    let mut views: Vec<u128> = Vec::with_capacity(offsets.len().saturating_sub(1));
    let mut starts: Vec<usize> = vec![0];
    for w in offsets.windows(2) {
        let (s, e) = (w[0] as usize, w[1] as usize);
        let len = e - s;
        let mut v = [0u8; 16];
        v[0..4].copy_from_slice(&(len as u32).to_le_bytes());
        if len <= 12 {
            v[4..4 + len].copy_from_slice(&data[s..e]);
        } else {
            let mut base = *starts.last().expect("one buffer");
            if e - base > limit {
                starts.push(s);
                base = s;
            }
            v[4..8].copy_from_slice(&data[s..s + 4]);
            v[8..12].copy_from_slice(&((starts.len() - 1) as u32).to_le_bytes());
            v[12..16].copy_from_slice(&((s - base) as u32).to_le_bytes());
        }
        views.push(u128::from_le_bytes(v));
    }
    let mut sizes: Vec<i64> = starts.windows(2).map(|w| (w[1] - w[0]) as i64).collect();
    sizes.push((data.len() - starts.last().expect("one buffer")) as i64);
    let base = data.as_ptr();
    let mut bufs = vec![Some(Buf::U128(views)), Some(Buf::U8(data))];
    bufs.extend(
        starts[1..]
            .iter()
            .map(|&s| Some(Buf::At(unsafe { base.add(s) } as *const c_void))),
    );
    bufs.push(Some(Buf::I64(sizes)));
    bufs
}

fn export_column(name: &str, col: Column) -> (ArrowSchema, ArrowArray) {
    let n = col.len();
    let (fmt, valid, bufs): (&str, Validity, Vec<Option<Buf>>) = match col {
        Column::I64(c) => ("l", c.valid, vec![Some(Buf::I64(c.values))]),
        Column::I32(c) => ("i", c.valid, vec![Some(Buf::I32(c.values))]),
        Column::U32(c) => ("I", c.valid, vec![Some(Buf::U32(c.values))]),
        Column::Str(c) => ("vu", c.valid, string_view_buffers(&c.offsets, c.data)),
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
            Column::Str(_) => "vu",
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The strings the view buffers spell (data buffers read back through the pointers).
    fn read_views(bufs: &[Option<Buf>]) -> Vec<String> {
        let Some(Buf::U128(views)) = &bufs[0] else {
            panic!("views first")
        };
        let Some(Buf::I64(sizes)) = bufs.last().unwrap() else {
            panic!("sizes last")
        };
        let datas: Vec<&[u8]> = bufs[1..bufs.len() - 1]
            .iter()
            .zip(sizes)
            .map(|(b, &n)| unsafe { std::slice::from_raw_parts(b.as_ref().unwrap().ptr() as *const u8, n as usize) })
            .collect();
        views
            .iter()
            .map(|v| {
                let b = v.to_le_bytes();
                let len = u32::from_le_bytes(b[0..4].try_into().unwrap()) as usize;
                let bytes = if len <= 12 {
                    b[4..4 + len].to_vec()
                } else {
                    let i = u32::from_le_bytes(b[8..12].try_into().unwrap()) as usize;
                    let o = u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize;
                    assert_eq!(&b[4..8], &datas[i][o..o + 4], "prefix");
                    datas[i][o..o + len].to_vec()
                };
                String::from_utf8(bytes).unwrap()
            })
            .collect()
    }

    #[test]
    fn views_spell_the_strings_split_or_not() {
        let words = [
            "",
            "short",
            "exactly12byt",
            "thirteen byte",
            "a much longer value, over 12",
            "x",
        ];
        let mut col = StrCol::default();
        for w in words.iter().cycle().take(40) {
            col.push(Some(w));
        }
        let want: Vec<String> = words.iter().cycle().take(40).map(|w| w.to_string()).collect();
        for limit in [usize::MAX, 64, 20, 1] {
            let bufs = view_buffers_split(&col.offsets, col.data.clone(), limit);
            assert_eq!(read_views(&bufs), want, "limit {limit}");
            if limit == 20 {
                assert!(bufs.len() > 4, "split into several data buffers");
            }
        }
    }
}
