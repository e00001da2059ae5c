#!/usr/bin/env python3
"""Resuming a large session, whole process against whole process: the original Pi against this
harness's `pi`, run alternately in one call.

    python3 benches/scripts/session_side_by_side.py [--original PI] [--ours PI] [--entries 20000]
        [--prompt-entries N] [--runs 7]

Generates a seeded session with the conformance kit's gen_session.py (its cwd is a folder that
exists, or the original refuses to open it), then measures, for each binary:

  * `pi --mode rpc --session FILE`: the time from the process's start to the `get_state`
    response on stdout, and to its exit once stdin is closed;
  * `pi --session COPY --mode json -p "Say hello"` answered by the kit's scripted mock LLM on
    127.0.0.1, served by `pi-mock` (resume plus one prompt; each run works on a fresh copy of the file, of
    --prompt-entries entries if given);
  * the peak RSS and the CPU time (user + system, all threads) of each process, as the kernel
    accounts for the reaped child.

The original is `--original` (a `pi` executable), else `$PI_ORIGINAL`, else installed with the
kit's install script of --edition (1.5.2 by default). `--ours` defaults to target/release/pi, built
first. Prints which Pi the original is, the medians in a table, the ratios, and the command line
that produced them.
"""
import argparse
import json
import os
import pathlib
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import original as orig_pi

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
KIT = REPO / "conformance"


