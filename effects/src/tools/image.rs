//! Images for the read tool, as Pi 1.5 handles them: which files count as images (its own
//! signature check on the first bytes: JPEG, PNG, GIF, WebP and BMP), and the automatic resize
//! that keeps an image within 2000x2000 pixels and 4.5 MiB of base64 (Pi's
//! `image-resize-core.js`, EXIF orientation included).
//!
//! Decisions (whether to resize, target sizes, which candidate wins, the note's text) follow the
//! original step for step. Re-encoded bytes come from the `image` crate rather than Photon, so
//! they differ from the original's, and a size close to the limit may tip differently.

use std::io::Cursor;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::imageops::FilterType;
use image::{DynamicImage, ImageEncoder};

/// How many leading bytes the type detection looks at (Pi's `FILE_TYPE_SNIFF_BYTES`).
pub(super) const SNIFF_BYTES: usize = 4100;

/// The image type of a file starting with `head` (at most [`SNIFF_BYTES`]), when it is one the
/// read tool sends as an image (Pi 1.5's `detectSupportedImageMimeType`: signatures at the
/// start only, so a byte order mark or text starting with "GIF" makes no image).
pub(super) fn detect_mime(head: &[u8]) -> Option<&'static str> {
    let starts_at = |offset: usize, sig: &[u8]| head.get(offset..offset + sig.len()) == Some(sig);
    if starts_at(0, &[0xFF, 0xD8, 0xFF]) {
        return (head.get(3) != Some(&0xF7)).then_some("image/jpeg");
    }
    if starts_at(0, PNG_SIGNATURE) {
        return (is_png(head) && !is_animated_png(head)).then_some("image/png");
    }
    if starts_at(0, b"GIF87a") || starts_at(0, b"GIF89a") {
        return Some("image/gif");
    }
    if starts_at(0, b"RIFF") && starts_at(8, b"WEBP") {
        return Some("image/webp");
    }
    if starts_at(0, b"BM") && is_bmp(head) {
        return Some(BMP);
    }
    None
}

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

/// The one detected type that is not sent as it is: Pi 1.5 converts it to PNG.
pub(super) const BMP: &str = "image/bmp";

/// Pi 1.5's `convertImageBytesToPng`: the decoded image, oriented by its EXIF data, as an RGBA
/// PNG; `None` when it cannot be decoded.
pub(super) fn to_png(bytes: &[u8]) -> Option<Vec<u8>> {
    let image = oriented(
        image::load_from_memory(bytes).ok()?,
        exif_orientation(bytes),
    );
    let mut png = Vec::new();
    PngEncoder::new(&mut png)
        .write_image(
            &image.to_rgba8(),
            image.width(),
            image.height(),
            image::ExtendedColorType::Rgba8,
        )
        .ok()?;
    Some(png)
}

/// A byte of `buf`, 0 past its end (as Pi's readers read it).
fn byte(buf: &[u8], at: usize) -> u32 {
    buf.get(at).copied().map_or(0, u32::from)
}

fn u32_be(buf: &[u8], at: usize) -> u64 {
    (0..4).fold(0, |n, i| n << 8 | u64::from(byte(buf, at + i)))
}

fn u32_le(buf: &[u8], at: usize) -> u64 {
    (0..4)
        .rev()
        .fold(0, |n, i| n << 8 | u64::from(byte(buf, at + i)))
}

fn u16_le(buf: &[u8], at: usize) -> u32 {
    byte(buf, at) | byte(buf, at + 1) << 8
}

/// The first chunk is a 13-byte `IHDR`.
fn is_png(buf: &[u8]) -> bool {
    buf.len() >= 16 && u32_be(buf, 8) == 13 && buf.get(12..16) == Some(b"IHDR")
}

/// An `acTL` chunk before the first `IDAT` (an APNG, not supported), as far as the head shows.
fn is_animated_png(buf: &[u8]) -> bool {
    let mut offset = PNG_SIGNATURE.len();
    while offset + 8 <= buf.len() {
        match buf.get(offset + 4..offset + 8) {
            Some(b"acTL") => return true,
            Some(b"IDAT") => return false,
            _ => {}
        }
        let next = offset as u64 + 8 + u32_be(buf, offset) + 4;
        if next > buf.len() as u64 {
            return false;
        }
        offset = next as usize;
    }
    false
}

