#!/usr/bin/env python3
"""Tests of generated code.

  run.py --capstan BIN golden [--update]   generated headers and short trajectories
                                           vs the files in tests/golden/<model>/
                                           (--update re-blesses them)
  run.py --capstan BIN agreement           generated code vs the reference interpreter
                                           (`capstan eval` vs `capstan eval --interpret`)
                                           to 1e-12 relative, on the tree examples and
                                           on random trees with every joint type
  run.py --capstan BIN warnings            generated headers (and the driver capstan builds
                                           around them) compile with -Wall -Wextra -Wpedantic
                                           -Werror under g++ and clang++
  run.py --capstan BIN trajectories      `capstan simulate` and `simulate --interpret` (one
                                           loop, capstan::sim) on every example: the same
                                           header, the same rows to 1e-12 (1e-9 with cables)
  run.py --capstan BIN format              the header does not depend on the templates'
                                           whitespace (Clang's Format library lays it out)
"""
import argparse
import json
import math
import os
import pathlib
import random
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent
EIGEN = "/usr/include/eigen3"
# (example, model class, simulate arguments) for the golden trajectories.
EXAMPLES = [
    ("examples/double_pendulum.cap", "DoublePendulum", ["--t-end", "0.5", "--dt", "0.05", "--integrator", "rk4"]),
    ("examples/chain.cap", "Chain", ["--t-end", "0.5", "--dt", "0.05", "--integrator", "rk4",
                                     "--set", "joint[1].q0=0.4", "--set", "joint[3].u0=-1"]),
    # Constraints: a planar loop closed by a cut joint (redundant rows), and
    # a rolling contact between two moving bodies.
    ("examples/fourbar.cap", "FourBar", ["--t-end", "0.5", "--dt", "0.05", "--integrator", "rk4",
                                         "--constraint-errors"]),
    ("examples/sphere_on_sphere.cap", "SphereOnSphere", ["--t-end", "0.5", "--dt", "0.05", "--integrator", "rk4",
                                                         "--constraint-errors"]),
]
# A model whose force law and outputs call external C++ functions, and
# the folder of their header.
EXTERNAL = ROOT / "tests/codegen/models/external.cap"
EXTERNAL_INCLUDE = ROOT / "tests/codegen/models/include"
# Golden files only (not in EXAMPLES, whose models `agreement` also checks):
# generated code that calls external C++ functions (`agreement` and
# `warnings` take EXTERNAL on their own), and force elements.
GOLDEN_ONLY = [
    ("tests/codegen/models/external.cap", "Wheel", ["--t-end", "0.5", "--dt", "0.05", "--integrator", "rk4"]),
    # Force elements with code of their own: a bushing's roll-pitch-yaw
    # springs, and a cable's path over an obstacle (the class's cable code).
    ("examples/bushing.cap", "BushingMount", ["--t-end", "0.5", "--dt", "0.05", "--integrator", "rk4"]),
    ("examples/cable.cap", "CableOverCylinder", ["--t-end", "0.5", "--dt", "0.05", "--integrator", "rk4"]),
]
RELATIVE_TOLERANCE = 1e-12     # generated vs interpreted
TRAJECTORY_TOLERANCE = 1e-9    # stored trajectories (relative to each column's scale)
ACCELERATION_RESIDUAL = 1e-8   # |G udot - gamma| left by the constraint solve (m/s^2, rad/s^2)


# Revolute links in the long chains of `agreement` and `warnings`: enough
# for forwardDynamics with external forces to be emitted in parts, and
# forwardDynamics as shared steps (docs/generated-code.md).
LONG_CHAIN = 30
# From this many speeds on, forwardDynamics carries `#pragma clang fp
# contract(fast)` (codegen/function_builder.hpp, kFusedMinSpeeds): the
# warnings test checks it is there exactly then, so that clang++ -Werror
# sees it (WarnChain) and smaller models keep clang's default.
FUSED_MIN_SPEEDS = 20
FUSED_PRAGMA = "#pragma clang fp contract(fast)"
# Free bodies in the models of `agreement` and `warnings` with more than 128
# dofs, whose MassMatrix is dynamic-size (Eigen's fixed-size limit).
FREE_BODIES = 22


