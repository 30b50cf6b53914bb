//! Episode assignment of the trace stage (`stacklens/trace/spans.py`, `_assign`, the
//! reference): the rows of one trace's records sorted by (process, local request, time), each
//! given the number of the episode (span) it belongs to. The same state machine, on integer
//! codes instead of Python objects (2.2 M records: ~2.5 s of Python, `tests/test_episodes_native.py`
//! compares the two on random sequences).

/// `kind` codes, as `spans._KIND_CODES` gives them.
pub const RECV_CALL: u8 = 1;
pub const RECV_CAST: u8 = 2;
pub const REPLY_SEND: u8 = 3;
/// `rpc` code of a record without an RPC id.
pub const NO_RPC: u32 = u32::MAX;

/// Episode of each row. `group` changes value where a new (process, local request) starts;
/// `kind` is the RPC kind code (0: none); `rpc` the RPC id's code (`NO_RPC`: none); `marker`
/// and `access` are 0/1 (a sequential start; a server's access line). All of one length.
pub fn assign(group: &[u32], kind: &[u8], rpc: &[u32], marker: &[u8], access: &[u8]) -> Vec<i64> {
    let n = group.len();
    let mut out = vec![0i64; n];
    let mut n_ep: i64 = 0;
    let mut prev_g: Option<u32> = None;
    // (episode, rpc id of the call it handles) still open
    let mut open: Vec<(i64, Option<u32>)> = Vec::new();
    for i in 0..n {
        if prev_g != Some(group[i]) {
            prev_g = Some(group[i]);
            open.clear();
        }
        let k = kind[i];
        let mut opened_here = false;
        if k == RECV_CALL || k == RECV_CAST {
            n_ep += 1;
            let id = if k == RECV_CALL && rpc[i] != NO_RPC {
                Some(rpc[i])
            } else {
                None
            };
            open.push((n_ep, id));
        } else if marker[i] != 0 || open.is_empty() {
            // a sequential start: episodes no reply can close end here
            open.retain(|e| e.1.is_some());
            n_ep += 1;
            open.push((n_ep, None));
            opened_here = marker[i] == 0;
        }
        if k == REPLY_SEND {
            let want = (rpc[i] != NO_RPC).then_some(rpc[i]);
            let hit = open.iter().rposition(|e| e.1.is_some() && e.1 == want);
            if hit.is_none() && opened_here {
                // a reply to a call not handled here: its own episode
                out[i] = open.pop().map_or(0, |e| e.0);
                continue;
            }
            let j = hit.unwrap_or(open.len() - 1);
            out[i] = open[j].0;
            if hit.is_some() || open[j].1.is_none() {
                open.remove(j);
            }
            continue;
        }
        out[i] = open.last().map_or(0, |e| e.0);
        if access[i] != 0 {
            open.pop();
        }
    }
    out
}