/// Pi 1.5's `isBmp`: a plausible file header and DIB header with one plane and a known depth.
fn is_bmp(buf: &[u8]) -> bool {
    if buf.len() < 26 {
        return false;
    }
    let declared_size = u32_le(buf, 2);
    let pixel_offset = u32_le(buf, 10);
    let dib_size = u32_le(buf, 14);
    if declared_size != 0 && declared_size < 26 {
        return false;
    }
    if pixel_offset < 14 + dib_size {
        return false;
    }
    if declared_size != 0 && pixel_offset >= declared_size {
        return false;
    }
    let (planes, bits) = match dib_size {
        12 => (u16_le(buf, 22), u16_le(buf, 24)),
        40..=124 if buf.len() >= 30 => (u16_le(buf, 26), u16_le(buf, 28)),
        _ => return false,
    };
    planes == 1 && [1, 4, 8, 16, 24, 32].contains(&bits)
}

/// Pi's limits for an inline image.
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    pub max_width: u32,
    pub max_height: u32,
    /// Bytes of base64.
    pub max_bytes: usize,
    pub jpeg_quality: u8,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_width: 2000,
            max_height: 2000,
            max_bytes: 4_718_592,
            jpeg_quality: 80,
        }
    }
}

/// The image to send and how it relates to the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Resized {
    pub data: String,
    pub mime_type: String,
    pub original_width: u32,
    pub original_height: u32,
    pub width: u32,
    pub height: u32,
    pub was_resized: bool,
}

/// Pi's `resizeImage`: the file itself when it fits, else the first encoding under the byte
/// limit (PNG, then JPEG at falling qualities) at the largest size tried (fitting the box, then
/// shrinking by a quarter each round). `None` when the image cannot be decoded or nothing fits.
pub(super) fn resize(bytes: &[u8], base64: &str, mime: &str, limits: Limits) -> Option<Resized> {
    let image = oriented(
        image::load_from_memory(bytes).ok()?,
        exif_orientation(bytes),
    );
    let (original_width, original_height) = (image.width(), image.height());
    if original_width <= limits.max_width
        && original_height <= limits.max_height
        && base64.len() < limits.max_bytes
    {
        return Some(Resized {
            data: base64.to_owned(),
            mime_type: mime.to_owned(),
            original_width,
            original_height,
            width: original_width,
            height: original_height,
            was_resized: false,
        });
    }
    let (mut width, mut height) = (original_width, original_height);
    if width > limits.max_width {
        height = scaled(height, limits.max_width, width);
        width = limits.max_width;
    }
    if height > limits.max_height {
        width = scaled(width, limits.max_height, height);
        height = limits.max_height;
    }
    let mut qualities = vec![limits.jpeg_quality];
    for quality in [85, 70, 55, 40] {
        if !qualities.contains(&quality) {
            qualities.push(quality);
        }
    }
    loop {
        // Photon throws on an empty size or a failed encoding, and Pi then gives up.
        if width == 0 || height == 0 {
            return None;
        }
        if let Some((data, mime_type)) = first_fit(&image, width, height, &qualities, limits)? {
            return Some(Resized {
                data,
                mime_type: mime_type.to_owned(),
                original_width,
                original_height,
                width,
                height,
                was_resized: true,
            });
        }
        if width == 1 && height == 1 {
            return None;
        }
        let shrink = |side: u32| {
            if side == 1 {
                1
            } else {
                ((f64::from(side) * 0.75).floor() as u32).max(1)
            }
        };
        let (next_width, next_height) = (shrink(width), shrink(height));
        if (next_width, next_height) == (width, height) {
            return None;
        }
        (width, height) = (next_width, next_height);
    }
}

/// JavaScript's `Math.round(side * target / other)` for positive sides.
fn scaled(side: u32, target: u32, other: u32) -> u32 {
    ((f64::from(side) * f64::from(target)) / f64::from(other)).round() as u32
}

/// The first candidate whose base64 is under the limit, in Pi 1.5's order: the smaller of PNG
/// and JPEG at the first quality, the other one, then JPEG at each lower quality; `None` when
/// an encoding fails.
fn first_fit(
    image: &DynamicImage,
    width: u32,
    height: u32,
    qualities: &[u8],
    limits: Limits,
) -> Option<Option<(String, &'static str)>> {
    let resized = image.resize_exact(width, height, FilterType::Lanczos3);
    let mut png = Vec::new();
    PngEncoder::new(&mut png)
        .write_image(
            &resized.to_rgba8(),
            width,
            height,
            image::ExtendedColorType::Rgba8,
        )
        .ok()?;
    let rgb = resized.to_rgb8();
    let mut candidates = vec![(STANDARD.encode(&png), "image/png")];
    for &quality in qualities {
        let mut jpeg = Cursor::new(Vec::new());
        JpegEncoder::new_with_quality(&mut jpeg, quality)
            .write_image(&rgb, width, height, image::ExtendedColorType::Rgb8)
            .ok()?;
        candidates.push((STANDARD.encode(jpeg.get_ref()), "image/jpeg"));
    }
    if candidates.len() > 1 && candidates[1].0.len() < candidates[0].0.len() {
        candidates.swap(0, 1);
    }
    Some(
        candidates
            .into_iter()
            .find(|(data, _)| data.len() < limits.max_bytes),
    )
}

