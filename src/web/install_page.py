#!/usr/bin/env python3
"""Install the web page (meson's install script): install_page.py PAGE_DIR DATA_SUBDIR.

Copies the page's own files and, from its node_modules (npm ci, which tools/dev runs), only the
xterm.js files the daemon's /vendor/ table serves (src/web/ws_server.cc) and their licences, into
$DESTDIR<prefix>/DATA_SUBDIR with the same relative paths, so the installed uexec serves them
as the build tree's serves the source tree's.
"""
import os
import shutil
import sys

PAGE_FILES = ["index.html", "app.js", "style.css"]
VENDOR_FILES = [
    "node_modules/@xterm/xterm/lib/xterm.js",
    "node_modules/@xterm/xterm/css/xterm.css",
    "node_modules/@xterm/xterm/LICENSE",
    "node_modules/@xterm/addon-fit/lib/addon-fit.js",
    "node_modules/@xterm/addon-fit/LICENSE",
]


def main() -> int:
    page_dir, data_subdir = sys.argv[1], sys.argv[2]
    if os.path.isabs(data_subdir):
        dest = os.environ.get("DESTDIR", "") + data_subdir
    else:
        dest = os.path.join(os.environ["MESON_INSTALL_DESTDIR_PREFIX"], data_subdir)
    missing = [f for f in PAGE_FILES + VENDOR_FILES if not os.path.isfile(os.path.join(page_dir, f))]
    if missing:
        print(f"install_page.py: missing in {page_dir}: {', '.join(missing)}\n"
              f"  (run `npm ci` there first; `tools/dev build` does)", file=sys.stderr)
        return 1
    for rel in PAGE_FILES + VENDOR_FILES:
        target = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(page_dir, rel), target)
        os.chmod(target, 0o644)
    print(f"Installing the web page to {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
