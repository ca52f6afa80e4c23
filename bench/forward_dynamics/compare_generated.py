#!/usr/bin/env python3
"""Generated forwardDynamics of several capstan executables, timed side by side.

For a question such as "did forward dynamics get slower since commit X?":
each `--capstan NAME=PATH` compiles the models (bench/peers/models/ by
default) into headers, each header goes into its own translation unit (its
class renamed into namespace capstan_models_NAME, so two versions of one
class do not violate the one-definition rule when linked together), and one
program (compare_generated_main.cpp) checks that every variant's udot agrees
with the first's and times them all in interleaved rounds: thread CPU time,
median over rounds of microseconds per call (docs/performance.md).

`--without-parameter-check` adds, for each capstan whose headers have one, a variant NAME-nocheck
whose headers skip refreshDerived()'s comparison of `params` with the values
Derived was computed from (the comparison's cost; such a header is wrong
once params change, so it is for measuring only).

Example (two builds of capstan, g++ and clang++, core 1):
  bench/forward_dynamics/compare_generated.py --capstan old=../capstan-old/build/compiler/capstan \\
      --capstan new=build/compiler/capstan --without-parameter-check --cxx g++ --cxx clang++ --cpu 1
"""
import argparse
import concurrent.futures
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent
PARAMETER_CHECK = "if (!derivedValid_ || std::memcmp(&derivedFor_, &params, sizeof(Parameters)) != 0) updateDerived();"
WITHOUT_PARAMETER_CHECK = "if (!derivedValid_) updateDerived();"

UNIT = """#define capstan_models capstan_models_{ns}
#include "{header}"
#undef capstan_models
#include <Eigen/Core>
using M = capstan_models_{ns}::{cls};
static M model;
extern "C" void {fn}_sizes(int* nq, int* nu) {{ *nq = M::nq; *nu = M::nu; }}
extern "C" void {fn}_normalize(double* q) {{
  M::Q x = Eigen::Map<const M::Q>(q);
  M::normalizeQuaternions(x);
  Eigen::Map<M::Q>(q, M::nq) = x;
}}
extern "C" void {fn}(const double* q, const double* u, double* udot) {{
  const M::Q qq = Eigen::Map<const M::Q>(q);
  const M::U uu = Eigen::Map<const M::U>(u);
  M::U ud;
  model.forwardDynamics(0.0, qq, uu, ud);
  Eigen::Map<M::U>(udot, M::nu) = ud;
}}
"""


def identifier(text):
    return re.sub(r"\W", "_", text)


def generate(capstan, models, out):
    """Compiles each model into out/<model>/; returns {model: (header, class)}."""
    headers = {}
    for model in models:
        folder = out / model.stem
        folder.mkdir(parents=True, exist_ok=True)
        done = subprocess.run([capstan, "compile", str(model), "-o", str(folder)], capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"compare_generated: {capstan} compile {model} failed:\n{done.stderr}")
        header = next(folder.glob("*.hpp"))
        headers[model.stem] = (header, header.stem)
    return headers


def without_parameter_check(headers, out):
    """The headers with refreshDerived() not comparing params, or None if they
    have no such check (capstan before the parameter-only cache)."""
    copies = {}
    for model, (header, cls) in headers.items():
        text = header.read_text()
        if PARAMETER_CHECK not in text:
            return None
        copy = out / model / header.name
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(text.replace(PARAMETER_CHECK, WITHOUT_PARAMETER_CHECK))
        copies[model] = (copy, cls)
    return copies


def compile_unit(cxx, flags, source, obj):
    if obj.exists() and obj.stat().st_mtime >= source.stat().st_mtime:
        return
    subprocess.run([cxx, "-std=c++20", *flags, "-isystem", "/usr/include/eigen3", "-c", str(source), "-o", str(obj)],
                   check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--capstan", action="append", required=True, metavar="NAME=PATH",
                    help="a capstan executable and its label; the first is the reference for udot")
    ap.add_argument("--without-parameter-check", action="store_true",
                    help="add NAME-nocheck variants: refreshDerived() without comparing params")
    ap.add_argument("--models", default="arm7,chain20,chain50,humanoid", help="bench/peers/models/*.cap stems or paths")
    ap.add_argument("--cxx", action="append", help="compiler(s), each its own program (default g++)")
    ap.add_argument("--flags", default="-O2 -march=native -DNDEBUG", help="(default %(default)s)")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--cpu", help="run the timing pinned to this core (taskset -c)")
    ap.add_argument("--work", default="/tmp/capstan-compare", help="headers, objects and programs (kept, reused)")
    ap.add_argument("-j", type=int, default=2, help="parallel compiles (default %(default)s)")
    args = ap.parse_args()

    work = pathlib.Path(args.work)
    models = [pathlib.Path(m) if m.endswith(".cap") else ROOT / "bench/peers/models" / f"{m}.cap"
              for m in args.models.split(",")]
    variants = []  # (label, {model: (header, class)})
    for spec in args.capstan:
        label, _, capstan = spec.partition("=")
        headers = generate(capstan, models, work / "headers" / label)
        variants.append((label, headers))
        if args.without_parameter_check:
            copies = without_parameter_check(headers, work / "headers" / (label + "-nocheck"))
            if copies:
                variants.append((label + "-nocheck", copies))
    flags = args.flags.split()
    for cxx in args.cxx or ["g++"]:
        out = work / identifier(f"{cxx} {args.flags}")
        out.mkdir(parents=True, exist_ok=True)
        units, entries = [], []
        for label, headers in variants:
            for model, (header, cls) in headers.items():
                fn = identifier(f"fd_{label}_{model}")
                source = out / f"{fn}.cpp"
                text = UNIT.format(ns=identifier(label), header=header, cls=cls, fn=fn)
                if not source.exists() or source.read_text() != text or source.stat().st_mtime < header.stat().st_mtime:
                    source.write_text(text)
                units.append((source, out / f"{fn}.o"))
                entries.append((label, model, fn))
        with open(out / "entries.inc", "w") as f:
            for _, _, fn in entries:
                f.write(f'extern "C" void {fn}_sizes(int*, int*);\nextern "C" void {fn}_normalize(double*);\n'
                        f'extern "C" void {fn}(const double*, const double*, double*);\n')
            f.write("static const Entry kEntries[] = {\n")
            for label, model, fn in entries:
                f.write(f'    {{"{label}", "{model}", {fn}_sizes, {fn}_normalize, {fn}}},\n')
            f.write("};\n")
        with concurrent.futures.ThreadPoolExecutor(args.j) as pool:
            list(pool.map(lambda u: compile_unit(cxx, flags, *u), units))
        program = out / "compare"
        subprocess.run([cxx, "-std=c++20", *flags, "-I", str(out), str(HERE / "compare_generated_main.cpp"),
                        *[str(o) for _, o in units], "-o", str(program)], check=True)
        version = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
        load = open("/proc/loadavg").read().split()[:3]
        print(f"## {version}; {args.flags}; {os.cpu_count()} cores, load {' '.join(load)}", flush=True)
        run = [str(program), str(args.rounds)]
        subprocess.run((["taskset", "-c", args.cpu] if args.cpu else []) + run, check=True)


if __name__ == "__main__":
    main()
