#!/usr/bin/env python3
"""Whole-process speed of the `pi` binary against the original Pi: `pi --version`, and one
json-mode run (a prompt answered by the conformance kit's scripted mock LLM on 127.0.0.1).

    python3 benches/scripts/cli_side_by_side.py [--pi-dir DIR] [--runs 7]

The original is installed with the kit's install script of --edition (1.5.2 by default) unless
--pi-dir names its install folder. Runs alternate between the two; prints which Pi the original
is, the median wall time of each and their ratio.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import original as orig_pi

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
KIT = REPO / "conformance"


def timed(cmd, env, cwd):
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{cmd} failed ({proc.returncode}): {proc.stderr.decode()[-500:]}")
    return wall, proc.stdout


def start_mock(work, runs):
    # One scripted answer per json-mode run of either binary.
    script = [{"text": ["Hello", " from", " the", " mock", "."]}] * (2 * runs + 2)
    (work / "script.json").write_text(json.dumps(script))
    port_file = work / "port"
    mock = subprocess.Popen([sys.executable, str(KIT / "mock" / "mock_llm.py"), "--script",
                             str(work / "script.json"), "--log", str(work / "requests.jsonl"),
                             "--port-file", str(port_file)], stderr=subprocess.DEVNULL)
    for _ in range(200):
        if port_file.exists() and port_file.read_text().strip():
            return mock, int(port_file.read_text())
        time.sleep(0.025)
    mock.kill()
    sys.exit("the mock did not start")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pi-dir", help="folder where the kit's install script installed the original")
    orig_pi.add_edition_argument(ap)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()

    work = pathlib.Path(tempfile.mkdtemp())
    pi_dir = pathlib.Path(args.pi_dir) if args.pi_dir else work / "pi"
    if not args.pi_dir:
        orig_pi.install(args.edition, pi_dir)
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "pi-cli"], cwd=REPO, check=True)
    binaries = {"original": str(pi_dir / "node_modules" / ".bin" / "pi"),
                "ours": str(REPO / "target" / "release" / "pi")}

    mock, port = start_mock(work, args.runs)
    try:
        agent = work / "agent"
        agent.mkdir()
        (agent / "models.json").write_text(json.dumps({"providers": {"mock": {
            "baseUrl": f"http://127.0.0.1:{port}/v1", "api": "openai-completions", "apiKey": "mock-key",
            "models": [{"id": "mock-model", "name": "Mock Model", "contextWindow": 128000,
                        "maxTokens": 16384}]}}}))
        cwd = work / "cwd"
        cwd.mkdir()
        env = {k: v for k, v in os.environ.items()
               if not (k.startswith("PI_") or k.endswith("_API_KEY") or k.endswith("_TOKEN"))}
        env.update({"HOME": str(work), "PI_CODING_AGENT_DIR": str(agent), "PI_OFFLINE": "1",
                    "PI_TELEMETRY": "0"})
        cases = {
            "pi --version": ["--version"],
            "pi --mode json -p (one answer from the mock)":
                ["--provider", "mock", "--model", "mock-model", "--mode", "json", "-p", "Say hello"],
        }
        print(f"original: Pi {orig_pi.version(binaries['original'])}")
        print(f"{'case':48} {'original':>10} {'ours':>10} {'ratio':>7}")
        for name, argv in cases.items():
            times = {"original": [], "ours": []}
            for _ in range(args.runs):
                for who, binary in binaries.items():
                    wall, _ = timed([binary, *argv], env, cwd)
                    times[who].append(wall)
            orig = statistics.median(times["original"])
            ours = statistics.median(times["ours"])
            print(f"{name:48} {orig * 1000:8.0f}ms {ours * 1000:8.1f}ms {orig / ours:6.0f}x")
    finally:
        mock.kill()


if __name__ == "__main__":
    main()
