#!/usr/bin/env python3
"""What generated code reads, checked through `capstan eval` (ctest label `codegen`).

  run.py --capstan BIN frames        outputs that read frame quantities (r, R, v, w)
                                     equal what the body poses and velocities of
                                     `eval` give, generated and interpreted
  run.py --capstan BIN parameters    every runtime parameter of every example and
                                     bench model, enumerated from the generated
                                     parameter() table: `eval --set NAME=v` gives
                                     exactly what the model with NAME = v gives
                                     (`--override`, recompiled), or is refused with
                                     the diagnostic `check` gives for that value
  run.py --capstan BIN cache         writing a field of `params` after an evaluation
                                     changes the next one exactly as a fresh instance
                                     (the cached parameter-only values are refreshed)
  run.py --capstan BIN external      external C++ functions (models/external.cap) in a
                                     force law and outputs: generated and interpreted
                                     agree to 1e-12 and equal the formula of
                                     models/include/friction.hpp; the generated
                                     header calls them; simulate runs both ways,
                                     and stops at the line of a force law that an
                                     external function makes NaN
  run.py --capstan BIN folded        a parameter that a folded joint axis reads is
                                     refused by --set with the folding message, and
                                     --override of it changes the dynamics; so is an
                                     armature the model does not give, and one it
                                     gives is a run-time parameter
  run.py --capstan BIN external_forces
                                     generated forwardDynamics with external forces
                                     (STATE.json's `external_forces`) equals the
                                     interpreter's, every model, and the forces matter
  run.py --capstan BIN steps         forwardDynamics and inverseDynamicsDerivatives
                                     as shared steps (from 20 speeds): random trees
                                     with every joint type and a chain call shared
                                     kernels, and generated udot and derivatives
                                     equal the interpreter's, also after --set
  run.py --capstan BIN derivatives   eval --derivatives (d udot / d(q, u, tau)) on
                                     every example and random trees with every joint
                                     type: interpreted (dual numbers) equals central
                                     differences of eval's udot along random directions
                                     (quaternions turned along N(q) du) and
                                     dudot_dtau M = I; generated equals interpreted
                                     on four of them (DERIVATIVES_GENERATED)
"""
import argparse
import csv
import importlib.util
import json
import math
import os
import pathlib
import random
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent
SENSORS = HERE / "models/sensors.cap"
ARM7 = ROOT / "bench/peers/models/arm7.cap"
TOLERANCE = 1e-12  # generated vs interpreted, relative to each quantity's scale
AGREEMENT = 1e-12  # the same, relative to the largest entry of each whole quantity


