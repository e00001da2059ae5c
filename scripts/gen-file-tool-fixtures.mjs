// Writes what the original's read, write and edit tools return (effects/tests/
// fixtures/file_tool_cases.json): every case gets a fresh temporary directory with its files,
// runs the original tool with its arguments (edit's through its prepareArguments, as the agent
// loop does), and records the result or the thrown error and, for write and edit, the files
// afterwards. The temporary directory is written as <cwd> in arguments and texts.
//
// Small images are made with the original's own Photon and stored in the fixture; large ones
// are uncompressed PNGs from a pixel recipe that the Rust test rebuilds byte for byte. For an
// image the tool re-encoded, the fixture keeps its type and dimensions, not its bytes.
//
//   node scripts/gen-file-tool-fixtures.mjs <pi install dir> <out file>
import fs from "fs";
import os from "os";
import path from "path";
import { original } from "./pi-original.mjs";

const [piDir, out] = process.argv.slice(2);
const pi = original(piDir);
const { createReadToolDefinition } = await pi.agentModule("core/tools/read.js");
const { createWriteToolDefinition } = await pi.agentModule("core/tools/write.js");
const { createEditToolDefinition } = await pi.agentModule("core/tools/edit.js");
const photon = await pi.dependency("@silvia-odwyer/photon-node/photon_rs.js");

// ---- images -------------------------------------------------------------------------------