def rpc_get_state(binary, session, env, cwd):
    """(seconds to the get_state response, seconds to exit, peak RSS MB, CPU seconds, its data)."""
    start = time.perf_counter()
    proc = subprocess.Popen([binary, "--mode", "rpc", "--session", str(session)], env=env, cwd=cwd,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdin.write(b'{"id":"s","type":"get_state"}\n')
    proc.stdin.flush()
    response = None
    for line in proc.stdout:
        message = json.loads(line)
        if message.get("type") == "response" and message.get("id") == "s":
            response = message
            break
    answered = time.perf_counter() - start
    proc.stdin.close()
    rest = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    ended = time.perf_counter() - start
    if response is None or not response.get("success") or status != 0:
        sys.exit(f"{binary}: no get_state answer (status {status}): {rest[-300:]!r} "
                 f"{proc.stderr.read().decode()[-500:]}")
    return answered, ended, usage.ru_maxrss / 1024, cpu(usage), response["data"]


def json_prompt(binary, session, env, cwd, work):
    """(seconds to exit, peak RSS MB, CPU seconds) of a resumed session answering one prompt."""
    argv = [binary, "--session", str(session), "--provider", "mock", "--model", "mock-model",
            "--mode", "json", "-p", "Say hello"]
    out_path, err_path = work / "json.out", work / "json.err"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    proc.returncode = status
    if status != 0 or b"from the mock" not in out_path.read_bytes():
        sys.exit(f"{binary} json run failed ({status}): {err_path.read_text()[-500:]}")
    return wall, usage.ru_maxrss / 1024, cpu(usage)


def cpu(usage):
    """User plus system CPU seconds of a reaped child (all its threads)."""
    return usage.ru_utime + usage.ru_stime


def start_mock(work, answers):
    """The kit's scripted mock served by `pi-mock` (the Rust mock: a 50 MB request costs it a
    fraction of what it costs the Python one, which would otherwise dominate both timings). It
    runs `sh` reading its stdin, so closing that stdin ends both."""
    script = [{"text": ["Hello", " from", " the", " mock", "."]}] * answers
    (work / "script.json").write_text(json.dumps(script))
    folder = work / "mock"
    mock = subprocess.Popen([str(REPO / "target" / "release" / "pi-mock"), "--scenario",
                             str(work / "script.json"), "--keep", str(folder), "--",
                             "sh", "-c", "echo ready; exec cat >/dev/null"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if mock.stdout.readline().strip() != b"ready":
        mock.kill()
        sys.exit("pi-mock did not start")
    models = json.loads((folder / "agent" / "models.json").read_text())
    port = int(models["providers"]["mock"]["baseUrl"].split(":")[2].split("/")[0])
    return mock, port


def stop_mock(mock):
    mock.stdin.close()
    mock.wait(timeout=30)


def generate(entries, path, cwd):
    subprocess.run([sys.executable, str(KIT / "gen_session.py"), "--entries", str(entries),
                    "--out", str(path), "--seed", "1", "--cwd", str(cwd)],
                   check=True, stdout=subprocess.DEVNULL)


def original_binary(args, work):
    if args.original:
        return args.original
    if os.environ.get("PI_ORIGINAL"):
        return os.environ["PI_ORIGINAL"]
    return str(orig_pi.install(args.edition, work / "pi"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--original", help="the original's `pi` executable")
    orig_pi.add_edition_argument(ap)
    ap.add_argument("--ours", help="this harness's `pi` (default: target/release/pi, built first)")
    ap.add_argument("--entries", type=int, default=20000)
    ap.add_argument("--prompt-entries", type=int,
                    help="size of the session resumed for the prompt (default: --entries); the mock "
                         "parses and logs the whole request, so a huge one times the mock too")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()

    work = pathlib.Path(tempfile.mkdtemp())
    try:
        run_all(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_all(args, work):
    binaries = {"original": original_binary(args, work)}
    if args.ours:
        binaries["ours"] = args.ours
    else:
        binaries["ours"] = str(REPO / "target" / "release" / "pi")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "pi-cli", "-p", "pi-testkit"],
                   cwd=REPO, check=True)

    cwd = work / "cwd"
    cwd.mkdir()
    session = work / "large.jsonl"
    generate(args.entries, session, cwd)
    resumed = session
    if args.prompt_entries and args.prompt_entries != args.entries:
        resumed = work / "resumed.jsonl"
        generate(args.prompt_entries, resumed, cwd)

    # One scripted answer per json run of either binary, plus their warm-up runs.
    mock, port = start_mock(work, 2 * args.runs + 2)
    try:
        agent = work / "agent"
        agent.mkdir()
        (agent / "models.json").write_text(json.dumps({"providers": {"mock": {
            "baseUrl": f"http://127.0.0.1:{port}/v1", "api": "openai-completions", "apiKey": "mock-key",
            "models": [{"id": "mock-model", "name": "Mock Model", "contextWindow": 128000,
                        "maxTokens": 16384}]}}}))
        env = {k: v for k, v in os.environ.items()
               if not (k.startswith("PI_") or k.endswith("_API_KEY") or k.endswith("_TOKEN"))}
        env.update({"HOME": str(work), "PI_CODING_AGENT_DIR": str(agent), "PI_OFFLINE": "1",
                    "PI_TELEMETRY": "0"})

        rpc = {who: [] for who in binaries}
        prompt = {who: [] for who in binaries}
        states = {}
        for run in range(args.runs + 1):  # the first round warms the page cache, not counted
            for who, binary in binaries.items():
                answered, ended, peak, rpc_cpu, data = rpc_get_state(binary, session, env, cwd)
                states[who] = data
                copy = work / f"resume-{who}.jsonl"
                shutil.copyfile(resumed, copy)
                prompt_row = json_prompt(binary, copy, env, cwd, work)
                if run:
                    rpc[who].append((answered, ended, peak, rpc_cpu))
                    prompt[who].append(prompt_row)
    finally:
        stop_mock(mock)

    same = ("messageCount", "sessionId", "thinkingLevel")
    if any(states["original"].get(k) != states["ours"].get(k) for k in same):
        sys.exit(f"the two disagree on get_state: original {states['original']}, ours {states['ours']}")

    def med(rows, i):
        return statistics.median(r[i] for r in rows)

    size_mb = session.stat().st_size / 1e6
    print(f"session: {args.entries} entries, {size_mb:.1f} MB, "
          f"{states['ours']['messageCount']} messages; median of {args.runs} runs each, alternating")
    if resumed != session:
        print(f"resumed for the prompt: {args.prompt_entries} entries, "
              f"{resumed.stat().st_size / 1e6:.1f} MB")
    print(f"original: Pi {orig_pi.version(binaries['original'])}")
    print(f"{'':44} {'original':>10} {'ours':>10} {'ratio':>7}")
    rows = [
        ("rpc: start to get_state response", rpc, 0, "ms"),
        ("rpc: start to exit (stdin closed)", rpc, 1, "ms"),
        ("rpc: CPU time (user + system)", rpc, 3, "ms"),
        ("rpc: peak RSS", rpc, 2, "MB"),
        ("resume + one prompt (json mode, mock LLM)", prompt, 0, "ms"),
        ("resume + one prompt: CPU time", prompt, 2, "ms"),
        ("resume + one prompt: peak RSS", prompt, 1, "MB"),
    ]
    for name, table, i, unit in rows:
        orig, ours = med(table["original"], i), med(table["ours"], i)
        scale = 1000 if unit == "ms" else 1
        print(f"{name:44} {orig * scale:8.0f}{unit} {ours * scale:8.0f}{unit} {orig / ours:6.1f}x")
    print("command: " + " ".join(shlex.quote(a) for a in ["python3", *sys.argv]))


if __name__ == "__main__":
    main()
