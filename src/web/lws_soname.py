#!/usr/bin/env python3
"""Prints the soname of libwebsockets (the library file given, as `readelf -d` shows it), for
web/lws_api.cc's dlopen: the library uexec was built against, and no other."""
import re
import subprocess
import sys

out = subprocess.run(["readelf", "-d", sys.argv[1]], check=True, capture_output=True, text=True).stdout
m = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", out)
if not m:
    sys.exit(f"lws_soname.py: no SONAME in {sys.argv[1]}")
print(m.group(1))