// The recipe shared with the Rust test: a gradient, optionally with +-amp noise per channel.
function mix(h) {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
function pixels({ width, height, noise }) {
  const rgb = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      const n = mix((y * width + x) >>> 0);
      const base = [x & 255, y & 255, (x + y) & 255];
      for (let k = 0; k < 3; k++) {
        const jitter = noise ? (((n >>> (k * 8)) & 255) % (2 * noise + 1)) - noise : 0;
        rgb[i + k] = Math.max(0, Math.min(255, base[k] + jitter));
      }
    }
  }
  return rgb;
}
// An RGB PNG whose zlib stream uses stored blocks of at most 65535 bytes (no compression).
function storedPng(recipe) {
  const { width, height } = recipe;
  const rgb = pixels(recipe);
  const raw = Buffer.alloc(height * (width * 3 + 1));
  for (let y = 0; y < height; y++) {
    raw[y * (width * 3 + 1)] = 0;
    Buffer.from(rgb.buffer, y * width * 3, width * 3).copy(raw, y * (width * 3 + 1) + 1);
  }
  const blocks = [Buffer.from([0x78, 0x01])];
  for (let at = 0; at < raw.length; at += 65535) {
    const part = raw.subarray(at, at + 65535);
    const head = Buffer.alloc(5);
    head[0] = at + 65535 >= raw.length ? 1 : 0;
    head.writeUInt16LE(part.length, 1);
    head.writeUInt16LE(part.length ^ 0xffff, 3);
    blocks.push(head, part);
  }
  const adler = Buffer.alloc(4);
  adler.writeUInt32BE(adler32(raw));
  blocks.push(adler);
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", Buffer.concat(blocks)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}
function crc32(data) {
  let crc = 0xffffffff;
  for (const byte of data) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}
function adler32(data) {
  let a = 1;
  let b = 0;
  for (const byte of data) {
    a = (a + byte) % 65521;
    b = (b + a) % 65521;
  }
  return ((b << 16) | a) >>> 0;
}
function photonImage(width, height) {
  const rgb = pixels({ width, height, noise: 0 });
  const rgba = new Uint8Array(width * height * 4);
  for (let i = 0; i < width * height; i++) {
    rgba.set(rgb.subarray(i * 3, i * 3 + 3), i * 4);
    rgba[i * 4 + 3] = 255;
  }
  return new photon.PhotonImage(rgba, width, height);
}
// A JPEG with an EXIF APP1 segment (big-endian TIFF, one entry: orientation) after SOI.
function withOrientation(jpeg, orientation) {
  const tiff = Buffer.from([0x4d, 0x4d, 0, 0x2a, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, orientation, 0, 0, 0, 0, 0, 0]);
  const payload = Buffer.concat([Buffer.from("Exif\0\0", "latin1"), tiff]);
  const head = Buffer.from([0xff, 0xe1, 0, 0]);
  head.writeUInt16BE(payload.length + 2, 2);
  return Buffer.concat([jpeg.subarray(0, 2), head, payload, jpeg.subarray(2)]);
}

// A 2x2 24-bit BMP (BITMAPINFOHEADER, bottom-up rows padded to 4 bytes), which 1.5.2 converts.
function tinyBmp() {
  const pixels = Buffer.from([0, 0, 255, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 0]);
  const head = Buffer.alloc(54);
  head.write("BM", 0, "latin1");
  head.writeUInt32LE(54 + pixels.length, 2);
  head.writeUInt32LE(54, 10);
  head.writeUInt32LE(40, 14);
  head.writeInt32LE(2, 18);
  head.writeInt32LE(2, 22);
  head.writeUInt16LE(1, 26);
  head.writeUInt16LE(24, 28);
  head.writeUInt32LE(pixels.length, 34);
  return Buffer.concat([head, pixels]);
}

const small = photonImage(40, 30);
const pngBytes = Buffer.from(small.get_bytes());
const images = {
  "tiny.png": pngBytes,
  "tiny.jpg": Buffer.from(small.get_bytes_jpeg(80)),
  "tiny.webp": Buffer.from(small.get_bytes_webp()),
  "tiny.gif": Buffer.from("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7", "base64"),
  "tiny.bmp": tinyBmp(),
  "cut.png": pngBytes.subarray(0, Math.floor(pngBytes.length / 2)),
  "rotated.jpg": withOrientation(Buffer.from(photonImage(2100, 40).get_bytes_jpeg(60)), 6),
  "flipped.jpg": withOrientation(Buffer.from(small.get_bytes_jpeg(80)), 3),
};

// ---- cases --------------------------------------------------------------------------------

const text = (p, t) => ({ path: p, text: t });
const image = (p, name) => ({ path: p, image: name });
const recipe = (p, r) => ({ path: p, recipe: r });
const dir = (p) => ({ path: p, dir: true });
const link = (p, target) => ({ path: p, symlink: target });
const lines = (n, f) => Array.from({ length: n }, (_, i) => f(i + 1)).join("\n");

const cases = [];
const read = (name, setup, args, options) => cases.push({ name, tool: "read", setup, args, options });
const write = (name, setup, args) => cases.push({ name, tool: "write", setup, args });
const edit = (name, setup, args) => cases.push({ name, tool: "edit", setup, args });

read("text", [text("a.txt", "alpha\nbeta\n")], { path: "a.txt" });
read("absolute", [text("a.txt", "alpha\n")], { path: "<cwd>/a.txt" });
read("at-prefix", [text("a.txt", "alpha\n")], { path: "@a.txt" });
read("spaces-in-name", [text("my file.txt", "x")], { path: "my file.txt" });
read("nested", [text("src/lib/x.rs", "fn main() {}\n")], { path: "src/lib/../lib/x.rs" });
read("window", [text("n.txt", lines(20, (i) => `n${i}`))], { path: "n.txt", offset: 5, limit: 3 });
read("offset-beyond", [text("n.txt", "a\nb")], { path: "n.txt", offset: 10 });
read("truncated", [text("long.txt", lines(2100, (i) => `${i}`))], { path: "long.txt" });
read("bom", [text("bom.txt", "\ufeffhello\n")], { path: "bom.txt" });
read("crlf", [text("crlf.txt", "a\r\nb\r\n")], { path: "crlf.txt" });
read("empty", [text("e.txt", "")], { path: "e.txt" });
read("binary", [{ path: "bin.dat", base64: Buffer.from([0, 1, 2, 0xff, 0xfe, 0x80, 0xc3, 0x28, 0xe2, 0x82, 10, 65, 0xf0, 0x9f, 0x98]).toString("base64") }], { path: "bin.dat" });
read("gif-text", [text("gif.txt", "GIF is a format\n")], { path: "gif.txt" });
read("bom-gif-text", [text("bomgif.txt", "\ufeffGIF89a but text")], { path: "bomgif.txt" });
read("png-signature-then-garbage", [{ path: "bad.png", base64: Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from("garbage")]).toString("base64") }], { path: "bad.png" });
read("missing", [], { path: "missing.txt" });
read("missing-absolute", [], { path: "<cwd>/no/such/file.txt" });
read("directory", [dir("d")], { path: "d" });
read("not-a-directory", [text("f.txt", "x")], { path: "f.txt/inner.txt" });
read("symlink-loop", [link("loop", "loop")], { path: "loop" });
read("symlink", [text("real.txt", "real\n"), link("alias.txt", "real.txt")], { path: "alias.txt" });
for (const name of ["tiny.png", "tiny.jpg", "tiny.webp", "tiny.gif", "cut.png", "flipped.jpg"]) {
  read(`image-${name}`, [image(name, name)], { path: name });
}
read("image-extension-irrelevant", [image("picture.txt", "tiny.png")], { path: "picture.txt" });
read("image-without-resize", [image("tiny.png", "tiny.png")], { path: "tiny.png" }, { autoResizeImages: false });
read("image-tiny.bmp", [image("tiny.bmp", "tiny.bmp")], { path: "tiny.bmp" });
read("image-bmp-without-resize", [image("tiny.bmp", "tiny.bmp")], { path: "tiny.bmp" }, { autoResizeImages: false });
read("image-exif-rotated", [image("rotated.jpg", "rotated.jpg")], { path: "rotated.jpg" });
read("image-wide", [recipe("wide.png", { width: 3000, height: 1500, noise: 0 })], { path: "wide.png" });
read("image-tall", [recipe("tall.png", { width: 700, height: 2100, noise: 0 })], { path: "tall.png" });
read("image-scale-tie", [recipe("tie.png", { width: 2250, height: 900, noise: 0 })], { path: "tie.png" });
read("image-strip", [recipe("strip.png", { width: 2400, height: 60, noise: 0 })], { path: "strip.png" });
read("image-over-byte-limit", [recipe("heavy.png", { width: 1300, height: 1300, noise: 0 })], { path: "heavy.png" });
read("image-noisy-becomes-jpeg", [recipe("noisy.png", { width: 2000, height: 1500, noise: 8 })], { path: "noisy.png" });
read("image-large-without-resize", [recipe("wide.png", { width: 2100, height: 50, noise: 0 })], { path: "wide.png" }, { autoResizeImages: false });

