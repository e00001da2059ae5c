//! The HTTP/1.1 the mock speaks: reading one request (Content-Length or chunked body, keep-alive
//! rules, `Expect: 100-continue`) and writing a response head the way Python's `http.server`
//! writes it (status line with Python's reason phrase, `Server`, `Date`, then the headers).

use std::io::{self, BufRead, Read, Write};
use std::time::{SystemTime, UNIX_EPOCH};

/// Longest request line or header line read, and most headers, before the request is refused.
const MAX_LINE: u64 = 1 << 20;
const MAX_HEADERS: usize = 200;
/// Largest request body read (requests carry whole conversations, images included).
const MAX_BODY: u64 = 256 << 20;

/// One request as received.
#[derive(Debug)]
pub struct Request {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The request target as sent (path and query).
    pub path: String,
    /// Header names as sent, in order, values without the leading blanks.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
    /// Whether the client wants the connection closed after the reply.
    pub close: bool,
}

impl Request {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Why no request could be read.
#[derive(Debug)]
pub enum ReadError {
    /// The client closed the connection between requests.
    Closed,
    /// The bytes are not an HTTP request; the connection is answered 400 and closed.
    Malformed(String),
    /// The connection failed (reset, or cut when the server stops).
    Io,
}

impl From<io::Error> for ReadError {
    fn from(_: io::Error) -> Self {
        ReadError::Io
    }
}

/// Reads the next request; `interim` receives `100 Continue` when the client waits for it.
pub fn read_request(
    reader: &mut impl BufRead,
    interim: &mut impl Write,
) -> Result<Request, ReadError> {
    let line = loop {
        let line = read_line(reader)?;
        match line {
            None => return Err(ReadError::Closed),
            Some(l) if l.trim().is_empty() => continue,
            Some(l) => break l,
        }
    };
    let words: Vec<&str> = line.split_whitespace().collect();
    let [method, path, version] = words[..] else {
        return Err(ReadError::Malformed(format!("bad request line {line:?}")));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(ReadError::Malformed(format!(
            "unsupported version {version:?}"
        )));
    }
    let mut headers = Vec::new();
    loop {
        let Some(line) = read_line(reader)? else {
            return Err(ReadError::Malformed(
                "connection closed inside the headers".into(),
            ));
        };
        if line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(ReadError::Malformed(format!("bad header line {line:?}")));
        };
        if headers.len() == MAX_HEADERS {
            return Err(ReadError::Malformed("too many headers".into()));
        }
        headers.push((
            name.to_string(),
            value.trim_start_matches([' ', '\t']).to_string(),
        ));
    }
    // As Python's http.server: a path starting with `//` is collapsed to one slash.
    let path = if path.starts_with("//") {
        format!("/{}", path.trim_start_matches('/'))
    } else {
        path.to_string()
    };
    let mut request = Request {
        method: method.to_string(),
        path,
        headers,
        body: Vec::new(),
        close: version == "HTTP/1.0",
    };
    match request
        .header("connection")
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("close") => request.close = true,
        Some("keep-alive") => request.close = false,
        _ => {}
    }
    if version != "HTTP/1.0"
        && request
            .header("expect")
            .is_some_and(|e| e.eq_ignore_ascii_case("100-continue"))
    {
        interim.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        interim.flush()?;
    }
    let chunked = request
        .header("transfer-encoding")
        .is_some_and(|te| te.to_ascii_lowercase().contains("chunked"));
    request.body = if chunked {
        read_chunked(reader)?
    } else {
        let length = match request.header("content-length") {
            None => 0,
            Some(n) => n
                .trim()
                .parse::<u64>()
                .map_err(|_| ReadError::Malformed(format!("bad content-length {n:?}")))?,
        };
        read_exact(reader, length)?
    };
    Ok(request)
}

/// One line without its line ending; `None` at the end of the stream.
fn read_line(reader: &mut impl BufRead) -> Result<Option<String>, ReadError> {
    let mut raw = Vec::new();
    reader.take(MAX_LINE).read_until(b'\n', &mut raw)?;
    if raw.is_empty() {
        return Ok(None);
    }
    if raw.last() != Some(&b'\n') {
        return Err(ReadError::Malformed("line too long or cut off".into()));
    }
    while matches!(raw.last(), Some(b'\n' | b'\r')) {
        raw.pop();
    }
    Ok(Some(String::from_utf8_lossy(&raw).into_owned()))
}

fn read_exact(reader: &mut impl BufRead, length: u64) -> Result<Vec<u8>, ReadError> {
    if length > MAX_BODY {
        return Err(ReadError::Malformed(format!(
            "body of {length} bytes is too large"
        )));
    }
    let mut body = Vec::new();
    reader.take(length).read_to_end(&mut body)?;
    if (body.len() as u64) < length {
        return Err(ReadError::Malformed(
            "connection closed inside the body".into(),
        ));
    }
    Ok(body)
}

