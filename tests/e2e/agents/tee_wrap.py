#!/usr/bin/env python3
"""Transparent stdio relay that logs NDJSON exec-server traffic.

Usage: tee_wrap.py PROTO_LOG STDERR_LOG -- PROGRAM [ARGS...]

Codex talks to this process over stdin/stdout; each line is forwarded
unchanged to/from PROGRAM and also appended to PROTO_LOG as
{"t": seconds, "dir": "c2s"|"s2c", "line": "<raw line>"}.
PROGRAM's stderr is appended to STDERR_LOG.
"""
import json
import os
import subprocess
import sys
import threading
import time

T0 = time.time()
LOCK = threading.Lock()


def main():
    argv = sys.argv[1:]
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write(__doc__)
        sys.exit(2)
    proto_log, err_log, prog = argv[0], argv[1], argv[3:]
    logf = open(proto_log, "a", buffering=1)
    errf = open(err_log, "ab", buffering=0)

    def log(direction, raw):
        rec = {"t": round(time.time() - T0, 4), "dir": direction,
               "line": raw.decode("utf-8", "replace").rstrip("\n")}
        with LOCK:
            logf.write(json.dumps(rec) + "\n")

    child = subprocess.Popen(prog, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=errf, bufsize=0)
    log("meta", ("spawned pid=%d argv=%s cwd=%s" % (child.pid, prog, os.getcwd())).encode())

    def pump_in():
        src = sys.stdin.buffer
        try:
            while True:
                line = src.readline()
                if not line:
                    break
                log("c2s", line)
                child.stdin.write(line)
                child.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            log("meta", ("stdin pump error: %r" % e).encode())
        finally:
            log("meta", b"codex closed stdin")
            try:
                child.stdin.close()
            except OSError:
                pass

    def pump_out():
        dst = sys.stdout.buffer
        try:
            while True:
                line = child.stdout.readline()
                if not line:
                    break
                log("s2c", line)
                dst.write(line)
                dst.flush()
        except (BrokenPipeError, OSError) as e:
            log("meta", ("stdout pump error: %r" % e).encode())
        log("meta", b"server closed stdout")

    ti = threading.Thread(target=pump_in, daemon=True)
    to = threading.Thread(target=pump_out, daemon=True)
    ti.start()
    to.start()
    to.join()
    rc = child.wait()
    log("meta", ("server exited rc=%s" % rc).encode())
    sys.exit(rc if rc is not None and rc >= 0 else 1)


if __name__ == "__main__":
    main()
