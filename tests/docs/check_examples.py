#!/usr/bin/env python3
"""Checks the complete model examples of a Markdown document with `capstan check`.

Every fenced block tagged ```modelica whose first line is exactly `// check`
is a complete model: it is written to a temporary `.cap` file and checked.
A block fails when `capstan check` exits non-zero or prints a warning (a
documented example should be clean). Fragments are left untagged and are not
checked.

    python3 tests/docs/check_examples.py --capstan build/compiler/capstan docs/language.md

Prints each failing block with its line number and the compiler's output,
then `N passed, M failed`; exits 1 if any failed (or if none was found, which
means the marker was lost).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

MARKER = "// check"
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([A-Za-z0-9_+-]*)\s*$")


def blocks(text):
    """Yields (first line number, language, body) for each fenced block."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group(2), m.group(3)
        start = i + 1
        j = start
        while j < len(lines) and not (lines[j].strip().startswith(fence[0] * len(fence))
                                      and lines[j].strip().strip(fence[0]) == ""):
            j += 1
        yield start + 1, lang, "\n".join(lines[start:j]) + "\n"
        i = j + 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--capstan", required=True, help="path to the capstan executable")
    ap.add_argument("docs", nargs="+", help="Markdown files to check")
    args = ap.parse_args()

    capstan = os.path.abspath(args.capstan)
    passed = failed = 0
    env = dict(os.environ, NO_COLOR="1")
    with tempfile.TemporaryDirectory(prefix="capstan-docs-") as tmp:
        for doc in args.docs:
            with open(doc, encoding="utf-8") as f:
                text = f.read()
            for line, lang, body in blocks(text):
                if lang != "modelica" or body.split("\n", 1)[0].strip() != MARKER:
                    continue
                path = os.path.join(tmp, f"example_{passed + failed + 1}.cap")
                with open(path, "w", encoding="utf-8") as f:
                    f.write(body)
                proc = subprocess.run([capstan, "check", path, "--no-color"], cwd=tmp, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                warned = re.search(r": warning: ", proc.stdout) is not None
                if proc.returncode == 0 and not warned:
                    passed += 1
                    continue
                failed += 1
                why = f"exit status {proc.returncode}" if proc.returncode else "warnings"
                print(f"FAIL {doc}:{line}: {why}")
                for k, l in enumerate(body.rstrip("\n").split("\n")):
                    print(f"  {k + 1:4} | {l}")
                print("  output:")
                for l in proc.stdout.rstrip("\n").split("\n"):
                    print(f"    {l}")
                print()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
