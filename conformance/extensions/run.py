#!/usr/bin/env python3
"""The extension conformance set: Pi extensions run under Pi 1.5.2 and under ours with the kit's
mock, compared as the scenarios are.

usage: run.py record --pi PI_152 [--case NAME]... [--jobs N]            record 1.5.2's traces into traces/
       run.py compare --pi OURS [--host-pi-dir DIR] [--case NAME]... [--keep DIR] [--jobs N]
                                                               run ours, compare with traces/

`--case` keeps to the cases named (all of them without it), so that recording a new case leaves
the others' traces as they are. `--jobs N` runs N cases at once (the kit's `--jobs`).

Each folder here holds one case: extension.ts and scenario.json (the kit's scenario format,
with its mock script). The extension is written into the scenario's cwd and loaded with
`-e {CWD}/extension.ts`. Each run of a case with several has its own "suffix" (its stdout is
`stdout<suffix>.jsonl`): `record` and `compare` refuse a case whose runs share one, whose
earlier runs' events would be overwritten. An RPC step may answer an extension's dialog:
`{UI:<method>:<path>}` is the field at <path> of the latest `extension_ui_request` line with
that method (its id, for the `extension_ui_response`).

The kit's run.py gives each scenario an environment without PI_* variables; ours needs
PI_EXTENSION_HOST_PI_DIR (the 1.5.2 install whose loader the extension host uses; --host-pi-dir,
default: the variable of this process) and that install's Node first on PATH, so `compare`
passes them through the scenario's "env". Beside the kit's sections, `compare` checks each
`prompt`, `set_model` and `cycle_model` response's place: how many `extension_error` and
`entry_appended` lines come before it (the kit leaves responses out of the event sequence; Pi
answers a prompt after its `input` and `before_agent_start` handlers ran, a model change after
its `model_select` handlers). A case's scenario.json may name, under "differs", sections
1.5.2's trace holds something ours must not do (with why: a race artifact, say); those sections
must differ, and are not counted. It prints one line per case, "<name> match" or
"<name> differ <sections>", and exits 0 when every case matched, 1 otherwise.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
KIT = HERE.parent
TRACES = HERE / "traces"
sys.path.insert(0, str(KIT))
import run as kit  # noqa: E402  (the kit's runner, beside this folder)

UI = re.compile(r"\{UI:([^:{}]+):([^{}]+)\}")
kit_expand = kit.Scenario.expand


def expand(self, value):
    """The kit's placeholders, and `{UI:<method>:<path>}` from the latest UI request."""
    if isinstance(value, str) and "{UI:" in value:
        def latest(match):
            for _, raw in reversed(list(self.pi.lines)):
                obj = kit.parse_line(raw)
                if isinstance(obj, dict) and obj.get("type") == "extension_ui_request" \
                        and obj.get("method") == match.group(1):
                    return str(kit.dig(obj, match.group(2)))
            raise kit.Failed(f"no extension_ui_request {match.group(1)!r} yet: {value}")
        value = UI.sub(latest, value)
    return kit_expand(self, value)


kit.Scenario.expand = expand


def cases(wanted=None):
    found = sorted(p.name for p in HERE.iterdir() if (p / "scenario.json").is_file())
    unknown = sorted(set(wanted or []) - set(found))
    if unknown:
        raise SystemExit(f"no such case: {', '.join(unknown)}")
    return [name for name in found if not wanted or name in wanted]


def scenarios(folder, env, wanted):
    """Writes each case as a kit scenario into `folder` (its extension among its files). Refuses,
    before any case runs, a case whose runs share a suffix (only its last run would be compared)."""
    specs = {name: json.loads((HERE / name / "scenario.json").read_text(encoding="utf-8"))
             for name in cases(wanted)}
    wrong = [f"case {name} ({HERE / name / 'scenario.json'}): {kit.shared_suffixes(spec)}"
             for name, spec in specs.items() if kit.shared_suffixes(spec)]
    if wrong:
        raise SystemExit("\n".join(wrong))
    for name, spec in specs.items():
        spec.setdefault("files", {})["extension.ts"] = (HERE / name / "extension.ts").read_text(encoding="utf-8")
        if env:
            spec["env"] = {**spec.get("env", {}), **env}
        (folder / f"{name}.json").write_text(json.dumps(spec, indent=2), encoding="utf-8")