def run(capstan, *args, check=True):
    proc = subprocess.run([capstan, *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    if check and proc.returncode != 0:
        raise RuntimeError(f"capstan {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr.decode()}")
    return proc


# ---------------------------------------------------------------- random trees
def vec(v):
    return "{" + ", ".join(repr(float(x)) for x in v) + "}"


def random_rotation(rng):
    # From a random unit quaternion (w, x, y, z).
    q = [rng.gauss(0, 1) for _ in range(4)]
    n = math.sqrt(sum(x * x for x in q))
    w, x, y, z = (c / n for c in q)
    return [[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]]


def random_tree(rng, n, name, chain=False, free=False, types=None, serial=False):
    """A random tree of n bodies with every joint type (or those of `types`,
    each once first), an armature on its odd Revolute and Prismatic joints;
    with `chain` a serial chain of revolute joints (long
    enough ones are emitted in parts); with `free` n free bodies (6 dofs each
    for little code); with `serial` a serial chain of those joint types."""
    types = ["Revolute"] if chain else ["Free"] if free else types or \
        ["Revolute", "Prismatic", "Cylindrical", "Universal", "Ball", "Free"]
    lines = [f"model {name}", "  import Capstan.*;", "  parameter Real s(unit = \"kg\") = 1.3;",
             "  World world(gravity = {0.3, -9.81, 0.2});"]
    eqs = []
    for k in range(1, n + 1):
        t = types[(k - 1) % len(types)] if k <= len(types) else rng.choice(types)
        parent = k - 1 if chain or serial else 0 if k == 1 or free else rng.randrange(0, k)
        pframe = "world.frame_b" if parent == 0 else f"b{parent}.frame_a"
        axis = [rng.uniform(-1, 1) for _ in range(3)]
        if t in ("Revolute", "Prismatic", "Cylindrical"):
            # A rotor's inertia on the odd Revolute and Prismatic joints of a
            # tree (a run-time parameter); the even ones leave it folded at 0.
            # No draw from rng: the rest of the tree is as it was without.
            armature = f", armature = {0.02 * k:g}" if t != "Cylindrical" and k % 2 and not chain else ""
            lines.append(f"  {t} j{k}(axis = {vec(axis)}{armature});")
        elif t == "Universal":
            lines.append(f"  Universal j{k}(axis_a = {vec([1, 0, 0])}, axis_b = {vec([0, 0.6, 0.8])});")
        else:
            lines.append(f"  {t} j{k};")
        a = [rng.uniform(0.5, 1.0) * 0.1 for _ in range(3)]
        mass = f"s * {rng.uniform(0.5, 2):.6f}" if k % 2 else f"{rng.uniform(0.5, 2):.6f}"
        lines.append(f"  Body b{k}(mass = {mass}, com = {vec([rng.uniform(-.3, .3) for _ in range(3)])}, "
                     f"inertia = diagonal({vec(a)}));")
        lines.append(f"  FixedTranslation o{k}(r = {vec([rng.uniform(-.5, .5) for _ in range(3)])});")
        eqs.append(f"  connect({pframe}, o{k}.frame_a);")
        reversed_joint = t in ("Revolute", "Prismatic") and rng.random() < 0.4
        inboard, outboard = ("frame_b", "frame_a") if reversed_joint else ("frame_a", "frame_b")
        eqs.append(f"  connect(o{k}.frame_b, j{k}.{inboard});")
        if rng.random() < 0.5:
            R = random_rotation(rng)
            lines.append(f"  FixedFrame c{k}(r = {vec([rng.uniform(-.3, .3) for _ in range(3)])}, "
                         f"R = {{{', '.join(vec(row) for row in R)}}});")
            eqs.append(f"  connect(j{k}.{outboard}, c{k}.frame_a);")
            eqs.append(f"  connect(c{k}.frame_b, b{k}.frame_a);")
        else:
            eqs.append(f"  connect(j{k}.{outboard}, b{k}.frame_a);")
    if not free:
        eqs.append("  j1.tau = -0.3 * j1.u + 0.1 * sin(2 * time);")
    return "\n".join(lines + ["equation"] + eqs + [f"end {name};", ""])


def constraint_zoo(rng, name):
    """Seven bodies on Free joints from the world, each held to the next by
    a cut joint of one type, and three sphere-on-sphere contacts (the last
    body on the world's sphere, rolling; two pairs of bodies, without and
    with rolling): constraint rows of every kind, 34 of them on 42 dofs, so
    that G has full rank. At q0 (every body at the world's origin) each
    cut's two frames are the same random frame and each pair of spheres
    touches along a random normal, so every constraint holds there."""
    lines = [f"model {name}", "  import Capstan.*;", "  parameter Real s(unit = \"m\") = 0.3;",
             "  World world(gravity = {0.3, -9.81, 0.2});"]
    eqs = []
    chain = []
    for k in range(1, 8):
        lines.append(f"  Free f{k};")
        a = [rng.uniform(0.5, 1.0) * 0.1 for _ in range(3)]
        lines.append(f"  Body b{k}(mass = {rng.uniform(0.5, 2):.6f}, com = {vec([rng.uniform(-.3, .3) for _ in range(3)])}, "
                     f"inertia = diagonal({vec(a)}));")
        eqs.append(f"  connect(world.frame_b, f{k}.frame_a);")
        eqs.append(f"  connect(f{k}.frame_b, b{k}.frame_a);")
        chain.append(f"b{k}")

    def frame_on(body, tag, r, R):
        lines.append(f"  FixedFrame {tag}(r = {vec(r)}, R = {{{', '.join(vec(row) for row in R)}}});")
        eqs.append(f"  connect({body}.frame_a, {tag}.frame_a);")
        return f"{tag}.frame_b"

    for i, t in enumerate(["Weld", "Revolute", "Prismatic", "Cylindrical", "Universal", "Ball"]):
        axis = [rng.uniform(-1, 1) for _ in range(3)]
        if t in ("Revolute", "Prismatic", "Cylindrical"):
            lines.append(f"  {t} cut{t}(axis = {vec(axis)}, cut = true);")
        elif t == "Universal":
            lines.append(f"  Universal cut{t}(axis_a = {vec([1, 0, 0])}, axis_b = {vec([0, 0.6, 0.8])}, cut = true);")
        else:
            lines.append(f"  {t} cut{t}(cut = true);")
        r, R = [rng.uniform(-.3, .3) for _ in range(3)], random_rotation(rng)
        eqs.append(f"  connect({frame_on(chain[i], 'fa' + t, r, R)}, cut{t}.frame_a);")
        eqs.append(f"  connect({frame_on(chain[i + 1], 'fb' + t, r, R)}, cut{t}.frame_b);")
    lines.append("  Sphere ground(radius = 1.1);")
    eqs.append("  connect(world.frame_b, ground.frame_a);")
    identity = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    for i, (f, b, rolling) in enumerate([("ground", chain[6], "true"), (chain[0], chain[2], "false"),
                                         (chain[1], chain[4], "true")]):
        n = random_rotation(rng)[0]
        rb = rng.uniform(0.1, 0.4)
        if f == "ground":
            rf, at = 1.1, [0, 0, 0]
        else:
            body, f, rf = f, f"sf{i}", 0.3
            at = [rng.uniform(-.3, .3) for _ in range(3)]
            lines.append(f"  Sphere {f}(radius = s);")
            eqs.append(f"  connect({frame_on(body, 'cf' + str(i), at, identity)}, {f}.frame_a);")
        lines.append(f"  Sphere sb{i}(radius = {rb!r});")
        eqs.append(f"  connect({frame_on(b, 'cb' + str(i), [a + (rf + rb) * c for a, c in zip(at, n)], identity)}, "
                   f"sb{i}.frame_a);")
        lines.append(f"  SphereOnSphereContact contact{i}(sphereF = {f}, sphereB = sb{i}, rolling = {rolling});")
    return "\n".join(lines + ["equation"] + eqs + [f"end {name};", ""])


def nearby_state(rng, result, spread=0.2):
    """A STATE.json near an eval result's q (each coordinate moved by up to
    `spread`, quaternions renormalized) with random u: for models with
    constraints, which `eval --assemble` then moves back onto them."""
    q, u = {}, {}
    for joint, values in result["q"].items():
        v = [x + rng.uniform(-spread, spread) for x in values]
        if len(values) in (4, 7):
            n = math.sqrt(sum(x * x for x in v[:4]))
            v[:4] = [x / n for x in v[:4]]
        q[joint] = v
    for joint, values in result["u"].items():
        u[joint] = [rng.uniform(-2, 2) for _ in values]
    return {"time": rng.uniform(0, 3), "q": q, "u": u}


def random_state(rng, result):
    """A STATE.json for a model, from an eval result (which gives the joints)."""
    q, u = {}, {}
    for joint, values in result["q"].items():
        v = [rng.uniform(-1.5, 1.5) for _ in values]
        if len(values) in (4, 7):  # quaternion first
            n = math.sqrt(sum(x * x for x in v[:4]))
            v[:4] = [x / n for x in v[:4]]
        q[joint] = v
    for joint, values in result["u"].items():
        u[joint] = [rng.uniform(-2, 2) for _ in values]
    return {"time": rng.uniform(0, 3), "q": q, "u": u}


def flatten(x, prefix=""):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from flatten(v, f"{prefix}.{k}" if prefix else k)
    elif isinstance(x, list):
        scale = max([abs(v) for v in flatten_values(x)] + [1.0])
        for i, v in enumerate(flatten_values(x)):
            yield f"{prefix}[{i}]", v, scale
    else:
        yield prefix, x, max(abs(x), 1.0)


def flatten_values(x):
    for v in x:
        if isinstance(v, list):
            yield from flatten_values(v)
        else:
            yield v


def compare_eval(capstan, model, state, tmp, extra=()):
    path = tmp / "state.json"
    path.write_text(json.dumps(state))
    generated = json.loads(run(capstan, "eval", str(model), "--state", str(path), *extra).stdout)
    interpreted = json.loads(run(capstan, "eval", str(model), "--state", str(path), "--interpret", *extra).stdout)
    a = {k: (v, s) for k, v, s in flatten(generated)}
    b = {k: (v, s) for k, v, s in flatten(interpreted)}
    if a.keys() != b.keys():
        return [f"{model}: keys differ: {sorted(set(a) ^ set(b))}"]
    errors = []
    for k in a:
        (x, s), (y, _) = a[k], b[k]
        if ".acceleration_error[" in k:
            # Residuals of the constraint solve, round-off in both: small, not equal.
            if max(abs(x), abs(y)) > ACCELERATION_RESIDUAL:
                errors.append(f"{model}: {k}: generated {x!r}, interpreted {y!r}: the solve left a residual")
            continue
        if abs(x - y) > RELATIVE_TOLERANCE * s:
            errors.append(f"{model}: {k}: generated {x!r} vs interpreted {y!r}")
    return errors


def agreement(capstan):
    rng = random.Random(20240611)
    errors = []
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        # ... and a model whose force law and outputs read frame quantities.
        models = [ROOT / e[0] for e in EXAMPLES] + [ROOT / "tests/codegen/models/sensors.cap"]
        for i, n in enumerate([6, 7, 9]):
            p = tmp / f"tree{i}.cap"
            p.write_text(random_tree(rng, n, f"RandomTree{i}"))
            models.append(p)
        p = tmp / "long_chain.cap"
        p.write_text(random_tree(rng, LONG_CHAIN, "LongChain", chain=True))
        models.append(p)
        p = tmp / "free_bodies.cap"
        p.write_text(random_tree(rng, FREE_BODIES, "FreeBodies", free=True))
        models.append(p)
        models.append(EXTERNAL)  # force law and outputs call external C++ functions
        # Constraints: the examples, and rows of every kind with G of full rank.
        models += [ROOT / "examples/pendulum_contact.cap"]
        p = tmp / "constraint_zoo.cap"
        p.write_text(constraint_zoo(rng, "ConstraintZoo"))
        models.append(p)
        for model in models:
            base = json.loads(run(capstan, "eval", str(model), "--state", str(write(tmp, {})), "--interpret").stdout)
            # Constraints are solved at states that satisfy them (as in a
            # simulation): away from them the KKT system can be arbitrarily
            # ill-conditioned, and round-off is all the two would differ by.
            constrained = "constraints" in base
            for _ in range(4):
                state = nearby_state(rng, base) if constrained else random_state(rng, base)
                errors += compare_eval(capstan, model, state, tmp, ["--assemble"] if constrained else [])
            print(f"agreement: {model.name}: checked")
    for e in errors[:40]:
        print(e)
    return 1 if errors else 0


def write(tmp, obj):
    p = tmp / "empty.json"
    p.write_text(json.dumps(obj))
    return p


# ---------------------------------------------------------------- golden files
def read_csv(path):
    lines = pathlib.Path(path).read_text().strip().split("\n")
    return lines[0].split(","), [[float(x) for x in line.split(",")] for line in lines[1:]]


def golden(capstan, update):
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        for example, cls, sim_args in EXAMPLES + GOLDEN_ONLY:
            out = HERE / pathlib.Path(example).stem
            run(capstan, "compile", example, "-o", str(tmp), "--ir")
            traj = tmp / "trajectory.csv"
            run(capstan, "simulate", example, *sim_args, "-o", str(traj))
            files = [(f"{cls}.hpp", "text"), (f"{cls}.ir.json", "text"), ("trajectory.csv", "csv")]
            for name, kind in files:
                got, want = tmp / name, out / name
                if update:
                    out.mkdir(parents=True, exist_ok=True)
                    shutil.copy(got, want)
                    continue
                if not want.exists():
                    print(f"golden: missing {want}; run with --update")
                    failures += 1
                elif kind == "text" and got.read_text() != want.read_text():
                    print(f"golden: {want.relative_to(ROOT)} differs from the generated file (re-bless with --update)")
                    failures += 1
                elif kind == "csv":
                    gh, gr = read_csv(got)
                    wh, wr = read_csv(want)
                    if gh != wh or len(gr) != len(wr):
                        print(f"golden: {want.relative_to(ROOT)}: header or row count differs")
                        failures += 1
                        continue
                    for c, col in enumerate(wh):
                        scale = max([abs(r[c]) for r in wr] + [1.0])
                        for r in range(len(wr)):
                            if abs(gr[r][c] - wr[r][c]) > TRAJECTORY_TOLERANCE * scale:
                                print(f"golden: {want.relative_to(ROOT)}: `{col}` leaves the tolerance at "
                                      f"t = {wr[r][0]}: {gr[r][c]!r} vs {wr[r][c]!r}")
                                failures += 1
                                break
            print(f"golden: {example}: {'blessed' if update else 'checked'}")
    return 1 if failures else 0


# ---------------------------------------------------------------- warnings
# Every generated function of MODEL called once, in a namespace of its own:
# all the models go into one translation unit per compiler, which parses
# Eigen and the runtime once (half the time of one program per model).
USE = """#include MODEL_HEADER
namespace use_MODEL {
using capstan_models::MODEL;
int run() {
  MODEL m;
  MODEL::Q q; MODEL::U u, ud, c, tau; MODEL::MassMatrix M;
  m.initialState(q, u);
  MODEL::Q qd; m.qdot(q, u, qd);
  m.massMatrix(q, M); m.bias(q, u, c); m.appliedForces(0.0, q, u, tau);
  m.forwardDynamics(0.0, q, u, ud);
  MODEL::ExternalForces fext{}; m.forwardDynamics(0.0, q, u, fext, ud);
  MODEL::BodyPoses X; m.bodyPoses(q, X);
  MODEL::BodyVelocities V; m.bodyVelocities(q, u, V);
  MODEL::Outputs o; m.outputs(0.0, q, u, o);
  double* p = m.parameter("nothing");
  return static_cast<int>(m.kineticEnergy(q, u) + m.potentialEnergy(q)) + (p != nullptr);
}
}  // namespace use_MODEL
"""


USE_DERIVATIVES = """#include MODEL_HEADER
using capstan_models::MODEL;
int main() {
  MODEL m;
  MODEL::Q q; MODEL::U u; MODEL::MassMatrix dq, du, dtau, tq, tu, M;
  m.initialState(q, u);
  m.forwardDynamicsDerivatives(0.0, q, u, dq, du, dtau);
  m.inverseDynamicsDerivatives(0.0, q, u, u, tq, tu, M);
  return static_cast<int>(dq(0, 0) + du(0, 0) + dtau(0, 0) + tq(0, 0) + tu(0, 0) + M(0, 0));
}
"""


# A member function's first line (its signature may go on over more lines,
# wrapped at the style's column limit), or a split function's workspace.
SEGMENT_START = re.compile(r"^  (?:struct \w+Work \{|[^\s/].* \w+\([^;]*)$")
LOCAL = re.compile(r"^\s+(?:Eigen::\w+(?:<[^;]*>)?|MassMatrix|U|Q|double) (\w+)(?: = [^;,]*)?;")
STORE = re.compile(r"^\s+(\w+)(\[\d+\]|\(\d+, \d+\)) = ")
# A local read whole: its name (or w.name) not followed by an index, not stored into.
WHOLE = re.compile(r"(?<![\w.])(?:w\.)?([A-Za-z_]\w*)\b(?!\s*[\[(])(?!\s*=[^=])")


def dead_stores(header):
    """Entries of a function's locals written and never read afterwards, as
    (function line, entry); a split function's workspace struct and the
    function are one scope. A later line that reads the local whole (`M` or
    `w.M`, not `M(0, 0)`: Eigen's LLT of forwardDynamicsDerivatives; or a
    declaration's initializer) reads every entry. Also how many stores were looked at."""
    lines = header.splitlines()
    starts = [i for i, line in enumerate(lines) if SEGMENT_START.match(line)] + [len(lines)]
    dead, stores = [], 0
    k = 0
    while k + 1 < len(starts):
        begin = starts[k]
        if "Work {" in lines[begin]:  # the workspace, its parts and the function that runs them
            k += 1
        end = starts[k + 1]
        k += 1
        scope = lines[begin:end]
        locals_ = {m.group(1) for m in map(LOCAL.match, scope) if m}
        whole = {}  # local -> the last line that reads it whole
        for i, line in enumerate(scope):
            if line.lstrip().startswith("//"):
                continue
            code = line.split("//")[0]
            if LOCAL.match(line):  # a declaration reads its initializer only (`U rhs = tau - C;`)
                if " = " not in code:
                    continue
                code = code.split(" = ", 1)[1]
            for name in WHOLE.findall(code):
                if name in locals_:
                    whole[name] = i
        for i, line in enumerate(scope):
            m = STORE.match(line)
            if not m or m.group(1) not in locals_:
                continue
            stores += 1
            entry = m.group(1) + m.group(2)
            if whole.get(m.group(1), -1) <= i and not any(entry in later for later in scope[i + 1:]):
                dead.append((begin + 1, entry))
    return dead, stores


def compiles(cmd, what):
    """Runs a compiler command and prints `WHAT: ok`, or `WHAT: FAILED` and
    the compiler's messages; returns the number of failures (0 or 1)."""
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    print(f"{what}: {'ok' if proc.returncode == 0 else 'FAILED'}")
    if proc.returncode != 0:
        print(proc.stdout.decode()[:4000])
    return 1 if proc.returncode != 0 else 0


def warnings(capstan):
    rng = random.Random(7)
    failures = 0
    # No dead stores in the generated code of the examples and bench models.
    with tempfile.TemporaryDirectory() as d:
        checked = 0
        for model in sorted(ROOT.glob("examples/*.cap")) + sorted(ROOT.glob("bench/peers/models/*.cap")):
            if run(capstan, "compile", str(model), "-o", d, check=False).returncode != 0:
                continue  # not generated yet (NotYetGenerated)
            for header in pathlib.Path(d).glob("*.hpp"):
                text = header.read_text()
                # At most one division per pivot (nu of them), plus one per
                # joint quaternion (R of a quaternion divides by its norm^2)
                # and what force elements need.
                nu = int(re.search(r"static constexpr int nu = (\d+);", text).group(1))
                quaternions = text.count("q[i] /= norm;")
                # A bushing divides by cos pitch and normalizes its halfway
                # quaternion; a spring divides by its length.
                found = re.search(r"static constexpr int nbushings = (\d+);", text)
                bushings = int(found.group(1)) if found else 0
                springs = len(set(re.findall(r"Eigen::Matrix<double, 6, 1> F_Co(\w+);", text))) - bushings
                divs = int(re.search(r"\((\d+) adds, \d+ muls, (\d+) divs[^\n]*\n  void forwardDynamics", text).group(2))
                if divs > nu + quaternions + 2 * bushings + springs:
                    print(f"warnings: {model.name}: forwardDynamics divides {divs} times for {nu} pivots, "
                          f"{quaternions} quaternions, {bushings} bushings and {springs} springs")
                    failures += 1
                dead, stores = dead_stores(text)
                checked += stores
                for line, entry in dead[:10]:
                    print(f"warnings: {model.name}: `{entry}` is written and never read (function at line {line})")
                failures += len(dead)
                header.unlink()
        print(f"warnings: {checked} stores to locals checked for dead stores")
        if checked == 0:
            failures += 1
    compilers = [c for c in ("g++", "clang++") if shutil.which(c)]
    if len(compilers) < 2:
        print("warnings: both g++ and clang++ are needed")
        return 1
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        models = [(ROOT / e[0], e[1]) for e in EXAMPLES]
        tree = tmp / "tree.cap"
        tree.write_text(random_tree(rng, 6, "WarnTree"))
        models.append((tree, "WarnTree"))
        chain = tmp / "chain.cap"
        chain.write_text(random_tree(rng, LONG_CHAIN, "WarnChain", chain=True))
        models.append((chain, "WarnChain"))
        free = tmp / "free.cap"
        free.write_text(random_tree(rng, FREE_BODIES, "WarnFree", free=True))
        models.append((free, "WarnFree"))
        models.append((EXTERNAL, "Wheel"))  # calls external C++ functions (EXTERNAL_INCLUDE)
        models.append((ROOT / "examples/cable.cap", "CableOverCylinder"))  # includes the cable solver's headers
        uses = []
        for model, cls in models:
            run(capstan, "compile", str(model), "-o", str(tmp))
            header = (tmp / f"{cls}.hpp").read_text()
            # forwardDynamics itself is shared steps there (codegen/steps.hpp);
            # the overload with external forces is still unrolled, in parts.
            if cls == "WarnChain" and ("struct ForwardDynamicsExternalWork" not in header or
                                       "static void forwardDynamicsStep1(" not in header):
                print(f"warnings: {cls} no longer has forwardDynamics as shared steps and its overload with "
                      f"external forces in parts; raise LONG_CHAIN")
                failures += 1
            nu = int(re.search(r"static constexpr int nu = (\d+);", header).group(1))
            if (FUSED_PRAGMA in header) != (nu >= FUSED_MIN_SPEEDS):
                print(f"warnings: {cls} (nu = {nu}) {'has' if FUSED_PRAGMA in header else 'lacks'} {FUSED_PRAGMA!r}")
                failures += 1
            if cls == "WarnFree" and "using MassMatrix = Eigen::Matrix<double, Eigen::Dynamic" not in header:
                print(f"warnings: {cls} no longer has a dynamic-size MassMatrix; raise FREE_BODIES")
                failures += 1
            uses.append(USE.replace("MODEL_HEADER", f'"{cls}.hpp"').replace("MODEL", cls))
        src = tmp / "use_models.cpp"
        src.write_text("".join(uses) + "int main() {\n  return " +
                       " +\n         ".join(f"use_{cls}::run()" for _, cls in models) + ";\n}\n")
        names = ", ".join(cls for _, cls in models)
        for cxx in compilers:
            # g++ compiles (some of its warnings, such as -Wuninitialized,
            # come from passes after the front end); clang++'s warnings all
            # come from its front end, so checking the syntax is enough.
            # The cable path solver is the runtime's, which the project's
            # own build compiles with g++ and these warnings: g++ gets it
            # declared only (capstan/cable/model.hpp), as `simulate`
            # compiles models; clang++ checks it whole.
            out = ["-c", "-o", str(tmp / "use.o")] if cxx == "g++" else ["-fsyntax-only"]
            apart = ["-DCAPSTAN_CABLE_COMPILED_APART"] if cxx == "g++" else []
            cmd = [cxx, "-std=c++20", "-O0", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-isystem", EIGEN, *apart,
                   "-I", str(tmp), "-I", str(EXTERNAL_INCLUDE), "-I", str(ROOT / "runtime/include"), str(src), *out]
            failures += compiles(cmd, f"warnings: {names} with {cxx}")
        # forwardDynamicsDerivatives (compile --derivatives): a tree with
        # every joint type and free bodies with a dynamic-size MassMatrix.
        deriv = tmp / "derivatives"
        for model, cls in ((tree, "WarnTree"), (free, "WarnFree")):
            run(capstan, "compile", str(model), "-o", str(deriv), "--derivatives")
            text = (deriv / f"{cls}.hpp").read_text()
            dead, _ = dead_stores(text)
            for line, entry in dead[:10]:
                print(f"warnings: {cls} --derivatives: `{entry}` is written and never read (function at line {line})")
            failures += len(dead)
            src = deriv / f"use_{cls}.cpp"
            src.write_text(USE_DERIVATIVES.replace("MODEL_HEADER", f'"{cls}.hpp"').replace("MODEL", cls))
            for cxx in compilers:
                # g++'s middle-end warnings are checked on WarnTree, whose
                # derivatives are the same code in shape; WarnFree's 5 MB
                # header (132 dofs) only through the front ends, where
                # g++ -c took over a minute of the suite for nothing more.
                full = cxx == "g++" and cls == "WarnTree"
                out = ["-c", "-o", str(deriv / "use.o")] if full else ["-fsyntax-only"]
                cmd = [cxx, "-std=c++20", "-O0", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-isystem", EIGEN,
                       "-I", str(deriv), str(src), *out]
                failures += compiles(cmd, f"warnings: {cls} --derivatives with {cxx}")
        # The model's unit of the program that capstan builds around a
        # header (syntax only: instantiates every template, and is fast):
        # plain, with derivatives (eval --derivatives, cvode's exact
        # Jacobian; with quaternions) and with constraints (bench's
        # constraint timings); and the simulation engine it links, compiled
        # apart as capstan compiles it (with CVODE where SUNDIALS is installed).
        model, cls = models[0]
        run(capstan, "compile", str(model), "-o", str(tmp))
        drivers = [(tmp / f"{cls}.hpp", []), (deriv / "WarnTree.hpp", []),
                   (deriv / "WarnFree.hpp", []),
                   (tmp / "FourBar.hpp", ["-DCAPSTAN_CONSTRAINTS"])]
        engine = tmp / "engine.cpp"
        engine.write_text("#include <capstan/sim/program_run.hpp>\n")
        engine_defines = ["-DCAPSTAN_CABLE_COMPILED_APART"]
        if pathlib.Path("/usr/include/cvode/cvode.h").exists():
            engine_defines.append("-DCAPSTAN_CVODE")
        for cxx in compilers:
            cmd = [cxx, "-std=c++20", "-fsyntax-only", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-isystem", EIGEN,
                   "-I", str(ROOT / "runtime/include"), *engine_defines, str(engine)]
            failures += compiles(cmd, f"warnings: the simulation engine {' '.join(engine_defines)} with {cxx}")
            for header, defines in drivers:
                name = header.stem
                cmd = [cxx, "-std=c++20", "-fsyntax-only", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-isystem", EIGEN,
                       "-I", str(ROOT / "runtime/include"), "-DCAPSTAN_CABLE_COMPILED_APART",
                       f"-DCAPSTAN_MODEL_CLASS={name}", *defines, "-include", str(header),
                       str(ROOT / "compiler/templates/capstan_driver.cpp")]
                failures += compiles(cmd, f"warnings: capstan_driver.cpp with {name} {' '.join(defines)} with {cxx}")
    return 1 if failures else 0


def format_independent(capstan):
    """Generated headers are laid out by the templates' .clang-format, not by
    the templates' own whitespace: a copy of the templates with every line's
    indentation removed and the spacing after commas and semicolons of code
    widened (comments untouched) gives byte-identical headers. The copy has
    no .clang-format, so the shipped style applies to it too."""
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        shutil.copytree(ROOT / "compiler/templates", tmp / "templates")
        (tmp / "templates/.clang-format").unlink()
        template = tmp / "templates/model.hpp.j2"
        lines = []
        for line in template.read_text().split("\n"):
            line = line.lstrip(" ")
            if not line.startswith(("//", "{")):
                code, sep, comment = line.partition("//")
                line = re.sub(r"([;,]) ", r"\1    ", code) + sep + comment
            lines.append(line)
        template.write_text("\n".join(lines))
        models = [m for m, _, _ in EXAMPLES] + [m for m, _, _ in GOLDEN_ONLY]
        for model in models:
            shipped, perturbed = tmp / "shipped", tmp / "perturbed"
            run(capstan, "compile", model, "-o", shipped)
            run(capstan, "compile", model, "-o", perturbed, "--templates", tmp / "templates")
            for header in shipped.glob("*.hpp"):
                same = header.read_bytes() == (perturbed / header.name).read_bytes()
                print(f"format: {model}: {header.name} {'identical' if same else 'DIFFERS'} with re-spaced templates")
                failures += not same
            shutil.rmtree(shipped)
            shutil.rmtree(perturbed)
    print(f"format: {failures} failures")
    return 1 if failures else 0


# ---------------------------------------------------------------- trajectories
TRAJECTORY_AGREEMENT = 1e-12        # generated vs interpreted rows, relative to each column's scale
CABLE_TRAJECTORY_AGREEMENT = 1e-9   # with cables: the path solver stops at its tolerance


def trajectories(capstan):
    """Every example through `simulate` and `simulate --interpret`: both run
    capstan::sim's loop and column table, so the headers are identical and
    the rows agree to round-off. The golden examples keep their arguments
    (their drivers are shared with `golden`); the others run 0.2 s of rk4
    (the stiff chain 0.05 s of dopri5)."""
    arguments = {example: sim_args for example, _, sim_args in EXAMPLES}
    # Springs of 1e6 N/m: rk4 at 0.02 s is unstable there; dopri5 steps by stability.
    arguments["examples/stiff_chain.cap"] = ["--t-end", "0.05", "--dt", "0.005", "--integrator", "dopri5"]
    # Compliant contact: fixed steps through the first impact (the ball
    # meets the floor at 0.43 s), and the cue ball sliding on the table.
    arguments["examples/bouncing_ball.cap"] = ["--t-end", "0.5", "--dt", "0.0002", "--integrator", "rk4"]
    arguments["examples/ball_on_table.cap"] = ["--t-end", "0.05", "--dt", "0.0001", "--integrator", "rk4"]
    errors = []
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        for example in sorted(ROOT.glob("examples/*.cap")):
            relative = str(example.relative_to(ROOT))
            sim_args = arguments.get(relative, ["--t-end", "0.2", "--dt", "0.02", "--integrator", "rk4"])
            runs = {}
            for mode, extra in (("generated", []), ("interpreted", ["--interpret"])):
                path = tmp / f"{example.stem}.{mode}.csv"
                run(capstan, "simulate", str(example), *sim_args, *extra, "-o", str(path))
                runs[mode] = read_csv(path)
            (header_g, rows_g), (header_i, rows_i) = runs["generated"], runs["interpreted"]
            tolerance = CABLE_TRAJECTORY_AGREEMENT if any(h.endswith(".tension") for h in header_g) \
                else TRAJECTORY_AGREEMENT
            if header_g != header_i:
                errors.append(f"{relative}: headers differ:\n  generated   {header_g}\n  interpreted {header_i}")
                continue
            if len(rows_g) != len(rows_i) or len(rows_g) < 2:
                errors.append(f"{relative}: {len(rows_g)} generated rows, {len(rows_i)} interpreted")
                continue
            worst = 0.0
            for c, name in enumerate(header_g):
                scale = max([1.0] + [abs(row[c]) for row in rows_g])
                for r, (x, y) in enumerate(zip(rows_g, rows_i)):
                    worst = max(worst, abs(x[c] - y[c]) / scale)
                    if abs(x[c] - y[c]) > tolerance * scale:
                        errors.append(f"{relative}: row {r + 1}, `{name}`: generated {x[c]!r}, interpreted {y[c]!r}")
                        break
            print(f"trajectories: {relative}: {len(rows_g)} rows x {len(header_g)} columns, "
                  f"largest difference {worst:.1e} (of {tolerance:g})")
    for e in errors:
        print(e)
    print(f"trajectories: {len(errors)} failed")
    return 1 if errors else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--capstan", required=True)
    ap.add_argument("mode", choices=["golden", "agreement", "warnings", "format", "trajectories"])
    ap.add_argument("--update", action="store_true")
    opts = ap.parse_args()
    capstan = os.path.abspath(opts.capstan)
    if opts.mode == "golden":
        return golden(capstan, opts.update)
    if opts.mode == "agreement":
        return agreement(capstan)
    if opts.mode == "format":
        return format_independent(capstan)
    if opts.mode == "trajectories":
        return trajectories(capstan)
    return warnings(capstan)


if __name__ == "__main__":
    sys.exit(main())
