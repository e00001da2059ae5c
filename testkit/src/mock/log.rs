//! The request log: one JSON object per line, appended as each request arrives and as each reply
//! finishes, in the Python mock's spelling (`json.dumps(..., ensure_ascii=False)`).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::pyjson;

/// The open log file; each record is written whole, one at a time.
#[derive(Debug)]
pub struct RequestLog {
    file: Mutex<File>,
}

impl RequestLog {
    /// Creates (or empties) the log at `path`.
    pub fn create(path: &Path) -> io::Result<RequestLog> {
        File::create(path)?;
        let file = OpenOptions::new().append(true).open(path)?;
        Ok(RequestLog {
            file: Mutex::new(file),
        })
    }

    /// Appends one record. A failed write is dropped: the reply matters more than its record.
    pub fn write(&self, record: &Value) {
        let line = pyjson::dumps_unicode(record) + "\n";
        let mut file = match self.file.lock() {
            Ok(file) => file,
            Err(poisoned) => poisoned.into_inner(),
        };
        let _ = file.write_all(line.as_bytes());
    }
}

/// Milliseconds since the Unix epoch, the log's `ts`.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
