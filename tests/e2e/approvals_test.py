#!/usr/bin/env python3
"""approval/request on the wire (docs/protocol.md §4.8), against `uexec exec-server --listen stdio
--sandbox workspace-write --approval on-failure`: a client that declared `approvals` is asked
before the single retry without the sandbox, and its answer decides; a client that did not
declare it is never asked (policy never: the denial is reported); an error answer counts as
denied. Skips (exit 0, with the reason) where the namespaces sandbox cannot run.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

uexec = os.path.abspath(sys.argv[1])
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {name} {detail}")


probe = subprocess.run([uexec, "sandbox", "--mode", "workspace-write", "--backend", "namespaces", "--", "true"],
                       capture_output=True, text=True)
if probe.returncode != 0:
    print(f"approvals: skipped, the namespaces sandbox does not run here: {probe.stderr.strip()}")
    sys.exit(0)

scratch = tempfile.mkdtemp(prefix="uexec-approvals-", dir="/var/tmp")  # outside the writable roots


class Client:
    def __init__(self, approvals):
        self.p = subprocess.Popen([uexec, "exec-server", "--listen", "stdio", "--sandbox", "workspace-write",
                                   "--backend", "namespaces", "--approval", "on-failure"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd="/tmp")
        self.n = 0
        caps = {"extensions": True, "approvals": True} if approvals else {}
        self.call("initialize", {"clientName": "approvals-test", "capabilities": caps})
        self.send({"jsonrpc": "2.0", "method": "initialized"})

    def send(self, o):
        self.p.stdin.write((json.dumps(o) + "\n").encode())
        self.p.stdin.flush()

    def recv(self):
        line = self.p.stdout.readline()
        if not line:
            raise EOFError("exec-server closed its stdout")
        return json.loads(line)

    def call(self, method, params, on_request=None):
        """Sends a request; answers server requests with on_request(msg) -> response dict."""
        self.n += 1
        me = self.n
        self.send({"jsonrpc": "2.0", "id": me, "method": method, "params": params})
        while True:
            m = self.recv()
            if m.get("method") == "approval/request" and "id" in m:
                self.send(dict(on_request(m), jsonrpc="2.0", id=m["id"]))
            elif m.get("id") == me and "method" not in m:
                return m

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=10)


def write_cmd(name):
    return {"cmd": f"echo hi > {scratch}/{name} && echo wrote", "yield_time_ms": 10000, "login": False}


asked = []


def approve(m):
    asked.append(m["params"])
    return {"result": {"decision": "approved"}}


def deny_with_error(m):
    asked.append(m["params"])
    return {"error": {"code": -1, "message": "the user closed the prompt"}}


try:
    c = Client(approvals=True)
    r = c.call("exec/command", write_cmd("a"), on_request=approve)
    text = json.dumps(r)
    check("one approval/request before the retry", len(asked) == 1, json.dumps(asked))
    if asked:
        q = asked[0]
        check("the request's shape", q.get("kind") == "retryUnsandboxed" and q.get("sandbox") == "none" and
              q.get("approvalId", "").startswith("approval-") and "echo hi" in q.get("command", "") and
              q.get("cwd") == "/tmp" and q.get("denial") is not None, json.dumps(q))
    check("approved: the retry ran without the sandbox", os.path.exists(f"{scratch}/a") and
          "retried without the sandbox" in text, text[:600])

    asked.clear()
    r = c.call("exec/command", write_cmd("b"), on_request=deny_with_error)
    text = json.dumps(r)
    check("an error answer counts as denied", len(asked) == 1 and not os.path.exists(f"{scratch}/b") and
          "not approved" in text, text[:600])
    c.close()

    asked.clear()
    c = Client(approvals=False)
    r = c.call("exec/command", write_cmd("c"), on_request=approve)
    text = json.dumps(r)
    check("a client without `approvals` is never asked", not asked and not os.path.exists(f"{scratch}/c"), text[:600])
    check("…and sees the denial", "Sandbox denied" in text or "sandbox_denied" in text, text[:600])
    c.close()
finally:
    shutil.rmtree(scratch, ignore_errors=True)

print(f"approvals: {passed} passed, {failed} failed")
sys.exit(0 if failed == 0 else 1)