/// Pi's `formatDimensionNote`: how to map coordinates back, for a resized image.
pub(super) fn dimension_note(resized: &Resized) -> Option<String> {
    if !resized.was_resized {
        return None;
    }
    let scale = f64::from(resized.original_width) / f64::from(resized.width);
    Some(format!(
        "[Image: original {}x{}, displayed at {}x{}. Multiply coordinates by {} to map to original image.]",
        resized.original_width,
        resized.original_height,
        resized.width,
        resized.height,
        to_fixed_2(scale)
    ))
}

/// JavaScript's `x.toFixed(2)` for a non-negative `x`: the exact binary value rounded half up
/// (Rust's own formatting rounds exact halves to even).
fn to_fixed_2(x: f64) -> String {
    let exact = format!("{x:.80}");
    let (int_part, fraction) = exact.split_once('.').unwrap_or((&exact, ""));
    let digits: Vec<u64> = fraction
        .bytes()
        .take(3)
        .map(|b| u64::from(b.saturating_sub(b'0')))
        .chain(std::iter::repeat(0))
        .take(3)
        .collect();
    let mut hundredths = int_part.parse::<u64>().unwrap_or(0) * 100 + digits[0] * 10 + digits[1];
    if digits[2] >= 5 {
        hundredths += 1;
    }
    format!("{}.{:02}", hundredths / 100, hundredths % 100)
}

/// The image as Pi's `applyExifOrientation` turns it.
fn oriented(image: DynamicImage, orientation: u16) -> DynamicImage {
    match orientation {
        2 => image.fliph(),
        3 => image.fliph().flipv(),
        4 => image.flipv(),
        5 => image.rotate90().fliph(),
        6 => image.rotate90(),
        7 => image.rotate270().fliph(),
        8 => image.rotate270(),
        _ => image,
    }
}

/// Pi's EXIF orientation reader (JPEG APP1 or WebP `EXIF` chunk); 1 when there is none.
/// Reads past the end count as zero bytes, as JavaScript's bit operations on `undefined` do.
fn exif_orientation(bytes: &[u8]) -> u16 {
    let len = bytes.len() as i64;
    let at = |i: i64| -> i64 {
        usize::try_from(i)
            .ok()
            .and_then(|i| bytes.get(i))
            .map_or(0, |b| i64::from(*b))
    };
    let exif_header = |o: i64| (0..6).all(|k| at(o + k) == i64::from(b"Exif\0\0"[k as usize]));
    let tiff = if len >= 2 && at(0) == 0xFF && at(1) == 0xD8 {
        jpeg_tiff_offset(len, &at, &exif_header)
    } else if len >= 12
        && (0..4).all(|k| at(k) == i64::from(b"RIFF"[k as usize]))
        && (8..12).all(|k| at(k) == i64::from(b"WEBP"[k as usize - 8]))
    {
        webp_tiff_offset(len, &at, &exif_header)
    } else {
        None
    };
    let Some(tiff) = tiff else { return 1 };
    if tiff + 8 > len {
        return 1;
    }
    let le = ((at(tiff) << 8) | at(tiff + 1)) == 0x4949;
    let read16 = |p: i64| {
        if le {
            at(p) | (at(p + 1) << 8)
        } else {
            (at(p) << 8) | at(p + 1)
        }
    };
    let ifd_offset = if le {
        // JavaScript's `|` makes this a signed 32-bit value.
        i64::from(
            (at(tiff + 4) | (at(tiff + 5) << 8) | (at(tiff + 6) << 16) | (at(tiff + 7) << 24))
                as u32 as i32,
        )
    } else {
        (at(tiff + 4) << 24) | (at(tiff + 5) << 16) | (at(tiff + 6) << 8) | at(tiff + 7)
    };
    let ifd = tiff + ifd_offset;
    if ifd + 2 > len {
        return 1;
    }
    for i in 0..read16(ifd) {
        let entry = ifd + 2 + i * 12;
        if entry + 12 > len {
            return 1;
        }
        if read16(entry) == 0x0112 {
            let value = read16(entry + 8);
            return if (1..=8).contains(&value) {
                value as u16
            } else {
                1
            };
        }
    }
    1
}

