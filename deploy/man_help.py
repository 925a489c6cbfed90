#!/usr/bin/env python3
"""The --help text of $SPINNIC_MAN_BINARY, in the layout help2man reads.

help2man turns GNU-style help ("Usage:" line, "  --flag  text" options) into
a man page; Abseil's flag help ("--flag (text); default: X;" blocks under
"Flags from FILE:") comes out as one run-on paragraph. deploy/meson.build
runs help2man on this script with SPINNIC_MAN_BINARY set to spinnicd,
spinctl or spinnic-impair; help texts already in GNU style pass through.
"""

import os
import re
import subprocess
import sys

ABSL_FLAG = re.compile(r"^--(\S+) \((.*)\); default: (.*);$", re.S)


def absl_to_gnu(lines):
    out = []
    block = []

    def flush():
        if not block:
            return
        text = " ".join(part.strip() for part in block)
        block.clear()
        m = ABSL_FLAG.match(text)
        if not m:
            out.append("  " + text)
            return
        name, help_text, default = m.groups()
        out.append("  --%s  %s (default: %s)" % (name, help_text, default))

    for line in lines:
        if line.startswith("    --"):
            flush()
            block.append(line)
        elif line.startswith("      ") and block:
            block.append(line)
        else:
            flush()
            if re.match(r"^\s*Flags from .*:$", line):
                out.append("Options:")
            else:
                out.append(line)
    flush()
    return out


def main():
    binary = os.environ.get("SPINNIC_MAN_BINARY")
    if not binary:
        sys.exit("man_help.py: set SPINNIC_MAN_BINARY to the program whose --help to convert")
    if sys.argv[1:] != ["--help"]:
        sys.exit("man_help.py: only --help (help2man passes --version-string)")
    text = subprocess.run([binary, "--help"], check=True, capture_output=True, text=True).stdout
    lines = text.splitlines()
    name = os.path.basename(binary)
    # Abseil's usage line is "NAME: usage text"; help2man wants "Usage: ...".
    if lines and lines[0].startswith(name + ": "):
        lines[0] = "Usage: " + lines[0][len(name) + 2:]
    elif lines and lines[0].lower().startswith("usage: "):
        lines[0] = "Usage: " + lines[0][len("usage: "):]
    print("\n".join(absl_to_gnu(lines)))


if __name__ == "__main__":
    main()
