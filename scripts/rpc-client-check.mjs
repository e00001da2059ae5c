#!/usr/bin/env node
// Drives OUR `pi` binary in RPC mode with the original package's own RPC client
// (dist/modes/rpc/rpc-client.js): prompt, steer, follow_up, get_state, get_messages, abort.
// The model is the conformance kit's mock LLM on 127.0.0.1. Either edition's client works:
// Pi 1.5.2's (`@earendil-works`, which waits for `agent_settled` and reads each command's
// disposition, and whose sessions count the system message) or 0.73.1's (`@mariozechner`).
//
// Usage: node scripts/rpc-client-check.mjs <pi install dir> <our pi binary> [mock kit dir]
//   <pi install dir>  where install-pi.sh or install-pi-1.5.2.sh put the original (holds
//                     node_modules/)
//   <our pi binary>   e.g. target/debug/pi
//   [mock kit dir]    the conformance kit (default: conformance/ in this repository)
// Exits 0 when every check passes.

import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import assert from "node:assert/strict";

const [piDir, ourBinary, kitArg] = process.argv.slice(2);
if (!piDir || !ourBinary) {
	console.error("usage: rpc-client-check.mjs <pi install dir> <our pi binary> [mock kit dir]");
	process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const kit = resolve(kitArg ?? join(here, "../conformance"));
const binary = resolve(ourBinary);
const clientIn = (scope) => join(resolve(piDir), `node_modules/${scope}/pi-coding-agent/dist/modes/rpc/rpc-client.js`);
// 1.5.2 when its package is there, else 0.73.1.
const edition152 = existsSync(clientIn("@earendil-works"));
const clientModule = clientIn(edition152 ? "@earendil-works" : "@mariozechner");
// 1.5.2 records the system prompt as the session's first message.
const system = edition152 ? ["system"] : [];
for (const [what, path] of [["RPC client", clientModule], ["binary", binary], ["mock", join(kit, "mock/mock_llm.py")]]) {
	if (!existsSync(path)) {
		console.error(`${what} not found: ${path}`);
		process.exit(2);
	}
}
const { RpcClient } = await import(pathToFileURL(clientModule).href);

const root = mkdtempSync(join(tmpdir(), "rpc-client-check-"));
const [home, agent, cwd] = ["home", "agent", "cwd"].map((d) => join(root, d));
for (const dir of [home, agent, cwd]) mkdirSync(dir, { recursive: true });

// One step per model request, in the order the checks below make them.
const script = [
	{ text: ["Hello ", "from ", "the ", "mock."] },
	{ chunk_delay_ms: 200, text: ["Working ", "on ", "it ", "now."] },
	{ text: ["Steer ", "seen."] },
	{ text: ["Follow-up ", "seen."] },
	{ chunk_delay_ms: 300, text: ["A ", "long ", "answer ", "that ", "will ", "be ", "cut ", "short."] },
];
writeFileSync(join(root, "script.json"), JSON.stringify(script));
const portFile = join(root, "port");
const mock = spawn("python3", [join(kit, "mock/mock_llm.py"), "--script", join(root, "script.json"), "--log", join(root, "mock.jsonl"), "--port-file", portFile], { stdio: "ignore" });

let client;
async function main() {
	const port = await waitForPort(portFile);
	writeFileSync(join(agent, "models.json"), JSON.stringify({
		providers: { mock: {
			baseUrl: `http://127.0.0.1:${port}/v1`, api: "openai-completions", apiKey: "mock-key",
			models: [{ id: "mock-model", name: "Mock Model", contextWindow: 128000, maxTokens: 16384 }],
		} },
	}));
	// The client runs `node <cliPath> --mode rpc ...`: a shim hands everything to our binary.
	const shim = join(root, "pi-shim.mjs");
	writeFileSync(shim, [
		'import { spawn } from "node:child_process";',
		`const child = spawn(${JSON.stringify(binary)}, process.argv.slice(2), { stdio: "inherit" });`,
		'for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, () => child.kill(signal));',
		"child.on(\"exit\", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));",
	].join("\n"));
	client = new RpcClient({
		cliPath: shim, cwd, provider: "mock", model: "mock-model",
		env: { HOME: home, PI_CODING_AGENT_DIR: agent, PI_OFFLINE: "1" },
	});
	await client.start();
	console.log(`# ${edition152 ? "Pi 1.5.2" : "Pi 0.73.1"}'s RPC client`);

	// get_state before anything ran.
	const initial = await client.getState();
	assert.equal(initial.model.id, "mock-model");
	assert.equal(initial.isStreaming, false);
	assert.equal(initial.messageCount, 0);
	check("get_state");

	// prompt, waited for through the client's own event collection.
	const events = await client.promptAndWait("Say hello");
	const types = events.map((e) => e.type);
	assert.equal(types[0], "agent_start");
	assert.equal(types.at(-1), edition152 ? "agent_settled" : "agent_end");
	assert.ok(types.includes("message_update"));
	assert.equal(await client.getLastAssistantText(), "Hello from the mock.");
	check("prompt");

	// steer and follow_up while the next run streams.
	const idle = client.waitForIdle();
	const firstDelta = new Promise((resolveDelta) => {
		const stop = client.onEvent((e) => {
			if (e.type === "message_update") {
				stop();
				resolveDelta();
			}
		});
	});
	const started = await client.prompt("Start working");
	await firstDelta;
	const steered = await client.steer("Also note this steer.");
	const followed = await client.followUp("And then this follow-up.");
	if (edition152) assert.deepEqual([started, steered, followed], ["started", "queued", "queued"]);
	const streaming = await client.getState();
	assert.equal(streaming.isStreaming, true);
	assert.equal(streaming.pendingMessageCount, 2);
	await idle;
	const afterQueue = await client.getMessages();
	assert.deepEqual(
		afterQueue.map((m) => m.role === "user" ? `user:${m.content[0].text}` : m.role),
		[...system, "user:Say hello", "assistant", "user:Start working", "assistant", "user:Also note this steer.", "assistant", "user:And then this follow-up.", "assistant"],
	);
	check("steer + follow_up");

	// abort in the middle of a slow answer.
	const aborted = client.waitForIdle();
	const secondDelta = new Promise((resolveDelta) => {
		let deltas = 0;
		const stop = client.onEvent((e) => {
			if (e.type === "message_update" && e.assistantMessageEvent?.type === "text_delta" && ++deltas === 2) {
				stop();
				resolveDelta();
			}
		});
	});
	await client.prompt("Give a long answer");
	await secondDelta;
	await client.abort();
	await aborted;
	const messages = await client.getMessages();
	const last = messages.at(-1);
	assert.equal(last.role, "assistant");
	assert.equal(last.stopReason, "aborted");
	const state = await client.getState();
	assert.equal(state.isStreaming, false);
	assert.equal(state.messageCount, 10 + system.length);
	check("abort");

	const stats = await client.getSessionStats();
	assert.equal(stats.userMessages, 5);
	assert.equal(stats.assistantMessages, 5);
	check("get_session_stats");
}

function check(name) {
	console.log(`ok - ${name}`);
}

async function waitForPort(file) {
	for (let i = 0; i < 400; i++) {
		if (existsSync(file)) {
			const port = Number(readFileSync(file, "utf8").trim());
			if (port) return port;
		}
		await new Promise((r) => setTimeout(r, 25));
	}
	throw new Error("the mock LLM did not start");
}

let code = 0;
try {
	await main();
	console.log("rpc-client-check: all checks passed");
} catch (error) {
	console.error(`rpc-client-check: FAILED: ${error?.stack ?? error}`);
	code = 1;
} finally {
	await client?.stop().catch(() => {});
	mock.kill();
	rmSync(root, { recursive: true, force: true });
}
process.exit(code);
