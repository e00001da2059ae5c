// The extensions' `ctx.ui` in the extension host, as Pi 1.5.2's RPC mode builds it
// (dist/modes/rpc/rpc-mode.js): each dialog and notice is Pi's `extension_ui_request` line,
// sent to the harness (which writes it on its stdout in RPC mode and records it), and a dialog
// waits for the client's `extension_ui_response` the harness passes back. Without a UI (print
// and json modes: the harness never sends `ui.enable`) it is Pi's no-op context, whose dialogs
// answer their defaults at once.
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
