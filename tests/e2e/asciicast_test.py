#!/usr/bin/env python3
"""`uexec logs ID --asciicast`: recordings asciinema plays (asciicast v2).

  - the header names the terminal's size, the start and the command; each chunk is one event
    at the time the ring recorded for it (a 300 ms pause in the output is one in the file);
  - `asciinema cat` of the file is the process's output byte for byte (a terminal session), or
    with "\\n" as "\\r\\n" (a pipe session); `asciinema play` plays it;
  - a UTF-8 character cut between two reads is joined, an invalid byte becomes U+FFFD;
  - output the ring did not retain is one event that says how much;
  - --follow with --asciicast is refused.

    python3 tests/e2e/asciicast_test.py build/src/uexec
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from e2e_util import Checks  # noqa: E402

uexec = os.path.abspath(sys.argv[1])
check = Checks()
if not shutil.which("asciinema") or not shutil.which("script"):
    print("SKIP: asciinema or script(1) is missing (tools/dev test installs asciinema)")
    sys.exit(77)
tmp = tempfile.mkdtemp(prefix="uexec-cast-")
sock = os.path.join(tmp, "uexec.sock")
cfg = os.path.join(tmp, "config.toml")
with open(cfg, "w") as f:
    f.write('[sessions]\nring_size = "8KiB"\n')
env = {**os.environ, "UEXEC_SOCKET": sock, "UEXEC_CONFIG": cfg, "UEXEC_AUTOSTART": "0"}
daemon = subprocess.Popen([uexec, "serve", "--socket", sock, "--no-ws"], env=env, stderr=subprocess.DEVNULL)
for _ in range(200):
    if os.path.exists(sock):
        break
    time.sleep(0.05)


def run(*args, **kw):
    return subprocess.run([uexec, *args], env=env, capture_output=True, timeout=60, **kw)


def start(*argv, tty=True):
    r = run("start", *(["--tty"] if tty else []), "--", *argv)
    return r.stdout.decode().strip()


def wait_exit(pid):
    for _ in range(200):
        out = run("ls").stdout.decode()
        line = next((l for l in out.splitlines() if pid.split("/")[-1] in l), "")
        if line and " running " not in f" {line} ":
            return
        time.sleep(0.05)


def cast_of(pid):
    r = run("logs", pid, "--asciicast")
    lines = r.stdout.decode().splitlines()
    header = json.loads(lines[0]) if lines else {}
    events = [json.loads(l) for l in lines[1:]]
    return r, header, events


def asciinema(*args):
    """asciinema under a terminal of its own (it opens /dev/tty)."""
    cmd = " ".join(["asciinema", *args])
    return subprocess.run(["script", "-qfec", cmd, "/dev/null"], capture_output=True, timeout=60,
                          stdin=subprocess.DEVNULL)


# ---- a terminal session: times, UTF-8 across reads, an invalid byte ------------------------
pid = start("bash", "-c", "printf 'hello \\xe2\\x82'; sleep 0.3; printf '\\xac world\\n'; sleep 0.3; "
                          "printf 'bad \\xff byte\\n'; sleep 0.2; echo done")
wait_exit(pid)
r, header, events = cast_of(pid)
raw = run("logs", pid).stdout
check("logs --asciicast: exit 0, a v2 header with the size, start and command",
      r.returncode == 0 and header.get("version") == 2 and header.get("width") == 80 and header.get("height") == 24 and
      abs(header.get("timestamp", 0) - time.time()) < 600 and header.get("command", "").startswith("bash -c"), header)
check("every event is [seconds, \"o\", text], in time order",
      all(len(e) == 3 and e[1] == "o" and isinstance(e[2], str) for e in events) and
      all(a[0] <= b[0] for a, b in zip(events, events[1:])), events)
text = "".join(e[2] for e in events)
check("the euro sign cut between two reads is one character", "hello € world" in text, text)
check("the invalid byte is U+FFFD", "bad \ufffd byte" in text, text)
t_euro = next((e[0] for e in events if "€" in e[2]), None)
check("the event after a 300 ms pause comes at least 250 ms after the first",
      t_euro is not None and t_euro - events[0][0] >= 0.25, events)
path = os.path.join(tmp, "tty.cast")
with open(path, "wb") as f:
    f.write(r.stdout)
cat = asciinema("cat", path)
check("asciinema cat of it is the output, byte for byte but the invalid byte",
      cat.returncode == 0 and cat.stdout == raw.replace(b"\xff", "\ufffd".encode()), (cat.stdout, raw, cat.stderr))
play = asciinema("play", "-i", "0.05", path)
check("asciinema play plays it", play.returncode == 0 and b"done" in play.stdout, play)

# ---- a pipe session ------------------------------------------------------------------------
pid = start("sh", "-c", "echo one; sleep 0.2; echo two", tty=False)
wait_exit(pid)
r, header, events = cast_of(pid)
check("a pipe session: 80x24, and \"\\n\" is \"\\r\\n\"", header.get("width") == 80 and
      "".join(e[2] for e in events) == "one\r\ntwo\r\n", (header, events))
path = os.path.join(tmp, "pipe.cast")
with open(path, "wb") as f:
    f.write(r.stdout)
cat = asciinema("cat", path)
check("asciinema cat of a pipe session", cat.returncode == 0 and cat.stdout == b"one\r\ntwo\r\n", cat)

# ---- more than the ring keeps (8 KiB) ------------------------------------------------------
pid = start("python3", "-c", "import sys,time\nfor i in range(400):\n    sys.stdout.write('%049d\\n' % i); sys.stdout.flush()\n"
                             "    time.sleep(0.001) if i % 50 == 0 else None\n")
wait_exit(pid)
r, header, events = cast_of(pid)
gaps = [e for e in events if "bytes not retained" in e[2]]
retained = len(run("logs", pid).stdout)
check("evicted output is one event saying how much (400 lines of 51 bytes on a terminal, 8 KiB kept)",
      len(gaps) == 1 and f"[... {400 * 51 - 8192} bytes not retained ...]" in gaps[0][2] and retained == 8192,
      (gaps, retained))
text = "".join(e[2] for e in events if e not in gaps)
check("...and the events around it are the retained head and tail", text.startswith("0" * 49) and
      text.rstrip().endswith("%049d" % 399), text[:60] + " … " + text[-60:])
path = os.path.join(tmp, "gap.cast")
with open(path, "wb") as f:
    f.write(r.stdout)
check("asciinema cat reads it", asciinema("cat", path).returncode == 0)

r = run("logs", pid, "--asciicast", "--follow")
check("--follow with --asciicast: exit 2", r.returncode == 2 and b"exclude each other" in r.stderr, r)

daemon.send_signal(signal.SIGTERM)
daemon.wait(timeout=20)
shutil.rmtree(tmp, ignore_errors=True)
sys.exit(check.exit_code())