fn jpeg_tiff_offset(
    len: i64,
    at: &dyn Fn(i64) -> i64,
    exif_header: &dyn Fn(i64) -> bool,
) -> Option<i64> {
    let mut offset = 2;
    while offset < len - 1 {
        if at(offset) != 0xFF {
            return None;
        }
        let marker = at(offset + 1);
        if marker == 0xFF {
            offset += 1;
            continue;
        }
        if marker == 0xE1 {
            let start = offset + 4;
            if start >= len || start + 6 > len || !exif_header(start) {
                return None;
            }
            return Some(start + 6);
        }
        if offset + 4 > len {
            return None;
        }
        offset += 2 + ((at(offset + 2) << 8) | at(offset + 3));
    }
    None
}

fn webp_tiff_offset(
    len: i64,
    at: &dyn Fn(i64) -> i64,
    exif_header: &dyn Fn(i64) -> bool,
) -> Option<i64> {
    let mut offset = 12;
    while offset + 8 <= len {
        let id: Vec<i64> = (0..4).map(|k| at(offset + k)).collect();
        let size = i64::from(
            (at(offset + 4)
                | (at(offset + 5) << 8)
                | (at(offset + 6) << 16)
                | (at(offset + 7) << 24)) as u32 as i32,
        );
        let data = offset + 8;
        if id.iter().copied().eq(b"EXIF".iter().map(|b| i64::from(*b))) {
            if data + size > len {
                return None;
            }
            return Some(if size >= 6 && exif_header(data) {
                data + 6
            } else {
                data
            });
        }
        let next = data + size + size % 2;
        if next <= offset {
            return None;
        }
        offset = next;
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn signatures() {
        assert_eq!(detect_mime(b"GIF89a"), Some("image/gif"));
        assert_eq!(detect_mime(b"GIF87a"), Some("image/gif"));
        assert_eq!(detect_mime(b"GIF is a format\n"), None);
        assert_eq!(detect_mime(b"\xEF\xBB\xBFGIF89a"), None);
        assert_eq!(detect_mime(&[0xFF, 0xD8, 0xFF]), Some("image/jpeg"));
        assert_eq!(detect_mime(&[0xFF, 0xD8, 0xFF, 0xF7]), None);
        assert_eq!(detect_mime(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(detect_mime(b"RIFF\0\0\0\0WAVE"), None);
        assert_eq!(detect_mime(b"G"), None);
        assert_eq!(detect_mime(b"plain text"), None);
    }

    /// A BMP head: file size, pixel offset, DIB header size, planes and depth.
    fn bmp_head(size: u32, offset: u32, dib: u32, planes: u16, bits: u16) -> Vec<u8> {
        let mut out = b"BM".to_vec();
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&offset.to_le_bytes());
        out.extend_from_slice(&dib.to_le_bytes());
        out.extend_from_slice(&[0; 8]);
        out.extend_from_slice(&planes.to_le_bytes());
        out.extend_from_slice(&bits.to_le_bytes());
        out.resize(64, 0);
        out
    }

    #[test]
    fn bitmaps_need_plausible_headers() {
        assert_eq!(detect_mime(&bmp_head(70, 54, 40, 1, 24)), Some("image/bmp"));
        assert_eq!(detect_mime(&bmp_head(0, 54, 40, 1, 32)), Some("image/bmp"));
        assert_eq!(detect_mime(&bmp_head(70, 54, 40, 1, 7)), None);
        assert_eq!(detect_mime(&bmp_head(70, 54, 40, 2, 24)), None);
        assert_eq!(detect_mime(&bmp_head(70, 30, 40, 1, 24)), None);
        assert_eq!(detect_mime(&bmp_head(54, 54, 40, 1, 24)), None);
        assert_eq!(detect_mime(&bmp_head(70, 54, 200, 1, 24)), None);
        assert_eq!(detect_mime(b"BM short"), None);
    }

    fn png_head(chunks: &[(&[u8; 4], u32)]) -> Vec<u8> {
        let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
        for (kind, len) in chunks {
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(*kind);
            out.extend(std::iter::repeat_n(0, *len as usize + 4));
        }
        out
    }

    #[test]
    fn png_chunk_walk() {
        assert_eq!(
            detect_mime(&png_head(&[(b"IHDR", 13), (b"IDAT", 2)])),
            Some("image/png")
        );
        assert_eq!(detect_mime(&png_head(&[(b"IHDR", 13), (b"acTL", 8)])), None);
        assert_eq!(detect_mime(&png_head(&[(b"IHDR", 12), (b"IDAT", 2)])), None);
        assert_eq!(detect_mime(&png_head(&[(b"tEXt", 2), (b"IHDR", 13)])), None);
        assert_eq!(detect_mime(b"\x89PNG\r\n\x1a\ngarbage"), None);
        // The sniffed head ends inside a chunk: still a PNG.
        let mut big = png_head(&[(b"IHDR", 13)]);
        big.extend_from_slice(&9000u32.to_be_bytes());
        big.extend_from_slice(b"iCCP");
        big.resize(SNIFF_BYTES, 0);
        assert_eq!(detect_mime(&big), Some("image/png"));
    }

    #[test]
    fn to_fixed_rounds_exact_halves_up() {
        assert_eq!(to_fixed_2(1.125), "1.13");
        assert_eq!(to_fixed_2(1.5), "1.50");
        assert_eq!(to_fixed_2(1.0), "1.00");
        assert_eq!(to_fixed_2(2000.0 / 3.0), "666.67");
        assert_eq!(to_fixed_2(1.005), "1.00");
        assert_eq!(to_fixed_2(9.999), "10.00");
    }

    fn encoded_png(width: u32, height: u32, noisy: bool) -> Vec<u8> {
        let mut seed = 7u32;
        let image = image::RgbImage::from_fn(width, height, |x, y| {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let noise = if noisy { (seed >> 16) as u8 } else { 0 };
            image::Rgb([(x % 256) as u8 ^ noise, (y % 256) as u8, noise])
        });
        let mut out = Vec::new();
        PngEncoder::new(&mut out)
            .write_image(&image, width, height, image::ExtendedColorType::Rgb8)
            .unwrap();
        out
    }

    #[test]
    fn small_images_are_sent_as_they_are() {
        let png = encoded_png(30, 20, false);
        let b64 = STANDARD.encode(&png);
        let out = resize(&png, &b64, "image/png", Limits::default()).unwrap();
        assert_eq!((out.width, out.height, out.was_resized), (30, 20, false));
        assert_eq!(out.data, b64);
        assert_eq!(dimension_note(&out), None);
    }

    #[test]
    fn the_byte_limit_shrinks_until_something_fits() {
        let png = encoded_png(64, 48, true);
        let b64 = STANDARD.encode(&png);
        let limits = Limits {
            max_bytes: 1200,
            ..Limits::default()
        };
        let out = resize(&png, &b64, "image/png", limits).unwrap();
        assert!(out.was_resized);
        assert!(out.data.len() < 1200);
        // 64x48, 48x36, 36x27, 27x20, ...: a quarter less each round.
        let chain: Vec<(u32, u32)> = std::iter::successors(Some((64u32, 48u32)), |(w, h)| {
            Some((w * 3 / 4, h * 3 / 4)).filter(|s| s.0 > 0)
        })
        .collect();
        assert!(chain[1..].contains(&(out.width, out.height)), "{out:?}");
        assert_eq!((out.original_width, out.original_height), (64, 48));
        let tiny = Limits {
            max_bytes: 10,
            ..Limits::default()
        };
        assert_eq!(resize(&png, &b64, "image/png", tiny), None);
    }

    #[test]
    fn a_side_rounded_to_nothing_gives_up() {
        let png = encoded_png(1, 5000, false);
        let b64 = STANDARD.encode(&png);
        assert_eq!(resize(&png, &b64, "image/png", Limits::default()), None);
    }

    #[test]
    fn undecodable_images_cannot_be_resized() {
        assert_eq!(
            resize(b"GIF is text", "R0lG", "image/gif", Limits::default()),
            None
        );
    }

    #[test]
    fn exif_orientation_of_a_jpeg() {
        // SOI, APP1 "Exif\0\0", big-endian TIFF with one IFD entry: orientation 6.
        let mut jpeg = vec![0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x22];
        jpeg.extend_from_slice(b"Exif\0\0MM\0\x2a\0\0\0\x08\0\x01");
        jpeg.extend_from_slice(&[0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0]);
        assert_eq!(exif_orientation(&jpeg), 6);
        assert_eq!(exif_orientation(&jpeg[..20]), 1);
        assert_eq!(exif_orientation(b"not an image"), 1);
    }
}
