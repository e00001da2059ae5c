#!/usr/bin/env python3
"""Whole-process speed of replaying a cassette against running the same session live.

    python3 benches/scripts/replay_side_by_side.py [--pi-dir DIR] [--runs 5] [--copies 40]

1. A 50-turn session (49 `read` tool calls, then an answer) is recorded once with this build's
   `pi --record`, against the kit's scripted mock through `pi-mock`.
2. Side by side, alternating: the ORIGINAL Pi running the same script live against the mock
   (`pi-mock ... -- <original pi> --mode json ...`, whole process), and `pi replay CASSETTE
   --mode json` (whole process). Prints the median wall time of each and their ratio.
3. `pi replay --check` over a folder of `--copies` copies of that cassette and the regression
   corpus, with `--jobs 1` and `--jobs 2`: the speedup of checking in parallel.

The original is installed with the kit's install script of --edition (1.5.2 by default) unless
--pi-dir names its install folder; which Pi it is is printed with the figures.
"""
import argparse
import json
import os
import pathlib
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
TURNS = 50


def timed(cmd, env=None, cwd=None, ok=(0,)):
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    if proc.returncode not in ok:
        sys.exit(f"{cmd[:4]}... failed ({proc.returncode}): {proc.stderr.decode()[-800:]}")
    return wall, proc.stdout


def scenario(path):
    steps = [{"tool_calls": [{"id": f"call_{i}", "name": "read",
                              "arguments": {"path": "notes.txt"}}]}
             for i in range(TURNS - 1)]
    steps.append({"text": ["Read it ", f"{TURNS - 1} times."]})
    notes = "".join(f"line {i}: some notes to read\n" for i in range(40))
    path.write_text(json.dumps({"files": {"notes.txt": notes}, "script": steps}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pi-dir", help="folder where the kit's install script installed the original")
    orig_pi.add_edition_argument(ap)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--copies", type=int, default=40)
    args = ap.parse_args()

    work = pathlib.Path(tempfile.mkdtemp())
    pi_dir = pathlib.Path(args.pi_dir) if args.pi_dir else work / "pi"
    if not args.pi_dir:
        orig_pi.install(args.edition, pi_dir)
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "pi-cli", "-p", "pi-testkit"],
                   cwd=REPO, check=True)
    ours = str(REPO / "target" / "release" / "pi")
    mock = str(REPO / "target" / "release" / "pi-mock")
    original = str(pi_dir / "node_modules" / ".bin" / "pi")
    scenario_file = work / "turns.json"
    scenario(scenario_file)
    cassette = work / "turns.jsonl"
    run = ["--mode", "json", "--provider", "mock", "--model", "mock-model", "-p",
           "Read notes.txt until told to stop"]
    try:
        timed([mock, "--scenario", str(scenario_file), "--", ours, "--record", str(cassette), *run])
        _, recorded = timed([ours, "replay", str(cassette), "--mode", "json"])
        requests = sum(1 for line in cassette.read_text().splitlines()
                       if line.startswith('{"type":"request"'))
        print(f"cassette: {TURNS} turns, {requests} model requests, "
              f"{cassette.stat().st_size / 1e6:.1f} MB, {len(recorded.splitlines())} events")

        times = {"original live": [], "ours replay": []}
        for _ in range(args.runs):
            wall, _ = timed([mock, "--scenario", str(scenario_file), "--", original, *run])
            times["original live"].append(wall)
            wall, _ = timed([ours, "replay", str(cassette), "--mode", "json"])
            times["ours replay"].append(wall)
        orig = statistics.median(times["original live"])
        replay = statistics.median(times["ours replay"])
        print(f"original: Pi {orig_pi.version(original)}")
        print(f"{'the 50-turn session':40} {'original live':>14} {'pi replay':>10} {'ratio':>7}")
        print(f"{'median of ' + str(args.runs):40} {orig * 1000:12.0f}ms {replay * 1000:8.1f}ms "
              f"{orig / replay:6.0f}x")

        corpus = work / "corpus"
        corpus.mkdir()
        for i in range(args.copies):
            shutil.copy(cassette, corpus / f"turns_{i:03}.jsonl")
        for file in (REPO / "cassettes" / "corpus").glob("*.jsonl"):
            shutil.copy(file, corpus / file.name)
        count = len(list(corpus.glob("*.jsonl")))
        jobs = {"1": [], "2": []}
        for _ in range(args.runs):
            for n in jobs:
                wall, _ = timed([ours, "replay", "--check", "--jobs", n, str(corpus)])
                jobs[n].append(wall)
        one, two = statistics.median(jobs["1"]), statistics.median(jobs["2"])
        print(f"pi replay --check over {count} cassettes: --jobs 1 {one * 1000:.0f} ms, "
              f"--jobs 2 {two * 1000:.0f} ms: {one / two:.2f}x "
              f"({count / one:.0f} and {count / two:.0f} cassettes/s)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
