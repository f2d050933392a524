#!/usr/bin/env python3
"""build_init.py MUSL_GCC SRC_DIR INPUT OUTPUT: compiles uexec-init (sandbox_init.c) with musl.

musl-gcc puts only musl's headers on the include path; sandbox_init.c also needs the
kernel's (linux/, asm/, asm-generic/ from Debian's linux-libc-dev), but not glibc's, which
clash with musl's. So they are offered through a directory of three symlinks next to OUTPUT.
"""
import os
import subprocess
import sys
import sysconfig

musl_gcc, src_dir, source, output = sys.argv[1:5]
multiarch = sysconfig.get_config_var("MULTIARCH") or "x86_64-linux-gnu"
headers = output + ".kernel-headers"
os.makedirs(headers, exist_ok=True)
for name, target in (("linux", "/usr/include/linux"), ("asm-generic", "/usr/include/asm-generic"),
                     ("asm", f"/usr/include/{multiarch}/asm")):
    link = os.path.join(headers, name)
    if os.path.islink(link) and os.readlink(link) == target:
        continue
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(target, link)
cmd = [musl_gcc, "-O2", "-static", "-Wall", "-Wextra", "-Werror", "-I", src_dir, "-isystem", headers,
       "-o", output, source]
sys.exit(subprocess.call(cmd))
