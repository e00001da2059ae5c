#!/usr/bin/env python3
"""Peak resident memory of `pi proxy --replay` while five clients at once send large bodies.

    python3 benches/scripts/proxy_body_memory.py PI [--mb 50] [--chunked]

Starts `PI proxy --replay` on a folder of one small recording, then five clients at once POST a
body of --mb megabytes (spaces; with a content-length, or --chunked), reading the proxy's answer
(413 over the limit, else 404: no recording); prints each answer and the proxy's VmHWM after.
"""
import argparse
import json
import pathlib
import socket
import subprocess
import tempfile
import threading

CLIENTS = 5
BLOCK = b" " * 65536


def one_recording(folder):
    lines = [
        {"type": "proxy", "format": 1, "harness": "0.1.0", "upstream": "http://127.0.0.1:1",
         "ignore": [], "redactions": []},
        {"type": "request", "call": 1, "dt": 0, "method": "POST", "url": "/v1/chat/completions",
         "headers": [["content-type", "application/json"]], "body": {"model": "m", "messages": []}},
        {"type": "response", "call": 1, "dt": 1, "status": 200, "headers": []},
        {"type": "chunk", "call": 1, "dt": 1, "text": "ok"},
        {"type": "end", "call": 1, "dt": 1, "end": "complete"},
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    (pathlib.Path(folder) / "0001-v1-chat-completions.jsonl").write_text(text)


def send(host, port, size, chunked, answers):
    s = socket.create_connection((host, port))
    head = "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
    head += "transfer-encoding: chunked\r\n\r\n" if chunked else f"content-length: {size}\r\n\r\n"
    s.sendall(head.encode())
    sent = 0
    try:
        while sent < size:
            block = BLOCK[: min(len(BLOCK), size - sent)]
            s.sendall(b"%x\r\n%s\r\n" % (len(block), block) if chunked else block)
            sent += len(block)
        if chunked:
            s.sendall(b"0\r\n\r\n")
    except OSError:
        pass  # the proxy refused the body and closed
    answer = s.recv(200).split(b"\r\n")[0].decode()
    answers.append(f"{answer} after {sent} bytes sent")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pi")
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--chunked", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        one_recording(folder)
        proxy = subprocess.Popen(
            [args.pi, "proxy", "--listen", "127.0.0.1:0", "--replay", folder],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            host, port = proxy.stdout.readline().decode().strip().removeprefix("http://").split(":")
            answers = []
            clients = [threading.Thread(target=send, args=(host, int(port), args.mb * 1_000_000,
                                                           args.chunked, answers))
                       for _ in range(CLIENTS)]
            for client in clients:
                client.start()
            for client in clients:
                client.join()
            print("\n".join(answers))
            status = pathlib.Path(f"/proc/{proxy.pid}/status").read_text()
            print(next(line for line in status.splitlines() if line.startswith("VmHWM")))
        finally:
            proxy.terminate()
            proxy.wait()


if __name__ == "__main__":
    main()
