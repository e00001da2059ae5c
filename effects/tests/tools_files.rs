//! The read, write and edit tools on real files in temporary directories.
//!
//! First against the original: `scripts/gen-file-tool-fixtures.mjs` ran Pi 0.73.1's own tools
//! on the same files with the same arguments; every result text, error text, details object
//! and the files left behind must be the same. Images re-encoded by the resize are compared
//! by type and dimensions (the encoders differ); images sent as they are, byte for byte.
//! Then what the original cannot show here: permission errors (run as `nobody` when we are root),
//! the sandbox, cancellation and concurrent edits of one file.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use pi_core::agent::ToolOutcome;
use pi_core::message::ContentBlock;
use pi_effects::tools::{run, ToolContext, ToolEnv};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

fn context() -> ToolContext {
    let (updates, _) = tokio::sync::mpsc::unbounded_channel();
    ToolContext {
        cancel: CancellationToken::new(),
        updates,
    }
}

async fn call(env: &ToolEnv, tool: &str, args: Value) -> Result<Value, String> {
    call_with(env, tool, args, &context()).await
}

/// The tool's result without read's `structuredContent`, which the fixtures (Pi 0.73.1's) do
/// not have; it is first checked to be what Pi 1.5.2's `toReadOutput` makes of the content.
async fn call_with(
    env: &ToolEnv,
    tool: &str,
    args: Value,
    cx: &ToolContext,
) -> Result<Value, String> {
    match run(env, tool, &args, cx).await {
        ToolOutcome::Ok(result) => {
            let mut result = serde_json::to_value(result).unwrap();
            let structured = result.as_object_mut().unwrap().remove("structuredContent");
            if tool == "read" {
                assert_eq!(structured, Some(read_output(&result["content"])));
            } else {
                assert_eq!(structured, None);
            }
            Ok(result)
        }
        ToolOutcome::Thrown(message) => Err(message),
    }
}

/// Pi 1.5.2's `toReadOutput`: the first text, or an image block with that text as its note.
fn read_output(content: &Value) -> Value {
    let blocks = content.as_array().unwrap();
    let text = blocks
        .iter()
        .find(|b| b["type"] == "text")
        .map_or("", |b| b["text"].as_str().unwrap());
    match blocks.iter().find(|b| b["type"] == "image") {
        Some(image) => {
            json!({"type": "image", "data": image["data"], "mimeType": image["mimeType"], "note": text})
        }
        None => json!(text),
    }
}

// ---- the pixel recipe and uncompressed PNGs of the generator --------------------------------