write("new", [], { path: "new.txt", content: "hello\n" });
write("unicode-length", [], { path: "u.txt", content: "héllo 😀 ✓\n" });
write("nested-dirs", [], { path: "a/b/c/d.txt", content: "deep" });
write("overwrite", [text("o.txt", "old old old")], { path: "o.txt", content: "new" });
write("empty", [], { path: "empty.txt", content: "" });
write("absolute", [], { path: "<cwd>/abs/x.txt", content: "x" });
write("crlf-kept", [], { path: "w.txt", content: "a\r\nb\r\n" });
write("into-directory", [dir("d")], { path: "d", content: "x" });
write("parent-is-file", [text("f.txt", "x")], { path: "f.txt/sub.txt", content: "x" });
write("grandparent-is-file", [text("f.txt", "x")], { path: "f.txt/a/b.txt", content: "x" });

const code = "function hello() {\n  console.log(“hi”);   \n  return 1;\n}\n\nfunction bye() {\n  return 2;\n}\n";
const e = (oldText, newText) => ({ oldText, newText });
edit("single", [text("a.ts", code)], { path: "a.ts", edits: [e("return 1;", "return 10;")] });
edit("multi", [text("a.ts", code)], { path: "a.ts", edits: [e("return 2;", "return 20;"), e("return 1;", "return 10;")] });
edit("legacy-fields", [text("a.ts", code)], { path: "a.ts", oldText: "return 1;", newText: "return 11;" });
edit("edits-as-json-string", [text("a.ts", code)], { path: "a.ts", edits: JSON.stringify([e("bye", "ciao")]) });
edit("fuzzy-normalises-file", [text("a.ts", code)], { path: "a.ts", edits: [e('console.log("hi");', "console.log('hey');")] });
edit("crlf", [text("c.txt", "one\r\ntwo\r\nthree\r\n")], { path: "c.txt", edits: [e("two\nthree", "2\n3")] });
edit("bom", [text("b.txt", "\ufeffkey = 1\nother = 2\n")], { path: "b.txt", edits: [e("key = 1", "key = 2")] });
edit("bom-crlf", [text("b.txt", "\ufeffa\r\nb\r\n")], { path: "b.txt", edits: [e("b", "B\nC")] });
edit("insert-lines", [text("n.txt", lines(40, (i) => `line ${i}`) + "\n")], { path: "n.txt", edits: [e("line 20\n", "line 20\nnew 1\nnew 2\n")] });
edit("far-apart", [text("n.txt", lines(40, (i) => `line ${i}`) + "\n")], { path: "n.txt", edits: [e("line 3\n", "three\n"), e("line 37\n", "")] });
edit("not-found", [text("a.ts", code)], { path: "a.ts", edits: [e("nope", "x")] });
edit("not-found-multi", [text("a.ts", code)], { path: "a.ts", edits: [e("return 1;", "x"), e("nope", "y")] });
edit("duplicate", [text("a.ts", code)], { path: "a.ts", edits: [e("return", "x")] });
edit("no-change", [text("a.ts", code)], { path: "a.ts", edits: [e("return 1;", "return 1;")] });
edit("empty-old-text", [text("a.ts", code)], { path: "a.ts", edits: [e("", "x")] });
edit("overlap", [text("a.ts", code)], { path: "a.ts", edits: [e("return 1;\n}", "x"), e("1;\n}\n\nfunction", "y")] });
edit("no-edits", [text("a.ts", code)], { path: "a.ts", edits: [] });
edit("missing", [], { path: "missing.ts", edits: [e("a", "b")] });
edit("directory", [dir("d")], { path: "d", edits: [e("a", "b")] });
edit("not-a-directory", [text("f.txt", "x")], { path: "f.txt/x", edits: [e("a", "b")] });
edit("unicode", [text("u.txt", "α β γ\nδ ε\n😀 end\n")], { path: "u.txt", edits: [e("δ ε", "ζ"), e("😀", "🎉")] });

