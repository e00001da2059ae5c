#!/usr/bin/env python3
"""Captures the raw response bodies the conformance kit's mock LLM sends for each public scenario,
as decoder fixtures.

    python3 scripts/capture-mock-sse.py <out dir>

For every scenario, a fresh mock plays its script; each step is requested once over the OpenAI
Chat Completions path (as pi sends it: streaming with usage) and once over the Anthropic Messages
path. Writes <scenario>-<step>.<api>.body (the exact bytes) and .status.
"""
import http.client
import json
import pathlib
import subprocess
import sys
import tempfile
import time

KIT = pathlib.Path(__file__).resolve().parent.parent / "conformance"


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for scenario_file in sorted((KIT / "scenarios").glob("*.json")):
        scenario = json.loads(scenario_file.read_text())
        name = scenario_file.stem
        # The model each API's kit scenarios ask for (the mock names it back in its stream).
        for api, path, model in (("openai", "/v1/chat/completions", "mock-model"),
                                 ("anthropic", "/v1/messages", "mock-claude")):
            with tempfile.TemporaryDirectory() as tmp:
                script = pathlib.Path(tmp) / "script.json"
                script.write_text(json.dumps(scenario["script"]))
                port_file = pathlib.Path(tmp) / "port"
                mock = subprocess.Popen([sys.executable, str(KIT / "mock" / "mock_llm.py"), "--script", str(script),
                                         "--log", str(pathlib.Path(tmp) / "log.jsonl"), "--port-file", str(port_file)])
                try:
                    while not port_file.exists() or not port_file.read_text().strip():
                        time.sleep(0.05)
                    port = int(port_file.read_text())
                    for step in range(len(scenario["script"])):
                        body = {"model": model, "stream": True, "stream_options": {"include_usage": True},
                                "messages": [{"role": "user", "content": "hi"}]}
                        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                        conn.request("POST", path, body=json.dumps(body), headers={"content-type": "application/json"})
                        response = conn.getresponse()
                        data = b""
                        try:
                            while True:
                                chunk = response.read1(65536) if hasattr(response, "read1") else response.read(65536)
                                if not chunk:
                                    break
                                data += chunk
                        except (http.client.IncompleteRead, ConnectionError) as e:
                            data += getattr(e, "partial", b"")
                        conn.close()
                        stem = out / f"{name}-{step}.{api}"
                        stem.with_suffix(stem.suffix + ".body").write_bytes(data)
                        stem.with_suffix(stem.suffix + ".status").write_text(str(response.status))
                finally:
                    mock.terminate()
                    mock.wait()
    print(f"captured into {out}")


if __name__ == "__main__":
    main()
