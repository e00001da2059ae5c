// The extension host's shared state: its one output (stdout is the protocol's alone), the
// extensions loaded and their tools, and the event being handled (`current`), which every other
// module of the host reads. Imports nothing of the host, so that each module can import it.
import { AsyncLocalStorage } from "node:async_hooks";

// Stdout is the protocol's alone: what extensions print through the console goes to stderr, so
// that no line of theirs is read as an answer.
const protocol = process.stdout.write.bind(process.stdout);
for (const name of ["log", "info", "debug", "dir", "table"]) console[name] = console.error;
process.stdout.write = (chunk, ...rest) => process.stderr.write(chunk, ...rest);

export function write(message) {
  const line = JSON.stringify(message).replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029");
  protocol(`${line}\n`);
}

export const tools = new Map();
export const running = new Map();
/** What `init` loaded: the extensions (in load order), their shared runtime, Pi's runner class. */
export const loaded = { extensions: [], runtime: undefined, Runner: undefined, cwd: undefined, runners: new Map() };

export function plain(value) {
  return JSON.parse(JSON.stringify(value ?? null));
}

export const current = new AsyncLocalStorage();

/** The run's chat models and the providers with auth, as the harness gave them. */
export const catalog = { models: [], authProviders: new Set(), oauthProviders: new Set() };

export const hasAuth = (provider) => catalog.authProviders.has(provider);

/** The event being handled: its state mirror, the actions and errors collected so far, and (for
 * an event) the controller of its abort signal. */
export function scope() {
  const store = current.getStore();
  if (!store) throw new Error("This extension API is only available while one of its handlers runs");
  return store;
}

/** Pi's `abort()`, which `ctx.abort()` and `ctx.compact()` call, fires at once the signal of the
 * event being handled (a compaction's `session_before_compact`). */
export function abortEvent() {
  current.getStore()?.controller?.abort();
}

export function unsupported(name) {
  return () => {
    throw new Error(`${name} is not supported by this harness's extension host yet`);
  };
}
