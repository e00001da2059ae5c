// Writes what the original's bash tool and its user-command executor (`!command`,
// RPC `bash`) return for a set of commands (effects/tests/fixtures/bash_cases.json). Every command
// runs for real in a temporary working directory; the Rust test runs the same commands there.
//
//   node scripts/gen-bash-fixtures.mjs <pi install dir (0.73.1 or 1.5.2)> <out file>
//
// For 1.5.2, run it with the Node of the install (<dir>/node/bin/node). Its tool module imports
// pi-tui, which 1.5.2 ships only inlined in its bundle, so the tool comes from the bundle's
// index. It runs without a session (no tool context), so it sets no session variables. The
// wall time of a result's structuredContent is replaced by <WALL>.
//
// Paths that differ from run to run are replaced: the working directory by <CWD>, the full-output
// file by <FULL> (its content is kept as its length and FNV-1a 64 hash). Commands that write to
// stdout and stderr close together sleep in between: the original reads the two pipes in no
// fixed order (one write to stdout, then one to stderr, come back in that order and as two
// chunks: cases with `runs` check that they do every time). An abort waits for the command to create the file `started` in
// its working directory, so that it lands once the command has written what comes before. A
// signal aborted before the start is left out: the original spawns the command and kills it at
// once, and about one run in three the command still gets to write its output
// (the Rust test checks that ours does not start it).
import fs from "fs";
import os from "os";
import path from "path";
import { original } from "./pi-original.mjs";

const [piDir, out] = process.argv.slice(2);
const pi = original(piDir);
const { createBashToolDefinition, createLocalBashOperations } = await pi.agentModule("core/tools/bash.js");
const { executeBashWithOperations } = await pi.agentModule("core/bash-executor.js");
const { sanitizeBinaryOutput } = await pi.agentModule("utils/shell.js");
const { stripAnsi } = await pi.agentModule("utils/ansi.js");
const cwd = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "bash-fixtures-")));

const fnv1a64 = (bytes) => {
  let hash = 0xcbf29ce484222325n;
  for (const b of bytes) {
    hash ^= BigInt(b);
    hash = (hash * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return hash.toString(16).padStart(16, "0");
};

// Replaces run-specific paths in any JSON value and records the full-output file.
const normalizer = () => {
  const files = {};
  const fix = (value) => {
    if (typeof value === "string") {
      let text = value;
      for (const match of text.match(/\/[^\s\]]*pi-bash-[0-9a-f]{16}\.log/g) ?? []) {
        if (fs.existsSync(match)) {
          const bytes = fs.readFileSync(match);
          files.full = { length: bytes.length, fnv: fnv1a64(bytes) };
          fs.rmSync(match);
        }
        text = text.replaceAll(match, "<FULL>");
      }
      return text.replaceAll(cwd, "<CWD>");
    }
    if (Array.isArray(value)) return value.map(fix);
    if (value && typeof value === "object") {
      // A result's wall time (1.5.2's structuredContent) is the machine's, not the tool's.
      return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)
        .map(([k, v]) => [k, k === "wall_time_seconds" ? "<WALL>" : fix(v)]));
    }
    return value;
  };
  return { fix, files };
};

// Texts over 2,000 UTF-16 units are kept as their length, FNV-1a 64 hash of the UTF-8 bytes and
// their first and last 100 units.
const compact = (value) => {
  if (typeof value === "string") {
    if (value.length <= 2000) return value;
    return { length: value.length, fnv: fnv1a64(Buffer.from(value, "utf-8")), head: value.slice(0, 100), tail: value.slice(-100) };
  }
  if (Array.isArray(value)) return value.map(compact);
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, compact(v)]));
  return value;
};

