#!/usr/bin/env python3
"""Generated forwardDynamicsDerivatives (capstan compile --derivatives):
header size, g++ -O2 compile time of a translation unit that calls it only,
and microseconds (thread CPU time) per call next to forwardDynamics' (docs/performance.md,
"Derivatives of forward dynamics"). Run on demand, never as a timed test:

  python3 bench/derivatives/run.py --capstan build/compiler/capstan \
      bench/peers/models/arm7.cap bench/peers/models/humanoid.cap

Options: --no-time (compile only), --rounds N (default 31), --reps N (g++
runs per model, the median reported; default 1), --chains 15,25 (also
chains of those lengths, written as bench/peers/make_models.py writes
chainN.cap: the compile-time crossover).
"""
import argparse
import os
import pathlib
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]

PROGRAM = r"""#include "{header}"
#include <time.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>
using Model = capstan_models::{cls};

// This thread's CPU time (s): the machine is shared, and wall time would
// count the time other processes run.
double cpu() {{
  timespec ts{{}};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}}

// Median over rounds of the mean CPU time of `calls` calls (microseconds).
template <class F>
double median(int rounds, int calls, F f) {{
  std::vector<double> t;
  for (int r = 0; r < rounds; ++r) {{
    const double a = cpu();
    for (int k = 0; k < calls; ++k) f(k);
    t.push_back(1e6 * (cpu() - a) / calls);
  }}
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}}

int main() {{
  Model m;
  Model::Q q0;
  Model::U u0;
  m.initialState(q0, u0);
  // 16 states near the initial one (quaternions normalized).
  std::vector<Model::Q> qs(16, q0);
  std::vector<Model::U> us(16, u0);
  for (int s = 0; s < 16; ++s) {{
    for (int i = 0; i < Model::nq; ++i) qs[s][i] += 0.3 * std::sin(1.0 + i + 7.0 * s);
    Model::normalizeQuaternions(qs[s]);
    for (int i = 0; i < Model::nu; ++i) us[s][i] = std::cos(2.0 + i + 3.0 * s);
  }}
  Model::U udot;
  Model::MassMatrix a, b, c;
  double sink = 0;
  const int calls = 200;
  const double fd = median({rounds}, calls, [&](int k) {{
    m.forwardDynamics(0.0, qs[k % 16], us[k % 16], udot);
    sink += udot[0];
  }});
  const double d = median({rounds}, calls / 10, [&](int k) {{
    m.forwardDynamicsDerivatives(0.0, qs[k % 16], us[k % 16], a, b, c);
    sink += a(0, 0) + b(0, 0) + c(0, 0);
  }});
  std::printf("%.3f %.3f %d\n", fd, d, sink == 12345.678);
}}
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--capstan", required=True)
    ap.add_argument("--rounds", type=int, default=31)
    ap.add_argument("--no-time", action="store_true")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--chains", default="")
    ap.add_argument("models", nargs="*")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}", flush=True)
    print("| model | nu | header (MB, lines) | forwardDynamicsDerivatives ops | g++ -O2 CPU s, derivatives only | "
          "forwardDynamics us | derivatives us |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        models = list(args.models)
        if args.chains:
            sys.path.insert(0, str(ROOT / "bench" / "peers"))
            import make_models
            for n in map(int, args.chains.split(",")):
                path = tmp / f"chain{n}.cap"
                make_models.write_tree_cap(str(path), f"Chain{n}", f"A {n}-link spatial chain.", make_models.chain(n))
                models.append(str(path))
        for model in models:
            out = tmp / pathlib.Path(model).stem
            subprocess.run([args.capstan, "compile", model, "-o", out, "--derivatives"], check=True,
                           stderr=subprocess.DEVNULL)
            header = next(out.glob("*.hpp"))
            text = header.read_text()
            cls = header.stem
            sig = text.index("void forwardDynamicsDerivatives(")
            ops = re.findall(r"// \((\d+) adds, (\d+) muls, (\d+) divs", text[:sig])[-1]
            nu = int(re.search(r"static constexpr int nu = (\d+);", text).group(1))
            only = out / "only.cpp"
            only.write_text(f'#include "{header.name}"\nusing M = capstan_models::{cls};\n'
                            "void d(const M& m, const M::Q& q, const M::U& u, M::MassMatrix& a, M::MassMatrix& b, "
                            "M::MassMatrix& c) { m.forwardDynamicsDerivatives(0.0, q, u, a, b, c); }\n")
            cpus = []
            for _ in range(args.reps):
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                subprocess.run(["g++", "-std=c++20", "-O2", "-isystem", "/usr/include/eigen3", "-I", out, "-c", only,
                                "-o", out / "only.o"], check=True)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            cpu = statistics.median(cpus)
            fd = dd = "-"
            if not args.no_time:
                prog = out / "time.cpp"
                prog.write_text(PROGRAM.format(header=header.name, cls=cls, rounds=args.rounds))
                subprocess.run(["g++", "-std=c++20", "-O2", "-DNDEBUG", "-isystem", "/usr/include/eigen3", "-I", out,
                                prog, "-o", out / "time"], check=True)
                fd, dd, _ = subprocess.run([out / "time"], check=True, stdout=subprocess.PIPE,
                                           text=True).stdout.split()
            print(f"| {pathlib.Path(model).stem} | {nu} | {len(text) / 1e6:.1f}, {text.count(chr(10))} | "
                  f"{ops[0]} adds, {ops[1]} muls, {ops[2]} divs | {cpu:.1f}"
                  f"{' (' + ', '.join(f'{c:.1f}' for c in cpus) + ')' if len(cpus) > 1 else ''} | {fd} | {dd} |",
                  flush=True)
    print(f"load average at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
