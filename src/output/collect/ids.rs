//! Event ids as the provenance file stores them: `pid:rank:step:idx`,
//! formatted on the stack (a record and its window carry a dozen of them).
//! The program index makes them unique across the programs of a workflow
//! (two programs both have a rank 0); the Chimbuko-compatible JSON export
//! drops it again (`rank:step:idx`, Chimbuko's form).

use super::*;

/// `pid:rank:step:idx` of execution `id` of program `pid`, formatted on
/// the stack: a record and its window carry a dozen of these, and going
/// through a heap `String` each time showed up in the collect phase of
/// anomaly-heavy runs.
pub(super) fn id_str(pid: u32, id: &ExecId) -> EventIdStr {
    let mut buf = [0u8; 4 * 20 + 3];
    let mut len = 0;
    for (k, v) in [pid as u64, id.rank, id.step, id.idx]
        .into_iter()
        .enumerate()
    {
        if k > 0 {
            buf[len] = b':';
            len += 1;
        }
        len += write_decimal(v, &mut buf[len..]);
    }
    fixed(std::str::from_utf8(&buf[..len]).unwrap_or_default())
}

/// Writes `v` in decimal at the start of `out` (room for 20 digits) and
/// returns the number of bytes written.
fn write_decimal(mut v: u64, out: &mut [u8]) -> usize {
    let mut digits = [0u8; 20];
    let mut n = 0;
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for (o, d) in out.iter_mut().zip(digits[..n].iter().rev()) {
        *o = *d;
    }
    n
}

/// The id of a caller in program `pid`, or `root`.
pub(super) fn parent_str(pid: u32, p: Option<ExecId>) -> EventIdStr {
    p.map_or_else(|| fixed("root"), |p| id_str(pid, &p))
}