// A signal aborted now (`abort: "now"`), once `<dir>/<abort>` exists, or never. `endCase` stops
// the watch and removes the file, as the working directory is shared by the cases.
let endCase = () => {};
const signalFor = (abort, dir) => {
  if (abort === undefined) return undefined;
  const controller = new AbortController();
  if (abort === "now") {
    controller.abort();
    return controller.signal;
  }
  const file = path.join(dir, abort);
  const poll = setInterval(() => {
    if (fs.existsSync(file)) controller.abort();
  }, 10);
  endCase = () => {
    clearInterval(poll);
    fs.rmSync(file, { force: true });
    endCase = () => {};
  };
  return controller.signal;
};

const MISSING_DIR = "missing-dir";
const big = "y".repeat(60);
const toolCases = [
  { name: "echo", command: "echo hello" },
  { name: "no output", command: "true" },
  { name: "no trailing newline", command: "printf abc" },
  { name: "empty line", command: "echo" },
  { name: "pwd", command: "pwd" },
  { name: "stderr only", command: "echo oops >&2" },
  { name: "interleaved", command: "echo a; sleep 0.2; echo b >&2; sleep 0.2; echo c; sleep 0.2; echo d >&2" },
  { name: "exit code", command: "echo out; sleep 0.2; echo err >&2; exit 3" },
  { name: "stdout then stderr", command: "echo out; echo err >&2; exit 3", updates: true, runs: 10 },
  { name: "exit code without output", command: "exit 1" },
  { name: "killed by a signal", command: "kill -9 $$" },
  { name: "killed by a signal after output", command: "echo x; kill -TERM $$" },
  { name: "1999 lines", command: "seq 1 1999" },
  { name: "2000 lines", command: "seq 1 2000" },
  { name: "many lines", command: "seq 1 30000" },
  { name: "many lines and an exit code", command: "seq 1 3000; exit 2" },
  { name: "wide lines", command: `yes ${big} | head -n 1500` },
  { name: "exactly 51200 bytes", command: "head -c 51199 /dev/zero | tr '\\0' z; echo" },
  { name: "one huge line", command: "head -c 120000 /dev/zero | tr '\\0' x; echo" },
  { name: "one huge line without newline", command: "head -c 120000 /dev/zero | tr '\\0' x" },
  { name: "huge output", command: "seq 1 200000" },
  { name: "unicode split across chunks", command: "printf '\\303'; sleep 0.3; printf '\\251 \\360\\237'; sleep 0.3; printf '\\230\\200\\n'" },
  { name: "binary", command: "printf 'a\\000b\\377\\376c\\001\\n'" },
  { name: "incomplete character at the end", command: "printf 'ab\\342\\202'" },
  { name: "crlf", command: "printf 'a\\r\\nb\\r\\n'" },
  { name: "byte order mark", command: "printf '\\357\\273\\277hi\\n'" },
  { name: "ansi kept", command: "printf '\\033[31mred\\033[0m\\n'" },
  { name: "command prefix", command: "echo $PREFIXED", prefix: "PREFIXED=yes" },
  { name: "timeout", command: "echo start; sleep 5", timeout: 0.5 },
  { name: "timeout without output", command: "sleep 5", timeout: 0.3 },
  { name: "timeout zero is none", command: "sleep 0.2; echo done", timeout: 0 },
  { name: "negative timeout is none", command: "echo done", timeout: -1 },
  { name: "timeout over the timer's maximum", command: "echo done", timeout: 2147484 },
  { name: "timeout refused before the working directory", command: "echo hi", timeout: 0, cwd: MISSING_DIR },
  { name: "abort", command: "echo begin; touch started; sleep 5", abort: "started" },
  { name: "abort without output", command: "touch started; sleep 5", abort: "started" },
  { name: "abort with long output", command: "seq 1 3000; touch started; sleep 5", abort: "started" },
  { name: "background child holding the output", command: "(sleep 1; echo late) & echo early" },
  { name: "missing working directory", command: "echo hi", cwd: MISSING_DIR },
  { name: "missing custom shell", command: "echo hi", shell: "/nonexistent/bin/bash" },
  { name: "updates", command: "echo 1; sleep 0.3; echo 2; sleep 0.3", updates: true },
  { name: "updates when truncated", command: "seq 1 2500; sleep 0.3; echo end" },
];

