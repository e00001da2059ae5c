// The extension host: loads a user's Pi extensions with Pi 1.5.2's own loader (its jiti, its
// virtual modules, its handler semantics) and serves them to the harness over stdio, one JSON
// object a line (LF framing; U+2028/U+2029 escaped as Pi's RPC writes them).
//
// The install is named by PI_EXTENSION_HOST_PI_DIR (the folder holding node_modules with
// @earendil-works/pi-coding-agent), as the fixture scripts name the original.
//
// Requests (harness -> host), each with a numeric `id`:
//   {"id", "type": "init", "paths": [...], "cwd", "projectTrusted"} -> the registrations
//   {"id", "type": "tool.execute", "name", "toolCallId", "args", "cwd"} -> updates, then the result
//   {"id", "type": "abort", "target"}               -> aborts request `target`
// Answers (host -> harness):
//   {"id", "type": "response", "success": true, "data"} or {"id", "type": "response", "success": false, "error"}
//   {"id", "type": "tool.update", "partial"}       (a tool's onUpdate)
// and the extension UI's (`extension-ui.mjs`, joined to this file as a data: URL).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { ExtensionUi } from "./extension-ui.mjs";

const PACKAGE = "@earendil-works/pi-coding-agent";
const MIN_NODE = [22, 19];

// Stdout is the protocol's alone: what extensions print through the console goes to stderr, so
// that no line of theirs is read as an answer.
const protocol = process.stdout.write.bind(process.stdout);
for (const name of ["log", "info", "debug", "dir", "table"]) console[name] = console.error;
process.stdout.write = (chunk, ...rest) => process.stderr.write(chunk, ...rest);

function write(message) {
  const line = JSON.stringify(message).replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029");
  protocol(`${line}\n`);
}

/** The bundle chunk of the install that exports all `names` (the package's public API). */
async function bundled(piDir, ...names) {
  const chunks = path.join(piDir, "node_modules", PACKAGE, "dist", "bundle", "chunks");
  for (const name of fs.readdirSync(chunks).filter((n) => n.endsWith(".js"))) {
    const file = path.join(chunks, name);
    const text = fs.readFileSync(file, "utf8");
    const exported = new Set();
    for (const [, list] of text.matchAll(/export\s*\{([^}]*)\}/g)) {
      for (const item of list.split(",")) exported.add(item.trim().split(/\s+as\s+/).pop());
    }
    if (names.every((n) => exported.has(n))) return import(pathToFileURL(file).href);
  }
  throw new Error(`no module of ${chunks} exports ${names.join(", ")}`);
}

const tools = new Map();
const running = new Map();
const ui = new ExtensionUi(write);

function plain(value) {
  return JSON.parse(JSON.stringify(value ?? null));
}

async function init(request) {
  const [major, minor] = process.versions.node.split(".").map(Number);
  if (major < MIN_NODE[0] || (major === MIN_NODE[0] && minor < MIN_NODE[1])) {
    throw new Error(`Node.js >= ${MIN_NODE.join(".")} is required to run extensions, found ${process.versions.node}`);
  }
  const piDir = process.env.PI_EXTENSION_HOST_PI_DIR;
  if (!piDir) throw new Error("PI_EXTENSION_HOST_PI_DIR does not name a Pi 1.5.2 install");
  const { discoverAndLoadExtensions } = await bundled(piDir, "discoverAndLoadExtensions");
  // The harness discovered the paths (trust decided there): an empty folder stands for the
  // agent directory, and for the project too when the loader would find in it extensions the
  // harness left out (an untrusted project's), so that the loader discovers nothing more. The
  // project is the extensions' cwd otherwise (`pi.exec`'s default folder).
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), "pi-extension-host-"));
  const leftOut = !request.projectTrusted && fs.existsSync(path.join(request.cwd, ".pi", "extensions"));
  const result = await discoverAndLoadExtensions(request.paths, leftOut ? empty : request.cwd, empty);
  // The loader's stand-in folder is the extensions' cwd when the project was left out: it
  // goes when the host does.
  if (leftOut) process.on("exit", () => fs.rmSync(empty, { recursive: true, force: true }));
  else fs.rmSync(empty, { recursive: true, force: true });
  const registered = [];
  for (const extension of result.extensions) {
    for (const [name, tool] of extension.tools) {
      tools.set(name, tool.definition);
      const d = tool.definition;
      registered.push(plain({
        name: d.name, label: d.label ?? d.name, description: d.description, promptSnippet: d.promptSnippet,
        promptGuidelines: d.promptGuidelines, parameters: d.parameters, executionMode: d.executionMode,
      }));
    }
  }
  return { tools: registered, errors: result.errors };
}

async function execute(request) {
  const tool = tools.get(request.name);
  if (!tool) throw new Error(`Tool ${request.name} is not registered by any extension`);
  const controller = new AbortController();
  running.set(request.id, controller);
  try {
    const onUpdate = (partial) => write({ id: request.id, type: "tool.update", partial: plain(partial) });
    const ctx = { cwd: request.cwd, hasUI: ui.enabled, ui: ui.context(request.id), signal: controller.signal };
    return plain(await tool.execute(request.toolCallId, request.args, controller.signal, onUpdate, ctx));
  } finally {
    running.delete(request.id);
  }
}

async function handle(request) {
  try {
    let data;
    if (request.type === "init") data = await init(request);
    else if (request.type === "tool.execute") data = await execute(request);
    else if (ui.accepts(request)) return;
    else if (request.type === "abort") {
      running.get(request.target)?.abort();
      return;
    } else throw new Error(`unknown request type ${JSON.stringify(request.type)}`);
    write({ id: request.id, type: "response", success: true, data });
  } catch (error) {
    write({ id: request.id, type: "response", success: false, error: error instanceof Error ? error.message : String(error) });
  }
}

let buffer = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buffer += chunk;
  let end;
  while ((end = buffer.indexOf("\n")) !== -1) {
    const line = buffer.slice(0, end).replace(/\r$/, "");
    buffer = buffer.slice(end + 1);
    if (!line.trim()) continue;
    let request;
    try {
      request = JSON.parse(line);
    } catch (error) {
      write({ type: "response", success: false, error: `Failed to parse request: ${error.message}` });
      continue;
    }
    void handle(request);
  }
});
process.stdin.on("end", () => process.exit(0));
