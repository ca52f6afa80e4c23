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
  run.py --capstan BIN folded        a parameter that a folded joint axis reads is
                                     refused by --set with the folding message, and
                                     --override of it changes the dynamics
"""
import argparse
import json
import math
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
AGREEMENT = 1e-10  # the same over whole quantities of the bench models (up to 50 links)


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


# ---------------------------------------------------------------- parameters
def models():
    """Every example and bench model that code generation takes today."""
    return sorted(ROOT.glob("examples/*.cap")) + sorted(ROOT.glob("bench/peers/models/*.cap")) + [SENSORS]


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


# Bench chains repeat one link: past this many parameters, a model's are
# sampled (a fixed seed, so a failure reproduces), which keeps the test near
# a minute.
MAX_PARAMETERS = 12


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
    magnitude of the quantity (udot of a 50-link chain is ill-conditioned:
    the two algorithms' round-off differs by ~1e-11 there)."""
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
        print("folded: --set refused with the folding message; --override changes udot")
        return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--capstan", required=True)
    ap.add_argument("mode", choices=["frames", "parameters", "folded"])
    args = ap.parse_args()
    return {"frames": frames, "parameters": parameters, "folded": folded}[args.mode](args.capstan)


if __name__ == "__main__":
    sys.exit(main())