const userCases = [
  { name: "plain", command: "echo hello" },
  { name: "no output", command: "true" },
  { name: "ansi colours", command: "printf '\\033[1;31mred\\033[0m plain\\n'" },
  { name: "carriage returns", command: "printf 'a\\r\\nb\\rc\\n'" },
  { name: "control characters", command: "printf 'x\\001\\007y\\tz\\177\\n'" },
  { name: "osc title", command: "printf '\\033]0;title\\007text\\n'" },
  { name: "osc with st", command: "printf '\\033]8;;http://x\\033\\\\link\\033]8;;\\033\\\\\\n'" },
  { name: "linux palette", command: "printf '\\033]P0123456after\\033]Rend\\n'" },
  { name: "dcs", command: "printf '\\033Pq#0;1\\033\\\\shown\\n'" },
  { name: "short escapes", command: "printf '\\0337saved\\0338 \\033(0line\\033(B \\033=\\033>k\\n'" },
  { name: "c1 csi", command: "printf '\\302\\23331mX\\n'" },
  { name: "c1 osc alone", command: "printf '\\302\\2350;t\\007Y\\n'" },
  { name: "csi with intermediates", command: "printf 'a\\033[?25lb\\033[2 qc\\033[>0;276;0cd\\n'" },
  { name: "unfinished escape", command: "printf 'a\\033[12b\\033]unterminated\\n'" },
  { name: "escape split across chunks", command: "printf '\\033['; sleep 0.3; printf '31mred\\n'" },
  { name: "format characters", command: "printf '\\357\\277\\271x\\357\\277\\273y\\n'" },
  { name: "byte order mark", command: "printf '\\357\\273\\277hi\\n'" },
  { name: "binary", command: "printf 'a\\000b\\377\\376c\\n'" },
  { name: "incomplete character at the end", command: "printf 'ab\\342\\202'" },
  { name: "unicode split across chunks", command: "printf '\\303'; sleep 0.3; printf '\\251\\n'" },
  { name: "exit code", command: "echo out; exit 3" },
  { name: "killed by a signal", command: "echo x; kill -9 $$" },
  { name: "interleaved", command: "echo a; sleep 0.2; echo b >&2; sleep 0.2; echo c" },
  { name: "stdout then stderr", command: "echo out; echo err >&2", chunks: true, runs: 10 },
  { name: "many lines", command: "seq 1 30000" },
  { name: "wide lines", command: `yes ${big} | head -n 1150` },
  { name: "one huge line", command: "head -c 80000 /dev/zero | tr '\\0' x; echo" },
  { name: "huge output", command: "seq 1 200000" },
  { name: "many lines with escapes", command: "for i in $(seq 1 2500); do printf '\\033[32m%s\\033[0m\\r\\n' $i; done" },
  { name: "abort", command: "echo begin; touch started; sleep 5", abort: "started" },
  { name: "aborted with a missing working directory", command: "echo never", abort: "now", cwd: MISSING_DIR },
  { name: "missing working directory", command: "echo hi", cwd: MISSING_DIR },
  { name: "chunks", command: "echo 1; sleep 0.3; printf '\\033[1m2\\033[0m\\n'", chunks: true },
];

const workDir = (c) => (c.cwd === MISSING_DIR ? path.join(cwd, MISSING_DIR) : cwd);

// A case with `runs` runs that many times and must give the same entry every time.
const repeated = async (c, once) => {
  const entry = await once();
  for (let i = 1; i < (c.runs ?? 1); i++) {
    const again = await once();
    if (JSON.stringify(again) !== JSON.stringify(entry)) {
      throw new Error(`${c.name}: run ${i + 1} differs:\n${JSON.stringify(entry)}\n${JSON.stringify(again)}`);
    }
  }
  return entry;
};

