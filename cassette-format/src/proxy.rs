//! Loading a proxy cassette (`pi proxy --record`): a [`ProxyHeader`] and then the HTTP
//! exchanges of one conversation, as `request`, `response`, `chunk` and `end` lines (the same
//! lines a run cassette holds below its model calls). Checked as a run cassette is, with errors
//! naming the file and line; a run cassette is refused with a word on what it is.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use serde_json::Value;

use crate::body::BodyText;
use crate::format::{chunk_bytes, Line, ProxyHeader, RecordedEnd, PROXY_FORMAT_VERSION};
use crate::read::{parse_line, LoadError, LoadErrorKind, MAX_LINE_BYTES};
use crate::version::{check_header, PROXY_KNOWN_FEATURES};

/// A proxy cassette in memory, checked.
#[derive(Clone, Debug)]
pub struct ProxyCassette {
    /// Where it was read from.
    pub path: PathBuf,
    pub header: ProxyHeader,
    /// The exchanges in the order their requests were recorded.
    pub exchanges: Vec<Exchange>,
}

/// One recorded HTTP exchange.
#[derive(Clone, Debug)]
pub struct Exchange {
    /// The line of its `request` (1-based).
    pub line: usize,
    /// Its number in the conversation (the lines' `call`).
    pub call: u64,
    pub method: String,
    /// The path and query the client asked for (credential parameters redacted).
    pub url: String,
    /// The request headers as recorded (credentials redacted).
    pub headers: Vec<(String, String)>,
    /// The request body (`null` when there was none; a string when it was not JSON).
    pub body: Value,
    /// The status and headers, when a response came.
    pub response: Option<(u16, Vec<(String, String)>)>,
    /// When the response came (ms after the request).
    pub response_dt: u64,
    /// The body bytes as each read returned them, with their time (ms after the request).
    pub chunks: Vec<(u64, Bytes)>,
    /// How it ended; `None` when the recording stops inside it.
    pub end: Option<RecordedEnd>,
}

impl ProxyCassette {
    /// Reads and checks the proxy cassette at `path`.
    pub fn load(path: &Path) -> Result<ProxyCassette, LoadError> {
        let bytes = std::fs::read(path).map_err(|e| LoadError {
            path: path.to_path_buf(),
            line: None,
            kind: e.into(),
        })?;
        ProxyCassette::parse(path, &bytes)
    }