def known_differences(name):
    """The sections a case says 1.5.2's trace holds a race artifact in (its "differs")."""
    spec = json.loads((HERE / name / "scenario.json").read_text(encoding="utf-8"))
    return sorted(spec.get("differs", {}))


# The commands Pi answers only once the handlers they cause are done (`bash`: its `user_bash` ones).
PLACED = ("prompt", "set_model", "cycle_model", "bash")


def response_places(trace):
    """Each response of a trace's RPC runs to a command that waits for handlers (`PLACED`), with
    the `extension_error` and `entry_appended` lines before it."""
    places = []
    for stdout in sorted(trace.glob("stdout*.jsonl")):
        if stdout.name.endswith(".timed.jsonl"):
            continue
        errors = entries = 0
        for raw in stdout.read_text(encoding="utf-8").split("\n"):
            obj = kit.parse_line(raw)
            if not isinstance(obj, dict):
                continue
            if obj.get("type") == "extension_error":
                errors += 1
            elif obj.get("type") == "entry_appended":
                entries += 1
            elif obj.get("type") == "response" and obj.get("command") in PLACED:
                places.append((stdout.name, obj.get("id"), errors, entries))
    return places


def kit_run(pi, folder, out, portable, jobs):
    sys.argv = ["run.py", "--pi", pi, "--scenarios", str(folder), "--out", str(out), "--jobs", str(jobs)] \
        + (["--portable"] if portable else [])
    return kit.main()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("action", choices=["record", "compare"])
    ap.add_argument("--pi", required=True, help="command that starts pi")
    ap.add_argument("--host-pi-dir", default=os.environ.get("PI_EXTENSION_HOST_PI_DIR"))
    ap.add_argument("--case", action="append", help="only this case (repeatable)")
    ap.add_argument("--keep", help="compare: write our traces into this folder (kept) to read them")
    ap.add_argument("--jobs", type=int, default=1, help="cases run at once (default 1)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "scenarios").mkdir()
        if a.action == "record":
            scenarios(tmp / "scenarios", None, a.case)
            return kit_run(a.pi, tmp / "scenarios", TRACES, True, a.jobs)
        if not a.host_pi_dir:
            ap.error("--host-pi-dir (or PI_EXTENSION_HOST_PI_DIR) must name Pi 1.5.2's install")
        node = Path(a.host_pi_dir) / "node" / "bin"
        scenarios(tmp / "scenarios", {
            "PI_EXTENSION_HOST_PI_DIR": a.host_pi_dir,
            "PATH": f"{node}:{os.environ.get('PATH', '')}",
        }, a.case)
        ours = Path(a.keep).resolve() if a.keep else tmp / "ours"
        with open(tmp / "run.log", "w") as log:
            stdout, sys.stdout = sys.stdout, log
            try:
                kit_run(a.pi, tmp / "scenarios", ours, False, a.jobs)
            finally:
                sys.stdout = stdout
        all_matched = True
        for name in cases(a.case):
            report = subprocess.run([sys.executable, str(KIT / "compare.py"), str(TRACES / name), str(ours / name)],
                                    capture_output=True, text=True)
            places_differ = response_places(TRACES / name) != response_places(ours / name)
            differing = [line.split()[0] for line in report.stdout.splitlines()
                         if len(line.split()) >= 2 and line.split()[1] == "DIFFER"]
            if places_differ:
                differing.append("response-place")
            expected = known_differences(name)
            # A known difference that no longer differs is reported, so the note cannot go stale.
            differing = [d for d in differing if d not in expected] + \
                [f"{d}(expected-to-differ)" for d in expected if d not in differing]
            if not differing and (report.returncode == 0 or expected):
                print(f"{name} match", flush=True)
                continue
            all_matched = False
            print(f"{name} differ {','.join(differing) or report.stdout.strip()[:200]}", flush=True)
        return 0 if all_matched else 1


if __name__ == "__main__":
    sys.exit(main())
