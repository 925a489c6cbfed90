#!/usr/bin/env python3
"""A fake systemd NOTIFY_SOCKET for tests/integration/systemd_notify.sh.

  notify_sink.py SOCKET LOG READY_JSON SPINCTL CONTROL_SOCKET SECONDS

Binds a Unix datagram socket at SOCKET and appends every message received as
one JSON line {"t": wall-clock seconds, "msg": text} to LOG, for at most
SECONDS. When READY=1 arrives it asks spinnicd at once, with spinctl, for
`--json info` and `--json stats` and writes both to READY_JSON, so the test
can check that every link was up and every HPU had polled by then. Creates
SOCKET.ready once it listens.
"""
import json
import os
import socket
import subprocess
import sys
import time


def main():
    path, log, ready_json, spinctl, control, seconds = sys.argv[1:7]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(0.2)
    open(path + ".ready", "w").close()
    end = time.monotonic() + float(seconds)
    with open(log, "a", buffering=1) as out:
        while time.monotonic() < end:
            try:
                data = sock.recv(4096)
            except socket.timeout:
                continue
            now = time.time()
            for msg in data.decode(errors="replace").splitlines():
                out.write(json.dumps({"t": now, "msg": msg}) + "\n")
                if msg == "READY=1" and not os.path.exists(ready_json):
                    got = {}
                    for what in ("info", "stats"):
                        r = subprocess.run(
                            [spinctl, "--socket", control, "--timeout_ms", "5000",
                             "--json", what],
                            capture_output=True, text=True, timeout=10)
                        got[what] = json.loads(r.stdout) if r.returncode == 0 else None
                    with open(ready_json, "w") as f:
                        json.dump(got, f)
    sock.close()
    os.unlink(path)


if __name__ == "__main__":
    main()
