//! Reading a session file fast and in bounded memory: the file is read in chunks of whole lines,
//! and the chunks are parsed on every core while the next ones are read. The text of the file is
//! never held whole, so memory is the parsed session plus a few chunks.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;

use pi_core::session::entry::{SessionEntry, SessionHeader};
use pi_core::session::file::{
    parse_header_line, parse_line_bytes, parse_session, LineProblem, ParsedLine, ParsedSession,
};
use pi_core::session::ids::IdGenerator;

const CHUNK: usize = 256 << 10;

/// Why a file could not be read as a session.
#[derive(Debug)]
pub(crate) enum ReadError {
    Io(io::Error),
    /// No session header where the first entry should be (or no entry at all).
    NotASession,
}

/// The parsed lines of one chunk.
struct Parsed {
    entries: Vec<SessionEntry>,
    problems: Vec<LineProblem>,
}

fn parse_chunk(bytes: &[u8], first_line: usize) -> Parsed {
    let mut out = Parsed {
        entries: Vec::new(),
        problems: Vec::new(),
    };
    let mut start = 0;
    let ends = memchr::memchr_iter(b'\n', bytes).chain(std::iter::once(bytes.len()));
    for (i, end) in ends.enumerate() {
        let raw = &bytes[start..end.min(bytes.len())];
        start = end + 1;
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let line = first_line + i;
        match parse_line_bytes(raw) {
            ParsedLine::Entry(entry) => out.entries.push(entry),
            ParsedLine::Header => {}
            ParsedLine::Raw(entry, message) => {
                out.problems.push(LineProblem { line, message });
                out.entries.push(entry);
            }
            ParsedLine::Unparsable(message) => out.problems.push(LineProblem { line, message }),
        }
    }
    out
}

/// Reads until `buf` holds `target` bytes or the file ends; returns whether it ended.
fn top_up(file: &mut File, buf: &mut Vec<u8>, target: usize) -> io::Result<bool> {
    while buf.len() < target {
        let want = (target - buf.len()) as u64;
        if file.by_ref().take(want).read_to_end(buf)? == 0 {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Reads and parses a session file. Old versions are read whole and migrated; the returned
/// `text` is then the original file (for the backup), otherwise `None`.
pub(crate) fn read_session(
    path: &Path,
    ids: &mut IdGenerator,
) -> Result<(ParsedSession, Option<String>), ReadError> {
    let mut file = File::open(path).map_err(ReadError::Io)?;
    let mut buf = Vec::with_capacity(CHUNK);
    top_up(&mut file, &mut buf, CHUNK).map_err(ReadError::Io)?;

    // The header: the first non-blank line.
    let leading = buf.iter().take_while(|b| b.is_ascii_whitespace()).count();
    let header_line = 1 + buf[..leading].iter().filter(|&&b| b == b'\n').count();
    let header_end = buf[leading..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(buf.len(), |p| leading + p);
    if leading == buf.len() {
        return Err(ReadError::NotASession);
    }
    let first = String::from_utf8_lossy(&buf[leading..header_end]).into_owned();
    let header: SessionHeader =
        match parse_header_line(&first, header_line).map_err(|_| ReadError::NotASession)? {
            Some(header) => header,
            None => {
                file.read_to_end(&mut buf).map_err(ReadError::Io)?;
                let text = String::from_utf8_lossy(&buf).into_owned();
                let parsed = parse_session(&text, ids).map_err(|_| ReadError::NotASession)?;
                return Ok((parsed, Some(text)));
            }
        };
    buf.drain(..(header_end + 1).min(buf.len()));
    let (entries, problems) = parse_rest(&mut file, buf, header_line + 1).map_err(ReadError::Io)?;
    Ok((
        ParsedSession {
            header,
            entries,
            problems,
            migrated: false,
        },
        None,
    ))
}

type Job = (usize, usize, Vec<u8>);

/// Parses the rest of the file (starting with `buf`, whose first line is `first_line`) on all
/// cores, chunk by chunk, keeping file order.
fn parse_rest(
    file: &mut File,
    mut buf: Vec<u8>,
    first_line: usize,
) -> io::Result<(Vec<SessionEntry>, Vec<LineProblem>)> {
    let workers = thread::available_parallelism()
        .map_or(1, |n| n.get())
        .max(1);
    let (job_tx, job_rx) = mpsc::sync_channel::<Job>(workers);
    let job_rx = Arc::new(Mutex::new(job_rx));
    let (done_tx, done_rx) = mpsc::channel::<(usize, Parsed)>();
    // Parsed chunks' buffers come back to be filled again: fresh ones for each chunk would be
    // new memory (page faults, zeroing) for every 256 KiB of the file.
    let (spent_tx, spent_rx) = mpsc::channel::<Vec<u8>>();
    let read_result = thread::scope(|scope| {
        for _ in 0..workers {
            let jobs = Arc::clone(&job_rx);
            let done = done_tx.clone();
            let spent = spent_tx.clone();
            scope.spawn(move || loop {
                let job = match jobs.lock() {
                    Ok(receiver) => receiver.recv(),
                    Err(_) => return,
                };
                let Ok((index, line, mut bytes)) = job else {
                    return;
                };
                let parsed = parse_chunk(&bytes, line);
                bytes.clear();
                // The reader may be gone already (the file ended): the buffer is then freed.
                let _ = spent.send(bytes);
                if done.send((index, parsed)).is_err() {
                    return;
                }
            });
        }
        drop(done_tx);
        drop(spent_tx);
        let mut index = 0;
        let mut line = first_line;
        loop {
            let mut at_end = top_up(file, &mut buf, CHUNK)?;
            // A chunk ends after its last newline; a line longer than a chunk makes it longer.
            let cut = loop {
                if at_end {
                    break buf.len();
                }
                if let Some(p) = memchr::memrchr(b'\n', &buf) {
                    break p + 1;
                }
                let target = buf.len() + CHUNK;
                at_end = top_up(file, &mut buf, target)?;
            };
            if cut == 0 {
                break;
            }
            // The next chunk starts with what is left after the cut, in a buffer big enough that
            // filling it never reallocates (a spent one when there is one).
            let capacity = CHUNK.max(buf.len() - cut) + CHUNK;
            let mut next = match spent_rx.try_recv() {
                Ok(mut spent) => {
                    spent.reserve(capacity);
                    spent
                }
                Err(_) => Vec::with_capacity(capacity),
            };
            next.extend_from_slice(&buf[cut..]);
            buf.truncate(cut);
            let lines = memchr::memchr_iter(b'\n', &buf).count();
            if job_tx
                .send((index, line, std::mem::replace(&mut buf, next)))
                .is_err()
            {
                break;
            }
            index += 1;
            line += lines;
        }
        drop(job_tx);
        Ok::<(), io::Error>(())
    });
    read_result?;
    let chunks: BTreeMap<usize, Parsed> = done_rx.into_iter().collect();
    let mut entries = Vec::with_capacity(chunks.values().map(|c| c.entries.len()).sum());
    let mut problems = Vec::new();
    for (_, chunk) in chunks {
        entries.extend(chunk.entries);
        problems.extend(chunk.problems);
    }
    Ok((entries, problems))
}