fn read_chunked(reader: &mut impl BufRead) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    loop {
        let line = read_line(reader)?.ok_or_else(|| {
            ReadError::Malformed("connection closed inside a chunked body".into())
        })?;
        let size = line.split(';').next().unwrap_or("").trim();
        let size = u64::from_str_radix(size, 16)
            .map_err(|_| ReadError::Malformed(format!("bad chunk size {line:?}")))?;
        if size == 0 {
            // Trailers, up to the empty line.
            while read_line(reader)?.is_some_and(|l| !l.is_empty()) {}
            return Ok(body);
        }
        if size > MAX_BODY.saturating_sub(body.len() as u64) {
            return Err(ReadError::Malformed("chunked body is too large".into()));
        }
        body.extend(read_exact(reader, size)?);
        read_line(reader)?;
    }
}

/// The response head: status line, `Server`, `Date`, `headers`, blank line.
pub fn head(status: u16, headers: &[(String, String)]) -> String {
    let mut out = format!(
        "HTTP/1.1 {status} {}\r\nServer: mock-llm/1.0\r\nDate: {}\r\n",
        reason(status),
        http_date(SystemTime::now())
    );
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    out
}

/// Python's `http.HTTPStatus` phrase (3.11), or nothing for a code it does not know (e.g. 529).
fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        102 => "Processing",
        103 => "Early Hints",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        207 => "Multi-Status",
        208 => "Already Reported",
        226 => "IM Used",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        305 => "Use Proxy",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Request Entity Too Large",
        414 => "Request-URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Requested Range Not Satisfiable",
        417 => "Expectation Failed",
        418 => "I'm a Teapot",
        421 => "Misdirected Request",
        422 => "Unprocessable Entity",
        423 => "Locked",
        424 => "Failed Dependency",
        425 => "Too Early",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        451 => "Unavailable For Legal Reasons",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        506 => "Variant Also Negotiates",
        507 => "Insufficient Storage",
        508 => "Loop Detected",
        510 => "Not Extended",
        511 => "Network Authentication Required",
        _ => "",
    }
}

/// `Thu, 01 Jan 1970 00:00:00 GMT`.
fn http_date(at: SystemTime) -> String {
    let secs = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = secs / 86_400;
    let (h, m, s) = (secs % 86_400 / 3600, secs % 3600 / 60, secs % 60);
    // Days to a civil date (Howard Hinnant's algorithm), for days since 1970-01-01.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{}, {day:02} {} {year} {h:02}:{m:02}:{s:02} GMT",
        WEEKDAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize]
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn read(bytes: &[u8]) -> Result<Request, ReadError> {
        read_request(&mut io::BufReader::new(bytes), &mut Vec::new())
    }

    #[test]
    fn reads_content_length_and_chunked_bodies() {
        let r = read(
            b"POST /v1/chat/completions?x=1 HTTP/1.1\r\nContent-Length: 2\r\nX-A:  b \r\n\r\n{}",
        )
        .unwrap();
        assert_eq!(
            (r.method.as_str(), r.path.as_str(), r.body.as_slice()),
            ("POST", "/v1/chat/completions?x=1", &b"{}"[..])
        );
        assert_eq!(r.header("x-a"), Some("b "));
        assert!(!r.close);
        let r = read(b"POST /m HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\n{\"a\r\n4;x=y\r\n\": 1\r\n0\r\n\r\n}").unwrap();
        assert_eq!(r.body, b"{\"a\": 1");
        assert!(r.close);
    }

    #[test]
    fn refuses_what_is_not_http() {
        assert!(matches!(read(b""), Err(ReadError::Closed)));
        assert!(matches!(
            read(b"hello\r\n\r\n"),
            Err(ReadError::Malformed(_))
        ));
        assert!(matches!(
            read(b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab"),
            Err(ReadError::Malformed(_))
        ));
    }

    #[test]
    fn answers_expect_continue() {
        let mut interim = Vec::new();
        let r = read_request(
            &mut io::BufReader::new(
                &b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n"[..],
            ),
            &mut interim,
        );
        assert!(r.is_ok());
        assert_eq!(interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    }

    #[test]
    fn dates_as_http_dates() {
        assert_eq!(http_date(UNIX_EPOCH), "Thu, 01 Jan 1970 00:00:00 GMT");
        let at = UNIX_EPOCH + Duration::from_secs(951_782_400 + 3_723);
        assert_eq!(http_date(at), "Tue, 29 Feb 2000 01:02:03 GMT");
    }

    #[test]
    fn reason_phrases_as_python() {
        assert!(head(429, &[]).starts_with("HTTP/1.1 429 Too Many Requests\r\n"));
        assert!(head(529, &[]).starts_with("HTTP/1.1 529 \r\n"));
    }
}