// ---- run ----------------------------------------------------------------------------------

function materialise(cwd, setup) {
  for (const file of setup) {
    const target = path.join(cwd, file.path);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    if (file.dir) fs.mkdirSync(target, { recursive: true });
    else if (file.symlink) fs.symlinkSync(file.symlink, target);
    else if (file.text !== undefined) fs.writeFileSync(target, file.text);
    else if (file.base64 !== undefined) fs.writeFileSync(target, Buffer.from(file.base64, "base64"));
    else if (file.image) fs.writeFileSync(target, images[file.image]);
    else if (file.recipe) fs.writeFileSync(target, storedPng(file.recipe));
  }
}
const fill = (value, cwd) => JSON.parse(JSON.stringify(value).replaceAll("<cwd>", cwd));
const hide = (textValue, cwd) => textValue.replaceAll(cwd, "<cwd>");

function describeContent(block, input) {
  if (block.type !== "image") return { ...block, text: hide(block.text, describeContent.cwd) };
  const decoded = photon.PhotonImage.new_from_base64(block.data);
  const description = {
    type: "image",
    mimeType: block.mimeType,
    sameAsInput: input !== undefined && block.data === input.toString("base64"),
    width: decoded.get_width(),
    height: decoded.get_height(),
  };
  decoded.free();
  return description;
}

for (const c of cases) {
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), "file-tools-"));
  materialise(cwd, c.setup);
  const tool =
    c.tool === "read" ? createReadToolDefinition(cwd, c.options) : c.tool === "write" ? createWriteToolDefinition(cwd) : createEditToolDefinition(cwd);
  let args = fill(c.args, cwd);
  if (tool.prepareArguments) args = tool.prepareArguments(args);
  const input = c.tool === "read" && fs.existsSync(path.join(cwd, args.path)) && fs.statSync(path.join(cwd, args.path)).isFile() ? fs.readFileSync(path.join(cwd, args.path)) : undefined;
  describeContent.cwd = cwd;
  try {
    const result = await tool.execute("call", args, undefined, undefined, {});
    c.result = { content: result.content.map((b) => describeContent(b, input)) };
    if (result.details !== undefined) c.result.details = result.details;
  } catch (error) {
    c.error = hide(error.message, cwd);
  }
  if (c.tool !== "read") {
    c.files = {};
    for (const file of c.setup.filter((f) => f.text !== undefined).map((f) => f.path).concat(typeof args.path === "string" ? [args.path.replace(cwd + "/", "")] : [])) {
      const target = path.join(cwd, file);
      if (fs.existsSync(target) && fs.statSync(target).isFile()) c.files[file] = fs.readFileSync(target, "utf-8");
    }
  }
  fs.rmSync(cwd, { recursive: true, force: true });
}

const stored = Object.fromEntries(Object.entries(images).map(([name, bytes]) => [name, bytes.toString("base64")]));
fs.writeFileSync(out, JSON.stringify({ images: stored, cases }, null, 1) + "\n");
console.log(`${cases.length} cases -> ${out}`);
