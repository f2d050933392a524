#!/usr/bin/env python3
"""embed_init.py INIT OUT.S: an assembler file that embeds the uexec-init binary (.incbin).

uexec carries its sandbox init inside its own executable, so no file a sandbox could reach
(a build tree inside a workspace, an install path) decides what runs as a sandbox's pid 1.
"""
import sys

init, out = sys.argv[1], sys.argv[2]
path = init.replace("\\\\", "\\\\\\\\").replace('"', '\\\\"')
with open(out, "w") as f:
    f.write(f""".section .rodata.uexec_init,"a"
.globl uexec_init_blob
.type uexec_init_blob, @object
.balign 16
uexec_init_blob:
.incbin "{path}"
.globl uexec_init_blob_end
uexec_init_blob_end:
.section .note.GNU-stack,"",@progbits
""")