fn mix(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

fn stored_png(recipe: &Value) -> Vec<u8> {
    let width = recipe["width"].as_u64().unwrap() as u32;
    let height = recipe["height"].as_u64().unwrap() as u32;
    let noise = recipe["noise"].as_i64().unwrap() as i32;
    let mut raw = Vec::with_capacity((height * (width * 3 + 1)) as usize);
    for y in 0..height {
        raw.push(0);
        for x in 0..width {
            let n = mix(y.wrapping_mul(width).wrapping_add(x));
            let base = [x & 255, y & 255, (x + y) & 255];
            for (k, value) in base.into_iter().enumerate() {
                let jitter = if noise > 0 {
                    ((n >> (k * 8)) & 255) as i32 % (2 * noise + 1) - noise
                } else {
                    0
                };
                raw.push((value as i32 + jitter).clamp(0, 255) as u8);
            }
        }
    }
    let mut zlib = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = raw.chunks(65535).collect();
    for (i, block) in blocks.iter().enumerate() {
        zlib.push(u8::from(i + 1 == blocks.len()));
        zlib.extend_from_slice(&(block.len() as u16).to_le_bytes());
        zlib.extend_from_slice(&(!(block.len() as u16)).to_le_bytes());
        zlib.extend_from_slice(block);
    }
    zlib.extend_from_slice(&adler32(&raw).to_be_bytes());
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    for (kind, data) in [(b"IHDR", ihdr), (b"IDAT", zlib), (b"IEND", Vec::new())] {
        png.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut body = kind.to_vec();
        body.extend_from_slice(&data);
        png.extend_from_slice(&body);
        png.extend_from_slice(&crc32(&body).to_be_bytes());
    }
    png
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for byte in data {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for byte in data {
        a = (a + u32::from(*byte)) % 65521;
        b = (b + a) % 65521;
    }
    (b << 16) | a
}

// ---- fixtures -------------------------------------------------------------------------------

fn materialise(dir: &Path, setup: &Value, images: &Value) {
    for file in setup.as_array().unwrap() {
        let target = dir.join(file["path"].as_str().unwrap());
        fs::create_dir_all(target.parent().unwrap()).unwrap();
        if file.get("dir").is_some() {
            fs::create_dir_all(&target).unwrap();
        } else if let Some(to) = file.get("symlink") {
            std::os::unix::fs::symlink(to.as_str().unwrap(), &target).unwrap();
        } else if let Some(text) = file.get("text") {
            fs::write(&target, text.as_str().unwrap()).unwrap();
        } else if let Some(data) = file.get("base64") {
            fs::write(&target, STANDARD.decode(data.as_str().unwrap()).unwrap()).unwrap();
        } else if let Some(name) = file.get("image") {
            let data = images[name.as_str().unwrap()].as_str().unwrap();
            fs::write(&target, STANDARD.decode(data).unwrap()).unwrap();
        } else if let Some(recipe) = file.get("recipe") {
            fs::write(&target, stored_png(recipe)).unwrap();
        }
    }
}

fn with_cwd(value: &Value, cwd: &str) -> Value {
    serde_json::from_str(&value.to_string().replace("<cwd>", cwd)).unwrap()
}

/// Our result in the fixture's terms: image blocks by type, dimensions and whether they are
/// the file's own bytes.
fn describe(result: &Value, input: Option<&[u8]>, cwd: &str) -> Value {
    let mut result = result.clone();
    for block in result["content"].as_array_mut().unwrap() {
        if block["type"] == "image" {
            let data = STANDARD.decode(block["data"].as_str().unwrap()).unwrap();
            let decoded = image::load_from_memory(&data).unwrap();
            *block = json!({
                "type": "image",
                "mimeType": block["mimeType"],
                "sameAsInput": input == Some(data.as_slice()),
                "width": decoded.width(),
                "height": decoded.height(),
            });
        } else if let Some(text) = block["text"].as_str() {
            block["text"] = Value::String(text.replace(cwd, "<cwd>"));
        }
    }
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_tools_match_the_original() {
    let fixtures: Value =
        serde_json::from_str(include_str!("fixtures/file_tool_cases.json")).unwrap();
    let cases = fixtures["cases"].as_array().unwrap();
    assert!(cases.len() >= 60, "{}", cases.len());
    for case in cases {
        let name = format!("{} {}", case["tool"], case["name"]);
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().to_str().unwrap().to_owned();
        materialise(dir.path(), &case["setup"], &fixtures["images"]);
        let mut env = ToolEnv::new(dir.path());
        if case["options"]["autoResizeImages"] == false {
            env.auto_resize_images = false;
        }
        let args = with_cwd(&case["args"], &cwd);
        let input = args["path"]
            .as_str()
            .and_then(|p| fs::read(dir.path().join(p)).ok());
        let ours = call(&env, case["tool"].as_str().unwrap(), args).await;
        match (ours, case.get("error")) {
            (Err(ours), Some(theirs)) => {
                assert_eq!(
                    ours.replace(&cwd, "<cwd>"),
                    theirs.as_str().unwrap(),
                    "{name}"
                )
            }
            (Ok(ours), None) => {
                assert_eq!(
                    describe(&ours, input.as_deref(), &cwd),
                    case["result"],
                    "{name}"
                )
            }
            (ours, _) => panic!("{name}: ours {ours:?}, theirs {case}"),
        }
        for (path, theirs) in case["files"].as_object().into_iter().flatten() {
            let ours = fs::read_to_string(dir.path().join(path)).unwrap();
            assert_eq!(ours, theirs.as_str().unwrap(), "{name}: {path}");
        }
    }
}

// ---- beyond the fixtures --------------------------------------------------------------------

/// Root reads anything; permission errors can only be shown to an unprivileged user. (The
/// texts are the original's, checked by running it as `nobody`.)
fn privileged(dir: &Path) -> bool {
    let probe = dir.join("probe");
    fs::write(&probe, "x").unwrap();
    fs::set_permissions(&probe, fs::Permissions::from_mode(0o000)).unwrap();
    let readable = fs::read(&probe).is_ok();
    fs::remove_file(&probe).unwrap();
    readable
}

#[tokio::test]
async fn permission_errors_read_as_node_words_them() {
    if common::rerun_unprivileged("permission_errors_read_as_node_words_them") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    assert!(!privileged(dir.path()), "permissions apply to this user");
    let env = ToolEnv::new(dir.path());
    let locked = dir.path().join("locked.txt");
    fs::write(&locked, "secret").unwrap();
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
    assert_eq!(
        call(&env, "read", json!({"path": "locked.txt"}))
            .await
            .unwrap_err(),
        format!("EACCES: permission denied, access '{}'", locked.display())
    );
    assert_eq!(
        call(
            &env,
            "edit",
            json!({"path": "locked.txt", "edits": [{"oldText": "s", "newText": "t"}]})
        )
        .await
        .unwrap_err(),
        "Could not edit file: locked.txt. Error code: EACCES."
    );
    let read_only = dir.path().join("ro.txt");
    fs::write(&read_only, "abc").unwrap();
    fs::set_permissions(&read_only, fs::Permissions::from_mode(0o444)).unwrap();
    assert_eq!(
        call(
            &env,
            "edit",
            json!({"path": "ro.txt", "edits": [{"oldText": "a", "newText": "t"}]})
        )
        .await
        .unwrap_err(),
        "Could not edit file: ro.txt. Error code: EACCES."
    );
    assert_eq!(
        call(&env, "write", json!({"path": "ro.txt", "content": "x"}))
            .await
            .unwrap_err(),
        format!("EACCES: permission denied, open '{}'", read_only.display())
    );
    assert_eq!(fs::read_to_string(&read_only).unwrap(), "abc");
    let sealed = dir.path().join("sealed");
    fs::create_dir(&sealed).unwrap();
    fs::set_permissions(&sealed, fs::Permissions::from_mode(0o500)).unwrap();
    assert_eq!(
        call(
            &env,
            "write",
            json!({"path": "sealed/new.txt", "content": "x"})
        )
        .await
        .unwrap_err(),
        format!(
            "EACCES: permission denied, open '{}'",
            sealed.join("new.txt").display()
        )
    );
}

#[tokio::test]
async fn the_sandbox_refuses_paths_outside_the_working_directory() {
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
    let mut env = ToolEnv::new(dir.path());
    env.sandbox = true;
    let edits = json!([{"oldText": "secret", "newText": "gone"}]);
    for (tool, args) in [
        ("read", json!({"path": "../secret.txt"})),
        ("read", json!({"path": "link/secret.txt"})),
        ("write", json!({"path": "link/secret.txt", "content": "x"})),
        ("edit", json!({"path": "link/secret.txt", "edits": edits})),
    ] {
        let raw = args["path"].as_str().unwrap().to_owned();
        assert_eq!(
            call(&env, tool, args).await.unwrap_err(),
            format!("Path is outside the working directory: {raw}"),
            "{tool}"
        );
    }
    assert_eq!(
        fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "secret"
    );
    let inside = call(
        &env,
        "write",
        json!({"path": "ok/x.txt", "content": "fine"}),
    )
    .await;
    assert_eq!(
        inside.unwrap()["content"][0]["text"],
        "Successfully wrote to ok/x.txt"
    );
}

#[tokio::test]
async fn a_cancelled_call_does_nothing() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.txt"), "one\n").unwrap();
    let env = ToolEnv::new(dir.path());
    let cx = context();
    cx.cancel.cancel();
    for (tool, args) in [
        ("read", json!({"path": "a.txt"})),
        ("write", json!({"path": "b.txt", "content": "x"})),
        (
            "edit",
            json!({"path": "a.txt", "edits": [{"oldText": "one", "newText": "two"}]}),
        ),
    ] {
        assert_eq!(
            call_with(&env, tool, args, &cx).await.unwrap_err(),
            "Operation aborted",
            "{tool}"
        );
    }
    assert!(!dir.path().join("b.txt").exists());
    assert_eq!(
        fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "one\n"
    );
}

/// Edits of one file running at the same time take turns: none is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_edits_of_one_file_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let markers: Vec<String> = (0..24).map(|i| format!("marker {i:02};")).collect();
    fs::write(dir.path().join("f.txt"), markers.join("\n")).unwrap();
    let env = ToolEnv::new(dir.path());
    let calls = markers.iter().enumerate().map(|(i, marker)| {
        let env = env.clone();
        let args = json!({"path": "f.txt", "edits": [{"oldText": marker, "newText": format!("done {i:02};")}]});
        tokio::spawn(async move { call(&env, "edit", args).await })
    });
    for handle in calls.collect::<Vec<_>>() {
        handle.await.unwrap().unwrap();
    }
    let expected: Vec<String> = (0..24).map(|i| format!("done {i:02};")).collect();
    assert_eq!(
        fs::read_to_string(dir.path().join("f.txt")).unwrap(),
        expected.join("\n")
    );
}

/// A resized image is a real image of the size the note announces (the same strip as the
/// fixture's `image-strip`, which 1.5.2 sends as a JPEG, smaller than the PNG).
#[tokio::test]
async fn resized_images_decode_to_the_announced_size() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = json!({"width": 2400, "height": 60, "noise": 0});
    fs::write(dir.path().join("strip.bin"), stored_png(&recipe)).unwrap();
    let env = ToolEnv::new(dir.path());
    let result = call(&env, "read", json!({"path": "strip.bin"}))
        .await
        .unwrap();
    let result: pi_core::event::ToolResult = serde_json::from_value(result).unwrap();
    let [ContentBlock::Text(note), ContentBlock::Image(image)] = result.content.as_slice() else {
        panic!("{result:?}")
    };
    assert_eq!(
        note.text,
        "Read image file [image/jpeg]\n[Image: original 2400x60, displayed at 2000x50. Multiply coordinates by 1.20 to map to original image.]"
    );
    let decoded = image::load_from_memory(&STANDARD.decode(&image.data).unwrap()).unwrap();
    assert_eq!((decoded.width(), decoded.height()), (2000, 50));
    assert_eq!(result.details, None);
}

