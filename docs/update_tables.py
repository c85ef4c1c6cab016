#!/usr/bin/env python3
"""Regenerates the step tables of docs/*.md with the ppsched tool.

Each `<!-- table: ARGS -->` line is followed by a ```text block; the block is replaced by the
output of `ppsched generate ARGS --format table`.

usage: python3 docs/update_tables.py [--ppsched PATH] [FILE.md ...]   (default: docs/schedules.md)
"""
import argparse
import pathlib
import re
import shlex
import subprocess
import sys

MARK = re.compile(r"^<!-- table: (.*) -->$")


def update(path: pathlib.Path, tool: str) -> bool:
    lines = path.read_text().split("\n")
    out, i, changed = [], 0, False
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        m = MARK.match(line)
        if not m:
            continue
        if i >= len(lines) or lines[i] != "```text":
            sys.exit(f"{path}:{i}: a table marker must be followed by a ```text block")
        end = lines.index("```", i + 1)
        cmd = [tool, "generate", *shlex.split(m.group(1)), "--format", "table"]
        table = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        new = ["```text", *table.rstrip("\n").split("\n"), "```"]
        changed |= new != lines[i:end + 1]
        out.extend(new)
        i = end + 1
    if changed:
        path.write_text("\n".join(out))
    return changed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ppsched", default="ppsched", help="path of the ppsched tool")
    ap.add_argument("files", nargs="*", default=[str(pathlib.Path(__file__).with_name("schedules.md"))])
    args = ap.parse_args()
    for f in args.files:
        print(f"{f}: {'updated' if update(pathlib.Path(f), args.ppsched) else 'up to date'}")


if __name__ == "__main__":
    main()
