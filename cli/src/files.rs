//! `@file` arguments and piped stdin (Pi's `cli/file-processor.js` and
//! `cli/initial-message.js`): text files are inlined as `<file name="...">` blocks, images are
//! attached (resized as the read tool resizes them), and the first message is stdin, then the
//! files' text, then the first positional message, joined without separator.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use pi_core::agent::ToolOutcome;
use pi_core::message::{ContentBlock, ImageContent};
use pi_effects::agent_session::CancellationToken;
use pi_effects::tools::{self, resolve, PathUse, ToolContext, ToolEnv};
use serde_json::json;

/// The read tool's note when an image cannot be brought under the inline size limit.
const IMAGE_OMITTED: &str =
    "[Image omitted: could not be resized below the inline image size limit.]";
const IMAGE_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// The text and images of the `@file` arguments.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FileArgs {
    pub text: String,
    pub images: Vec<ImageContent>,
}

/// The prompts of a print run: the combined first message (with the images) and the rest.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InitialMessage {
    /// `None` when there is nothing to send first (Pi skips an empty first message).
    pub first: Option<String>,
    pub images: Vec<ImageContent>,
    /// The positional messages after the first, each sent as its own prompt.
    pub rest: Vec<String>,
}

/// Pi's `buildInitialMessage`.
pub fn initial_message(
    stdin: Option<String>,
    files: FileArgs,
    messages: &[String],
) -> InitialMessage {
    let mut first = String::new();
    first.push_str(stdin.as_deref().unwrap_or(""));
    first.push_str(&files.text);
    let rest = match messages.split_first() {
        Some((head, tail)) => {
            first.push_str(head);
            tail.to_vec()
        }
        None => Vec::new(),
    };
    InitialMessage {
        first: (!first.is_empty()).then_some(first),
        images: files.images,
        rest,
    }
}

/// Reads piped stdin whole, trimmed; `None` for a terminal or when there is nothing but
/// whitespace (Pi's `readPipedStdin`).
pub fn read_piped_stdin() -> Option<String> {
    use std::io::{IsTerminal, Read};
    let mut stdin = std::io::stdin();
    if stdin.is_terminal() {
        return None;
    }
    let mut bytes = Vec::new();
    if stdin.read_to_end(&mut bytes).is_err() {
        return None;
    }
    let text = String::from_utf8_lossy(&bytes);
    let trimmed = text.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

/// Processes `@file` arguments (without their `@`) in order; the error is the line Pi prints
/// before exiting with 1.
pub async fn process_file_arguments(
    args: &[String],
    cwd: &Path,
    auto_resize_images: bool,
) -> Result<FileArgs, String> {
    let mut env = ToolEnv::new(cwd);
    env.auto_resize_images = auto_resize_images;
    let mut out = FileArgs::default();
    for arg in args {
        let path = absolute(&env, arg);
        let shown = path.display();
        let metadata =
            std::fs::metadata(&path).map_err(|_| format!("Error: File not found: {shown}"))?;
        if metadata.len() == 0 {
            continue;
        }
        let unreadable = |e: std::io::Error| {
            format!(
                "Error: Could not read file {shown}: {}",
                node_message(&e, &path)
            )
        };
        if metadata.is_dir() {
            return Err(unreadable(std::io::Error::from(ErrorKind::IsADirectory)));
        }
        match read_image(&env, &path).await {
            Some(Image::Attached { image, note }) => {
                out.text
                    .push_str(&format!("<file name=\"{shown}\">{note}</file>\n"));
                out.images.push(image);
            }
            Some(Image::Omitted) => {
                out.text
                    .push_str(&format!("<file name=\"{shown}\">{IMAGE_OMITTED}</file>\n"));
            }
            None => {
                let bytes = std::fs::read(&path).map_err(unreadable)?;
                let content = String::from_utf8_lossy(&bytes);
                out.text
                    .push_str(&format!("<file name=\"{shown}\">\n{content}\n</file>\n"));
            }
        }
    }
    Ok(out)
}

/// The argument as an absolute path: `~`, Unicode spaces and the read tool's alternative
/// spellings resolved against `cwd`.
fn absolute(env: &ToolEnv, arg: &str) -> PathBuf {
    resolve(env, arg, PathUse::Read).unwrap_or_else(|_| env.cwd.join(arg))
}

enum Image {
    /// Attached, with the dimension note for the `<file>` block (empty when not resized).
    Attached { image: ImageContent, note: String },
    /// Too large even after resizing.
    Omitted,
}

/// The file as the read tool sees it when it is an image (same detection, same resize);
/// `None` for anything else.
async fn read_image(env: &ToolEnv, path: &Path) -> Option<Image> {
    let cx = ToolContext {
        cancel: CancellationToken::new(),
        updates: tokio::sync::mpsc::unbounded_channel().0,
    };
    let args = json!({ "path": path.to_string_lossy() });
    let ToolOutcome::Ok(result) = tools::run(env, "read", &args, &cx).await else {
        return None;
    };
    let text = match result.content.first() {
        Some(ContentBlock::Text(text)) => text.text.clone(),
        _ => return None,
    };
    let (header, note) = text.split_once('\n').unwrap_or((&text, ""));
    header
        .strip_prefix("Read image file [")
        .and_then(|rest| rest.strip_suffix(']'))
        .filter(|mime| IMAGE_TYPES.contains(mime))?;
    match result.content.get(1) {
        Some(ContentBlock::Image(image)) => Some(Image::Attached {
            image: image.clone(),
            note: note.to_owned(),
        }),
        _ if note == IMAGE_OMITTED => Some(Image::Omitted),
        _ => None,
    }
}

/// Node's wording of the read errors `@file` arguments (and prompt files) can meet.
pub(crate) fn node_message(error: &std::io::Error, path: &Path) -> String {
    match error.kind() {
        ErrorKind::IsADirectory => "EISDIR: illegal operation on a directory, read".into(),
        ErrorKind::PermissionDenied => {
            format!("EACCES: permission denied, open '{}'", path.display())
        }
        _ => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdin_files_and_the_first_message_join_without_separator() {
        let files = FileArgs {
            text: "<file name=\"/a\">\nx\n</file>\n".into(),
            images: Vec::new(),
        };
        let messages = vec!["First".to_owned(), "Second".to_owned()];
        let message = initial_message(Some("piped".into()), files, &messages);
        assert_eq!(
            message.first.as_deref(),
            Some("piped<file name=\"/a\">\nx\n</file>\nFirst")
        );
        assert_eq!(message.rest, ["Second"]);
        let empty = initial_message(None, FileArgs::default(), &[String::new()]);
        assert_eq!(empty.first, None);
    }
}
