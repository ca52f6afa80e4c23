#!/usr/bin/env python3
"""Golden tests for diagnostics.

Each tests/errors/**/*.cap is a small model with one problem (and each
tests/errors/**/*.urdf or *.sdf a robot description, its CHECK lines after the
XML, its ARGS and COMMAND lines inside an XML comment). Its expected
diagnostics are the trailing `// CHECK:STDERR: ` lines of the file itself (as
in Carbon's toolchain tests), so input and expected output stay together. An
optional `// ARGS: ...` line adds arguments to `capstan check FILE`, and
`// FILE: path` checks another path instead of the test file itself, and
`// COMMAND: compile` runs another command than `check` (`none`: capstan with
the ARGS alone); `// STATE: {...}`
writes that JSON to `state.json` beside the model, for `eval --state
state.json`; `// COPY: path` copies a file the model needs (a C++ header),
relative to the test file, beside it; `// ENV: NAME=VALUE` sets an
environment variable for capstan. The
expected exit status is 1 if any expected line says `error:`, else 0;
`// EXIT: N` says another (2 for a usage error).

  run.py --capstan build/compiler/capstan            # check every file
  run.py --capstan build/compiler/capstan --update   # re-bless after an intended change
  run.py --capstan ... --coverage                    # every diagnostic kind has a test
"""
import argparse
import os
import pathlib
import re
import shlex
import subprocess
import sys
import tempfile

CHECK = "// CHECK:STDERR:"
ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent


# Kinds that only a broken installation or a failing system compiler can
# raise, with why a golden file cannot hold them; tests/cli checks the
# messages it can provoke (cli.crash: a driver that fails).
UNTESTABLE = {
    "InstallationIncomplete": "needs the driver or runtime sources missing from the installation",
    "CannotInstall": "needs a rename in the driver cache to fail",
    "FormatFailed": "needs the shipped .clang-format to be broken",
    "BuildFailed": "its message holds the cache folder, named by a hash of the capstan version",
    "ProgramFailed": "needs a driver program that fails without a reason capstan knows",
    "BenchmarkIncomplete": "needs a driver program that prints a partial benchmark",
    "ExternalLoadFailed": "needs dlopen to fail on a library capstan has just built",
    "CvodeUnavailable": "needs a capstan built without SUNDIALS",
    "SdfUnavailable": "needs a capstan built without libsdformat",
}


def split(text):
    """Returns (source part, expected lines, extra args)."""
    lines = text.split("\n")
    body, expected = [], []
    for line in lines:
        if line.startswith(CHECK):
            expected.append(line[len(CHECK):][1:] if line[len(CHECK):].startswith(" ") else line[len(CHECK):])
        else:
            body.append(line)
    while body and body[-1] == "":
        body.pop()
    args, target, command, state = [], None, "check", None
    status = None
    copies, env = [], {}
    for line in body:
        m = re.match(r"\s*// COPY:(.*)$", line)
        if m:
            copies.append(m.group(1).strip())
        m = re.match(r"\s*// ENV:\s*(\w+)=(.*)$", line)
        if m:
            env[m.group(1)] = m.group(2).strip()
        m = re.match(r"\s*// STATE:(.*)$", line)
        if m:
            state = m.group(1).strip()
        m = re.match(r"\s*// COMMAND:(.*)$", line)
        if m:
            command = m.group(1).strip()
        m = re.match(r"\s*// ARGS:(.*)$", line)
        if m:
            args = shlex.split(m.group(1))
        m = re.match(r"\s*// EXIT:\s*(\d+)\s*$", line)
        if m:
            status = int(m.group(1))
        m = re.match(r"\s*// FILE:(.*)$", line)
        if m:
            target = m.group(1).strip()
    return "\n".join(body) + "\n", expected, args, target, command, state, copies, env, status


def run_one(capstan, path, source, args, target=None, command="check", state=None, copies=(), extra_env=None):
    """Checks the model without its CHECK lines (they could change how the
    file lexes: an unterminated string would end inside them), from a scratch
    root where the file has the same relative path, so messages show
    `tests/errors/...` and `stdlib/...` exactly as from the repository root."""
    rel = os.path.relpath(path, ROOT)
    with tempfile.TemporaryDirectory() as scratch:
        copy = pathlib.Path(scratch) / rel
        copy.parent.mkdir(parents=True)
        copy.write_bytes(source.encode("utf-8", "surrogateescape"))
        os.symlink(ROOT / "stdlib", pathlib.Path(scratch) / "stdlib")
        if state is not None:
            (pathlib.Path(scratch) / "state.json").write_text(state)
        for c in copies:
            dest = copy.parent / c
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes((pathlib.Path(path).parent / c).read_bytes())
        env = dict(os.environ, NO_COLOR="1", CAPSTAN_STDLIB="stdlib", **(extra_env or {}))
        argv = [capstan, *args] if command == "none" else [capstan, command, target or rel, *args]
        proc = subprocess.run(argv, cwd=scratch, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    out = proc.stderr.decode("utf-8", "replace").rstrip("\n")
    # A build's progress lines come only when the cache lacks the model's
    # build (docs/generated-code.md, "One build per model"): not a diagnostic.
    lines = [l.rstrip() for l in out.split("\n") if not BUILD_PROGRESS.match(l)] if out else []
    return proc.returncode, lines


BUILD_PROGRESS = re.compile(r"capstan: (compiling the generated code of|compiling the runtime's|compiled )")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--capstan", required=True)
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--coverage", action="store_true")
    ap.add_argument("files", nargs="*")
    opts = ap.parse_args()
    capstan = os.path.abspath(opts.capstan)

    files = [pathlib.Path(f).resolve() for f in opts.files] or sorted([*HERE.rglob("*.cap"), *HERE.rglob("*.urdf"), *HERE.rglob("*.sdf")])
    if opts.coverage:
        kinds = subprocess.run([capstan, "--list-diagnostics"], stdout=subprocess.PIPE,
                               check=True).stdout.decode().split()
        tested = set()
        for f in sorted([*HERE.rglob("*.cap"), *HERE.rglob("*.urdf"), *HERE.rglob("*.sdf")]):
            expected = split(f.read_text())[1]
            for line in expected:
                tested.update(re.findall(r"\[([A-Za-z]+)\]$", line))
        missing = [k for k in kinds if k not in tested and k not in UNTESTABLE]
        for k in missing:
            print(f"diagnostic kind {k} has no test in tests/errors/")
        print(f"{len(kinds) - len(missing)} passed, {len(missing)} failed")
        return 1 if missing else 0

    failed = 0
    for f in files:
        source, expected, args, target, command, state, copies, env, exit_status = split(
            f.read_text(errors="surrogateescape"))
        status, actual = run_one(capstan, f, source, args, target, command, state, copies, env)
        want_status = exit_status if exit_status is not None else 1 if any(" error: " in l for l in expected) else 0
        if opts.update:
            text = source + "".join(f"{CHECK} {l}".rstrip() + "\n" for l in actual)
            f.write_text(text, errors="surrogateescape")
            continue
        if actual != [l.rstrip() for l in expected] or status != want_status:
            failed += 1
            print(f"FAIL {os.path.relpath(f, ROOT)} (exit {status}, expected {want_status})")
            import difflib
            for d in difflib.unified_diff(expected, actual, "expected", "actual", lineterm=""):
                print("  " + d)
    if not opts.update:
        print(f"{len(files) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
