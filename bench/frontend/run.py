#!/usr/bin/env python3
"""Front-end speed: parse + check of large chains with `capstan check`.

Two shapes of the same N-link chain:
  loop      one `for` loop over component arrays (SPEC's Chain with n = N)
  unrolled  N explicitly declared links and joints (a big file to parse)

Prints one line per case with the median wall time of `capstan check` over
several runs (process start included). Usage:
  python3 bench/frontend/run.py --capstan build/compiler/capstan [--n 1000] [--runs 7]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

LINK = """package Robots
  model Link
    import Capstan.*;
    parameter Real L(unit = "m") = 0.5;
    parameter Real m(unit = "kg") = 0.4;
    Body body(mass = m, com = {0, -L/2, 0}, inertia = diagonal({m*L^2/12, 1e-4, m*L^2/12}));
    FixedTranslation tip(r = {0, -L, 0});
  equation
    connect(body.frame_a, tip.frame_a);
  end Link;
end Robots;
"""


def loop_model(n):
    return LINK + f"""
model Chain
  import Capstan.*;
  parameter Integer n = {n};
  World world;
  Robots.Link link[n];
  Revolute joint[n](each axis = {{0, 0, 1}});
equation
  connect(world.frame_b, joint[1].frame_a);
  for i in 1:n loop
    connect(joint[i].frame_b, link[i].body.frame_a);
  end for;
  for i in 1:n-1 loop
    connect(link[i].tip.frame_b, joint[i+1].frame_a);
  end for;
end Chain;
"""


def unrolled_model(n):
    lines = [LINK, "model Chain", "  import Capstan.*;", "  World world;"]
    for i in range(1, n + 1):
        lines.append(f"  Robots.Link link{i}(L = {0.5 + 0.001 * i});")
        lines.append(f"  Revolute joint{i}(axis = {{0, 0, 1}});")
    lines.append("equation")
    lines.append("  connect(world.frame_b, joint1.frame_a);")
    for i in range(1, n + 1):
        lines.append(f"  connect(joint{i}.frame_b, link{i}.body.frame_a);")
        if i < n:
            lines.append(f"  connect(link{i}.tip.frame_b, joint{i + 1}.frame_a);")
    lines.append("end Chain;")
    return "\n".join(lines) + "\n"


def time_check(capstan, path, runs):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.run([capstan, "check", path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            sys.exit(f"capstan check {path} failed:\n{proc.stderr.decode()}")
    return statistics.median(times), min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--capstan", default="build/compiler/capstan")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=7)
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in (("loop", loop_model(opts.n)), ("unrolled", unrolled_model(opts.n))):
            path = os.path.join(tmp, f"chain_{name}.cap")
            with open(path, "w") as f:
                f.write(text)
            med, best = time_check(opts.capstan, path, opts.runs)
            print(f"{name:9s} n={opts.n:5d}  {len(text) / 1024:7.1f} KiB  "
                  f"median {med * 1000:8.1f} ms  best {best * 1000:8.1f} ms  (target < 1000 ms)")


if __name__ == "__main__":
    main()
