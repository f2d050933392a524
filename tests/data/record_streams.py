#!/usr/bin/env python3
"""Records the terminal byte streams the screen-model replay tests feed (tests/unit/test_screen.cc).

Each stream is what a real program wrote to a real PTY of 24x80 with TERM=xterm-256color,
captured byte for byte. Run it from the repository root to re-record; the tests assert what
a terminal shows after those bytes, so a re-recording only needs the assertions checked:

    python3 tests/data/record_streams.py
"""
import os, pty, select, struct, fcntl, termios, time, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def record(argv, keys=(), settle=0.6, rows=24, cols=80, env_extra=None):
    """Runs argv on a fresh PTY; after each (delay, bytes) in keys writes bytes; returns the
    output split at each key (one bytes object per phase)."""
    pid, fd = pty.fork()
    if pid == 0:
        env = {"PATH": "/usr/bin:/bin", "TERM": "xterm-256color", "LANG": "C.UTF-8", "HOME": "/tmp"}
        env.update(env_extra or {})
        os.execvpe(argv[0], argv, env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    phases, cur = [], bytearray()
    pending = list(keys)
    deadline = time.time() + (pending[0][0] if pending else settle)
    while True:
        t = deadline - time.time()
        r, _, _ = select.select([fd], [], [], max(0, t))
        if r:
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b""
            if not data:
                break
            cur += data
            continue
        if time.time() >= deadline:
            if not pending:
                break
            _, key = pending.pop(0)
            phases.append(bytes(cur))
            cur = bytearray()
            os.write(fd, key)
            deadline = time.time() + (pending[0][0] if pending else settle)
    phases.append(bytes(cur))
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)
    os.close(fd)
    return phases


def save(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


# Colour: the 16 ANSI colours, 256-colour and truecolour, and attributes, from printf.
colour = record(["bash", "-c",
    r"printf '\e[31mred\e[0m \e[1;32mboldgreen\e[0m \e[94mbrightblue\e[0m \e[38;5;208morange\e[0m "
    r"\e[38;2;10;20;30mrgb\e[0m \e[7mrev\e[0m \e[4mul\e[0m \e[41m  \e[0m\n'; printf '\e[35mstill-magenta'"])[0]
save("colour.bin", colour)

# Cursor movement: a progress bar with \r, then absolute (CUP) and relative (CUU/CUF) moves.
cursor = record(["bash", "-c",
    r"for i in 0 25 50 75 100; do printf '\rprogress %3d%%' $i; done; echo;"
    r"printf '\e[10;20Hat-10-20\e[2Aup-two\e[5Cright-five\e[15;1H'"])[0]
save("cursor.bin", cursor)

# The alternate screen: vim showing a file, then after :q the shell's screen is back.
with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    f.write("".join(f"line {i} of the file\n" for i in range(1, 41)))
    path = f.name
before, vim_open, vim_quit = record(["bash", "-c", f"printf 'before vim\\n'; exec vim -u NONE -N -i NONE -n {path}"],
                                    keys=[(0.3, b""), (0.8, b":q\r")])
os.unlink(path)
save("vim_open.bin", before + vim_open)
save("vim_quit.bin", vim_quit)

# Wide and combining characters, and a wide character that does not fit at the end of a line.
wide = record(["bash", "-c",
    "printf 'wide:\u65e5\u672c\u8a9e|emoji:\U0001F600|comb:e\u0301|hangul:\u1100\u1161\n';"
    "printf '%079d\u4e2d\n' 0"])[0]
save("wide.bin", wide)

for n in ["colour.bin", "cursor.bin", "vim_open.bin", "vim_quit.bin", "wide.bin"]:
    print(n, os.path.getsize(os.path.join(HERE, n)), "bytes")