def run(capstan, *args, check=True):
    proc = subprocess.run([capstan, *map(str, args)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=600, text=True)
    if check and proc.returncode != 0:
        raise RuntimeError(f"capstan {' '.join(map(str, args))} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def write_state(tmp, state):
    path = pathlib.Path(tmp) / "state.json"
    path.write_text(json.dumps(state))
    return path


def eval_json(capstan, model, state, *extra):
    return json.loads(run(capstan, "eval", model, "--state", state, *extra).stdout)


# ---------------------------------------------------------------- frames
def matvec(R, x):
    return [sum(R[3 * i + j] * x[j] for j in range(3)) for i in range(3)]


def matmul(A, B):
    return [sum(A[3 * i + k] * B[3 * k + j] for k in range(3)) for i in range(3) for j in range(3)]


def cross(a, b):
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def frame_expectations(result):
    """The outputs of models/sensors.cap from the body poses and velocities."""
    def frame(body, p_BF, R_BF):
        b = result["bodies"][body]
        R_WB, p_WB, w, v = b["R_WB"], b["p_WB"], b["w_WB"], b["v_WB"]
        p_BoFo_W = matvec(R_WB, p_BF)
        r = [p_WB[i] + p_BoFo_W[i] for i in range(3)]
        vF = [v[i] + cross(w, p_BoFo_W)[i] for i in range(3)]
        return r, matmul(R_WB, R_BF), vF, w

    identity = [1, 0, 0, 0, 1, 0, 0, 0, 1]
    r, R, v, w = frame("upper", [0.1, -1, 0.2], [0, -1, 0, 1, 0, 0, 0, 0, 1])
    fr, fR, fv, fw = frame("hand", [0.05, -0.3, 0.02], identity)
    return {"tipHeight": r[1], "tipX": r[0], "tipZ": r[2], "tipR12": R[1], "tipVx": v[0], "tipVy": v[1],
            "tipWz": w[2], "fingerX": fr[0], "fingerVz": fv[2], "fingerWx": fw[0], "fingerR31": fR[6],
            "fingerSpeed": math.sqrt(sum(x * x for x in fv)), "groundY": 0.0}


def frames(capstan):
    rng = random.Random(7)
    failures, compared = 0, 0
    with tempfile.TemporaryDirectory() as d:
        for trial in range(4):
            quat = [rng.uniform(-1, 1) for _ in range(4)]
            n = math.sqrt(sum(x * x for x in quat))
            state = write_state(d, {"time": 0.5, "q": {"shoulder": [rng.uniform(-2, 2)], "wrist": [x / n for x in quat]},
                                    "u": {"shoulder": [rng.uniform(-2, 2)], "wrist": [rng.uniform(-2, 2) for _ in range(3)]}})
            for mode in ([], ["--interpret"]):
                result = eval_json(capstan, SENSORS, state, *mode)
                want = frame_expectations(result)
                for name, value in want.items():
                    got = result["outputs"][name]
                    compared += 1
                    if abs(got - value) > TOLERANCE * max(1.0, abs(value)):
                        print(f"frames: trial {trial} {' '.join(mode) or 'generated'}: {name} = {got!r}, "
                              f"the body states give {value!r}")
                        failures += 1
    print(f"frames: {compared} outputs compared with the body states, {failures} differ")
    return 1 if failures or compared == 0 else 0


# ---------------------------------------------------------------- external
EXTERNAL = HERE / "models/external.cap"


def external_expectations(q, w, mu, k):
    """udot and outputs of models/external.cap from the C++ functions' formulas
    (include/friction.hpp) and the wheel's inertia about its axis."""
    friction = mu * math.tanh(w / 0.05) + 0.02 * w
    spring = -k * math.sin(q)
    return {"udot": (-friction + spring) / 0.25, "frictionTorque": friction, "doubled": 2 * friction + spring}


def external(capstan):
    rng = random.Random(5)
    failures, compared = 0, 0

    def check(what, got, want):
        nonlocal failures, compared
        compared += 1
        if abs(got - want) > TOLERANCE * max(1.0, abs(want)):
            print(f"external: {what} = {got!r}, expected {want!r}")
            failures += 1

    with tempfile.TemporaryDirectory() as d:
        for trial in range(4):
            q, w = rng.uniform(-3, 3), rng.uniform(-0.2, 0.2)
            mu, k = rng.uniform(0.1, 1), rng.uniform(0.5, 5)
            state = write_state(d, {"time": 0.25, "q": {"hinge": [q]}, "u": {"hinge": [w]}})
            results = {}
            for mode in ([], ["--interpret"]):
                r = eval_json(capstan, EXTERNAL, state, "--set", f"mu={mu!r}", "--set", f"k={k!r}", *mode)
                results[" ".join(mode) or "generated"] = r
                want = external_expectations(q, w, mu, k)
                name = f"trial {trial} {' '.join(mode) or 'generated'}"
                check(f"{name}: udot", r["udot"]["hinge"][0], want["udot"])
                for o in ("frictionTorque", "doubled"):
                    check(f"{name}: {o}", r["outputs"][o], want[o])
            g, i = results["generated"], results["--interpret"]
            check(f"trial {trial}: generated vs interpreted udot", g["udot"]["hinge"][0], i["udot"]["hinge"][0])
        # The header includes the functions' header and calls them, the
        # shared one once (one temporary for friction(u, mu), read twice).
        out = pathlib.Path(d) / "out"
        run(capstan, "compile", EXTERNAL, "-o", out)
        header = (out / "Wheel.hpp").read_text()
        outputs = header[header.index("void outputs("):]
        outputs = outputs[:outputs.index("\n  }\n")]
        for needle, count, text in (('#include "friction.hpp"', 1, header),
                                    ("mylib::friction(u[0], params.mu)", 1, outputs),
                                    ("mylib::spring(params.k, q[0])", 1, outputs)):
            compared += 1
            if text.count(needle) != count:
                print(f"external: `{needle}` appears {text.count(needle)} times, expected {count}")
                failures += 1
        # Simulated both ways: the same trajectory.
        rows = {}
        for mode in ([], ["--interpret"]):
            csv = pathlib.Path(d) / f"sim{len(mode)}.csv"
            run(capstan, "simulate", EXTERNAL, "--t-end", "0.5", "--dt", "0.1", "--integrator", "rk4", "-o", csv, *mode)
            rows[len(mode)] = [list(map(float, line.split(","))) for line in csv.read_text().split("\n")[1:] if line]
        for a, b in zip(rows[0], rows[1]):
            for x, y in zip(a, b):
                check(f"simulate at t = {a[0]}", x, y)
        if len(rows[0]) != 6 or len(rows[0]) != len(rows[1]):
            print(f"external: simulate wrote {len(rows[0])} and {len(rows[1])} rows, expected 6")
            failures += 1
        # A force law that an external function makes NaN stops simulate,
        # generated and interpreted, with the force law's line.
        faulty = ROOT / "tests/errors/codegen/NonFiniteForceLaw.cap"
        line = next(i + 1 for i, l in enumerate(faulty.read_text().split("\n")) if "hinge.tau =" in l)
        want = re.compile(rf"NonFiniteForceLaw\.cap:{line}:\d+: error: the force law for `hinge\.tau` is not a number "
                          rf"\(NaN\) at t = 0;.*\[NonFiniteForceLaw\]$")
        for mode in ([], ["--interpret"]):
            p = run(capstan, "simulate", faulty, "--t-end", "0.1", "-o", pathlib.Path(d) / "nan.csv", *mode, check=False)
            compared += 1
            if p.returncode != 1 or not any(want.search(l) for l in p.stderr.split("\n")):
                print(f"external: simulate {' '.join(mode)} of {faulty.name} should fail at line {line}:\n{p.stderr}")
                failures += 1
    print(f"external: {compared} values compared, {failures} differ")
    return 1 if failures or compared == 0 else 0


# ---------------------------------------------------------------- parameters
# Left out of the loops below, each of whose models costs a C++ build or
# two: the bench chains repeat one revolute link (chain5, kept, has it;
# chain50's code alone takes ~40 s to build), arm7 is such a chain too, and
# pendulum is double_pendulum's first link. humanoid keeps a free base and
# a forwardDynamics emitted in parts; every example stays.
SKIPPED = {"chain10.cap", "chain20.cap", "chain50.cap", "arm7.cap", "pendulum.cap"}


def models():
    """Every example and the bench models of a kind the examples lack."""
    found = sorted(ROOT.glob("examples/*.cap")) + sorted(ROOT.glob("bench/peers/models/*.cap")) + [SENSORS]
    return [m for m in found if m.name not in SKIPPED]


def parameter_table(header, ir):
    """{parameter: its element slots}, from the generated `parameter()` table
    (grouped into parameters by the IR the header was rendered from)."""
    slots = re.findall(r'if \(name == "([^"]+)"\) return &', header)
    owner = {s["name"]: p["name"] for p in ir["parameters"] for s in p["slots"]}
    table = {}
    for s in slots:
        table.setdefault(owner[s], []).append(s)
    return table


def literal(values, shape):
    if not shape:
        return repr(values[0])
    step = len(values) // shape[0]
    return "{" + ",".join(literal(values[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])) + "}"


def diagnostics(text):
    """The diagnostic lines (file:line:col: error: ... [Kind]) of stderr."""
    return [line for line in text.splitlines() if re.search(r":\d+:\d+: error: .*\[\w+\]$", line)]


# Past this many parameters, a model's are sampled (a fixed seed, so a
# failure reproduces): each setting takes four capstan runs.
MAX_PARAMETERS = 6


def parameters(capstan):
    rng = random.Random(11)
    failures, checked, refused = 0, 0, 0
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        state = write_state(tmp, {})
        for model in models():
            out = tmp / model.stem
            proc = run(capstan, "compile", model, "-o", out, "--ir", check=False)
            if proc.returncode != 0:
                if "NotYetGenerated" not in proc.stderr:
                    print(f"parameters: {model.name}: compile failed:\n{proc.stderr}")
                    failures += 1
                continue
            ir = json.loads(next(out.glob("*.ir.json")).read_text())
            header = next(out.glob("*.hpp")).read_text()
            table = parameter_table(header, ir)
            shapes = {p["name"]: p["shape"] for p in ir["parameters"]}
            defaults = {p["name"]: p["default"] for p in ir["parameters"]}
            names = sorted(table)
            if len(names) > MAX_PARAMETERS:
                names = sorted(rng.sample(names, MAX_PARAMETERS))
            for name in names:
                base = defaults[name]
                # The whole value, and one element alone, changed.
                scaled = [x * 1.25 + (0.05 if x == 0 else 0) for x in base]
                settings = [f"{name}={literal(scaled, shapes[name])}"]
                if shapes[name]:
                    k = rng.randrange(len(base))
                    settings.append(f"{table[name][k]}={base[k] * 1.25 + 0.05!r}")
                for setting in settings:
                    checked += 1
                    r = check_setting(capstan, model, state, setting)
                    if r is None:
                        refused += 1
                    elif r:
                        print(f"parameters: {model.name}: --set {setting}: {r}")
                        failures += 1
    print(f"parameters: {checked} settings checked ({refused} refused with check's diagnostic), {failures} failures")
    return 1 if failures or checked == 0 else 0


def check_setting(capstan, model, state, setting):
    """None when refused as check refuses it, "" when it agrees, else what differs."""
    generated = run(capstan, "eval", model, "--state", state, "--set", setting, check=False)
    recompiled = run(capstan, "check", model, "--override", setting, check=False)
    if recompiled.returncode != 0:
        # The value breaks a check: --set must refuse it with the same diagnostics.
        if generated.returncode == 0:
            return "accepted, but check refuses the model with this value:\n" + recompiled.stderr
        if diagnostics(generated.stderr) != diagnostics(recompiled.stderr) or not diagnostics(generated.stderr):
            return f"refused with\n{generated.stderr}\nwhere check says\n{recompiled.stderr}"
        return None
    if generated.returncode != 0:
        return "refused:\n" + generated.stderr
    a = json.loads(generated.stdout)
    b = eval_json(capstan, model, state, "--set", setting, "--interpret")
    c = eval_json(capstan, model, state, "--override", setting, "--interpret")
    base = baseline(capstan, model, state)
    if b != c:
        return "--set and --override differ (interpreted)"
    for key in ("udot", "mass_matrix", "bodies", "outputs", "potential_energy", "kinetic_energy"):
        if not close(a.get(key), c.get(key)):
            return f"`{key}`: generated with --set differs from the recompiled model"
    if a == base and json.dumps(c) != json.dumps(base):
        return "the value changed nothing in the generated code"
    return ""


_baselines = {}


def baseline(capstan, model, state):
    if model not in _baselines:
        _baselines[model] = eval_json(capstan, model, state, "--interpret")
    return _baselines[model]


def values(x):
    if isinstance(x, dict):
        for k in sorted(x):
            yield from values(x[k])
    elif isinstance(x, list):
        for v in x:
            yield from values(v)
    else:
        yield x


def close(x, y):
    """Generated vs interpreted: equal to AGREEMENT relative to the largest
    magnitude of the quantity (the agreement tolerance of tests/golden)."""
    a, b = list(values(x)), list(values(y))
    if len(a) != len(b):
        return False
    scale = max([abs(v) for v in a + b] + [1.0])
    return all(abs(u - v) <= AGREEMENT * scale for u, v in zip(a, b))


# ---------------------------------------------------------------- folded
def folded(capstan):
    with tempfile.TemporaryDirectory() as d:
        state = write_state(d, {})
        setting = "link2.axis={1,0,0}"
        proc = run(capstan, "eval", ARM7, "--state", state, "--set", setting, check=False)
        want = ("`--set link2.axis`: parameter `link2.axis` is fixed at compile time: `link2.joint.axis` depends on it "
                "and is a joint axis")
        if proc.returncode != 1 or want not in proc.stderr or "--override link2.axis=" not in proc.stderr:
            print(f"folded: --set {setting} gave ({proc.returncode}):\n{proc.stderr}")
            return 1
        base = eval_json(capstan, ARM7, state)["udot"]
        for mode in ([], ["--interpret"]):
            moved = eval_json(capstan, ARM7, state, "--override", setting, *mode)["udot"]
            if moved == base:
                print(f"folded: --override {setting} {' '.join(mode)} left udot as it was")
                return 1
        failures = armature_folded(capstan, state)
        if failures:
            return 1
        print("folded: --set refused with the folding message; --override changes udot; an armature the model "
              "gives is a run-time parameter, one it does not give is folded")
        return 0


def armature_folded(capstan, state):
    """An armature the model does not give is folded at 0: `--set` is
    refused with a note at the declaration that would give it one (arm7's,
    in a composite), and `--override` gives it a value (the double
    pendulum's elbow, interpreted: generated code reads a folded value as
    it reads the axis above, and a build would cost seconds). One the model
    gives (sensors.cap's shoulder) is a run-time parameter: `--set` moves
    udot, generated as interpreted, as `--override`."""
    failures = 0
    setting = "link2.joint.armature=0.3"
    proc = run(capstan, "eval", ARM7, "--state", state, "--set", setting, check=False)
    wants = ["`--set link2.joint.armature`: parameter `link2.joint.armature` is a joint's armature that the model "
             "does not give", "arm7.cap:30:17: note: give `link2.joint` an armature here, as the modification "
             "`joint(armature = ...)`, to make it a run-time parameter [NoteGiveArmature]"]
    if proc.returncode != 1 or any(w not in proc.stderr for w in wants):
        print(f"folded: --set {setting} gave ({proc.returncode}):\n{proc.stderr}")
        failures += 1
    for model, how, modes in ((DOUBLE_PENDULUM, ["--override", "elbow.armature=0.05"], [["--interpret"]]),
                              (SENSORS, ["--set", "shoulder.armature=0.2"], [[], ["--interpret"]]),
                              (SENSORS, ["--override", "shoulder.armature=0.2"], [[], ["--interpret"]])):
        base = eval_json(capstan, model, state, "--interpret")
        moved = [eval_json(capstan, model, state, *how, *mode) for mode in modes]
        if moved[-1]["udot"] == base["udot"] or not all(close(moved[0][k], moved[-1][k]) for k in ("udot", "mass_matrix")):
            print(f"folded: {model.name} {' '.join(how)}: udot {base['udot']} -> {[m['udot'] for m in moved]}")
            failures += 1
    return failures


# ---------------------------------------------------------------- cache
CACHE_PROGRAM = r"""#include "Arm7.hpp"
#include <cstdio>
// Writing a field of params after an evaluation must change the next one
// exactly as a fresh instance with that value gives (the Derived cache).
int main() {
  using capstan_models::Arm7;
  Arm7 a, b;
  Arm7::Q q;
  Arm7::U u, first, second, fresh;
  a.initialState(q, u);
  for (int i = 0; i < Arm7::nq; ++i) q[i] = 0.3 * (i + 1);
  for (int i = 0; i < Arm7::nu; ++i) u[i] = -0.2 * (i + 1);
  a.forwardDynamics(0.0, q, u, first);
  a.params.link3_m *= 1.7;            // a mass: I_K of link3 depends on it
  a.params.link5_com[1] += 0.02;      // a center of mass
  a.forwardDynamics(0.0, q, u, second);
  b.params.link3_m = a.params.link3_m;
  b.params.link5_com = a.params.link5_com;
  b.forwardDynamics(0.0, q, u, fresh);
  const bool changed = (first - second).norm() > 1e-6;
  const bool exact = (second - fresh).norm() == 0.0;
  std::printf("changed %d exact %d\n", changed, exact);
  return changed && exact ? 0 : 1;
}
"""


def cache(capstan):
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        run(capstan, "compile", ARM7, "-o", tmp)
        src = tmp / "cache.cpp"
        src.write_text(CACHE_PROGRAM)
        build = subprocess.run(["c++", "-std=c++20", "-O1", "-isystem", "/usr/include/eigen3", "-I", str(tmp),
                                str(src), "-o", str(tmp / "cache")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
        if build.returncode != 0:
            print(build.stdout)
            return 1
        proc = subprocess.run([str(tmp / "cache")], stdout=subprocess.PIPE, text=True)
        print(f"cache: {proc.stdout.strip()}")
        return proc.returncode


INVERSE_PROGRAM = r"""#include "{header}"
#include <cmath>
#include <cstdio>
// Generated inverse dynamics undoes generated forward dynamics:
// inverseDynamics(q, u, forwardDynamics(t, q, u)) = appliedForces(t, q, u),
// to 1e-12 relative to the largest of |M udot| and |C| (what is summed).
template <class Model>
constexpr bool hasCables = requires {{ Model::ncables; }};
// A model with cables: forwardDynamics also applies the cables' body
// forces, worth sum_B J_WB^T F_B (body b is frame b of frameJacobian).
template <class Model>
bool addCableForces(const Model& m, double t, const typename Model::Q& q, const typename Model::U& u,
                    typename Model::U& applied) {{
  if constexpr (hasCables<Model>) {{
    typename Model::ExternalForces F{{}};
    if (m.updateCables(t, q, u, F) >= 0) return false;
    typename Model::U cables = Model::U::Zero();
    for (int b = 0; b < Model::nb; ++b) {{
      typename Model::FrameJacobian J;
      m.frameJacobian(b, q, J);
      cables += J.transpose() * F[static_cast<std::size_t>(b)];
    }}
    applied += cables;
    std::printf("cable forces %.3g, ", cables.cwiseAbs().maxCoeff());
    return cables.cwiseAbs().maxCoeff() > 0;  // a slack cable would test nothing
  }}
  return true;
}}
int main() {{
  using Model = capstan_models::{cls};
  Model m;
  Model::Q q;
  Model::U u, udot, tau, applied, C;
  m.initialState(q, u);
  // Away from the initial state; a model with cables keeps its initial
  // coordinates, where its cables are taut.
  if constexpr (!hasCables<Model>)
    for (int i = 0; i < Model::nq; ++i) q[i] += 0.3 * std::sin(1.7 * i + 0.4);
  Model::normalizeQuaternions(q);
  for (int i = 0; i < Model::nu; ++i) u[i] = std::cos(0.9 * i + 0.2);
  const double t = 0.375;
  m.forwardDynamics(t, q, u, udot);
  m.inverseDynamics(q, u, udot, tau);
  m.appliedForces(t, q, u, applied);
  if (!addCableForces(m, t, q, u, applied)) {{
    std::printf("%s: no cable path, or a slack cable\n", "{cls}");
    return 1;
  }}
  m.bias(q, u, C);
  Model::MassMatrix M;
  m.massMatrix(q, M);
  const double scale = 1.0 + std::fmax((M * udot).cwiseAbs().maxCoeff(), C.cwiseAbs().maxCoeff());
  const double err = (tau - applied).cwiseAbs().maxCoeff() / scale;
  // And the identity is not trivially met: a changed udot changes tau.
  Model::U other = udot;
  other[0] += 1.0;
  Model::U tau2;
  m.inverseDynamics(q, u, other, tau2);
  const bool sensitive = (tau2 - tau).cwiseAbs().maxCoeff() > 1e-6;
  std::printf("%s: |ID(FD) - tau| / scale = %.3g%s\n", "{cls}", err, sensitive ? "" : " (ID ignores udot!)");
  return err <= 1e-12 && sensitive ? 0 : 1;
}}
"""


def inverse(capstan):
    """Generated inverseDynamics(q, u, forwardDynamics(t, q, u)) == appliedForces (plus the cables'
    generalized forces, sum_B J_WB^T F_B from updateCables), every model."""
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        for model in models():
            out = tmp / model.stem
            compiled = run(capstan, "compile", model, "-o", out, "--ir", check=False)
            if compiled.returncode != 0 and "[NotYetGenerated]" in compiled.stderr:
                continue  # contacts: not generated yet
            if compiled.returncode != 0:
                print(compiled.stderr)
                failures += 1
                continue
            cls = json.loads(next(out.glob("*.ir.json")).read_text())["class_name"]
            src = out / "inverse.cpp"
            src.write_text(INVERSE_PROGRAM.format(header=f"{cls}.hpp", cls=cls))
            build = subprocess.run(["c++", "-std=c++20", "-O0", "-isystem", "/usr/include/eigen3", "-I", str(out),
                                    "-I", str(ROOT / "runtime/include"), str(src), "-o", str(out / "inverse")],
                                   stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True)
            if build.returncode != 0:
                print(build.stdout)
                failures += 1
                continue
            proc = subprocess.run([str(out / "inverse")], stdout=subprocess.PIPE, text=True)
            print(f"inverse: {model.relative_to(ROOT)}: {proc.stdout.strip()}")
            failures += proc.returncode != 0
    print(f"inverse: {failures} failures")
    return 1 if failures else 0


def jacobians(capstan):
    """eval's "jacobians" and "jacobian_dot_u" (generated) at random states of
    every generated model: J u is the frame's velocity from the body states,
    and J-dot u the central difference of J u along q + h qdot at fixed u."""
    rng = random.Random(13)
    failures, frames_checked = 0, 0
    with tempfile.TemporaryDirectory() as d:
        for model in models():
            compiled = run(capstan, "check", model, "--json", check=False)
            if compiled.returncode != 0:
                continue
            mech = json.loads(compiled.stdout)
            body_name = {i: b["name"] for i, b in enumerate(mech["bodies"])}
            p_BF = {f["frame"]: (body_name[f["body"]], f["p_BF"]) for f in mech["frames"]}
            probe = run(capstan, "eval", model, "--state", write_state(d, {}), check=False)
            if probe.returncode != 0 and "[NotYetGenerated]" in probe.stderr:
                continue
            base = json.loads(probe.stdout)
            state = {"q": {j: [x + rng.uniform(-0.4, 0.4) for x in v] for j, v in base["q"].items()},
                     "u": {j: [rng.uniform(-1, 1) for _ in v] for j, v in base["u"].items()}}
            r = eval_json(capstan, model, write_state(d, state))
            # In state order (eval's JSON objects are sorted by name).
            joints = sorted((j for j in mech["joints"] if not j["cut"]), key=lambda j: j["u_index"])
            u = [x for j in joints for x in r["u"][j["name"]]]
            h = 1e-5
            shifted = []
            for sign in (1, -1):
                s2 = {"q": {j: [x + sign * h * qd for x, qd in zip(r["q"][j], r["qdot"][j])] for j in r["q"]},
                      "u": r["u"]}
                shifted.append(eval_json(capstan, model, write_state(d, s2)))
            for name, J in r["jacobians"].items():
                frames_checked += 1
                V = [sum(J[i][k] * u[k] for k in range(len(u))) for i in range(6)]
                if name in r["bodies"]:
                    body, p = name, [0.0, 0.0, 0.0]
                else:
                    body, p = p_BF[name]
                b = r["bodies"][body]
                p_W = matvec(b["R_WB"], p)
                expect = b["w_WB"] + [v + c for v, c in zip(b["v_WB"], cross(b["w_WB"], p_W))]
                scale = 1.0 + max(abs(x) for x in expect)
                if any(abs(x - y) > 1e-12 * scale for x, y in zip(V, expect)):
                    print(f"jacobians: {model.name}: {name}: J u = {V}, frame velocity {expect}")
                    failures += 1
                Vp, Vm = ([sum(s["jacobians"][name][i][k] * u[k] for k in range(len(u))) for i in range(6)]
                          for s in shifted)
                fd = [(a - c) / (2 * h) for a, c in zip(Vp, Vm)]
                a = r["jacobian_dot_u"][name]
                scale = 1.0 + max(abs(x) for x in fd)
                if any(abs(x - y) > 1e-6 * scale for x, y in zip(a, fd)):
                    print(f"jacobians: {model.name}: {name}: J-dot u = {a}, central difference {fd}")
                    failures += 1
    print(f"jacobians: {frames_checked} frames checked, {failures} failures")
    failures += frame_kinematics(capstan)
    return 1 if failures or frames_checked == 0 else 0


# C++ statements: `m`, a Model, and q and u at a state away from its
# initial one (the programs below format it in as {state}).
STATE_AWAY_FROM_INITIAL = """  Model m;
  Model::Q q;
  Model::U u;
  m.initialState(q, u);
  for (int i = 0; i < Model::nq; ++i) q[i] += 0.4 * std::sin(1.3 * i + 0.2);
  Model::normalizeQuaternions(q);
  for (int i = 0; i < Model::nu; ++i) u[i] = std::cos(0.7 * i + 0.1);
"""


def build_program(compiler, out, stem, text):
    """Writes out/stem.cpp and builds out/stem with `compiler` at -O1,
    warning-free (-Wall -Wextra -Wpedantic -Werror) against the header in
    out; returns the CompletedProcess (its stdout holds the diagnostics)."""
    src = out / f"{stem}.cpp"
    src.write_text(text)
    return subprocess.run([compiler, "-std=c++20", "-O1", "-Wall", "-Wextra", "-Wpedantic", "-Werror",
                           "-isystem", "/usr/include/eigen3", "-I", str(out), str(src), "-o", str(out / stem)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def build_in_form(capstan, d, model, option, mode, stem, program, **fields):
    """Compiles `model` into d/<stem>_<mode> with `--<option> <mode>` and
    builds `program` (formatted with the header, the class, a state away
    from the initial one and `fields`) against it, warning-free under both
    compilers: g++ for the unrolled form, clang++ for the other. Returns the
    folder, or None (with what went wrong printed) if the build fails or the
    IR's `option` is not `mode`."""
    out = pathlib.Path(d) / f"{model.stem}_{mode}"
    run(capstan, "compile", model, "-o", out, "--ir", f"--{option}", mode)
    ir = json.loads(next(out.glob("*.ir.json")).read_text())
    build = build_program("g++" if mode == "unrolled" else "clang++", out, stem,
                          program.format(header=f"{ir['class_name']}.hpp", cls=ir["class_name"],
                                         state=STATE_AWAY_FROM_INITIAL, **fields))
    if build.returncode != 0 or ir[option] != mode:
        print(build.stdout[-3000:], f"{model.name}: {option} {ir[option]!r}, asked {mode!r}: FAILED")
        return None
    return out


FRAME_KINEMATICS_PROGRAM = r"""#include "{header}"
#include <algorithm>
#include <cmath>
#include <cstdio>
// Every frame's J and Jdot u, from frameJacobian(frame, q, J) (the per-body
// functions, unrolled or compact) and from frameKinematics then
// frameJacobian(frame, k, J), at a state away from the initial one. Prints
// the per-frame call's entries and M's (to compare headers) and exits 1
// where the two ways differ by more than 1e-12.
int main() {{
  using Model = capstan_models::{cls};
{state}  Model::FrameKinematics kq, k;
  m.frameKinematics(q, kq);
  m.frameKinematics(q, u, k);
  double worst = 0.0;
  for (int f = 0; f < Model::nf; ++f) {{
    Model::FrameJacobian J, Jq, Jk;
    Model::SpatialVector a, ak;
    if (!m.frameJacobian(f, q, J) || !m.frameJacobianDotU(f, q, u, a) || !m.frameJacobian(f, kq, Jq) ||
        !m.frameJacobian(f, k, Jk) || !m.frameJacobianDotU(f, k, ak))
      return 2;
    for (int r = 0; r < 6; ++r) {{
      for (int c = 0; c < Model::nu; ++c) {{
        worst = std::max({{worst, std::abs(J(r, c) - Jq(r, c)), std::abs(J(r, c) - Jk(r, c))}});
        std::printf("%.17g\n", J(r, c));
      }}
      worst = std::max(worst, std::abs(a[r] - ak[r]) / (1.0 + std::abs(a[r])));
      std::printf("%.17g\n", a[r]);
    }}
  }}
  Model::MassMatrix M;
  m.massMatrix(q, M);
  for (int r = 0; r < Model::nu; ++r)
    for (int c = 0; c < Model::nu; ++c) std::printf("%.17g\n", M(r, c));
  std::fprintf(stderr, "%d frames, largest difference %.2e\n", Model::nf, worst);
  Model::FrameJacobian J;
  if (m.frameJacobian(Model::nf, k, J)) return 3;  // no such frame
  return worst <= 1e-12 ? 0 : 1;
}}
"""
# Joints of every kind: revolute with armature and ball (sensors), free and
# revolute (humanoid), prismatic (stiff_chain), universal and prismatic
# (gimbal_sdf).
FRAME_KINEMATICS_MODELS = [SENSORS, ROOT / "bench/peers/models/humanoid.cap", ROOT / "examples/stiff_chain.cap",
                           ROOT / "tests/import/golden/gimbal_sdf.cap"]


def frame_kinematics(capstan):
    """The frame Jacobians from one frameKinematics pass equal the per-frame
    calls, and the compact per-body functions and mass matrix (--quadratic
    compact) the unrolled ones, to 1e-12."""
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        for model in FRAME_KINEMATICS_MODELS:
            values = {}
            for mode in ("unrolled", "compact"):
                out = build_in_form(capstan, d, model, "quadratic", mode, "frames", FRAME_KINEMATICS_PROGRAM)
                if out is None:
                    failures += 1
                    continue
                proc = subprocess.run([str(out / "frames")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                print(f"jacobians: {model.name} {mode}: {proc.stderr.strip()}{'' if proc.returncode == 0 else ': FAILED'}")
                failures += proc.returncode != 0
                values[mode] = [float(x) for x in proc.stdout.split()]
            if len(values) == 2:
                a, b = values["unrolled"], values["compact"]
                worst = max((abs(x - y) / (1.0 + abs(x)) for x, y in zip(a, b)), default=0.0)
                ok = len(a) == len(b) and len(a) > 0 and worst <= 1e-12
                print(f"jacobians: {model.name}: compact against unrolled, {len(a)} entries, largest difference "
                      f"{worst:.2e}{'' if ok else ': FAILED'}")
                failures += not ok
    return failures


RECURSIONS_PROGRAM = r"""#include "{header}"
#include <cmath>
#include <cstdio>
// Every function --recursions loops writes as loops, at a state away from
// the initial one, with external forces: printed (17 digits) to compare
// the two forms' headers; then the same after parameters change (each
// named one scaled by 1.5), which the loops' cached constants must follow.
using Model = capstan_models::{cls};
static void out(double x) {{ std::printf("%.17g\n", x); }}
template <class V>
static void outv(const V& v) {{
  for (Eigen::Index i = 0; i < v.size(); ++i) out(v.data()[i]);
}}
static void print(const Model& m, const Model::Q& q, const Model::U& u, const Model::U& udot,
                  const Model::ExternalForces& fext) {{
  Model::BodyPoses poses;
  m.bodyPoses(q, poses);
  for (const auto& p : poses) {{
    outv(p.R_WB);
    outv(p.p_WB);
  }}
  Model::BodyVelocities velocities;
  m.bodyVelocities(q, u, velocities);
  for (const auto& v : velocities) {{
    outv(v.w_WB);
    outv(v.v_WB);
  }}
  out(m.kineticEnergy(q, u));
  out(m.potentialEnergy(q));
  Model::U C, tau, a, aext;
  m.bias(q, u, C);
  m.inverseDynamics(q, u, udot, tau);
  m.forwardDynamics(0.3, q, u, a);
  m.forwardDynamics(0.3, q, u, fext, aext);
  outv(C);
  outv(tau);
  outv(a);
  outv(aext);
  Model::FrameKinematics k;
  m.frameKinematics(q, u, k);
  for (std::size_t b = 0; b < k.R_WB.size(); ++b) {{
    outv(k.R_WB[b]);
    outv(k.p_WB[b]);
    outv(k.V_WB[b]);
    outv(k.Abias_WB[b]);
  }}
  outv(k.H_W);
  Model::MassMatrix M;
  m.massMatrix(q, M);
  outv(M);
}}
int main() {{
{state}  Model::U udot;
  for (int i = 0; i < Model::nu; ++i) udot[i] = std::sin(0.9 * i + 0.3);
  Model::ExternalForces fext;
  for (std::size_t b = 0; b < fext.size(); ++b)
    for (int r = 0; r < 6; ++r) fext[b][r] = std::cos(0.5 * static_cast<double>(b) + 1.1 * r);
  print(m, q, u, udot, fext);
  for (const char* name : {{{names}}}) {{
    double* p = m.parameter(name);
    if (p == nullptr) return 2;
    *p *= 1.5;
  }}
  print(m, q, u, udot, fext);
  return 0;
}}
"""
# Joints of every kind with the parameters the program changes: ball and
# revolute with armature (sensors), free and revolute (humanoid), universal
# and prismatic (gimbal_sdf), free joints held by force elements (bushing
# and spring: bushing_pair), a weld, a cylindrical joint and body frames
# away from their joint frames (weld_cylindrical).
RECURSIONS_MODELS = [(SENSORS, ["world.gravity[3]", "upper.mass"]),
                     (HERE / "models/weld_cylindrical.cap", ["world.gravity[1]", "b3.mass"]),
                     (ROOT / "bench/peers/models/humanoid.cap", ["world.gravity[3]", "waist_z.m"]),
                     (ROOT / "tests/import/golden/gimbal_sdf.cap", ["world.gravity[3]", "yoke.mass"]),
                     (HERE / "models/bushing_pair.cap", ["world.gravity[3]", "bodyC.mass"])]


def recursions(capstan):
    """The tree recursions as loops (--recursions loops) give what the
    unrolled functions give, to 1e-12 relative, and follow a change of
    parameters; a model with cables is refused the loops with a clear
    error."""
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        for model, names in RECURSIONS_MODELS:
            values = {}
            for mode in ("unrolled", "loops"):
                out = build_in_form(capstan, d, model, "recursions", mode, "recursions", RECURSIONS_PROGRAM,
                                    names=", ".join(f'"{n}"' for n in names))
                if out is None:
                    failures += 1
                    continue
                proc = subprocess.run([str(out / "recursions")], stdout=subprocess.PIPE, text=True)
                if proc.returncode != 0:
                    print(f"recursions: {model.name} {mode}: exit {proc.returncode}: FAILED")
                    failures += 1
                    continue
                values[mode] = [float(x) for x in proc.stdout.split()]
            if len(values) == 2:
                a, b = values["unrolled"], values["loops"]
                half = len(a) // 2
                worst = max((abs(x - y) / (1.0 + abs(x)) for x, y in zip(a, b)), default=0.0)
                changed = max((abs(x - y) / (1.0 + abs(x)) for x, y in zip(a[:half], a[half:])), default=0.0)
                ok = len(a) == len(b) and len(a) > 0 and worst <= 1e-12 and changed > 1e-3
                print(f"recursions: {model.name}: loops against unrolled, {len(a)} values, largest difference "
                      f"{worst:.2e}; the parameters' change moves them by up to {changed:.2e}{'' if ok else ': FAILED'}")
                failures += not ok
        proc = run(capstan, "compile", ROOT / "examples/cable.cap", "-o", pathlib.Path(d) / "cable", "--recursions", "loops",
                   check=False)
        ok = proc.returncode != 0 and "--recursions loops" in proc.stderr and "cables" in proc.stderr
        print(f"recursions: cable.cap with --recursions loops: {proc.stderr.strip().splitlines()[0] if proc.stderr.strip() else ''}"
              f"{'' if ok else ': FAILED'}")
        failures += not ok
    print(f"recursions: {failures} failures")
    return 1 if failures else 0


# ---------------------------------------------------------------- steps
def steps(capstan):
    """forwardDynamics and inverseDynamicsDerivatives as shared steps (from
    20 speeds, codegen/steps.hpp): on a random chain with every joint type
    and on chains of hinges with a force law (time- and speed-dependent) on
    their first (armature on the odd hinges of one), and on a random tree of every joint type, the
    header (--derivatives) calls kernels, fewer than its steps (in both functions but the tree's
    inverseDynamicsDerivatives only), its pairs' loop is by the tree's blocks (storing every entry
    on the hinges without armature), and generated udot, d tau / d(q, u, udot)
    and d udot / d(q, u, tau) equal the interpreter's to AGREEMENT at random
    states (d udot within 4.5e-13 as compiled, through M^-1), also after --set
    of a mass and of the gravity (the calls' parameter arrays follow
    params)."""
    rng = random.Random(29)
    cases = golden_helpers()
    failures, compared = 0, 0
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        models = []
        # A serial chain of every joint type (where the articulated-body
        # algorithm, which the steps are, costs least) and one of hinges.
        for name, size, form in (("StepsSerial", 14, "serial"), ("StepsChain", 22, "chain"),
                                 ("StepsHinges", 30, "chain"), ("StepsTree", 10, "tree")):
            text = cases.random_tree(rng, size, name, chain=form == "chain", serial=form == "serial")
            if form == "serial":  # the chain keeps its first joint's force law
                text = "\n".join(line for line in text.splitlines() if ".tau = " not in line) + "\n"
            if name == "StepsChain":  # a rotor's inertia on its odd hinges: M's armature before the loop
                text = re.sub(r"(  Revolute j(\d*[13579])\(axis = \{[^}]*\})\);",
                              lambda m: f"{m.group(1)}, armature = {0.02 * int(m.group(2)):g});", text)
            path = tmp / f"{name}.cap"
            path.write_text(text)
            models.append(path)
        # The pairs' loop: by blocks on the serial chain of every joint
        # type (36 dofs, one segment: its own block, whose multi-dof joints'
        # own blocks are written before the loop, which adds to them) and on
        # the random tree of every joint type (many short segments, dofs not
        # numbered depth first: blocks below and above runs of ancestors
        # too); and on the chains of 22 and 30 hinges (one block each): on
        # the 30, where no step writes into the results before it (no
        # joint's own block, no armature), storing every entry, nothing
        # zeroed first (the last tile storing the rows before it again); on
        # the 22, whose odd hinges have armature, adding to M's (the last
        # tile's lanes before its rows masked). (By paths: models below 4
        # dofs; by columns: models with force elements, whose pairs are
        # traced.)
        want_loop = {"StepsSerial": "blocks", "StepsChain": "blocks", "StepsHinges": "blocks", "StepsTree": "blocks"}
        want_stores = {"StepsSerial": False, "StepsChain": False, "StepsHinges": True, "StepsTree": False}
        for model in models:
            out = tmp / model.stem
            run(capstan, "compile", model, "-o", out, "--derivatives", "--ir")
            header = (out / f"{model.stem}.hpp").read_text()
            ir = json.loads(next(out.glob("*.ir.json")).read_text())
            loop = next(f["method"].get("pairLoop") for f in ir["functions"] if f["name"] == "inverseDynamicsDerivatives")
            if (loop != want_loop[model.stem] or (loop == "columns") != ("pairT" in header)
                    or (loop == "blocks") != ("kPairBlocks" in header)):
                print(f"steps: {model.name}: the pairs' loop is by {loop}, not {want_loop[model.stem]}: FAILED")
                failures += 1
            stores = "the pairs' loop stores them" in header
            if stores != want_stores[model.stem] or stores == ("dtau_dq.setZero();" in header):
                print(f"steps: {model.name}: the pairs' loop {'stores' if stores else 'adds to zeros'}: FAILED")
                failures += 1
            # Both functions shared steps; on the tree (24 dofs, its
            # forwardDynamics traced whole) inverseDynamicsDerivatives.
            found = re.findall(r"Emitted as (\d+) calls of (\d+) shared steps", header)
            if len(found) != (1 if model.stem == "StepsTree" else 2) or any(int(k) >= int(c) for c, k in found):
                print(f"steps: {model.name}: forwardDynamics and inverseDynamicsDerivatives are not both "
                      f"shared steps ({found}): FAILED")
                failures += 1
                continue
            calls, kernels = (sum(int(x[i]) for x in found) for i in (0, 1))
            initial = eval_json(capstan, model, write_state(tmp, {}), "--interpret")
            for trial, extra in enumerate(([], ["--set", "s=1.7"], ["--set", "world.gravity[2]=-3.5"])):
                state = write_state(tmp, cases.random_state(rng, initial))
                generated = eval_json(capstan, model, state, "--derivatives", *extra)
                interpreted = eval_json(capstan, model, state, "--interpret", "--derivatives", *extra)
                compared += 1
                ok = close(generated["udot"], interpreted["udot"])
                for key, d in generated["derivatives"].items():
                    if not isinstance(d, list):
                        continue
                    d0 = interpreted["derivatives"][key]
                    scale = max([1.0] + [abs(x) for row in d0 for x in row])
                    worst = max(abs(a - b) for ra, rb in zip(d, d0) for a, b in zip(ra, rb)) / scale
                    if worst > AGREEMENT:
                        print(f"steps: {model.name}: generated {key} differs from the interpreter's by {worst:.3g}")
                        ok = False
                print(f"steps: {model.name} ({calls} calls of {kernels} kernels, pairs by {loop}) "
                      f"{' '.join(extra) or 'as compiled'}: "
                      f"generated udot and derivatives {'==' if ok else '!='} interpreted{'' if ok else ': FAILED'}")
                failures += not ok
    print(f"steps: {compared} states compared, {failures} failures")
    return 1 if failures or compared == 0 else 0


BUSHING_PAIR = ROOT / "tests/codegen/models/bushing_pair.cap"
BUSHING_EXAMPLE = ROOT / "examples/bushing.cap"
STIFF_CHAIN = ROOT / "examples/stiff_chain.cap"
PENALTY = ROOT / "tests/codegen/models/penalty.cap"
PENALTY_HINGE = ROOT / "tests/codegen/models/penalty_hinge.cap"
# The pivot's largest displacement over the static prediction F/k, and back:
# the largest load on the ideal hinge is at the bottom of the swing, where it
# is exactly m g + m w^2 r, and the mount follows it quasi-statically.
HINGE_DISPLACEMENT_FACTOR = 1.1
# The hinge angles' largest difference over its first-order prediction.
HINGE_ANGLE_FACTOR = 2.0
# Out of the swing plane (roll, pitch, p_z), which nothing excites.
HINGE_PLANE = 1e-9


def energies(capstan, model, tol, *extra):
    with tempfile.TemporaryDirectory() as d:
        out = pathlib.Path(d) / "run.csv"
        run(capstan, "simulate", model, "--t-end", 3, "--dt", 0.01, "--tol", tol, "-o", out, *extra)
        rows = list(csv.DictReader(out.open()))
    return [float(r["kinetic_energy"]) + float(r["potential_energy"]) for r in rows]


def elements(capstan):
    """Force elements (bushing, spring), generated and interpreted: an
    undamped pair conserves energy to within a tolerance-proportional bound,
    a damped mount loses energy monotonically, and a bushing at gimbal lock
    stops eval with an error naming it and its pitch."""
    failures = 0
    for extra in ((), ("--interpret",)):
        coarse, fine = (energies(capstan, BUSHING_PAIR, tol, *extra) for tol in (1e-6, 1e-9))
        drift = [max(abs(e - E[0]) for e in E) / abs(E[0]) for E in (coarse, fine)]
        ok = drift[1] < 1e-6 and drift[0] / drift[1] > 100
        print(f"elements: undamped pair {' '.join(extra) or 'generated'}: relative energy drift {drift[0]:.2e} "
              f"(tol 1e-6), {drift[1]:.2e} (tol 1e-9){'' if ok else ': FAILED'}")
        failures += not ok
        damped = energies(capstan, BUSHING_EXAMPLE, 1e-10, *extra)
        rises = [b - a for a, b in zip(damped, damped[1:]) if b - a > 1e-9 * abs(damped[0])]
        print(f"elements: damped mount {' '.join(extra) or 'generated'}: energy {damped[0]:.6g} -> {damped[-1]:.6g} J, "
              f"{len(rises)} rises{'' if not rises and damped[-1] < damped[0] else ': FAILED'}")
        failures += bool(rises) or not damped[-1] < damped[0]
    # Gimbal lock: body c pitched to 89.9 degrees about A's y axis.
    half = math.radians(89.9) / 2
    state = {"q": {"a": [1, 0, 0, 0, 0, 0, 0], "c": [math.cos(half), 0, math.sin(half), 0, 0, 0.3, 0]}}
    with tempfile.TemporaryDirectory() as d:
        path = write_state(d, state)
        for extra in ((), ("--interpret",)):
            proc = run(capstan, "eval", BUSHING_PAIR, "--state", path, *extra, check=False)
            ok = proc.returncode == 1 and "bushing `link` is at gimbal lock at t = 0: pitch = 89.9" in proc.stderr
            print(f"elements: gimbal lock {' '.join(extra) or 'generated'}: {proc.stderr.strip().splitlines()[-1]}"
                  f"{'' if ok else ': FAILED'}")
            failures += not ok
    # Capstan.Penalty: Drake's table (critically damped settling: 6.64/ts at
    # 1 %), k = m wn^2, d = 2 zeta sqrt(m k), k = F / x; and a RevoluteMount
    # spinning about z keeps spinning (no yaw stiffness) and stays in place.
    values = {v["path"]: v.get("value") for v in json.loads(run(capstan, "check", PENALTY, "--json").stdout)["variables"]}
    wn, k, d = values["wn"], values["k"], values["d"]
    ktf, dtf = values["ktf"], values["dtf"]
    ok = (abs(wn * 0.5 - 6.64) < 0.005 and abs(k - 2.0 * wn ** 2) < 1e-9 * k and
          abs(d - 2 * math.sqrt(2.0 * k)) < 1e-9 * d and abs(values["kload"] - 1e4) < 1e-9 and
          abs(ktf - 0.1 * wn ** 2) < 1e-9 * ktf and abs(dtf - math.sqrt(0.1 * ktf)) < 1e-9 * dtf)
    print(f"elements: Capstan.Penalty: wn = {wn:.6g} rad/s, k = {k:.6g} N/m, d = {d:.6g} N.s/m, "
          f"kload = {values['kload']:.6g} N/m, torque k = {ktf:.6g} N.m/rad, d = {dtf:.6g} N.m.s/rad{'' if ok else ': FAILED'}")
    failures += not ok
    with tempfile.TemporaryDirectory() as d:
        out = pathlib.Path(d) / "run.csv"
        run(capstan, "simulate", PENALTY, "-o", out)
        last = list(csv.DictReader(out.open()))[-1]
    spin, drift = float(last["float.u[3]"]), max(abs(float(last[f"float.q[{i}]"])) for i in (5, 6, 7))
    ok = abs(spin - 2.0) < 0.02 and drift < 1e-6
    print(f"elements: RevoluteMount: yaw rate after 1 s {spin:.6g} rad/s (2 at the start), position drift {drift:.2g} m"
          f"{'' if ok else ': FAILED'}")
    failures += not ok
    failures += penalty_hinge(capstan)
    print(f"elements: {failures} failures")
    return 1 if failures else 0


def penalty_hinge(capstan):
    """A bushing standing in for a revolute joint (the penalty method) tracks
    the ideal revolute model within the predicted displacement
    (models/penalty_hinge.cap: the same rod on a Revolute and on a Free joint
    held by a Capstan.Penalty.RevoluteMount, simulated together).

    Pivot: the ideal hinge's largest load is F = m g + m w_max^2 r (weight
    plus centripetal, at the bottom of the swing; r = L/2, w_max from the
    revolute run), so the mount's pivot should move by at most about F/k:
    the largest |p| must be within HINGE_DISPLACEMENT_FACTOR of F/k, both
    ways. Angle: moving the pivot by d along the rod changes the pendulum's
    frequency by dw/w = (1/r - 2 m r / I_pivot) d / 2 (from w^2 = m g r /
    I_pivot), so after T seconds of a swing of amplitude theta0 the angles
    differ by about theta0 w0 T |dw/w| at d = F/k; the largest difference
    must stay within HINGE_ANGLE_FACTOR of that."""
    values = {v["path"]: v.get("value")
              for v in json.loads(run(capstan, "check", PENALTY_HINGE, "--json").stdout)["variables"]}
    m, L, theta0, k, ipivot = (values[n] for n in ("m", "L", "theta0", "kJoint", "Ipivot"))
    g = -values["world.gravity"][1]
    with tempfile.TemporaryDirectory() as d:
        out = pathlib.Path(d) / "run.csv"
        run(capstan, "simulate", PENALTY_HINGE, "-o", out)
        rows = list(csv.DictReader(out.open()))
    col = {name: [float(r[name]) for r in rows] for name in rows[0]}
    T = col["time"][-1]
    r = L / 2
    w_max = max(abs(w) for w in col["hinge.u[1]"])
    load = m * g + m * w_max ** 2 * r
    predicted = load / k
    pivot = max(math.sqrt(col["float.q[5]"][i] ** 2 + col["float.q[6]"][i] ** 2 + col["float.q[7]"][i] ** 2)
                for i in range(len(rows)))
    ratio = pivot / predicted
    ok = 1 / HINGE_DISPLACEMENT_FACTOR <= ratio <= HINGE_DISPLACEMENT_FACTOR
    print(f"elements: penalty hinge: pivot moves {pivot * 1e3:.4f} mm at most; static prediction F/k = "
          f"({m:g} kg * {g:g} m/s^2 + {m:g} kg * ({w_max:.4g} rad/s)^2 * {r:g} m) / {k:g} N/m = "
          f"{predicted * 1e3:.4f} mm; ratio {ratio:.3f} (allowed {1 / HINGE_DISPLACEMENT_FACTOR:.3f}.."
          f"{HINGE_DISPLACEMENT_FACTOR:.3f}){'' if ok else ': FAILED'}")
    failures = not ok
    angle = [2 * math.atan2(z, w) for w, z in zip(col["float.q[1]"], col["float.q[4]"])]
    gap = max(abs(a - b) for a, b in zip(angle, col["hinge.q[1]"]))
    w0 = math.sqrt(m * g * r / ipivot)
    expected = theta0 * w0 * T * abs(1 / r - 2 * m * r / ipivot) * predicted / 2
    bound = HINGE_ANGLE_FACTOR * expected
    ok = gap <= bound
    print(f"elements: penalty hinge: hinge angles differ by {gap:.4g} rad at most over {T:g} s "
          f"(first-order prediction {expected:.4g} rad, bound {bound:.4g} rad){'' if ok else ': FAILED'}")
    failures += not ok
    plane = max(abs(v) for n in ("float.q[2]", "float.q[3]", "float.q[7]") for v in col[n])
    ok = plane <= HINGE_PLANE
    print(f"elements: penalty hinge: out of the swing plane {plane:.2g} (roll, pitch quaternion parts, p_z; "
          f"bound {HINGE_PLANE:g}){'' if ok else ': FAILED'}")
    failures += not ok
    return failures
# ---------------------------------------------------------------- external forces
# Distinct if udot with the forces differs from udot without by more than
# this, relative: the forces must matter, or agreement proves nothing.
EXTERNAL_FORCES_DISTINCT = 1e-6


def external_forces(capstan):
    """Generated forwardDynamics with external forces (STATE.json's
    `external_forces`) equals the interpreter's, every model, at a random
    state with a random spatial force on every body."""
    rng = random.Random(13)
    failures, compared = 0, 0
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        for model in models():
            proc = run(capstan, "eval", model, "--state", write_state(tmp, {}), "--interpret", check=False)
            if proc.returncode != 0:
                if "NotYetGenerated" not in proc.stderr:
                    print(f"external_forces: {model.name}: eval failed:\n{proc.stderr}")
                    failures += 1
                continue
            initial = json.loads(proc.stdout)
            # Quaternion joints (nq > nu) keep their initial q.
            q = {j: [x + rng.uniform(-0.5, 0.5) for x in v] if len(v) == len(initial["u"][j]) else v
                 for j, v in initial["q"].items()}
            u = {j: [rng.uniform(-1, 1) for _ in v] for j, v in initial["u"].items()}
            fext = {b: [rng.uniform(-2, 2) for _ in range(3)] + [rng.uniform(-10, 10) for _ in range(3)]
                    for b in initial["bodies"]}
            free = write_state(tmp, {"time": 0.25, "q": q, "u": u})
            pushed = tmp / "pushed.json"
            pushed.write_text(json.dumps({"time": 0.25, "q": q, "u": u, "external_forces": fext}))
            without = eval_json(capstan, model, free, "--interpret")["udot"]
            results = {}
            for mode in ([], ["--interpret"]):
                results[" ".join(mode) or "generated"] = eval_json(capstan, model, pushed, *mode)["udot"]
            compared += 1
            generated, interpreted = results["generated"], results["--interpret"]
            scale = max([abs(x) for x in values(interpreted)] + [1.0])
            change = max(abs(a - b) for a, b in zip(values(interpreted), values(without))) / scale
            if not close(generated, interpreted) or change <= EXTERNAL_FORCES_DISTINCT:
                print(f"external_forces: {model.name}: generated udot {generated} vs interpreted {interpreted} "
                      f"(the forces change udot by {change:.3g} relative)")
                failures += 1
            else:
                print(f"external_forces: {model.name}: generated == interpreted to {AGREEMENT} "
                      f"(the forces change udot by {change:.3g} relative)")
    print(f"external_forces: {compared} models compared, {failures} failures")
    return 1 if failures or compared == 0 else 0


# ---------------------------------------------------------------- derivatives
DERIVATIVES_AGREEMENT = 1e-12  # generated vs interpreted (both the analytical recursions), relative to each matrix's largest entry
# Two forms of M^-1 on the 18-link chain (CHAIN18), whose M's condition
# number is about 4e5 at the forms' state, so that two correct inverses
# differ past DERIVATIVES_AGREEMENT (measured against a long-double
# inverse: the loops 0.9-2.5e-12, Gauss-Jordan 1.6-1.8e-12 in M^-1; the
# two forms 2.4e-12 apart); a wrong step is off by orders of magnitude.
CHAIN18_AGREEMENT = 1e-11
DERIVATIVES_ORACLE = 1e-10     # the analytical recursions vs the dual-number oracle, the same measure
DERIVATIVES_FD = 1e-6          # vs central differences, relative to the difference's scale
DERIVATIVES_STEP = 1e-5        # central-difference step (rad, m, rad/s, m/s)
# The models whose generated derivatives are built (eval --derivatives builds
# a driver of its own, g++ -O0, 10 to 15 s of CPU each): force elements, frame quantities in a
# force law, two random trees that hold every joint type between them
# (the first joint takes a force law, so it has one dof), and a cable (the
# frames' derivatives symbolic, the interpreter's by dual numbers).
# Every model is checked interpreted.
DERIVATIVES_GENERATED = {"bushing.cap", "sensors.cap", "tree_a.cap", "tree_b.cap", "cable.cap"}
# Also generated with --symbolic-derivatives (the traced forward dynamics
# differentiated symbolically, the former method kept as an oracle).
DERIVATIVES_SYMBOLIC = {"tree_b.cap", "bushing.cap"}


def golden_helpers():
    """tests/golden/run.py's random trees (random_tree, random_state)."""
    spec = importlib.util.spec_from_file_location("golden_run", ROOT / "tests/golden/run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def quat_mul(a, b):
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return [aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw]


def tangent_step(joint, q, du, eps):
    """q of `joint` moved by eps along N(q) du (du: a direction in the joint's
    u): a quaternion (w, x, y, z) of R_FM turns by exp(eps w / 2) on the left,
    w = du[0:3] (u = w_FM in F, SPEC 4); Free's p_FM and every other joint's
    q move by eps du."""
    q = list(q)
    if joint["type"] in ("Ball", "Free"):
        w = du[:3]
        angle = eps * math.sqrt(sum(x * x for x in w))
        axis = [x / math.sqrt(sum(y * y for y in w)) for x in w] if angle != 0 else [0.0, 0.0, 0.0]
        q[:4] = quat_mul([math.cos(angle / 2)] + [math.sin(angle / 2) * x for x in axis], q[:4])
        for k in range(3, len(du)):
            q[4 + k - 3] += eps * du[k]
    else:
        q = [x + eps * d for x, d in zip(q, du)]
    return q


def derivatives_of(capstan, model, tmp, rng, cases):
    """Checks one model at one random state; returns the number of failures."""
    failures = 0
    mech = json.loads(run(capstan, "check", model, "--json").stdout)
    joints = sorted((j for j in mech["joints"] if not j["cut"]), key=lambda j: j["u_index"])
    base = json.loads(run(capstan, "eval", model, "--state", write_state(tmp, {}), "--interpret").stdout)
    state = cases.random_state(rng, base)
    state_path = tmp / "state.json"
    state_path.write_text(json.dumps(state))
    interp = eval_json(capstan, model, state_path, "--interpret", "--derivatives")
    nu = interp["nu"]
    d = interp["derivatives"]
    name = model.name
    generated = name in DERIVATIVES_GENERATED
    def worst_of(a, b):
        scale = max([1.0] + [abs(x) for row in b for x in row])
        return max(abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb)) / scale

    # The dual-number oracle runs the dynamics without a cable's path solver:
    # none for a model with cables (their derivatives meet central
    # differences below, and the generated ones the interpreter's).
    oracle = interp.get("derivatives_by_duals")
    for key in ("dudot_dq", "dudot_du", "dudot_dtau") if oracle else ():
        worst = worst_of(d[key], oracle[key])
        if worst > DERIVATIVES_ORACLE:
            print(f"derivatives: {name}: {key} differs from the dual-number oracle's by {worst:.3g} relative")
            failures += 1
    worst = worst_of(d["dtau_dudot"], interp["mass_matrix"])
    if worst > 1e-12:
        print(f"derivatives: {name}: inverseDynamicsDerivatives' M differs from massMatrix by {worst:.3g}")
        failures += 1
    if generated:
        gen = eval_json(capstan, model, state_path, "--derivatives")["derivatives"]
        for key in ("dudot_dq", "dudot_du", "dudot_dtau", "dtau_dq", "dtau_du", "dtau_dudot"):
            scale = max([1.0] + [abs(x) for row in d[key] for x in row])
            worst = max(abs(a - b) for ra, rb in zip(gen[key], d[key]) for a, b in zip(ra, rb)) / scale
            if worst > DERIVATIVES_AGREEMENT:
                print(f"derivatives: {name}: generated {key} differs from the interpreter's by {worst:.3g} relative")
                failures += 1
    if name in DERIVATIVES_SYMBOLIC:
        symbolic = eval_json(capstan, model, state_path, "--symbolic-derivatives")["derivatives"]
        for key in ("dudot_dq", "dudot_du", "dudot_dtau"):
            worst = worst_of(d[key], symbolic[key])
            if worst > DERIVATIVES_ORACLE:
                print(f"derivatives: {name}: {key} differs from the symbolic oracle's by {worst:.3g} relative")
                failures += 1
    # dudot_dtau M = I.
    M = interp["mass_matrix"]
    worst = max(abs(sum(d["dudot_dtau"][i][k] * M[k][j] for k in range(nu)) - (1.0 if i == j else 0.0))
                for i in range(nu) for j in range(nu))
    if worst > 1e-9:
        print(f"derivatives: {name}: dudot_dtau M - I has an entry {worst:.3g}")
        failures += 1

    # Central differences of the interpreter's udot along random directions
    # (every column at once): in q along N(q) du, in u along du.
    def udot(s):
        path = tmp / "shifted.json"
        path.write_text(json.dumps(s))
        r = eval_json(capstan, model, path, "--interpret")
        return [x for j in joints for x in r["udot"][j["name"]]]

    h = DERIVATIVES_STEP
    for key in ("dudot_dq", "dudot_du", "dudot_dq", "dudot_du"):
        du = [rng.uniform(-1, 1) for _ in range(nu)]
        shifted = []
        for sign in (1, -1):
            s = json.loads(json.dumps(state))
            for j in joints:
                dj = du[j["u_index"]:j["u_index"] + j["nu"]]
                if key == "dudot_dq":
                    s["q"][j["name"]] = tangent_step(j, state["q"][j["name"]], dj, sign * h)
                else:
                    s["u"][j["name"]] = [x + sign * h * y for x, y in zip(state["u"][j["name"]], dj)]
            shifted.append(udot(s))
        fd = [(a - b) / (2 * h) for a, b in zip(*shifted)]
        got = [sum(d[key][i][k] * du[k] for k in range(nu)) for i in range(nu)]
        scale = max([1.0] + [abs(x) for x in fd])
        worst = max(abs(a - b) for a, b in zip(got, fd)) / scale
        if worst > DERIVATIVES_FD:
            print(f"derivatives: {name}: {key} du = {got}, central difference {fd} ({worst:.3g} relative)")
            failures += 1
    print(f"derivatives: {name}: nu = {nu}, 4 directions vs central differences, dudot_dtau M = I"
          f"{', generated == interpreted' if generated else ''}"
          f"{', == symbolic oracle' if name in DERIVATIVES_SYMBOLIC else ''}"
          f"{', == dual-number oracle' if oracle else ''}: {failures} failures")
    return failures


def derivatives(capstan):
    """eval --derivatives, generated and interpreted, against each other,
    central differences and M, on every model and random trees with every
    joint type."""
    rng = random.Random(17)
    cases = golden_helpers()
    failures, checked = 0, 0
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        trees = []
        for tree, types in (("tree_a", ["Revolute", "Ball", "Prismatic"]),
                            ("tree_b", ["Prismatic", "Free", "Universal", "Cylindrical"]),
                            ("tree_c", None)):
            path = tmp / f"{tree}.cap"
            path.write_text(cases.random_tree(rng, len(types) if types else 8, tree.title().replace("_", ""),
                                              types=types))
            trees.append(path)
        for model in models() + trees:
            probe = run(capstan, "eval", model, "--state", write_state(tmp, {}), "--interpret", "--derivatives",
                        check=False)
            if probe.returncode != 0:
                lines = probe.stderr.strip().splitlines()
                reason = next((line for line in lines if "error:" in line), lines[-1] if lines else "no message")
                print(f"derivatives: {model.name}: skipped: {reason}")
                continue
            failures += derivatives_of(capstan, model, tmp, rng, cases)
            checked += 1
        # Every form on the trees (every joint type), the compact one also
        # with force elements and force laws (bushing, sensors); each loop
        # built by both compilers.
        unrolled = ("unrolled", "g++")
        # Even numbers of dofs for Gauss-Jordan's pairs of pivots (the trees
        # have 11 and 17): the stiff chain (8, with force laws) against the
        # unrolled form, and the 18-link chain, what it gets by default,
        # against the loops, within CHAIN18_AGREEMENT.
        chain18 = tmp / "chain18.cap"
        chain18.write_text(CHAIN18)
        failures += derivative_forms(capstan, [(trees[0], [unrolled, ("compact", "clang++")]),
                                               (trees[1], [unrolled, ("loops", "clang++"), ("compact", "g++"),
                                                           ("default", "clang++"), ("gauss-jordan", "g++"),
                                                           ("call", "g++")]),
                                               (trees[2], [unrolled, ("compact", "clang++"), ("default", "g++"),
                                                           ("gauss-jordan", "clang++")]),
                                               (STIFF_CHAIN, [unrolled, ("gauss-jordan", "clang++"),
                                                              ("default", "g++"), ("call", "clang++")]),
                                               (chain18, [("loops", "g++"), ("gauss-jordan", "clang++"),
                                                          ("call", "g++")],
                                                CHAIN18_AGREEMENT),
                                               (BUSHING_EXAMPLE, [unrolled, ("compact", "g++")]),
                                               (SENSORS, [unrolled, ("compact", "clang++")])], tmp)
        # outputDerivatives (reverse sweeps, symbolic::gradient) on the
        # trees with quaternions and every joint type, and the model with
        # outputs and force laws.
        failures += output_derivatives(capstan, [trees[1], trees[2], SENSORS], tmp)
        failures += derivative_pairs_choice(capstan, tmp)
    print(f"derivatives: {checked} models checked, {failures} failures")
    return 1 if failures or checked < len(DERIVATIVES_GENERATED) else 0


OUTPUT_DERIVATIVES_PROGRAM = r"""#include "{header}"
#include <algorithm>
#include <cmath>
#include <cstdio>
// outputDerivatives against central differences of y = [outputs; kinetic
// energy; potential energy] in each raw coordinate q[i] (a quaternion's
// numbers one at a time, unnormalized) and each speed u[j], at a state away
// from the initial one. Exits 1 where an entry differs by more than
// {tol} relative to the larger of 1 and the difference's size.
int main() {{
  using Model = capstan_models::{cls};
{state}  auto y = [&](const Model::Q& qy, const Model::U& uy) {{
    Model::OutputValues o;
    m.outputValues(0.0, qy, uy, o);
    Eigen::VectorXd out(static_cast<Eigen::Index>(o.size()) + 2);
    for (std::size_t i = 0; i < o.size(); ++i) out[static_cast<Eigen::Index>(i)] = o[i];
    out[out.size() - 2] = m.kineticEnergy(qy, uy);
    out[out.size() - 1] = m.potentialEnergy(qy);
    return out;
  }};
  Model::OutputDerivativesQ dq;
  Model::OutputDerivativesU du;
  m.outputDerivatives(0.0, q, u, dq, du);
  const double h = 1e-6;
  double worst = 0.0;
  int entries = 0;
  auto check = [&](const Eigen::VectorXd& plus, const Eigen::VectorXd& minus, const auto& column) {{
    for (Eigen::Index r = 0; r < plus.size(); ++r) {{
      const double fd = (plus[r] - minus[r]) / (2.0 * h);
      worst = std::max(worst, std::abs(fd - column[r]) / std::max(1.0, std::abs(fd)));
      ++entries;
    }}
  }};
  for (int i = 0; i < Model::nq; ++i) {{
    Model::Q qp = q, qm = q;
    qp[i] += h;
    qm[i] -= h;
    check(y(qp, u), y(qm, u), dq.col(i));
  }}
  for (int j = 0; j < Model::nu; ++j) {{
    Model::U up = u, um = u;
    up[j] += h;
    um[j] -= h;
    check(y(q, up), y(q, um), du.col(j));
  }}
  std::printf("%d entries, largest difference %.2e\n", entries, worst);
  return worst <= {tol} ? 0 : 1;
}}
"""
OUTPUT_DERIVATIVES_FD = 1e-6


def output_derivatives(capstan, models, tmp):
    """The generated outputDerivatives against central differences of the
    outputs and energies, every entry; the header built with g++ -Werror."""
    failures = 0
    for model in models:
        out = tmp / f"{model.stem}_outputs"
        run(capstan, "compile", model, "-o", out, "--ir", "--derivatives")
        ir = json.loads(next(out.glob("*.ir.json")).read_text())
        build = build_program("g++", out, "outputs",
                              OUTPUT_DERIVATIVES_PROGRAM.format(header=f"{ir['class_name']}.hpp", cls=ir["class_name"],
                                                                state=STATE_AWAY_FROM_INITIAL,
                                                                tol=OUTPUT_DERIVATIVES_FD))
        if build.returncode != 0:
            print(build.stdout)
            failures += 1
            continue
        proc = subprocess.run([str(out / "outputs")], stdout=subprocess.PIPE, text=True)
        ok = proc.returncode == 0
        print(f"derivatives: {model.name}: outputDerivatives vs central differences: {proc.stdout.strip()}"
              f"{'' if ok else ': FAILED'}")
        failures += not ok
    return failures


# The default's choice of the pair terms' form (kMaxUnrolledDerivativePairs
# = 120 pairs of dofs on one path) and of forwardDynamicsDerivatives' M^-1
# (kMaxTracedInverseWork = 3,500): model -> (what each derivative
# function's method.pairs must be, whether forwardDynamicsDerivatives is
# composed). arm7 (28 pairs) keeps everything traced; chain18 (171 pairs)
# sums the inverse derivatives' pairs in a loop while the forward ones,
# with M^-1 traced (2,907 products), keep theirs; chain20 (210 pairs,
# 3,990 products) and the humanoid (253, 5,047), whose quadratic results
# stay unrolled (at most 400 columns), have the loop in both, the forward
# function composed of forwardDynamics and inverseDynamicsDerivatives.
CHAIN18 = """model Chain18 "an 18-link chain of hinges about y"
  import Capstan.*;
  World world(gravity = {0, 0, -9.81});
%s
equation
  connect(world.frame_b, j1.frame_a);
%s
end Chain18;
""" % ("\n".join(f"  Revolute j{i}(axis = {{0, 1, 0}});\n"
                   f"  Body b{i}(mass = 1, com = {{0, 0, -0.15}}, inertia = diagonal({{0.0076, 0.0076, 0.0002}}));\n"
                   f"  FixedTranslation t{i}(r = {{0, 0, -0.3}});" for i in range(1, 19)),
       "\n".join(f"  connect(j{i}.frame_b, b{i}.frame_a);\n  connect(b{i}.frame_a, t{i}.frame_a);"
                 + (f"\n  connect(t{i}.frame_b, j{i + 1}.frame_a);" if i < 18 else "") for i in range(1, 19)))
# The third entry: the composed function's M^-1 (its method.inverse):
# traced for the arm, by Gauss-Jordan on chains of 16 to 40 dofs
# (kMinGaussJordanSpeeds), in loops on the branched humanoid.
PAIRS_CHOICE = {
    BUSHING_EXAMPLE: ({"inverseDynamicsDerivatives": "unrolled", "forwardDynamicsDerivatives": "unrolled"}, False,
                      None),
    ROOT / "bench/peers/models/chain5.cap": ({"inverseDynamicsDerivatives": "loop",
                                              "forwardDynamicsDerivatives": "unrolled"}, False, None),
    ARM7: ({"inverseDynamicsDerivatives": "loop", "forwardDynamicsDerivatives": "loop"}, True, "traced"),
    "chain18": ({"inverseDynamicsDerivatives": "loop", "forwardDynamicsDerivatives": "loop"}, True, "gauss-jordan"),
    ROOT / "bench/peers/models/chain20.cap": ({"inverseDynamicsDerivatives": "loop",
                                               "forwardDynamicsDerivatives": "loop"}, True, "gauss-jordan"),
    ROOT / "bench/peers/models/humanoid.cap": ({"inverseDynamicsDerivatives": "loop",
                                                "forwardDynamicsDerivatives": "loop"}, True, "loops"),
}


def derivative_pairs_choice(capstan, tmp):
    """With no option, the derivative functions' pair terms are traced up
    to 120 pairs and a loop past them, independently of the quadratic
    results, except that inverseDynamicsDerivatives is shared steps with
    its pairs in the loop from 5 speeds (not with force elements: the
    bushing); forwardDynamicsDerivatives is composed past 3,500 products
    of M^-1, and from 7 speeds where inverseDynamicsDerivatives is steps,
    then with udot from its own M^-1 (PAIRS_CHOICE; the IR's method.pairs,
    method.composed, method.inverse and method.udot, and the header's loop
    table or, on a chain, its lane masks)."""
    failures = 0
    for model, (want, composed, inverse) in PAIRS_CHOICE.items():
        if model == "chain18":
            model = tmp / "chain18.cap"
            model.write_text(CHAIN18)
        out = tmp / f"{model.stem}_pairs"
        run(capstan, "compile", model, "-o", out, "--ir", "--derivatives")
        ir = json.loads(next(out.glob("*.ir.json")).read_text())
        methods = {f["name"]: f["method"] for f in ir["functions"] if f["name"] in want}
        got = {name: m.get("pairs") for name, m in methods.items()}
        got_composed = methods["forwardDynamicsDerivatives"].get("composed", False)
        got_inverse = methods["forwardDynamicsDerivatives"].get("inverse")
        # Composed of the steps, it takes udot from its own M^-1 (no forwardDynamics call).
        got_udot = methods["forwardDynamicsDerivatives"].get("udot")
        text = (out / f"{ir['class_name']}.hpp").read_text()
        loop = "kFirstDof" in text or "kBelow" in text  # the loop's tables, or the chain's lane masks
        ok = (got == want and got_composed == composed and got_inverse == inverse and ir["quadratic"] == "unrolled"
              and loop == ("loop" in want.values()) and got_udot == ("fused" if composed else None))
        print(f"derivatives: {model.name}: pair terms {got}, forward composed {got_composed} (M^-1 {got_inverse}, "
              f"udot {got_udot}), "
              f"quadratic {ir['quadratic']}"
              f"{'' if ok else f': FAILED (want {want}, composed {composed}, M^-1 {inverse})'}")
        failures += not ok
    return failures


DERIVATIVE_FORMS_PROGRAM = r"""#include "{header}"
#include <cmath>
#include <cstdio>
// forwardDynamicsDerivatives and inverseDynamicsDerivatives at a state away
// from the initial one: every entry of d udot / d(q, u, tau) and of
// d tau / d(q, u, udot).
int main() {{
  using Model = capstan_models::{cls};
{state}  Model::MassMatrix dq, du, dtau, tq, tu, M;
  m.forwardDynamicsDerivatives(0.0, q, u, dq, du, dtau);
  Model::U udot;
  for (int i = 0; i < Model::nu; ++i) udot[i] = std::sin(0.9 * i + 0.3);
  m.inverseDynamicsDerivatives(0.0, q, u, udot, tq, tu, M);
  for (const Model::MassMatrix* x : {{&dq, &du, &dtau, &tq, &tu, &M}})
    for (int i = 0; i < static_cast<int>(x->size()); ++i) std::printf("%.17g\n", x->data()[i]);
}}
"""
# The forms of the derivative functions: name -> (compile options, what the
# header must hold, "!" what it must not). unrolled: everything traced;
# loops: M^-1 in loops at run time (--mass-inverse; the default past a
# 20-dof chain); compact: also the pairs' terms in a loop over the dof tree
# (with --quadratic compact; the default past kMaxUnrolledQuadraticColumns).
DERIVATIVE_FORMS = {
    "unrolled": (["--mass-inverse", "unrolled", "--quadratic", "unrolled"], ["!M, then its factor", "!kFirstDof"]),
    "loops": (["--mass-inverse", "loops", "--quadratic", "unrolled"], ["M, then its factor", "!kFirstDof"]),
    "compact": (["--mass-inverse", "loops", "--quadratic", "compact"], ["M, then its factor", "kFirstDof"]),
    # M^-1 by Gauss-Jordan elimination over padded columns, what chains of
    # 16 to 40 dofs get by default; here on branched trees too (it ignores
    # the tree's zeros).
    "gauss-jordan": (["--mass-inverse", "gauss-jordan"], ["M^-1 by Gauss-Jordan elimination in place",
                                                          "!M, then its factor", "!forwardDynamicsDerivativesInverse(",
                                                          "product(dr_dq, dudot_dq);"]),
    # What a model of 7 to about 18 dofs without force elements gets by
    # default: inverseDynamicsDerivatives as shared steps, its pairs in the
    # loop, and forwardDynamicsDerivatives composed of it with M^-1 traced
    # on its own (a kernel), not in loops, and its products with M^-1 a
    # column at a time (below kMinEigenProductSpeeds), not Eigen's.
    # udot without forwardDynamics: the steps' calls at udot = 0, then udot
    # from M^-1 (refined once) and the column steps at it. (The pairs' loop
    # by paths below 4 dofs, by the tree's blocks from 4.)
    "default": ([], ["!M, then its factor", "At run time, the pairs' terms", "inverseDynamicsDerivativesStep1(",
                     "forwardDynamicsDerivativesInverse(M.data(), dudot_dtau.data())",
                     "product(dr_dq, dudot_dq);", "!-dudot_dtau * dr_dq", "U rhs = ",
                     "!forwardDynamics(time, q, u, udot);"]),
    # The form before: udot from a forwardDynamics call.
    "call": (["--derivative-udot", "call"], ["forwardDynamics(time, q, u, udot);", "!U rhs = "]),
}


def derivative_forms(capstan, cases, tmp):
    """forwardDynamicsDerivatives and inverseDynamicsDerivatives in each of
    DERIVATIVE_FORMS agree with the first form listed (the unrolled one,
    or for a larger chain the loops) to 1e-12 relative (or the case's own
    tolerance), each form built
    warning-free by the compiler named with it; with M^-1 in loops
    forwardDynamicsDerivatives must be composed of the class's
    forwardDynamics and inverseDynamicsDerivatives (the IR's
    method.composed), with the force laws' derivatives traced beside them
    where the model has some (the trees, sensors). cases: (model, [(form,
    compiler), ...][, tolerance]), the reference form first."""
    failures, sparse_products = 0, 0
    for model, forms, *tolerance in cases:
        tolerance = tolerance[0] if tolerance else DERIVATIVES_AGREEMENT
        values = {}
        for mode, compiler in forms:
            options, marks = DERIVATIVE_FORMS[mode]
            out = tmp / f"{model.stem}_forms_{mode}"
            run(capstan, "compile", model, "-o", out, "--ir", "--derivatives", *options)
            ir = json.loads(next(out.glob("*.ir.json")).read_text())
            header = out / f"{ir['class_name']}.hpp"
            build = build_program(compiler, out, "forms",
                                  DERIVATIVE_FORMS_PROGRAM.format(header=header.name, cls=ir["class_name"],
                                                                  state=STATE_AWAY_FROM_INITIAL))
            text = header.read_text()
            missing = [m for m in marks if (m.lstrip("!") in text) == m.startswith("!")]
            method = next(f["method"] for f in ir["functions"] if f["name"] == "forwardDynamicsDerivatives")
            if method.get("composed", False) != (mode != "unrolled"):
                missing.append("forwardDynamicsDerivatives " + ("traced" if mode == "unrolled" else "composed"))
            if build.returncode != 0 or missing:
                print(build.stdout, f"derivatives: {model.name}: {mode} form: the header does not hold {missing}")
                failures += 1
                continue
            proc = subprocess.run([str(out / "forms")], stdout=subprocess.PIPE, text=True, check=True)
            values[mode] = [float(x) for x in proc.stdout.split()]
            sparse_products += method.get("products") == "paths"
        reference = forms[0][0]
        for mode, _ in forms[1:]:
            if reference not in values or mode not in values:
                continue
            a, b = values[reference], values[mode]
            scale = max([1.0] + [abs(x) for x in a])
            worst = max((abs(x - y) for x, y in zip(a, b)), default=0.0) / scale
            ok = len(a) == len(b) and len(a) > 0 and worst <= tolerance
            print(f"derivatives: {model.name}: the {mode} form against the {reference} one, {len(a)} entries, "
                  f"largest difference {worst:.2e} relative{'' if ok else ': FAILED'}")
            failures += not ok
    # Some branched tree takes the products over each column's path rows
    # (treeSparseProducts), so that the comparison covers them.
    print(f"derivatives: {sparse_products} forms with the products over path rows"
          f"{'' if sparse_products else ': FAILED (none)'}")
    return failures + (sparse_products == 0)


# ---------------------------------------------------------------- constraints
CONSTRAINT_EXAMPLES = [ROOT / "examples/fourbar.cap", ROOT / "examples/sphere_on_sphere.cap",
                       ROOT / "examples/pendulum_contact.cap"]
DOUBLE_PENDULUM = ROOT / "examples/double_pendulum.cap"
DOUBLE_PENDULUM_CUT = HERE / "models/double_pendulum_cut.cap"
BALL_ON_SPHERE = HERE / "models/ball_on_sphere.cap"
DRIFT = 1e-8          # constraint errors over a 10 s simulation under projection (m, rad; m/s, rad/s)
EQUIVALENT = 1e-9     # loop-closed vs tree model, relative
EXACT = 1e-10         # hand-computed values, relative to max(1, |value|)


def simulate_csv(capstan, model, *args):
    with tempfile.TemporaryDirectory() as d:
        out = pathlib.Path(d) / "run.csv"
        proc = run(capstan, "simulate", model, "-o", out, *args)
        return list(csv.DictReader(out.open())), proc.stderr


def quaternion_from(R):
    """(w, x, y, z) of a row-major rotation matrix (w >= 0)."""
    t = R[0] + R[4] + R[8]
    if t > 0:
        s = math.sqrt(t + 1) * 2
        return [s / 4, (R[7] - R[5]) / s, (R[2] - R[6]) / s, (R[3] - R[1]) / s]
    i = max(range(3), key=lambda k: R[4 * k])
    j, k = (i + 1) % 3, (i + 2) % 3
    s = math.sqrt(1 + R[4 * i] - R[4 * j] - R[4 * k]) * 2
    q = [0.0] * 4
    q[0] = (R[3 * k + j] - R[3 * j + k]) / s
    q[1 + i] = s / 4
    q[1 + j] = (R[3 * j + i] + R[3 * i + j]) / s
    q[1 + k] = (R[3 * k + i] + R[3 * i + k]) / s
    return q if q[0] >= 0 else [-x for x in q]


def constraints(capstan):
    """Constraints end to end, generated and interpreted, as RBDL's
    documentation advises testing them: every constraint example simulates
    10 s with its errors below DRIFT under projection and its energy
    conserved to within a tolerance-proportional bound (workless); the
    double pendulum closed at the elbow by a cut moves as the tree does
    (equivalent joint model); a ball at rest on a fixed sphere is held by a
    normal multiplier of -m g (static equilibrium); known offsets of the ball
    read back as its errors (known errors); Baumgarte keeps the errors small
    without projection; eval's SPEC §6 block is complete."""
    failures = 0

    def report(ok, text):
        nonlocal failures
        print(f"constraints: {text}{'' if ok else ': FAILED'}")
        failures += not ok

    for model in CONSTRAINT_EXAMPLES:
        for extra in ((), ("--interpret",)):
            mode = " ".join(extra) or "generated"
            if extra and model.name == "sphere_on_sphere.cap":
                continue  # the interpreter is slow on 13 dofs with rolling; agreement covers it
            rows, _ = simulate_csv(capstan, model, "--constraint-errors", *extra)
            columns = [c for c in rows[0] if c.endswith("_error")]
            worst = max(float(r[c]) for r in rows for c in columns)
            report(len(columns) > 0 and float(rows[-1]["time"]) == 10 and worst < DRIFT,
                   f"{model.name} ({mode}): 10 s, largest constraint error {worst:.2e}")
        drifts = []
        for tol in ("1e-7", "1e-10"):
            rows, _ = simulate_csv(capstan, model, "--tol", tol, "--t-end", "3")
            E = [float(r["kinetic_energy"]) + float(r["potential_energy"]) for r in rows]
            scale = max(abs(e) for e in E) + max(float(r["kinetic_energy"]) for r in rows)
            drifts.append(max(abs(e - E[0]) for e in E) / scale)
        report(drifts[1] < 1e-7 and drifts[0] > 10 * drifts[1],
               f"{model.name}: relative energy drift {drifts[0]:.2e} (tol 1e-7), {drifts[1]:.2e} (tol 1e-10)")

    with tempfile.TemporaryDirectory() as d:
        # Equivalent joint model: the tree's state mapped onto the cut model.
        rng = random.Random(3)
        for trial in range(3):
            q1, q2, u1, u2 = (rng.uniform(-2, 2) for _ in range(4))
            state = {"q": {"shoulder": [q1], "elbow": [q2]}, "u": {"shoulder": [u1], "elbow": [u2]}}
            for extra in ((), ("--interpret",)):
                tree = eval_json(capstan, DOUBLE_PENDULUM, write_state(d, state), *extra)
                lower = tree["bodies"]["lower"]
                cut_state = {"q": {"shoulder": [q1], "float": quaternion_from(lower["R_WB"]) + lower["p_WB"]},
                             "u": {"shoulder": [u1], "float": lower["w_WB"] + lower["v_WB"]}}
                cut = eval_json(capstan, DOUBLE_PENDULUM_CUT, write_state(d, cut_state), *extra)
                J, Jdu = tree["jacobians"]["lower"], tree["jacobian_dot_u"]["lower"]
                udot = [tree["udot"]["shoulder"][0], tree["udot"]["elbow"][0]]
                A = [sum(J[i][k] * udot[k] for k in range(2)) + Jdu[i] for i in range(6)]
                got = [cut["udot"]["shoulder"][0]] + cut["udot"]["float"]
                want = [udot[0]] + A
                err = max(abs(a - b) for a, b in zip(got, want)) / max(1.0, max(abs(x) for x in want))
                perr = max(abs(x) for x in cut["constraints"]["elbow"]["position_error"])
                report(err < EQUIVALENT and perr < 1e-12,
                       f"elbow cut vs tree ({' '.join(extra) or 'generated'}, state {trial}): shoulder udot and "
                       f"the lower link's acceleration differ by {err:.2e}")
        # Static equilibrium and known errors: the ball on top of the sphere.
        m, g, R, r = 0.7, 9.81, 1.0, 0.2
        for rolling in ("false", "true"):
            for extra in ((), ("--interpret",)):
                what = f"ball on sphere (rolling = {rolling}, {' '.join(extra) or 'generated'})"
                rest = eval_json(capstan, BALL_ON_SPHERE, write_state(d, {}), "--override", f"rolling={rolling}", *extra)
                c = rest["constraints"]["contact"]
                lam, force = c["multipliers"], c["force_on_B_in_G"]
                ok = (abs(lam[2] + m * g) < EXACT * m * g and max(abs(x) for x in lam[:2]) < EXACT and
                      max(abs(x - y) for x, y in zip(force, [0, m * g, 0])) < EXACT * m * g and
                      max(abs(x) for x in rest["udot"]["float"]) < EXACT and
                      abs(c["contact_frame_in_G"]["p"][1] - R) < EXACT and abs(c["contact_frame_in_G"]["R"][5] - 1) < EXACT and
                      abs(c["separation"]) < EXACT)
                report(ok, f"{what}: at rest, multipliers {lam}, force on B {force}")
                # Lifted by 0.1 and moving: up at 0.3, sideways at 0.5, spinning about z at 2.
                moved = eval_json(capstan, BALL_ON_SPHERE, write_state(d, {"q": {"float": [1, 0, 0, 0, 0, R + r + 0.1, 0]},
                                                                             "u": {"float": [0, 0, 2, 0.5, 0.3, 0]}}),
                                  "--override", f"rolling={rolling}", *extra)
                c = moved["constraints"]["contact"]
                # Slip of B's material point at the contact point, (R + 0.05) below the
                # ball's center... the contact point Co is at R/(R + r) of the center line.
                below = (R + r + 0.1) * r / (R + r)
                slip_x = 0.5 + 2 * below if rolling == "true" else 0.0  # v + w x (Co - Sb), w = 2 z, Co - Sb = -below y
                want_v = [slip_x, 0.0, 0.3]
                ok = (abs(c["position_error"][0] - 0.1) < EXACT and abs(c["separation"] - 0.1) < EXACT and
                      all(abs(a - b) < EXACT for a, b in zip(sorted(map(abs, c["velocity_error"][:2])),
                                                              sorted(map(abs, want_v[:2])))) and
                      abs(c["velocity_error"][2] - 0.3) < EXACT)
                report(ok, f"{what}: lifted 0.1 at 0.3 m/s: position error {c['position_error']}, "
                           f"velocity errors {c['velocity_error']}")
        # Baumgarte instead of projection: the loop stays closed to a small error.
        rows, _ = simulate_csv(capstan, CONSTRAINT_EXAMPLES[0], "--baumgarte", "0.01", "--constraint-errors",
                               "--t-end", "3")
        worst = max(float(r["couplerRocker.position_error"]) for r in rows)
        report(1e-12 < worst < 1e-5, f"four-bar with --baumgarte 0.01: largest position error {worst:.2e}")
        # eval's constraints block (SPEC §6).
        result = eval_json(capstan, CONSTRAINT_EXAMPLES[1], write_state(d, {}))
        keys = set(result["constraints"]["contact"])
        want = {"position_error", "velocity_error", "acceleration_error", "multipliers", "force_on_B_in_G",
                "contact_frame_in_G", "separation"}
        report(keys == want, f"eval's contact entry has {sorted(keys)}")
    print(f"constraints: {failures} failures")
    return 1 if failures else 0


ARTICULATED_PROGRAM = r"""#include "{header}"
#include <capstan/constraint_solver.hpp>
#include <capstan/sim/any_model.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
// The articulated-body path of ConstraintSolver::accelerations against the
// range-space method, at a state off the constraints: forwardDynamics with
// and without its factor, solveMassMatrix(k, M X) = X, then udot and lambda
// by both methods (and as the solver chooses), plain, with the first
// constraint disabled, and with Baumgarte's terms; and the path through
// capstan::sim::AnyModel (what `capstan simulate` and Python run). Exits 1
// where they differ by more than 1e-9 (relative to 1 + the largest entry).
int main() {{
  using Model = capstan_models::{cls};
  using Solver = capstan::ConstraintSolver<Model>;
  using Method = capstan::ConstraintSettings::Method;
  Model m;
  Model::Q q;
  Model::U u;
  m.initialState(q, u);
  for (int i = 0; i < Model::nq; ++i) q[i] += 0.2 * std::sin(1.3 * i + 0.4);
  for (int i = 0; i < Model::nu; ++i) u[i] += 0.7 * std::cos(0.9 * i + 0.2);
  m.normalizeQuaternions(q);
  double worst = 0.0;
  auto compare = [&](const char* what, const auto& a, const auto& b) {{
    const double scale = 1.0 + std::max(a.cwiseAbs().maxCoeff(), b.cwiseAbs().maxCoeff());
    const double d = (a - b).cwiseAbs().maxCoeff() / scale;
    std::printf("%s: %.2e\n", what, d);
    worst = std::max(worst, d);
  }};
  Model::U plain, factored;
  Model::ArticulatedFactor k;
  m.forwardDynamics(0.0, q, u, plain);
  m.forwardDynamics(0.0, q, u, factored, k);
  compare("forwardDynamics with its factor", plain, factored);
  Model::MassMatrix M;
  m.massMatrix(q, M);
  Eigen::Matrix<double, Model::nu, 3> X, Y;
  for (int i = 0; i < Model::nu; ++i)
    for (int j = 0; j < 3; ++j) X(i, j) = std::sin(0.7 * i + 1.9 * j + 0.1);
  Y = M * X;
  Model::solveMassMatrix(k, Y);
  compare("solveMassMatrix(k, M X) - X", Y, X);
  // Every form of x: more fixed columns than go through the passes
  // together, a dynamic-size matrix and a vector.
  Eigen::Matrix<double, Model::nu, 13> X13, Y13;
  for (int i = 0; i < Model::nu; ++i)
    for (int j = 0; j < 13; ++j) X13(i, j) = std::cos(0.3 * i + 0.7 * j);
  Y13 = M * X13;
  Model::solveMassMatrix(k, Y13);
  compare("solveMassMatrix(k, M X), 13 columns - X", Y13, X13);
  Eigen::MatrixXd Yd = M * X;
  Model::solveMassMatrix(k, Yd);
  compare("solveMassMatrix(k, M X), dynamic size - X", Yd, Eigen::MatrixXd(X));
  Eigen::VectorXd yv = M * X.col(1);
  Model::solveMassMatrix(k, yv);
  compare("solveMassMatrix(k, M x), a vector - x", yv, Eigen::VectorXd(X.col(1)));
  // Which path each method must take: forced, the articulated body where
  // the rows it keeps are independent, else its fallback;
  // Auto, the range space below 16 speeds (every model here) and, with
  // that floor at 0, the articulated body where 3 rows <= nu as well.
  for (int variant = 0; variant < 3; ++variant) {{
    Model::U udot[4];
    Model::ConstraintVector lambda[4];
    int rank[4];
    bool articulated[4];
    const Method methods[4] = {{Method::RangeSpace, Method::ArticulatedBody, Method::Auto, Method::Auto}};
    for (int s = 0; s < 4; ++s) {{
      Solver solver(m, capstan::constraintRowRanges(m));
      solver.settings().method = methods[s];
      if (s == 3) solver.settings().articulatedMinSpeeds = 0;
      if (variant == 1) solver.enable(0, false);
      if (variant == 2) solver.settings().baumgarteTimeConstant = 0.05;
      solver.accelerations(0.0, q, u, udot[s], lambda[s]);
      rank[s] = solver.rank();
      articulated[s] = solver.articulatedLast();
    }}
    const char* name[3] = {{"plain", "first constraint disabled", "Baumgarte"}};
    const char* path[2] = {{"range space", "articulated body"}};
    std::printf("%s: rank %d, %d, %d, %d; paths %s, %s, %s, %s\n", name[variant], rank[0], rank[1], rank[2], rank[3],
                path[articulated[0]], path[articulated[1]], path[articulated[2]], path[articulated[3]]);
    for (int s = 1; s < 4; ++s)
      if (rank[s] != rank[0]) worst = 1.0;
    // The rows the solve keeps: the nonzero rows of G (the first
    // constraint's left out where it is disabled); the forced path holds
    // where they are independent.
    Model::ConstraintJacobian G;
    m.constraintJacobian(q, G);
    const auto first = capstan::constraintRowRanges(m).front();
    int nonzero = 0;
    for (int i = 0; i < Model::m; ++i) {{
      const bool ofFirst = (i >= first.holonomic && i < first.holonomic + first.holonomicCount) ||
                           (i >= first.nonholonomic && i < first.nonholonomic + first.nonholonomicCount);
      if (!(variant == 1 && ofFirst) && G.row(i).cwiseAbs().maxCoeff() > 0.0) ++nonzero;
    }}
    const bool independent = rank[0] == nonzero;
    const bool expected[4] = {{false, independent, false, independent && 3 * Model::m <= Model::nu}};
    for (int s = 0; s < 4; ++s) {{
      if (articulated[s] != expected[s]) {{
        std::printf("  method %d took the %s path: FAILED\n", s, path[articulated[s]]);
        worst = 1.0;
      }}
    }}
    compare("  udot, articulated body", udot[1], udot[0]);
    compare("  lambda, articulated body", lambda[1], lambda[0]);
    compare("  udot, auto", udot[2], udot[0]);
    compare("  lambda, auto", lambda[2], lambda[0]);
    compare("  udot, auto from 0 speeds", udot[3], udot[0]);
    compare("  lambda, auto from 0 speeds", lambda[3], lambda[0]);
    if (variant == 0) {{
      capstan::sim::Erased<Model> erased(m);
      capstan::ConstraintSolver<capstan::sim::AnyModel> solver(erased, capstan::constraintRowRanges(erased));
      solver.settings().method = Method::ArticulatedBody;
      Eigen::VectorXd ud, lambdaAny;
      solver.accelerations(0.0, Eigen::VectorXd(q), Eigen::VectorXd(u), ud, lambdaAny);
      if (!erased.hasArticulatedFactor() || solver.rank() != rank[0] || solver.articulatedLast() != articulated[1])
        worst = 1.0;
      compare("  udot, articulated body through AnyModel", Model::U(ud), udot[0]);
      compare("  lambda, articulated body through AnyModel", Model::ConstraintVector(lambdaAny), lambda[0]);
    }}
  }}
  return worst <= 1e-9 ? 0 : 1;
}}
"""
# Two contacts on a chain of ball joints, a free ball on a sphere, a
# contact with rolling on a tree, a spatial loop (5 independent rows), a
# planar loop (its 3 out-of-plane rows zero: left out, as disabled ones),
# and a contact stated twice, whose dependent rows send the articulated-body
# path back to the range-space method. (Auto keeps all of them, under 16
# dofs, on the range-space method; the program also lowers that floor to 0.)
ARTICULATED_MODELS = [HERE / "models/two_contacts.cap", BALL_ON_SPHERE, ROOT / "examples/sphere_on_sphere.cap",
                      DOUBLE_PENDULUM_CUT, ROOT / "examples/fourbar.cap", HERE / "models/repeated_contact.cap"]
# The same program on the tree recursions as loops (--recursions loops: the
# template's forwardDynamics with its factor), independent and dependent rows.
ARTICULATED_LOOPS_MODELS = [HERE / "models/two_contacts.cap", HERE / "models/repeated_contact.cap"]


def articulated(capstan):
    """ConstraintSolver's articulated-body path (forwardDynamics keeping its
    factor, solveMassMatrix) agrees with the range-space method on every
    constraint kind, with a constraint disabled and with Baumgarte's terms,
    and is the path taken; where rows are dependent it falls back to the
    same results. Also with the tree recursions as loops."""
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        for model, extra in ([(m, []) for m in ARTICULATED_MODELS] +
                             [(m, ["--recursions", "loops"]) for m in ARTICULATED_LOOPS_MODELS]):
            out = pathlib.Path(d) / (model.stem + ("_loops" if extra else ""))
            run(capstan, "compile", str(model), "-o", str(out), *extra)
            header = next(out.glob("*.hpp"))
            src = out / "articulated.cpp"
            src.write_text(ARTICULATED_PROGRAM.format(header=header.name, cls=header.stem))
            build = subprocess.run(["c++", "-std=c++20", "-O1", "-Wall", "-Wextra", "-Wpedantic", "-Werror",
                                    "-isystem", "/usr/include/eigen3", "-I", str(out), "-I", str(ROOT / "runtime/include"),
                                    str(src), "-o", str(out / "articulated")],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if build.returncode != 0:
                print(f"articulated: {model.name} {' '.join(extra)}: the program does not build: FAILED\n{build.stdout[-3000:]}")
                failures += 1
                continue
            result = subprocess.run([str(out / "articulated")], stdout=subprocess.PIPE, text=True)
            ok = result.returncode == 0
            print(f"articulated: {model.name}{' (loops)' if extra else ''}:\n  " + result.stdout.strip().replace("\n", "\n  ") +
                  ("" if ok else "\n  FAILED"))
            failures += not ok
    print(f"articulated: {failures} failures")
    return 1 if failures else 0


# ---------------------------------------------------------------- cables
CABLE_EXAMPLE = ROOT / "examples/cable.cap"
CABLE_PENDULUM = ROOT / "tests/codegen/models/cable_pendulum.cap"
WINCH = ROOT / "tests/codegen/models/winch.cap"
# Generated against interpreted cable values: the same solver on frames
# that agree to round-off.
CABLE_AGREEMENT = 1e-9
# Relative energy drift of the undamped cable pendulum over 10 s at dopri5's
# tolerance 1e-9, and how much smaller it must be than at 1e-6. The drift is
# about 1000 x tol at both tolerances and gathers where the spring goes slack
# (a kink in the tension): 0.9e-6 and 1.4e-6 at 1e-9 for two path solvers that
# differ only in rounding (Eigen's LU, then linear_solve.hpp), so the bound
# leaves a factor of about 4, and the ratio is what shows proportionality.
CABLE_ENERGY_DRIFT = 5e-6
CABLE_ENERGY_RATIO = 100
# The same with the drum lowered so the cable lifts off and touches down.
CABLE_LIFTOFF_DRIFT = 1e-5


def vlist(x):
    return list(values(x))


def cable_run(capstan, d, tol, *extra, check=True):
    out = pathlib.Path(d) / f"run{tol}.csv"
    proc = run(capstan, "simulate", CABLE_PENDULUM, "--t-end", 10, "--dt", 0.01, "--tol", tol, "-o", out, *extra,
               check=check)
    return proc, list(csv.DictReader(out.open())) if out.exists() else []


def winch(capstan, d, report):
    """winch.cap: the actuator's tension T = T0 + rate t at the anchor; the
    weight's end carries T_w = T exp(-mu theta sigma(v)), theta = pi/2, slip
    v = (Ldot(O..P) - Ldot(Q..T)) / 2 = u / 2, sigma(v) = v / sqrt(v^2 +
    1e-6); the weight (2 kg) accelerates at T_w / 2 - 9.81; power T_w u."""
    t = 0.5
    for mu, u, T0, extra in ((0.0, 0.0, 4.0, ()), (0.3, -1.0, 4.0, ()), (0.3, 1.0, 4.0, ()), (0.3, 1.0, 4.0, ("--interpret",)),
                             (0.0, 0.5, -10.0, ())):
        state = write_state(d, {"time": t, "u": {"slider": [u]}})
        r = eval_json(capstan, WINCH, state, "--set", f"overDrum.friction={mu}", "--set", f"T0={T0}", *extra)
        rope = r["cables"]["rope"]
        T = max(0.0, T0 + 2.0 * t)
        v = u / 2
        sigma = v / math.sqrt(v * v + 1e-6)
        Tw = T * math.exp(-mu * math.pi / 2 * sigma)
        drum = rope["obstacles"][1]
        errors = [abs(rope["tension"] - T), abs(r["udot"]["slider"][0] - (Tw / 2 - 9.81)),
                  abs(rope["generalized_forces"][0] - Tw), abs(rope["power"] - Tw * u),
                  abs(drum["wrap_angle"] - math.pi / 2) if T > 0 else 0.0]
        report(max(errors) < 1e-9,
               f"winch {' '.join(extra) or 'generated'}, mu = {mu}, u = {u}, T0 = {T0}: tension {rope['tension']:.6g} N "
               f"(want {T:.6g}), at the weight {rope['generalized_forces'][0]:.6g} N (want {Tw:.6g}), udot "
               f"{r['udot']['slider'][0]:.6g}; largest error {max(errors):.1e}")
    # A tension that turns NaN (sqrt of a negative number after t = 2) stops
    # simulate with the actuator's force law located, not a silent NaN.
    nan_model = pathlib.Path(d) / "winch_nan.cap"
    nan_model.write_text(WINCH.read_text().replace("tension = T0 + rate * time",
                                                   "tension = T0 * sqrt(1 - rate * time / T0)"))
    proc = run(capstan, "simulate", nan_model, "--t-end", 3, "--interpret", "-o", pathlib.Path(d) / "nan.csv",
               check=False)
    report(proc.returncode == 1 and "the force law for `winch.tension` is not a number (NaN) at t = 2" in proc.stderr
           and "[NonFiniteForceLaw]" in proc.stderr,
           f"winch with a NaN tension: {proc.stderr.strip().splitlines()[0] if proc.stderr.strip() else ''}")


def cables(capstan):
    """Cables through generated code (issue 11): eval's "cables" generated
    against interpreted and against the path it reports (the weight's force
    points from the termination to the drum's exit point, power = -T Ldot,
    J^T F consistent); an undamped pendulum on a cable spring over a
    cylinder conserves kinetic + gravity + spring energy over 10 s within a
    tolerance-proportional bound; with the drum lowered the cable lifts off
    and touches down each swing with a continuous length; a path that cannot
    be found stops simulate with time, cable and obstacle, keeping the CSV;
    a CableActuator's time-dependent tension, clamped at 0, and capstan
    friction over a drum against T exp(-mu theta sigma(v)) (winch.cap)."""
    failures = 0

    def report(ok, text):
        nonlocal failures
        print(f"cables: {text}{'' if ok else ': FAILED'}")
        failures += not ok

    with tempfile.TemporaryDirectory() as d:
        state = write_state(d, {"q": {"slider": [0.1]}, "u": {"slider": [-0.4]}})
        gen = eval_json(capstan, CABLE_EXAMPLE, state)["cables"]["rope"]
        interp = eval_json(capstan, CABLE_EXAMPLE, state, "--interpret")["cables"]["rope"]
        worst = max(abs(a - b) / max(1.0, abs(b)) for a, b in
                    zip(vlist(gen["length"]) + vlist(gen["length_dot"]) + vlist(gen["tension"]) +
                        vlist(gen["body_forces"]) + vlist(gen["generalized_forces"]),
                        vlist(interp["length"]) + vlist(interp["length_dot"]) + vlist(interp["tension"]) +
                        vlist(interp["body_forces"]) + vlist(interp["generalized_forces"])))
        report(worst < CABLE_AGREEMENT, f"cable.cap generated vs interpreted: largest difference {worst:.2e}")
        drum = next(o for o in gen["obstacles"] if o["name"] == "overDrum")
        tip = gen["obstacles"][-1]["point"]
        e = [qq - t for qq, t in zip(drum["Q"], tip)]
        n = math.sqrt(sum(x * x for x in e))
        want = [gen["tension"] * x / n for x in e]
        got = gen["body_forces"]["weight"][3:]
        err = max(abs(a - b) for a, b in zip(got, want))
        report(drum["in_contact"] and drum["wrap_angle"] > 0 and gen["tension"] > 0 and err < 1e-9 * gen["tension"],
               f"cable.cap: wrap angle {drum['wrap_angle']:.6g} rad, tension {gen['tension']:.6g} N, force on the "
               f"weight along Q - T to {err:.1e} N")
        power = -gen["tension"] * gen["length_dot"]
        report(abs(gen["power"] - power) < 1e-12 * max(1.0, abs(power)) and
               abs(gen["generalized_forces"][0] - gen["body_forces"]["weight"][4]) < 1e-12 * gen["tension"],
               f"cable.cap: power {gen['power']:.6g} W = -T Ldot, generalized force {gen['generalized_forces'][0]:.6g} N "
               f"= the weight's force along the slider")

        drift = []
        for tol in (1e-6, 1e-9):
            _, rows = cable_run(capstan, d, tol)
            energy = [float(r["kinetic_energy"]) + float(r["potential_energy"]) for r in rows]
            drift.append(max(abs(x - energy[0]) for x in energy) / abs(energy[0]))
            tension = [float(r["rope.tension"]) for r in rows]
        report(len(rows) == 1001 and drift[1] < CABLE_ENERGY_DRIFT and drift[0] / drift[1] > CABLE_ENERGY_RATIO and
               max(tension) > 10,
               f"pendulum on a cable spring over a cylinder, 10 s: relative energy drift {drift[0]:.2e} (tol 1e-6), "
               f"{drift[1]:.2e} (tol 1e-9); tension {min(tension):.3g}..{max(tension):.3g} N")

        proc, rows = cable_run(capstan, d, 1e-9, "--set", "drumY=-0.4")
        L = [float(r["rope.length"]) for r in rows]
        Ld = [float(r["rope.length_dot"]) for r in rows]
        jump = max(abs(L[i + 1] - L[i] - 0.005 * (Ld[i] + Ld[i + 1])) for i in range(len(L) - 1))
        energy = [float(r["kinetic_energy"]) + float(r["potential_energy"]) for r in rows]
        lift_drift = max(abs(x - energy[0]) for x in energy) / abs(energy[0])
        q = [float(r["pivot.q[1]"]) for r in rows]
        contact = []
        # The straight line cuts the drum at q = 0, clears it at q = 0.6. The
        # interpreter answers (generated eval agrees with it on cable.cap
        # above): a third driver build would double this test's time.
        for angle in (0.0, 0.6):
            s = write_state(d, {"q": {"pivot": [angle]}, "parameters": {"drumY": -0.4}})
            contact.append(eval_json(capstan, CABLE_PENDULUM, s, "--interpret")["cables"]["rope"]["obstacles"][1]
                           ["in_contact"])
        report(len(rows) == 1001 and min(q) < 0 < 0.6 <= max(q) and jump < 1e-4 and
               lift_drift < CABLE_LIFTOFF_DRIFT and contact == [True, False],
               f"liftoff and touchdown: swing {min(q):.3g} .. {max(q):.3g} rad, contact at q = 0 / 0.6: {contact}; largest departure "
               f"of the length from the integrated rate over a row {jump:.1e} m; energy drift {lift_drift:.1e}")

        winch(capstan, d, report)

        # capstan bench times the cable update (`cable_us`); with simulate's
        # flags (-std=c++20 -O2) here, so that it runs the driver that
        # simulate builds for cable.cap (examples.capstan_test simulates it)
        # instead of a build of its own: the figure is not what is tested.
        proc = subprocess.run([capstan, "bench", str(CABLE_EXAMPLE), "--seconds", "0.2"], cwd=ROOT, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600,
                              env=dict(os.environ, CAPSTAN_BENCH_CXXFLAGS="-O2"))
        cable_us = json.loads(proc.stdout).get("cable_us") if proc.returncode == 0 else None
        report(isinstance(cable_us, float) and 0 < cable_us < 1e4,
               f"bench of cable.cap: cable_us = {cable_us}{'' if proc.returncode == 0 else proc.stderr}")

        # A path lost during the run: the swing carries the cable's end into
        # the drum. simulate stops at that time with the cable, the obstacle
        # and the reason, and keeps the rows before it.
        for extra in ((), ("--interpret",)):
            proc, rows = cable_run(capstan, d, 1e-6, "--set", "drumX=-0.5", "--set", "drumY=-0.85", *extra,
                                   check=False)
            msg = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
            found = re.search(r"cable `rope` at t = ([0-9.e+-]+): .*obstacle", msg)
            t_fail = float(found.group(1)) if found else 0.0
            # The rows end at the last step that was accepted, before t_fail.
            report(proc.returncode == 1 and t_fail > 0.1 and len(rows) > 10 and
                   0 <= t_fail - float(rows[-1]["time"]) < 0.1,
                   f"path lost mid-run {' '.join(extra) or 'generated'}: {len(rows)} rows kept; {msg}")

        for extra in ((), ("--interpret",)):
            proc, rows = cable_run(capstan, d, 1e-6, "--set", "drum.radius=1.5", *extra, check=False)
            msg = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
            report(proc.returncode == 1 and "cable `rope` at t = 0" in msg and "inside the surface of obstacle 1" in msg
                   and "`rope.frame_a`" in msg and (pathlib.Path(d) / "run1e-06.csv").exists(),
                   f"no path {' '.join(extra) or 'generated'}: {msg}")
    print(f"cables: {failures} failures")
    return 1 if failures else 0

SINCOS_PROGRAM = r"""#include "{header}"
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>
// capstan_models::sinCosTable against long double sinl and cosl: within 1
// ulp of the exact values up to |x| = 128 pi/2, sinCos's results past it
// and for infinities and NaN (under -ffast-math, sinCos's everywhere);
// tables of several sizes (the vectorized loop's padding).
namespace {{
double ulps(double got, long double exact) {{
  if (std::isnan(got) || std::isnan(static_cast<double>(exact))) return std::isnan(got) ? 0.0 : 1e300;
  int e = 0;
  std::frexp(static_cast<double>(exact), &e);
  const long double ulp = std::ldexp(1.0L, std::max(e - 53, -1074));
  return static_cast<double>(std::fabs(static_cast<long double>(got) - exact) / ulp);
}}
template <int N>
int check(const std::vector<double>& xs, double& worst, double& worstAt) {{
#if defined(__FAST_MATH__)
  const double limit = -1.0;
#else
  const double limit = 128 * 1.5707963267948966;
#endif
  int failures = 0;
  for (std::size_t at = 0; at < xs.size(); at += N) {{
    double x[N];
    for (int i = 0; i < N; ++i) x[i] = xs[(at + static_cast<std::size_t>(i)) % xs.size()];
    capstan_models::SinCos out[N];
    capstan_models::sinCosTable<N>(x, out);
    for (int i = 0; i < N; ++i) {{
      if (std::fabs(x[i]) <= limit) {{
        const double e = std::max(ulps(out[i].sin, sinl(x[i])), ulps(out[i].cos, cosl(x[i])));
        if (e > worst) {{ worst = e; worstAt = x[i]; }}
        if (e > 1.0 && failures++ < 5) std::printf("x = %a: sin %a, cos %a: %.3f ulp\n", x[i], out[i].sin, out[i].cos, e);
      }} else {{
        const capstan_models::SinCos want = capstan_models::sinCos(x[i]);
        const bool same = (out[i].sin == want.sin || (std::isnan(out[i].sin) && std::isnan(want.sin))) &&
                          (out[i].cos == want.cos || (std::isnan(out[i].cos) && std::isnan(want.cos)));
        if (!same && failures++ < 5) std::printf("x = %a: %a %a, sinCos %a %a\n", x[i], out[i].sin, out[i].cos, want.sin, want.cos);
      }}
    }}
  }}
  return failures;
}}
}}  // namespace

int main() {{
  std::mt19937_64 rng(7);
  std::vector<double> xs;
  std::uniform_real_distribution<double> wide(-205.0, 205.0), narrow(-4.0, 4.0), exponent(-70.0, 3.0);
  for (int i = 0; i < 300000; ++i) xs.push_back(wide(rng));
  for (int i = 0; i < 300000; ++i) xs.push_back(narrow(rng));
  for (int i = 0; i < 100000; ++i) xs.push_back((i % 2 ? -1 : 1) * std::exp2(exponent(rng)));
  // About each multiple of pi/2 the table reduces to (cancellation).
  for (int k = -128; k <= 128; ++k) {{
    double x = static_cast<double>(k * 1.57079632679489661923132169163975144L);
    for (int i = 0; i < 40; ++i) x = std::nextafter(x, -1e9);
    for (int i = 0; i < 80; ++i) xs.push_back(x = std::nextafter(x, 1e9));
  }}
  const double limit = 128 * 1.5707963267948966;
  for (double x : {{0.0, -0.0, 5e-324, -5e-324, DBL_MIN, limit, std::nextafter(limit, 0.0), std::nextafter(limit, 1e9),
                   -limit, 1e6, -1e300, std::numeric_limits<double>::infinity(),
                   -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}})
    xs.push_back(x);
  double worst = 0.0, worstAt = 0.0;
  const int failures = check<1>(xs, worst, worstAt) + check<7>(xs, worst, worstAt) + check<13>(xs, worst, worstAt) +
                       check<50>(xs, worst, worstAt);
  std::printf("%zu angles in tables of 1, 7, 13 and 50: worst %.3f ulp (x = %a), %d failures\n", xs.size(), worst,
              worstAt, failures);
  return failures ? 1 : 0;
}}
"""


def sincos(capstan):
    """The header's capstan_models::sinCosTable, which the generated
    functions that read many joint angles fill first: within 1 ulp of the
    exact sines and cosines (long double) up to |x| = 128 pi/2 and glibc's
    past it and for infinities and NaN, built warning-free with g++ and
    clang++ at -O2, with -march=native (vectorized with AVX) and with
    -ffast-math (every angle by sinCos), its loop vectorized by clang++
    (and g++ with AVX) whatever the number of angles; arm7's
    forwardDynamics reads it, and chain20's shared steps do."""
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        out = pathlib.Path(d)
        run(capstan, "compile", ROOT / "bench/peers/models/arm7.cap", "-o", out)
        header = (out / "Arm7.hpp").read_text()
        fd = header[header.index("void forwardDynamics("):]
        fd = fd[:fd.index("\n  }\n")]
        uses = "capstan_models::sinCosTable<7>(q.data(), trig);" in fd and "= trig[6];" in fd
        print(f"sincos: arm7's forwardDynamics fills and reads the table: {uses}")
        failures += not uses
        # Shared steps (10 dofs and up) take it like q: chain20's second
        # joint's steps read `trig + 1`, and no step kernel calls sinCos.
        run(capstan, "compile", ROOT / "bench/peers/models/chain20.cap", "-o", out)
        chain = (out / "Chain20.hpp").read_text()
        kernels = chain[chain.index("void forwardDynamicsStep1("):chain.index("void forwardDynamics(")]
        fd = chain[chain.index("void forwardDynamics("):]
        fd = fd[:fd.index("\n  }\n")]
        steps = ("capstan_models::sinCosTable<20>(q.data(), trig);" in fd and "trig + 1," in fd
                 and "= trig[0];" in kernels and "capstan_models::sinCos(" not in kernels)
        print(f"sincos: chain20's forwardDynamics steps read the table: {steps}")
        failures += not steps
        # The header's two sin/cos sections alone (no Eigen: each build
        # about a second, not the model's five).
        start = header.index("#ifndef CAPSTAN_MODELS_SIN_COS\n")
        end = header.index("#endif", header.index("#ifndef CAPSTAN_MODELS_SIN_COS_TABLE\n"))
        end = header.index("#endif", header.index("}  // namespace capstan_models", end)) + len("#endif\n")
        (out / "sincos_table.hpp").write_text("#pragma once\n#include <cmath>\n#include <cstdint>\n#include <cstring>\n"
                                              + header[start:end])
        src = out / "sincos.cpp"
        src.write_text(SINCOS_PROGRAM.format(header=out / "sincos_table.hpp"))
        for compiler in ("g++", "clang++"):
            for flags in ([], ["-march=native"], ["-ffast-math"]):
                exe = out / "sincos"
                build = subprocess.run([compiler, "-std=c++20", "-O2", *flags, "-Wall", "-Wextra", "-Wpedantic",
                                        "-Werror", str(src), "-o", str(exe)],
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                label = " ".join([compiler, "-O2", *flags])
                if build.returncode != 0:
                    print(f"sincos: {label}: build FAILED\n{build.stdout}")
                    failures += 1
                    continue
                result = subprocess.run([str(exe)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                print(f"sincos: {label}: {result.stdout.strip()}")
                failures += result.returncode != 0
        # The table's main loop vectorized, as the compilers report it, for
        # sizes that are and are not multiples of 8 (clang++ 14 once kept
        # 5, 7 and 10 scalar); not g++ without AVX, whose cost model keeps
        # it scalar (docs/performance.md, "sines and cosines at once").
        lines = (out / "sincos_table.hpp").read_text().split("\n")
        loop = 1 + lines.index("  for (int i = 0; i < kPadded; ++i) {")
        for compiler, flags, report in (("clang++", [], "-Rpass=loop-vectorize"),
                                        ("clang++", ["-march=native"], "-Rpass=loop-vectorize"),
                                        ("g++", ["-march=native"], "-fopt-info-vec-optimized")):
            scalar = []
            for n in (5, 7, 10, 20):
                unit = out / "table.cpp"
                unit.write_text(f'#include "{out / "sincos_table.hpp"}"\n'
                                f"void fill(const double* x, capstan_models::SinCos* o) {{ "
                                f"capstan_models::sinCosTable<{n}>(x, o); }}\n")
                build = subprocess.run([compiler, "-std=c++20", "-O2", *flags, report, "-c", str(unit),
                                        "-o", str(out / "table.o")],
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                if not re.search(rf"sincos_table\.hpp:{loop}:\d+: (remark: vectorized loop|optimized: loop vectorized)",
                                 build.stdout):
                    scalar.append(n)
            label = " ".join([compiler, "-O2", *flags])
            print(f"sincos: {label}: the table's loop vectorized for 5, 7, 10 and 20 angles"
                  + (f": FAILED, scalar for {scalar}" if scalar else ""))
            failures += bool(scalar)
    print(f"sincos: {failures} failures")
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--capstan", required=True)
    ap.add_argument("mode", choices=["frames", "parameters", "folded", "cache", "inverse", "jacobians",
                                     "external_forces", "elements", "external", "derivatives", "constraints", "articulated",
                                     "cables", "recursions", "steps", "sincos"])
    args = ap.parse_args()
    return {"frames": frames, "parameters": parameters, "folded": folded, "cache": cache,
            "inverse": inverse, "jacobians": jacobians, "external_forces": external_forces,
            "elements": elements, "external": external, "derivatives": derivatives,
            "constraints": constraints, "articulated": articulated, "cables": cables,
            "recursions": recursions, "steps": steps, "sincos": sincos}[args.mode](args.capstan)


if __name__ == "__main__":
    sys.exit(main())