/// Node's `readFile` refuses files over 2 GiB, and so does the read tool (checked on a sparse
/// file, so nothing is really read).
#[tokio::test]
async fn files_over_two_gib_are_refused_as_node_refuses_them() {
    let dir = tempfile::tempdir().unwrap();
    let huge = fs::File::create(dir.path().join("huge.log")).unwrap();
    huge.set_len(2 * 1024 * 1024 * 1024 + 1).unwrap();
    let env = ToolEnv::new(dir.path());
    assert_eq!(
        call(&env, "read", json!({"path": "huge.log"}))
            .await
            .unwrap_err(),
        "File size (2147483649) is greater than 2 GiB"
    );
}

/// For a model without image input, Pi's read tool still returns the image and says that it
/// will be omitted from the request (its text, from the original's read tool).
#[tokio::test]
async fn images_for_a_model_without_image_input_carry_pis_note() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = json!({"width": 4, "height": 4, "noise": 0});
    fs::write(dir.path().join("small.png"), stored_png(&recipe)).unwrap();
    let mut env = ToolEnv::new(dir.path());
    env.model_accepts_images = false;
    let result = call(&env, "read", json!({"path": "small.png"}))
        .await
        .unwrap();
    assert_eq!(
        result["content"][0]["text"],
        "Read image file [image/png]\n[Current model does not support images. The image will be omitted from this request.]"
    );
    assert_eq!(result["content"][1]["type"], "image");
    env.auto_resize_images = false;
    let result = call(&env, "read", json!({"path": "small.png"}))
        .await
        .unwrap();
    assert!(result["content"][0]["text"]
        .as_str()
        .unwrap()
        .ends_with("The image will be omitted from this request.]"));
}
