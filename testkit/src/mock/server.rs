//! The mock's HTTP server: listens on 127.0.0.1, one thread per connection, and plays the script's
//! steps in order, one per model request, whichever API asks (one shared cursor). Stopping it
//! (or dropping it) cuts every connection and every pending wait short, so a hung reply never
//! outlives the server.

use std::collections::HashMap;
use std::io::{self, BufReader, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

use super::http::{self, ReadError, Request};
use super::log::{now_ms, RequestLog};
use super::script::{Script, Step};
use super::{anthropic, openai, pyjson, responses, Piece};

/// A running mock; stopped when dropped.
#[derive(Debug)]
pub struct Server {
    port: u16,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

#[derive(Debug)]
struct Shared {
    script: Script,
    log: RequestLog,
    state: Mutex<State>,
    /// The folder `hang_until_file` names are taken from (the log's).
    folder: PathBuf,
    /// Woken when the server stops, so waits (`delay_ms`, `hang_ms`, ...) end early.
    wake: Condvar,
}

#[derive(Debug, Default)]
struct State {
    stopped: bool,
    /// Steps handed out so far.
    cursor: usize,
    /// POST requests received so far (the log's `seq`).
    seq: u64,
    /// Open connections, so stopping can cut them.
    connections: HashMap<u64, TcpStream>,
    next_connection: u64,
    handlers: Vec<JoinHandle<()>>,
}

/// Why a reply ended early.
enum Cut {
    /// The connection went away (or `drop_after` cut it): the log records this outcome.
    Closed(String),
    /// The server is stopping: nothing more is written or logged.
    Stopped,
}

impl Server {
    /// Starts serving `script` on a free port of 127.0.0.1, logging requests to `log` (created or
    /// emptied first).
    pub fn start(script: Script, log: &Path) -> io::Result<Server> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let port = listener.local_addr()?.port();
        let shared = Arc::new(Shared {
            script,
            log: RequestLog::create(log)?,
            state: Mutex::new(State::default()),
            folder: log.parent().map(Path::to_path_buf).unwrap_or_default(),
            wake: Condvar::new(),
        });
        let accepting = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name("mock-llm-accept".into())
            .spawn(move || accept_loop(&accepting, &listener))?;
        Ok(Server {
            port,
            shared,
            accept: Some(accept),
        })
    }

    /// The port it listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops accepting, cuts every open connection and pending wait, and waits for the
    /// connection threads to end.
    pub fn stop(&mut self) {
        {
            let mut state = self.shared.lock();
            state.stopped = true;
            for stream in state.connections.values() {
                let _ = stream.shutdown(Shutdown::Both);
            }
        }
        self.shared.wake.notify_all();
        let Some(accept) = self.accept.take() else {
            return;
        };
        // The accept loop notices the stop when the next connection arrives: make one.
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        if TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok() {
            let _ = accept.join();
        }
        let handlers = std::mem::take(&mut self.shared.lock().handlers);
        for handler in handlers {
            let _ = handler.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(state) => state,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Waits `duration`, or less if the server stops meanwhile.
    fn sleep(&self, duration: Duration) -> Result<(), Cut> {
        // A wait too long to represent lasts until the server stops.
        let deadline = Instant::now().checked_add(duration);
        let mut state = self.lock();
        loop {
            if state.stopped {
                return Err(Cut::Stopped);
            }
            let left = deadline.map_or(Duration::from_secs(3600), |d| {
                d.saturating_duration_since(Instant::now())
            });
            if left.is_zero() {
                return Ok(());
            }
            state = match self.wake.wait_timeout(state, left) {
                Ok((state, _)) => state,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }

    /// Waits until `name` exists in the mock's folder (at most 60 s, as the Python mock).
    fn wait_for_file(&self, name: &str) -> Result<(), Cut> {
        let path = self.folder.join(name);
        let deadline = Instant::now() + Duration::from_secs(60);
        while !path.exists() && Instant::now() < deadline {
            self.sleep(Duration::from_millis(10))?;
        }
        Ok(())
    }

    fn stopped(&self) -> bool {
        self.lock().stopped
    }
}

fn accept_loop(shared: &Arc<Shared>, listener: &TcpListener) {
    for stream in listener.incoming() {
        if shared.stopped() {
            return;
        }
        let Ok(stream) = stream else {
            // Out of descriptors or similar: let it pass rather than spin.
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        let _ = stream.set_nodelay(true);
        let Ok(registered) = stream.try_clone() else {
            continue;
        };
        let id = {
            let mut state = shared.lock();
            if state.stopped {
                let _ = stream.shutdown(Shutdown::Both);
                return;
            }
            let id = state.next_connection;
            state.next_connection += 1;
            state.connections.insert(id, registered);
            state.handlers.retain(|h| !h.is_finished());
            id
        };
        let serving = Arc::clone(shared);
        let handler = std::thread::Builder::new()
            .name("mock-llm-connection".into())
            .spawn(move || {
                serve(&serving, stream);
                serving.lock().connections.remove(&id);
            });
        match handler {
            Ok(handler) => shared.lock().handlers.push(handler),
            Err(_) => {
                shared.lock().connections.remove(&id);
            }
        }
    }
}

/// Answers requests on one connection until either side closes it.
fn serve(shared: &Shared, stream: TcpStream) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut writer = stream;
    loop {
        let request = match http::read_request(&mut reader, &mut writer) {
            Ok(request) => request,
            Err(ReadError::Malformed(why)) => {
                let body = json!({"error": {"message": why, "type": "invalid_request_error"}});
                let _ = send_json(
                    &mut writer,
                    400,
                    &body,
                    &[("Connection".into(), "close".into())],
                );
                break;
            }
            Err(ReadError::Closed | ReadError::Io) => break,
        };
        if shared.stopped() {
            break;
        }
        let keep_open = match request.method.as_str() {
            "GET" => get(shared, &mut writer, &request),
            "POST" => post(shared, &mut writer, &request),
            _ => unsupported(&mut writer, &request),
        };
        if !keep_open {
            break;
        }
    }
    let _ = writer.shutdown(Shutdown::Write);
}

/// Any GET: logged, answered 404.
fn get(shared: &Shared, writer: &mut TcpStream, request: &Request) -> bool {
    let mut headers = Map::new();
    for (name, _) in &request.headers {
        let first = request.header(name).unwrap_or_default();
        headers.insert(name.clone(), json!(first));
    }
    shared
        .log
        .write(&json!({"ts": now_ms(), "method": "GET", "path": request.path, "headers": headers}));
    let body = json!({"error": {"message": "not found", "type": "invalid_request_error"}});
    send_json(writer, 404, &body, &[]).is_ok() && !request.close
}

/// A method the mock does not know: 501, connection closed.
fn unsupported(writer: &mut TcpStream, request: &Request) -> bool {
    let body = json!({"error": {"message": format!("unsupported method {}", request.method),
                                "type": "invalid_request_error"}});
    let _ = send_json(writer, 501, &body, &[("Connection".into(), "close".into())]);
    false
}

/// A model request: logged, answered with the next step, and its end logged.
fn post(shared: &Shared, writer: &mut TcpStream, request: &Request) -> bool {
    let body = match serde_json::from_slice::<Value>(&request.body) {
        Ok(Value::Null) | Err(_) => None,
        Ok(body) => Some(body),
    };
    let seq = {
        let mut state = shared.lock();
        state.seq += 1;
        state.seq
    };
    let route = request.path.split('?').next().unwrap_or_default();
    let api = if route.ends_with("/chat/completions") {
        Some("openai-completions")
    } else if route.ends_with("/messages") {
        Some("anthropic-messages")
    } else if route.ends_with("/responses") {
        Some("openai-responses")
    } else {
        None
    };
    let mut headers = Map::new();
    for (name, value) in &request.headers {
        headers.insert(name.to_ascii_lowercase(), json!(value));
    }
    let mut entry = Map::new();
    entry.insert("seq".into(), json!(seq));
    entry.insert("ts".into(), json!(now_ms()));
    entry.insert("method".into(), json!("POST"));
    entry.insert("path".into(), json!(request.path));
    entry.insert("api".into(), json!(api));
    entry.insert("headers".into(), Value::Object(headers));
    // The body moves into the log entry and back out after it is written: a request can be
    // tens of megabytes, not worth a copy.
    match body {
        Some(body) => entry.insert("body".into(), body),
        None => entry.insert(
            "raw_body".into(),
            json!(String::from_utf8_lossy(&request.body)),
        ),
    };
    let Some(api) = api else {
        entry.insert("response".into(), json!({"status": 404}));
        shared.log.write(&Value::Object(entry));
        let err = json!({"error": {"message": "unknown path", "type": "invalid_request_error"}});
        return send_json(writer, 404, &err, &[]).is_ok() && !request.close;
    };
    let index = {
        let mut state = shared.lock();
        state.cursor += 1;
        state.cursor - 1
    };
    let step = shared.script.step(index);
    entry.insert("script_index".into(), json!(index));
    entry.insert("response".into(), Value::Object(step.logged.clone()));
    let logged = Value::Object(entry);
    shared.log.write(&logged);
    let body = match logged {
        Value::Object(mut entry) => entry.remove("body"),
        _ => None,
    };
    if shared.sleep(step.delay).is_err() {
        return false;
    }
    let started = Instant::now();
    let body = match body {
        Some(Value::Object(map)) => Value::Object(map),
        _ => json!({}),
    };
    let (result, keep_open) = if step.status != 200 {
        let err = error_body(&step, api);
        let result =
            send_json(writer, step.status, &err, &step.headers).map_err(|e| closed(shared, &e));
        (result, !closes(request.close, &step.headers))
    } else {
        let pieces = match &step.raw_sse {
            Some(raw) => raw.iter().cloned().map(Piece::Chunk).collect(),
            None if api == "openai-completions" => openai::stream(&step, &body, seq, unix_secs()),
            None if api == "openai-responses" => responses::stream(&step, &body, seq, unix_secs()),
            None => anthropic::stream(&step, &body, seq),
        };
        (play(shared, writer, &step, &pieces), false)
    };
    let outcome = match result {
        Ok(()) => "ok".to_string(),
        Err(Cut::Closed(why)) => format!("connection closed: {why}"),
        Err(Cut::Stopped) => return false,
    };
    shared.log.write(
        &json!({"seq": seq, "ts": now_ms(), "event": "response_finished",
        "script_index": index, "status": step.status, "outcome": outcome,
        "duration_ms": u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)}),
    );
    keep_open
}

/// The body of an error reply: the script's, else one in the API's own error shape.
fn error_body(step: &Step, api: &str) -> Value {
    if let Some(body) = &step.error_body {
        return body.clone();
    }
    let status = step.status;
    if api == "anthropic-messages" {
        let kind = if status == 529 {
            "overloaded_error"
        } else {
            "api_error"
        };
        json!({"type": "error", "error": {"type": kind, "message": format!("mock error {status}")}})
    } else {
        json!({"error": {"message": format!("mock error {status}"), "type": "server_error", "code": null}})
    }
}

/// Writes an SSE reply: the head (close-delimited body), then each piece, pacing and cutting it
/// as the step says.
fn play(shared: &Shared, writer: &mut TcpStream, step: &Step, pieces: &[Piece]) -> Result<(), Cut> {
    let mut headers = vec![
        ("content-type".to_string(), "text/event-stream".to_string()),
        ("cache-control".to_string(), "no-cache".to_string()),
        ("connection".to_string(), "close".to_string()),
    ];
    headers.extend(step.headers.iter().cloned());
    writer
        .write_all(http::head(200, &headers).as_bytes())
        .map_err(|e| closed(shared, &e))?;
    let mut sent = 0;
    for piece in pieces {
        match piece {
            Piece::Hang(duration) => shared.sleep(*duration)?,
            Piece::HangUntilFile(name) => shared.wait_for_file(name)?,
            Piece::Chunk(text) => {
                if !step.chunk_delay.is_zero() {
                    shared.sleep(step.chunk_delay)?;
                }
                if step.drop_after.is_some_and(|n| sent >= n) {
                    return Err(Cut::Closed("ConnectionAbortedError drop_after".into()));
                }
                writer
                    .write_all(text.as_bytes())
                    .map_err(|e| closed(shared, &e))?;
                sent += 1;
            }
        }
    }
    Ok(())
}

/// A JSON reply with a Content-Length (the connection may stay open).
fn send_json(
    writer: &mut TcpStream,
    status: u16,
    body: &Value,
    extra: &[(String, String)],
) -> io::Result<()> {
    let data = pyjson::dumps(body);
    let mut headers = vec![
        ("content-type".to_string(), "application/json".to_string()),
        ("content-length".to_string(), data.len().to_string()),
    ];
    headers.extend(extra.iter().cloned());
    writer.write_all(http::head(status, &headers).as_bytes())?;
    writer.write_all(data.as_bytes())
}

/// Whether the connection closes after a reply with these headers, as Python's http.server
/// decides: the request's wish, overridden by a `connection` header the reply sends.
fn closes(request_close: bool, headers: &[(String, String)]) -> bool {
    headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("connection"))
        .fold(request_close, |close, (_, value)| {
            match value.to_ascii_lowercase().as_str() {
                "close" => true,
                "keep-alive" => false,
                _ => close,
            }
        })
}

/// How a failed write reads in the log, spelled as Python names the error.
fn closed(shared: &Shared, error: &io::Error) -> Cut {
    if shared.stopped() {
        return Cut::Stopped;
    }
    Cut::Closed(match error.kind() {
        io::ErrorKind::BrokenPipe => "BrokenPipeError [Errno 32] Broken pipe".into(),
        io::ErrorKind::ConnectionReset => {
            "ConnectionResetError [Errno 104] Connection reset by peer".into()
        }
        io::ErrorKind::ConnectionAborted => {
            "ConnectionAbortedError [Errno 103] Software caused connection abort".into()
        }
        _ => error.to_string(),
    })
}

fn unix_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
