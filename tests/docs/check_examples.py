#!/usr/bin/env python3
"""tests/docs/check_examples.py: every C example in the documentation compiles and runs.

Extracts each fenced ```c block from the Markdown files given (folders are searched for
*.md recursively), writes it to a file of its own, compiles it against the build tree's
public headers and static library and runs it; the run must exit 0 within --timeout
seconds. A block whose nearest non-blank line above the fence is

    <!-- example: no-run -->

is compiled and linked only. Exit 0 when every block passes, 1 when any fails (each
failure is printed with file, line, the compiler's or the program's output), 2 on usage
errors. Finding no block at all is a failure too: a check that checked nothing passed
nothing.

Usage: check_examples.py --cc CC --include DIR --lib LIBTENLANE_A [--flag F]... [--link L]...
                         [--timeout S] PATH...
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

NO_RUN_MARK = "<!-- example: no-run -->"
FENCE_OPEN = re.compile(r"^(\s*)```\s*c\s*$")
FENCE_CLOSE = re.compile(r"^\s*```\s*$")


def blocks_in(path):
    """[(line of the opening fence, code, run?)] for one Markdown file."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        m = FENCE_OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        indent = len(m.group(1))
        start = i
        above = start - 1
        while above >= 0 and not lines[above].strip():
            above -= 1
        run = not (above >= 0 and lines[above].strip() == NO_RUN_MARK)
        body = []
        i += 1
        while i < len(lines) and not FENCE_CLOSE.match(lines[i]):
            body.append(lines[i][indent:] if lines[i][:indent].isspace() else lines[i].lstrip())
            i += 1
        if i >= len(lines):
            raise SystemExit("%s:%d: a ```c block is never closed" % (path, start + 1))
        blocks.append((start + 1, "\n".join(body) + "\n", run))
        i += 1
    return blocks


def markdown_files(paths):
    files = []
    for path in paths:
        if os.path.isdir(path):
            for dirpath, dirnames, filenames in os.walk(path):
                dirnames.sort()
                files += [os.path.join(dirpath, n) for n in sorted(filenames) if n.endswith(".md")]
        elif os.path.exists(path):
            files.append(path)
    return files


def main():
    parser = argparse.ArgumentParser(description="compile and run the C examples in Markdown files")
    parser.add_argument("--cc", required=True)
    parser.add_argument("--include", required=True, help="the public include folder")
    parser.add_argument("--lib", required=True, help="the static library (libtenlane.a)")
    parser.add_argument("--flag", action="append", default=[], help="an extra compile+link flag")
    parser.add_argument("--link", action="append", default=[], help="a library or link flag after the library")
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--run-with", action="append", default=[],
                        help="a word of the command that runs each example (a cross build's emulator)")
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args()
    if not os.path.exists(args.lib):
        print("check_examples: %s does not exist (build first)" % args.lib, file=sys.stderr)
        return 2

    links = []
    for item in args.link:
        links.append(item if item.startswith("-") or os.path.isabs(item) else "-l" + item)
    files = markdown_files(args.paths)
    total, failures = 0, 0
    with tempfile.TemporaryDirectory(prefix="tenlane-doc-examples.") as work:
        for md in files:
            for line, code, run in blocks_in(md):
                total += 1
                where = "%s:%d" % (md, line)
                stem = os.path.join(work, "example%d" % total)
                with open(stem + ".c", "w") as f:
                    f.write('#line %d "%s"\n' % (line + 1, md))
                    f.write(code)
                cmd = [args.cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-pthread"] + args.flag
                cmd += ["-I" + args.include, stem + ".c", "-o", stem, args.lib] + links + ["-lm"]
                built = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                if built.returncode != 0:
                    failures += 1
                    print("%s: FAIL: does not compile:\n%s" % (where, built.stdout))
                    continue
                if not run:
                    print("%s: ok (compiled; marked no-run)" % where)
                    continue
                try:
                    ran = subprocess.run(args.run_with + [stem], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                         timeout=args.timeout, cwd=work)
                except subprocess.TimeoutExpired:
                    failures += 1
                    print("%s: FAIL: still running after %g s" % (where, args.timeout))
                    continue
                if ran.returncode != 0:
                    failures += 1
                    print("%s: FAIL: exited with %d; output:\n%s" % (where, ran.returncode, ran.stdout))
                else:
                    print("%s: ok (compiled and ran)" % where)
    print("check_examples: %d blocks in %d files, %d failed" % (total, len(files), failures))
    if total == 0:
        print("check_examples: FAIL: no ```c block found in %s" % " ".join(args.paths))
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
