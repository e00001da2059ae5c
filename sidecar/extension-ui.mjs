// The extensions' `ctx.ui` in the extension host, as Pi 1.5.2's RPC mode builds it
// (dist/modes/rpc/rpc-mode.js): each dialog and notice is Pi's `extension_ui_request` line,
// sent to the harness (which writes it on its stdout in RPC mode and records it), and a dialog
// waits for the client's `extension_ui_response` the harness passes back. Without a UI (print
// and json modes: the harness never sends `ui.enable`) it is Pi's no-op context, whose dialogs
// answer their defaults at once. `UiPrompts` tells every extension of a dialog, as Pi's runner does.
//
// Requests (harness -> host), no answer:
//   {"type": "ui.enable"}                          the run has a UI (RPC mode)
//   {"type": "ui.response", "response": {...}}     a client's extension_ui_response line
// Messages (host -> harness):
//   {"id", "type": "ui.request", "request": {...}} the line to write; `id` is the request
//                                                  (a tool's execution) that asked it
import crypto from "node:crypto";

const noOp = {
  select: async () => undefined,
  confirm: async () => false,
  input: async () => undefined,
  editor: async () => undefined,
  custom: async () => undefined,
  notify() {},
  onTerminalInput: () => () => {},
  setStatus() {},
  setWorkingMessage() {},
  setWorkingVisible() {},
  setWorkingIndicator() {},
  setHiddenThinkingLabel() {},
  setWidget() {},
  setFooter() {},
  setHeader() {},
  setTitle() {},
  pasteToEditor() {},
  setEditorText() {},
  getEditorText: () => "",
  addAutocompleteProvider() {},
  setEditorComponent() {},
  getEditorComponent: () => undefined,
  getAllThemes: () => [],
  getTheme: () => undefined,
  setTheme: () => ({ success: false, error: "UI not available" }),
  getToolsExpanded: () => false,
  setToolsExpanded() {},
};

export class ExtensionUi {
  /** `write` sends one message to the harness. */
  constructor(write) {
    this.write = write;
    this.enabled = false;
    this.pending = new Map();
  }

  /** Handles a `ui.*` request; says whether `request` was one. */
  accepts(request) {
    if (request.type === "ui.enable") {
      this.enabled = true;
      return true;
    }
    if (request.type !== "ui.response") return false;
    const response = request.response ?? {};
    const pending = this.pending.get(response.id);
    if (pending) {
      this.pending.delete(response.id);
      pending(response);
    }
    return true;
  }

  /** The `ctx.ui` of the request `owner` (a tool's execution). */
  context(owner) {
    if (!this.enabled) return noOp;
    const send = (request) => this.write({ id: owner, type: "ui.request", request });
    const notice = (request) => send({ type: "extension_ui_request", id: crypto.randomUUID(), ...request });
    const dialog = (opts, fallback, request, parse) => {
      if (opts?.signal?.aborted) return Promise.resolve(fallback);
      const id = crypto.randomUUID();
      return new Promise((resolve) => {
        let timer;
        const done = () => {
          if (timer) clearTimeout(timer);
          opts?.signal?.removeEventListener("abort", onAbort);
          this.pending.delete(id);
        };
        const onAbort = () => {
          done();
          resolve(fallback);
        };
        opts?.signal?.addEventListener("abort", onAbort, { once: true });
        if (opts?.timeout) timer = setTimeout(onAbort, opts.timeout);
        this.pending.set(id, (response) => {
          done();
          resolve(parse(response));
        });
        send({ type: "extension_ui_request", id, ...request });
      });
    };
    const value = (r) => ("cancelled" in r && r.cancelled ? undefined : "value" in r ? r.value : undefined);
    return {
      ...noOp,
      select: (title, options, opts) =>
        dialog(opts, undefined, { method: "select", title, options, timeout: opts?.timeout }, value),
      confirm: (title, message, opts) =>
        dialog(opts, false, { method: "confirm", title, message, timeout: opts?.timeout }, (r) =>
          "cancelled" in r && r.cancelled ? false : "confirmed" in r ? r.confirmed : false),
      input: (title, placeholder, opts) =>
        dialog(opts, undefined, { method: "input", title, placeholder, timeout: opts?.timeout }, value),
      editor: (title, prefill) => dialog(undefined, undefined, { method: "editor", title, prefill }, value),
      notify: (message, type) => notice({ method: "notify", message, notifyType: type }),
      setStatus: (key, text) => notice({ method: "setStatus", statusKey: key, statusText: text }),
      setWidget: (key, content, options) => {
        // Only lines pass in RPC mode; component factories need Pi's terminal UI.
        if (content === undefined || Array.isArray(content)) {
          notice({ method: "setWidget", widgetKey: key, widgetLines: content, widgetPlacement: options?.placement });
        }
      },
      setTitle: (title) => notice({ method: "setTitle", title }),
      pasteToEditor(text) {
        this.setEditorText(text);
      },
      setEditorText: (text) => notice({ method: "set_editor_text", text }),
      setTheme: () => ({ success: false, error: "Theme switching not supported in RPC mode" }),
    };
  }
}

/** Pi's runner tells every extension of a dialog: `ui_prompt_start` as the outermost one opens,
 * `ui_prompt_end` as it settles (its `withUIPrompt`, which counts nested dialogs across all of
 * them), each in a microtask (its `emitUIPromptEvent`). The host keeps one runner per
 * extension, so each shares one count and has its events told to every extension's handlers,
 * in load order; Pi's own code still wraps the dialogs, and only a context with a UI is wrapped.
 * The handlers run within the event or command that opened the dialog, whose answer waits for
 * them (`told`) and carries what they asked for. */
export class UiPrompts {
  /** `store()` is the event or command being handled; `hearers(type)` the runners of the
   * extensions with handlers of `type`, in load order. */
  constructor(ui, store, hearers) {
    this.ui = ui;
    this.store = store;
    this.hearers = hearers;
    this.shared = { uiPromptDepth: 0, activeUIPrompt: undefined };
  }

  /** Makes `runner`'s dialogs counted and told with every other runner's. */
  share(runner) {
    for (const field of ["uiPromptDepth", "activeUIPrompt"]) {
      Object.defineProperty(runner, field, {
        configurable: true,
        get: () => this.shared[field],
        set: (value) => {
          this.shared[field] = value;
        },
      });
    }
    runner.emitUIPromptEvent = (event) => this.tell(event);
  }

  tell(event) {
    const store = this.store();
    const told = new Promise((resolve) => queueMicrotask(() => resolve(this.tellEvery(event, store?.owner))));
    store?.told?.push(told);
  }

  async tellEvery(event, owner) {
    for (const runner of this.hearers(event.type)) {
      if (this.ui.enabled && !runner.hasUI()) runner.setUIContext(this.ui.context(owner), "rpc");
      await runner.emit(event);
    }
  }

  /** Waits until the dialogs' events told during `store`'s handlers have been heard. */
  static async told(store) {
    while (store.told.length > 0) await Promise.all(store.told.splice(0));
  }
}