    /// Checks a proxy cassette's bytes (`path` names it in errors). A torn last line (the
    /// proxy was killed while writing it) is dropped.
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<ProxyCassette, LoadError> {
        let error = |line: usize, kind: LoadErrorKind| LoadError {
            path: path.to_path_buf(),
            line: Some(line),
            kind,
        };
        let mut pieces: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
        pieces.pop();
        let Some((first, rest)) = pieces.split_first() else {
            return Err(error(1, LoadErrorKind::Empty));
        };
        let header = parse_header(first).map_err(|kind| error(1, kind))?;
        let mut exchanges: Vec<Exchange> = Vec::new();
        // The open exchange of each call, by index into `exchanges`.
        let mut open: BTreeMap<u64, usize> = BTreeMap::new();
        let mut last_body: Option<BodyText> = None;
        for (index, piece) in rest.iter().enumerate() {
            let number = index + 2;
            let line = parse_line(piece, false).map_err(|kind| error(number, kind))?;
            let order = |what: String| error(number, LoadErrorKind::Order(what));
            match line {
                Line::Redaction { .. } => {}
                Line::Request {
                    call,
                    method,
                    url,
                    headers,
                    body,
                    delta,
                    ..
                } => {
                    let text = match (body, delta, &last_body) {
                        (Some(body), None, _) => BodyText::Whole(body),
                        (None, Some(delta), Some(previous)) => previous
                            .apply(&delta)
                            .map_err(|e| error(number, LoadErrorKind::Field(e)))?,
                        (None, Some(_), None) => {
                            return Err(order("field `delta`: no request before it".into()))
                        }
                        _ => {
                            return Err(order(
                                "a request needs exactly one of `body` and `delta`".into(),
                            ))
                        }
                    };
                    let body = serde_json::from_str(&text.text()).map_err(|e| {
                        error(number, LoadErrorKind::Field(format!("the body: {e}")))
                    })?;
                    last_body = Some(text);
                    open.insert(call, exchanges.len());
                    exchanges.push(Exchange {
                        line: number,
                        call,
                        method,
                        url,
                        headers,
                        body,
                        response: None,
                        response_dt: 0,
                        chunks: Vec::new(),
                        end: None,
                    });
                }
                Line::Response {
                    call,
                    dt,
                    status,
                    headers,
                } => match open.get(&call).map(|i| &mut exchanges[*i]) {
                    Some(exchange) if exchange.response.is_none() => {
                        exchange.response = Some((status, headers));
                        exchange.response_dt = dt;
                    }
                    _ => {
                        return Err(order(format!(
                            "a response of call {call} without a request"
                        )))
                    }
                },
                Line::Chunk {
                    call,
                    dt,
                    text,
                    base64,
                } => match open.get(&call).map(|i| &mut exchanges[*i]) {
                    Some(exchange) if exchange.response.is_some() => {
                        let bytes = chunk_bytes(text, base64)
                            .map_err(|e| error(number, LoadErrorKind::Field(e)))?;
                        exchange.chunks.push((dt, Bytes::from(bytes)));
                    }
                    _ => {
                        return Err(order(format!(
                            "body bytes of call {call} outside a response"
                        )))
                    }
                },
                Line::End { call, end, .. } => match open.remove(&call) {
                    Some(i) => exchanges[i].end = Some(end),
                    None => return Err(order(format!("call {call} ends without a request"))),
                },
                other => {
                    let kind = serde_json::to_value(&other)
                        .ok()
                        .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_owned))
                        .unwrap_or_default();
                    return Err(error(
                        number,
                        LoadErrorKind::Proxy(format!(
                            "a `{kind}` line has no place in a proxy cassette"
                        )),
                    ));
                }
            }
        }
        Ok(ProxyCassette {
            path: path.to_path_buf(),
            header,
            exchanges,
        })
    }
}