const runTool = async (c) => {
  const { fix, files } = normalizer();
  const definition = createBashToolDefinition(workDir(c), { commandPrefix: c.prefix, shellPath: c.shell });
  const updates = [];
  const args = { command: c.command, ...(c.timeout === undefined ? {} : { timeout: c.timeout }) };
  let outcome;
  try {
    // No session context: the PI_* session variables are the agent's, not the tool's.
    const result = await definition.execute("call", args, signalFor(c.abort, workDir(c)), (u) => updates.push(u), undefined);
    outcome = { result: fix(result) };
  } catch (error) {
    outcome = { error: fix(error.message) };
  }
  endCase();
  const entry = { ...c, ...outcome };
  if (c.updates) entry.updates = fix(updates);
  entry.firstUpdate = fix(updates[0]);
  entry.lastUpdate = fix(updates[updates.length - 1]);
  if (files.full) entry.fullOutput = files.full;
  return compact(entry);
};

const tool = [];
for (const c of toolCases) tool.push(await repeated(c, () => runTool(c)));

const runUser = async (c) => {
  const { fix, files } = normalizer();
  const chunks = [];
  let outcome;
  try {
    const result = await executeBashWithOperations(c.command, workDir(c), createLocalBashOperations(), {
      signal: signalFor(c.abort, workDir(c)),
      onChunk: (chunk) => chunks.push(chunk),
    });
    // The executor ends its file stream without waiting for it.
    await new Promise((resolve) => setTimeout(resolve, 300));
    outcome = { result: fix(result) };
  } catch (error) {
    outcome = { error: fix(error.message) };
  }
  endCase();
  const entry = { ...c, ...outcome };
  if (c.chunks) entry.chunkTexts = chunks;
  if (files.full) entry.fullOutput = files.full;
  return compact(entry);
};

const user = [];
for (const c of userCases) user.push(await repeated(c, () => runUser(c)));

// Random texts over the characters escape sequences are made of, cleaned as the executor cleans
// a chunk (the Rust test sends each through a real command in one piece).
let seed = 20260522;
const random = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const alphabet = [
  "\u001b", "\u001b", "\u001b", "[", "[", "]", "]", "P", "R", "X", "^", "_", "k", "\\", "\u0007",
  "\u009b", "\u009c", "\u009d", "\u0090", "\u0098", "\u009e", "\u009f", "\u0085",
  "0", "1", "2", "7", "8", "a", "A", "F", "f", "l", "m", "q", "y", "c", "Q", "Z", ";", "?", " ", "!", "/",
  "(", "#", "=", ">", "<", "~", "|", "}", "{", "@", "`", "x", "\u0018", "\u001a", "\r", "\n", "\t",
  "\u0001", "\u007f", "é", "\ufff9", "\ufffb", "😀",
  "\u001b[", "\u001b]", "\u001bP", "\u001b\\", "\u001b[1;31m", "\u001b[0m", "\u001b]0;title\u0007",
  "\u001b]8;;http://x\u001b\\", "\u001b]P1a2B3c4", "\u001b]R", "\u001b(0", "\u001b#8", "\u001b 7",
  "\u001b[?25h", "\u001b[>0;1c", "\u001b[2 q", "\u001b_apc\u001b\\", "\u001bkname\u001b\\", "31", "1;2",
];
const clean = [];
for (let i = 0; i < 300; i++) {
  const length = 1 + Math.floor(random() * 40);
  let input = "";
  for (let j = 0; j < length; j++) input += alphabet[Math.floor(random() * alphabet.length)];
  clean.push({ input, output: sanitizeBinaryOutput(stripAnsi(input)).replace(/\r/g, "") });
}

fs.rmSync(cwd, { recursive: true, force: true });
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, JSON.stringify({ tool, user, clean }, null, 1) + "\n");
console.log(`${tool.length} tool cases, ${user.length} user cases, ${clean.length} cleaned texts -> ${out}`);
