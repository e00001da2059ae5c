// Finds the original's code for the fixture generators (scripts/gen-*.mjs), so that each names
// functions, never the layout of one release.
//
// Pi 1.5.2 ships its own modules readable under
// node_modules/@earendil-works/pi-coding-agent/dist, but pi-ai, pi-agent-core and pi-tui only
// inlined into the esbuild bundle (dist/bundle/chunks/*.js, hashed names that change with every
// release). `bundled(...names)` imports the chunk that exports all the names; `agentModule(rel)`
// imports one of the agent's readable modules, its imports of the bundled packages resolved to the
// chunks that export what it imports.
//
//   import { original } from "./pi-original.mjs";
//   const pi = original(piDir);   // the install folder (the one holding node_modules)
//   const { isContextOverflow } = await pi.bundled("isContextOverflow");
//   const { truncateHead } = await pi.agentModule("core/tools/truncate.js");
import fs from "fs";
import path from "path";
import { register } from "node:module";
import { pathToFileURL } from "url";

const PACKAGE = "@earendil-works/pi-coding-agent";
const BUNDLED = /^@earendil-works\/pi-(ai|agent-core|tui|mcp|codemode)(\/[a-z/-]+)?$/;

/** The names each bundle chunk exports, by file. */
function chunkExports(chunks) {
  const table = new Map();
  for (const name of fs.readdirSync(chunks).filter((n) => n.endsWith(".js"))) {
    const file = path.join(chunks, name);
    const names = new Set();
    for (const [, list] of fs.readFileSync(file, "utf8").matchAll(/export\s*\{([^}]*)\}/g)) {
      for (const item of list.split(",")) {
        const exported = item.trim().split(/\s+as\s+/).pop();
        if (exported) names.add(exported);
      }
    }
    table.set(file, names);
  }
  return table;
}

/** The chunk exporting every name; among several, the one exporting the most (a package's index
 *  re-exports what a provider's own chunk also exports under the same name). */
function chunkFor(table, names) {
  const best = bestChunk(table, names);
  if (!best) throw new Error(`no bundle chunk of the original exports ${names.join(", ")}`);
  return best;
}

function bestChunk(table, names) {
  let best;
  for (const [file, exported] of table) {
    if (names.every((n) => exported.has(n)) && (!best || exported.size > table.get(best).size)) best = file;
  }
  return best;
}

/** The original installed in `piDir`: its dist folder, its bundled functions and its modules. */
export function original(piDir) {
  const dist = path.join(piDir, "node_modules", PACKAGE, "dist");
  if (!fs.existsSync(dist)) throw new Error(`${dist} is missing: is ${piDir} a Pi 1.5 install?`);
  const table = chunkExports(path.join(dist, "bundle/chunks"));
  let hooked = false;
  const hook = () => {
    if (hooked) return;
    hooked = true;
    // Each `import {a, b}` (or `import * as ns`) from "@earendil-works/pi-ai" of a readable module
    // becomes a module re-exporting each name from the chunk that exports it. A name no chunk exports (the bundle
    // dropped it with the TUI code using it) becomes a function that throws when called, so that
    // modules which only import it still load.
    const shims = {};
    const importsOf = /import\s*(?:\{([^}]*)\}|\*\s*as\s+(\w+))\s*from\s*"(@earendil-works\/[^"]+)"/g;
    for (const file of walk(dist)) {
      const text = fs.readFileSync(file, "utf8");
      for (const [, list, namespace, spec] of text.matchAll(importsOf)) {
        if (!BUNDLED.test(spec)) continue;
        // A namespace import needs the names the module reads from it.
        const names = namespace
          ? [...new Set([...text.matchAll(new RegExp(`\\b${namespace}\\.(\\w+)`, "g"))].map((m) => m[1]))]
          : list.split(",").map((i) => i.trim().split(/\s+as\s+/)[0].replace(/^type\s+/, "")).filter(Boolean);
        const key = `${pathToFileURL(file).href}\n${spec}`;
        const lines = names.flatMap((n) => {
          const chunk = bestChunk(table, [n]);
          if (chunk) return [`export { ${n} } from ${JSON.stringify(pathToFileURL(chunk).href)};`];
          return [`export function ${n}() { throw new Error("the original's bundle has no ${n}"); }`];
        });
        shims[key] = `data:text/javascript,${encodeURIComponent(lines.join("\n"))}`;
      }
    }
    const source = `const shims = ${JSON.stringify(shims)};
export async function resolve(spec, context, next) {
  const shim = shims[context.parentURL + "\\n" + spec];
  return shim ? { url: shim, shortCircuit: true } : next(spec, context);
}`;
    register(`data:text/javascript,${encodeURIComponent(source)}`);
  };
  return {
    dist,
    /** The bundle chunk exporting all `names`. */
    bundled: (...names) => import(pathToFileURL(chunkFor(table, names)).href),
    /** One of the agent's own modules, by its path under dist. */
    agentModule: (relative) => {
      hook();
      return import(pathToFileURL(path.join(dist, relative)).href);
    },
    /** A package the install holds beside the agent (typebox, photon, strip-ansi, ...). */
    dependency: (relative) => import(pathToFileURL(path.join(piDir, "node_modules", relative)).href),
  };
}

function* walk(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== "bundle") yield* walk(full);
    } else if (entry.name.endsWith(".js")) yield full;
  }
}
