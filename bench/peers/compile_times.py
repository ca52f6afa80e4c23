#!/usr/bin/env python3
"""`capstan compile` time and the generated header's g++ -O2 compile time vs
N for the chains (docs/performance.md). Times are CPU seconds
(user + sys of the child: on a shared machine wall time also counts waiting
for a core), wall seconds beside them; medians over --reps runs.

Two translation units per header: `fd` calls forwardDynamics only (what a
user integrating the model needs); `all` calls every evaluation function of
the class API (massMatrix, bias, forwardDynamics, bodyPoses,
bodyVelocities, energies, outputs)."""
import argparse
import os
import resource
import statistics
import subprocess
import tempfile
import time

FD = """#include "{cls}.hpp"
using M = capstan_models::{cls};
void fd(const M& m, const M::Q& q, const M::U& u, M::U& udot) {{ m.forwardDynamics(0.0, q, u, udot); }}
"""
ALL = FD + """void all(const M& m, const M::Q& q, const M::U& u, M::MassMatrix& Mm, M::U& c, M::BodyPoses& p,
         M::BodyVelocities& v, M::Outputs& o, double& e) {{
  m.massMatrix(q, Mm); m.bias(q, u, c); m.bodyPoses(q, p); m.bodyVelocities(q, u, v);
  m.outputs(0.0, q, u, o); e = m.kineticEnergy(q, u) + m.potentialEnergy(q);
}}
"""


def timed(cmd, timeout=None, quiet=False):
    """(CPU s, wall s, peak RSS KiB, finished): a run past `timeout` wall
    seconds is killed and reported as a lower bound."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    finished = True
    try:
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, timeout=timeout,
                       stderr=subprocess.DEVNULL if quiet else None)
    except subprocess.TimeoutExpired:
        finished = False
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, after.ru_maxrss, finished


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--capstan", required=True)
    ap.add_argument("--cxx", default=os.environ.get("CXX", "g++"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--chains", default="5,10,20,50")
    ap.add_argument("--kinds", default="fd,all", help="which translation units to compile: fd, all")
    ap.add_argument("--timeout", type=float, default=900, help="wall seconds per g++ run before giving up")
    args = ap.parse_args()
    version = subprocess.run([args.cxx, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print(f"compile times ({version}, -std=c++20 -O2; CPU s (wall s); median of {args.reps} (capstan: of 5)); "
          f"load average {os.getloadavg()[0]:.2f}")
    print("| model | header lines | forwardDynamics ops (+, *, /) | capstan compile | g++ -O2, fd only | g++ -O2, whole API | peak RSS of any child so far (capstan or g++) |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.chains.split(","):
            cap = os.path.join(here, "models", f"chain{n}.cap")
            cls = f"Chain{n}"
            cc = [timed([args.capstan, "compile", cap, "-o", tmp], quiet=True) for _ in range(5)]
            header = os.path.join(tmp, cls + ".hpp")
            text = open(header).read()
            ops = ""
            lines = text.splitlines()
            for i, line in enumerate(lines):
                if "void forwardDynamics(" in line and "fext" not in line:  # not the overload with forces
                    ops = lines[i - 1].strip().lstrip("/ ").strip("()")
            res = {}
            for kind, src in (("fd", FD), ("all", ALL)):
                if kind not in args.kinds.split(","):
                    continue
                tu = os.path.join(tmp, f"{kind}_{cls}.cpp")
                with open(tu, "w") as f:
                    f.write(src.format(cls=cls))
                cmd = [args.cxx, "-std=c++20", "-O2", "-I", tmp, "-I", "/usr/include/eigen3", "-c", tu, "-o", tu + ".o"]
                runs = [timed(cmd, args.timeout)]
                # A compile of over a minute of CPU time is not repeated.
                while len(runs) < args.reps and runs[0][3] and runs[0][0] < 60:
                    runs.append(timed(cmd, args.timeout))
                res[kind] = runs

            def fmt(runs):
                text = f"{statistics.median(r[0] for r in runs):.2f} ({statistics.median(r[1] for r in runs):.2f})"
                if not all(r[3] for r in runs):
                    return f"> {text}: killed after {args.timeout:.0f} s wall"
                return text + ("" if len(runs) > 1 else ", 1 run")
            rss = max(r[2] for runs in res.values() for r in runs) / 1024
            cells = [fmt(res[k]) if k in res else "not run" for k in ("fd", "all")]
            print(f"| chain{n} | {len(lines)} | {ops} | {fmt(cc)} | {cells[0]} | {cells[1]} | {rss:.0f} MiB |",
                  flush=True)
    print(f"load average at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