/// The header line: a `proxy` line of a format this build reads.
fn parse_header(piece: &[u8]) -> Result<ProxyHeader, LoadErrorKind> {
    if piece.len() > MAX_LINE_BYTES {
        return Err(LoadErrorKind::TooLong);
    }
    let text = std::str::from_utf8(piece).map_err(|e| LoadErrorKind::NotUtf8(e.valid_up_to()))?;
    let value: Value =
        serde_json::from_str(text).map_err(|e| LoadErrorKind::Json(e.to_string()))?;
    match value.get("type").and_then(Value::as_str) {
        Some("proxy") => {}
        Some("cassette") => return Err(LoadErrorKind::RunCassette),
        _ => {
            return Err(LoadErrorKind::Proxy(
                "the first line is not a proxy cassette header (`\"type\":\"proxy\"`)".into(),
            ))
        }
    }
    check_header(
        &value,
        "proxy cassette",
        PROXY_FORMAT_VERSION,
        PROXY_KNOWN_FEATURES,
    )?;
    match serde_json::from_value::<Line>(value) {
        Ok(Line::Proxy(header)) => Ok(*header),
        Ok(_) => Err(LoadErrorKind::Proxy("not a proxy header".into())),
        Err(e) => Err(LoadErrorKind::Field(format!("`proxy` line: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use crate::format::RawJson;
    use crate::write::{Recorder, RequestParts};
    use serde_json::json;

    fn header() -> ProxyHeader {
        ProxyHeader {
            format: PROXY_FORMAT_VERSION,
            features: Vec::new(),
            harness: "test".into(),
            upstream: "http://127.0.0.1:1".into(),
            ignore: vec!["metadata".into()],
            redactions: vec![],
        }
    }

    #[test]
    fn a_written_conversation_loads_with_its_bodies_rebuilt_from_deltas() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let recorder = Recorder::create_proxy(&path, &header(), &[]).unwrap();
        let bodies = [
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}, {"role": "user", "content": "again"}]}),
        ];
        for (i, body) in bodies.iter().enumerate() {
            let call = i as u64 + 1;
            let parts = RequestParts {
                call,
                dt: 0,
                method: "POST".into(),
                url: "/v1/chat/completions".into(),
                headers: vec![],
            };
            recorder.write_request(parts, body);
            recorder.write(Line::Response {
                call,
                dt: 1,
                status: 200,
                headers: vec![("content-type".into(), "text/event-stream".into())],
            });
            recorder.write(Line::chunk(call, 2, b"data: 1\n\n"));
            recorder.write(Line::chunk(call, 3, &[0xff, 0x00]));
            recorder.write(Line::End {
                call,
                dt: 3,
                end: RecordedEnd::Complete,
            });
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"delta\""), "{text}");
        let cassette = ProxyCassette::load(&path).unwrap();
        assert_eq!(cassette.header, header());
        let got: Vec<&Value> = cassette.exchanges.iter().map(|e| &e.body).collect();
        assert_eq!(got, bodies.iter().collect::<Vec<_>>());
        let chunks = &cassette.exchanges[1].chunks;
        assert_eq!(chunks[0], (2, Bytes::from_static(b"data: 1\n\n")));
        assert_eq!(chunks[1], (3, Bytes::from_static(&[0xff, 0x00])));
        assert_eq!(cassette.exchanges[1].end, Some(RecordedEnd::Complete));
    }

    #[test]
    fn each_reader_refuses_the_other_kind_saying_what_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        Recorder::create_proxy(&path, &header(), &[]).unwrap();
        let run = crate::CheckedCassette::load(&path).unwrap_err();
        assert!(matches!(run.kind, LoadErrorKind::ProxyCassette), "{run}");
        assert!(run.to_string().contains("pi proxy --replay"), "{run}");

        std::fs::write(&path, "{\"type\":\"cassette\",\"format\":1}\n").unwrap();
        let proxy = ProxyCassette::load(&path).unwrap_err();
        assert!(matches!(proxy.kind, LoadErrorKind::RunCassette), "{proxy}");
    }

    #[test]
    fn a_later_minor_loads_and_a_newer_major_or_unknown_feature_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let mut head = serde_json::to_value(Line::Proxy(Box::new(header()))).unwrap();
        head["format"] = json!("1.4");
        std::fs::write(&path, format!("{head}\n")).unwrap();
        let cassette = ProxyCassette::load(&path).unwrap();
        assert_eq!(cassette.header.format.to_string(), "1.4");
        for (format, features, says) in [
            (json!(2), json!([]), "proxy cassette format 2.0 is newer"),
            (
                json!("1.0"),
                json!(["gzip-bodies"]),
                "feature `gzip-bodies`",
            ),
        ] {
            head["format"] = format;
            head["features"] = features;
            std::fs::write(&path, format!("{head}\n")).unwrap();
            let error = ProxyCassette::load(&path).unwrap_err();
            assert!(matches!(error.kind, LoadErrorKind::Version(_)), "{error}");
            let text = error.to_string();
            assert!(text.contains(says), "{text}");
            assert!(text.ends_with("use a newer pi"), "{text}");
        }
    }

    #[test]
    fn bad_lines_are_named_by_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let head = serde_json::to_string(&Line::Proxy(Box::new(header()))).unwrap();
        let request = serde_json::to_string(&Line::Request {
            call: 1,
            dt: 0,
            method: "POST".into(),
            url: "/x".into(),
            headers: vec![],
            body: Some(RawJson::from_value(&json!({}))),
            delta: None,
        })
        .unwrap();
        let cases = [
            (
                format!("{head}\n{{\"type\":\"chunk\",\"call\":1,\"dt\":0,\"text\":\"x\"}}\n"),
                2,
            ),
            (
                format!("{head}\n{request}\n{{\"type\":\"wake\",\"t\":1}}\n"),
                3,
            ),
            (format!("{head}\nnot json\n"), 2),
            ("{\"type\":\"proxy\",\"format\":99}\n".to_owned(), 1),
        ];
        for (text, line) in cases {
            std::fs::write(&path, &text).unwrap();
            let e = ProxyCassette::load(&path).unwrap_err();
            assert_eq!(e.line, Some(line), "{e}");
        }
        // A torn last line is dropped: the proxy was killed while writing it.
        std::fs::write(&path, format!("{head}\n{request}\n{{\"type\":\"resp")).unwrap();
        let cassette = ProxyCassette::load(&path).unwrap();
        assert_eq!(cassette.exchanges.len(), 1);
        assert_eq!(cassette.exchanges[0].end, None);
    }
}
