#!/usr/bin/env python3
"""Opening a large session and building its context: the original Pi against this harness,
whole process against whole process.

    python3 benches/scripts/session_side_by_side.py [--pi-dir DIR] [--entries 20000] [--runs 7]

Generates a seeded session with the conformance kit's gen_session.py, then runs, alternately,
`node open_session.mjs FILE` in the original's install folder (installed with the kit's
install-pi.sh unless --pi-dir names one) and `target/release/open_session FILE`. Prints the
median wall time and peak RSS of each and their ratio.
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
KIT = REPO / "conformance"

OPEN_MJS = """import { SessionManager } from "@mariozechner/pi-coding-agent";
const sm = SessionManager.open(process.argv[2]);
const ctx = sm.buildSessionContext();
console.log(`entries=${sm.getEntries().length} messages=${ctx.messages.length}`);
"""


def run(cmd, cwd=None):
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    out = proc.stdout.read().decode().strip()
    if status != 0:
        sys.exit(f"{cmd[0]} failed: {proc.stderr.read().decode()}")
    return wall, usage.ru_maxrss / 1024, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pi-dir", help="folder where install-pi.sh installed the original")
    ap.add_argument("--entries", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()

    work = pathlib.Path(tempfile.mkdtemp())
    pi_dir = pathlib.Path(args.pi_dir) if args.pi_dir else work / "pi"
    if not args.pi_dir:
        subprocess.run([str(KIT / "install-pi.sh"), str(pi_dir)], check=True, stdout=subprocess.DEVNULL)
    (pi_dir / "open_session.mjs").write_text(OPEN_MJS)
    session = work / "large.jsonl"
    subprocess.run([sys.executable, str(KIT / "gen_session.py"), "--entries", str(args.entries),
                    "--out", str(session), "--seed", "1"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "pi-benches", "--bin", "open_session"],
                   cwd=REPO, check=True)
    ours_bin = REPO / "target" / "release" / "open_session"

    theirs, ours = [], []
    for _ in range(args.runs):
        theirs.append(run(["node", "open_session.mjs", str(session)], cwd=pi_dir))
        ours.append(run([str(ours_bin), str(session)]))
    if theirs[0][2] != ours[0][2]:
        sys.exit(f"the two disagree: original {theirs[0][2]!r}, ours {ours[0][2]!r}")

    size_mb = session.stat().st_size / 1e6
    t_med = statistics.median(w for w, _, _ in theirs)
    o_med = statistics.median(w for w, _, _ in ours)
    print(f"session: {args.entries} entries, {size_mb:.1f} MB ({ours[0][2]})")
    print(f"original: median {t_med * 1000:.0f} ms, peak RSS {max(m for _, m, _ in theirs):.0f} MB")
    print(f"harness:  median {o_med * 1000:.0f} ms, peak RSS {max(m for _, m, _ in ours):.0f} MB "
          f"({max(m for _, m, _ in ours) / size_mb:.2f}x the file)")
    print(f"ratio: {t_med / o_med:.1f}x faster")


if __name__ == "__main__":
    main()
