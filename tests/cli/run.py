#!/usr/bin/env python3
"""Command-line tests of `capstan eval`, `simulate` and `bench` (ctest label `cli`).

  run.py --capstan BIN bad_input CASE   one bad input (CASES below): exit status 1,
                                        a clear `capstan: error:` message, no crash
  run.py --capstan BIN period           a compound pendulum's small-angle period
  run.py --capstan BIN energy           dopri5's energy drift on a passive double
                                        pendulum shrinks with --tol
  run.py --capstan BIN nonfinite        a torque that is not finite at some time:
                                        error naming time and coordinate, rows kept
  run.py --capstan BIN bench            `capstan bench` prints its JSON
  run.py --capstan BIN interrupt        SIGTERM/SIGINT to a running `capstan simulate`:
                                        no process survives, the CSV ends on a whole row,
                                        the message says where, exit 128 + signal;
                                        and `--timeout` stops a run
  run.py --capstan BIN builtins         every built-in: compile time (`check --json`),
                                        `eval` and `eval --interpret` agree, in and
                                        out of the domain (the same value or the same error)
  run.py --capstan BIN crash            a C++ function the model calls crashes the driver:
                                        the signal and the functions named, exit 1, every
                                        row before the crash in the CSV, whole
  run.py --capstan BIN guard            exit(0), a function that never returns and a long
                                        run with --timeout, in both paths, and a crash under
                                        --interpret: the rows before it, whole, and what happened
  run.py --capstan BIN orphans          SIGKILL to `capstan test -j2`: no child or driver outlives it
  run.py --capstan BIN full_disk        a file size limit: `compile` keeps the old header (written
                                        aside, renamed when whole), `simulate` keeps whole rows; both
                                        say why (and how many rows)
  run.py --capstan BIN lost_output      `check --json` and `eval` to /dev/full or a closed stdout:
                                        exit 1 with the reason
  run.py --capstan BIN damaged_cache    a cached driver cut short is built again (with a note);
                                        temporaries of a killed capstan are removed
  run.py --capstan BIN one_build        one build serves simulate, eval and bench: --set, edited
                                        defaults and start values, integrators reuse it (builds.log);
                                        a structural change and cvode's derivatives build again
  run.py --capstan BIN external_forces  STATE.json's `external_forces` change udot by
                                        M^-1 J^T F (virtual work on the double pendulum)
  run.py --capstan BIN stiff            examples/stiff_chain.cap (springs of 1e6 N/m): cvode
                                        with the exact Jacobian takes >= 20x fewer right-hand-side
                                        evaluations than dopri5 at the same tolerance and matches
                                        it; --interpret agrees; --jacobian quotients takes more
                                        evaluations; a free body on a stiff spring (quaternions)
                                        too; the annotation picks cvode
  run.py --capstan BIN cvode_nonfinite  cvode and a torque that turns NaN: the error names the
                                        time and coordinate and the force law at its line, rows kept
  run.py --capstan BIN cvode_constraints  cvode on the four-bar (a cut joint): difference quotients
                                        with a note, the loop held by CVODE's projection, the same
                                        motion as dopri5 (interpreted)
"""
import argparse
import json
import math
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent
DOUBLE_PENDULUM = ROOT / "examples/double_pendulum.cap"
CHAIN = ROOT / "examples/chain.cap"
PENDULUM = HERE / "models/pendulum.cap"
SINGULAR = HERE / "models/singular.cap"
BUILTINS = HERE / "models/builtins.cap"
STIFF_CHAIN = ROOT / "examples/stiff_chain.cap"
FOURBAR = ROOT / "examples/fourbar.cap"
STIFF_FREE_BODY = HERE / "models/stiff_free_body.cap"
CRASH = HERE / "models/crash.cap"


def run(capstan, *args):
    return subprocess.run([capstan, *map(str, args)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=300, text=True)


def check_ok(proc, what):
    if proc.returncode != 0:
        raise AssertionError(f"{what} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def read_csv(text):
    lines = text.strip().split("\n")
    header = lines[0].split(",")
    return header, [dict(zip(header, map(float, line.split(",")))) for line in lines[1:]]


# ---------------------------------------------------------------- bad input
# name -> (command line after the capstan program, STATE.json text or None, expected message part).
# `{state}` in a command line is replaced by the path of the STATE.json file.
CASES = {
    "unwritable_output": (["compile", DOUBLE_PENDULUM, "-o", "/proc/self"], None,
                          "cannot write `/proc/self/DoublePendulum.hpp`"),
    "malformed_json": (["eval", DOUBLE_PENDULUM, "--state", "{state}"], '{"q": {"shoulder": [0.1}', "is not valid JSON"),
    "state_not_object": (["eval", DOUBLE_PENDULUM, "--state", "{state}"], "[1, 2]", "STATE.json must be an object"),
    "unknown_key": (["eval", DOUBLE_PENDULUM, "--state", "{state}"], '{"qq": {}}', "unknown key `qq`"),
    "unknown_joint": (["eval", DOUBLE_PENDULUM, "--state", "{state}"], '{"q": {"wrist": [0.1]}}',
                      "`q` names `wrist`, which is not a joint"),
    "unknown_parameter": (["eval", DOUBLE_PENDULUM, "--state", "{state}"], '{"parameters": {"L3": 1}}',
                          "STATE.json: `parameters.L3`: the model has no parameter `L3`"),
    "structural_parameter_in_state": (["eval", CHAIN, "--state", "{state}"], '{"parameters": {"n": 3}}',
                                      "STATE.json: `parameters.n`: parameter `n` is structural"),
    "wrong_q_length": (["eval", DOUBLE_PENDULUM, "--state", "{state}"], '{"q": {"shoulder": [0.1, 0.2]}}',
                       "`q.shoulder` has 2 values; joint `shoulder` has 1"),
    "wrong_u_length": (["eval", DOUBLE_PENDULUM, "--state", "{state}"], '{"u": {"elbow": []}}',
                       "`u.elbow` has 0 values; joint `elbow` has 1"),
    "wrong_parameter_length": (["eval", DOUBLE_PENDULUM, "--state", "{state}"],
                               '{"parameters": {"world.gravity": [0, -9.81]}}',
                               "`parameters.world.gravity` has 2 values; parameter `world.gravity` has 3"),
    "array_for_scalar_parameter": (["eval", DOUBLE_PENDULUM, "--state", "{state}"], '{"parameters": {"L1": [1, 2]}}',
                                   "`parameters.L1` is an array; parameter `L1` is a scalar"),
    # JSON has no NaN or Infinity (Python's json.dumps writes them anyway) and 1e999 overflows a double.
    "non_finite_time": (["eval", DOUBLE_PENDULUM, "--state", "{state}"], '{"time": 1e999}',
                        "every number must be finite"),
    "non_finite_q": (["eval", DOUBLE_PENDULUM, "--state", "{state}"], '{"q": {"elbow": [NaN]}}',
                     "every number must be finite"),
    "non_finite_parameter": (["bench", DOUBLE_PENDULUM, "--state", "{state}"],
                             '{"parameters": {"m1": -Infinity}}', "every number must be finite"),
    "non_number_u": (["eval", DOUBLE_PENDULUM, "--state", "{state}"], '{"u": {"elbow": ["fast"]}}',
                     "`u.elbow[1]` must be a number"),
    "missing_state_file": (["eval", DOUBLE_PENDULUM, "--state", "/nonexistent/state.json"], None,
                           "cannot read `/nonexistent/state.json`"),
    "eval_unknown_set": (["eval", DOUBLE_PENDULUM, "--state", "{state}", "--set", "L9=1"], "{}",
                         "`--set L9`: the model has no parameter `L9`"),
    "simulate_unknown_set": (["simulate", DOUBLE_PENDULUM, "--t-end", "0.1", "--set", "L9=1"], None,
                             "`--set L9`: the model has no parameter `L9`"),
    "simulate_structural_set": (["simulate", CHAIN, "--t-end", "0.1", "--set", "n=3"], None,
                                "`--set n`: parameter `n` is structural"),
    "eval_structural_set": (["eval", CHAIN, "--state", "{state}", "--set", "n=3"], "{}",
                            "`--set n`: parameter `n` is structural"),
    "simulate_non_finite_set": (["simulate", DOUBLE_PENDULUM, "--t-end", "0.1", "--set", "L1=inf"], None,
                                "`--set L1`: the value `inf` is not a finite number"),
    "simulate_unknown_integrator": (["simulate", DOUBLE_PENDULUM, "--t-end", "0.1", "--integrator", "leapfrog"], None,
                                    "unknown integrator `leapfrog`; use rk4, euler, dopri5 or cvode"),
    "simulate_cvode_zero_tolerance": (["simulate", DOUBLE_PENDULUM, "--t-end", "0.1", "--integrator", "cvode",
                                       "--tol", "0"], None, "`--tol` must be positive"),
    "simulate_cvode_negative_tolerance": (["simulate", DOUBLE_PENDULUM, "--t-end", "0.1", "--integrator", "cvode",
                                           "--tol", "-1e-6", "--interpret"], None, "`--tol` must be positive"),
    "simulate_jacobian_not_cvode": (["simulate", DOUBLE_PENDULUM, "--t-end", "0.1", "--integrator", "dopri5",
                                     "--jacobian", "quotients"], None, "`--jacobian` is for `cvode`, not `dopri5`"),
    "bench_unknown_joint": (["bench", DOUBLE_PENDULUM, "--state", "{state}"], '{"u": {"knee": [1]}}',
                            "`u` names `knee`, which is not a joint"),
    "external_forces_not_object": (["eval", DOUBLE_PENDULUM, "--state", "{state}", "--interpret"],
                                   '{"external_forces": [0, 0, 1, 0, 0, 0]}',
                                   "STATE.json: `external_forces` must be an object of body names"),
    "external_forces_unknown_body": (["eval", DOUBLE_PENDULUM, "--state", "{state}", "--interpret"],
                                     '{"external_forces": {"forearm": [0, 0, 1, 0, 0, 0]}}',
                                     "`external_forces` names `forearm`, which is not a body of the model; "
                                     "its bodies are `upper`, `lower`"),
    "external_forces_wrong_length": (["eval", DOUBLE_PENDULUM, "--state", "{state}"],
                                     '{"external_forces": {"lower": [0, 0, 1]}}',
                                     "`external_forces.lower` has 3 values; a spatial force has 6"),
    "external_forces_non_number": (["eval", DOUBLE_PENDULUM, "--state", "{state}", "--interpret"],
                                   '{"external_forces": {"upper": [0, 0, 1, 0, "up", 0]}}',
                                   "`external_forces.upper[5]` must be a number"),
    "external_forces_non_finite": (["eval", DOUBLE_PENDULUM, "--state", "{state}", "--interpret"],
                                   '{"external_forces": {"upper": [0, 0, 1e999, 0, 0, 0]}}',
                                   "every number must be finite"),
    "bench_external_forces": (["bench", DOUBLE_PENDULUM, "--state", "{state}"],
                              '{"external_forces": {"upper": [0, 0, 1, 0, 0, 0]}}',
                              "`external_forces` is read by `eval` only"),
}


def bad_input(capstan, case):
    args, state, expected = CASES[case]
    with tempfile.TemporaryDirectory() as d:
        path = pathlib.Path(d) / "state.json"
        if state is not None:
            path.write_text(state)
        argv = [str(path) if a == "{state}" else a for a in args]
        proc = run(capstan, *argv)
    failures = []
    if proc.returncode != 1:
        failures.append(f"exit status {proc.returncode}, expected 1")
    if "capstan: error: " not in proc.stderr or expected not in proc.stderr:
        failures.append(f"stderr lacks `capstan: error: ...{expected}...`")
    if "internal error" in proc.stderr:
        failures.append("an internal error")
    if proc.stdout.strip():
        failures.append("something was printed on stdout")
    for f in failures:
        print(f"bad_input {case}: {f}\n--- stderr:\n{proc.stderr}--- stdout:\n{proc.stdout[:2000]}")
    if not failures:
        print(f"bad_input {case}: ok: {proc.stderr.strip().splitlines()[0]}")
    return 1 if failures else 0


# ---------------------------------------------------------------- physics
def parameter_defaults(capstan, model, tmp):
    check_ok(run(capstan, "compile", model, "-o", tmp, "--ir"), "compile --ir")
    (ir_path,) = pathlib.Path(tmp).glob("*.ir.json")
    ir = json.loads(ir_path.read_text())
    return {p["name"]: (p["default"][0] if len(p["default"]) == 1 and not p["shape"] else p["default"])
            for p in ir["parameters"]}


def crossing_period(rows, column):
    """The mean period between upward zero crossings of `column` (linear interpolation)."""
    times = []
    for a, b in zip(rows, rows[1:]):
        if a[column] < 0 <= b[column]:
            times.append(a["time"] + (b["time"] - a["time"]) * (-a[column]) / (b[column] - a[column]))
    if len(times) < 3:
        raise AssertionError(f"only {len(times)} upward zero crossings")
    return (times[-1] - times[0]) / (len(times) - 1)


# The small-angle formula is the limit of zero amplitude; at amplitude a the
# period is longer by a^2/16 + O(a^4) (the series of the complete elliptic
# integral), 6.25e-6 at a = 0.01 rad. The numerical errors are far smaller:
# dopri5 at --tol 1e-10 has a relative phase error ~1e-9 over three periods
# and linear interpolation of a zero crossing of A sin(w t) errs by
# O((w dt)^3) ~ 1e-8 s at dt = 1 ms. So:
PERIOD_TOLERANCE = 2e-5       # |T / T0 - 1|: 3x the finite-amplitude term; a wrong I_o, g or d is off by percent
AMPLITUDE_TERM_TOLERANCE = 1e-6  # |T / T0 - 1 - a^2/16|: what is left must be numerical or O(a^4) (~4e-11)


def period(capstan):
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        p = parameter_defaults(capstan, PENDULUM, d)
        for settings in ({}, {"d": 0.25, "Izz": 0.05, "m": 2.5}):
            values = {**p, **settings}
            g = math.sqrt(sum(x * x for x in values["world.gravity"]))
            m, dist, izz, a = values["m"], values["d"], values["Izz"], values["amplitude"]
            i_o = izz + m * dist * dist  # parallel-axis theorem
            t0 = 2 * math.pi * math.sqrt(i_o / (m * g * dist))
            sets = [x for k, v in settings.items() for x in ("--set", f"{k}={v!r}")]
            proc = check_ok(run(capstan, "simulate", PENDULUM, "--t-end", 3.2 * t0, "--dt", 1e-3, "--integrator",
                                "dopri5", "--tol", 1e-10, *sets), "simulate")
            _, rows = read_csv(proc.stdout)
            t = crossing_period(rows, "pivot.q[1]")
            deviation = t / t0 - 1
            ok = abs(deviation) < PERIOD_TOLERANCE and abs(deviation - a * a / 16) < AMPLITUDE_TERM_TOLERANCE
            print(f"period {settings or 'defaults'}: measured {t!r} s, small-angle 2 pi sqrt(I_o/(m g d)) = {t0!r} s, "
                  f"T/T0 - 1 = {deviation:.3e} (a^2/16 = {a * a / 16:.3e}): {'ok' if ok else 'FAILED'}")
            failures += not ok
    return 1 if failures else 0


ENERGY_TOLERANCES = (1e-6, 1e-9)
# The drift must shrink at least this much for a 1000x smaller tolerance (the
# local error is controlled to ~tol, so drift ~ tol; a factor 20 leaves room
# for the controller's safety margins and round-off).
ENERGY_DRIFT_REDUCTION = 20
ENERGY_DRIFT_BOUND = 1e-7  # relative to the energy scale at --tol 1e-9 (~1e-9 expected: 100x margin)


def energy(capstan):
    drifts = []
    for tol in ENERGY_TOLERANCES:
        proc = check_ok(run(capstan, "simulate", DOUBLE_PENDULUM, "--t-end", 5, "--dt", 0.01, "--integrator", "dopri5",
                            "--tol", tol), "simulate")
        _, rows = read_csv(proc.stdout)
        e = [r["kinetic_energy"] + r["potential_energy"] for r in rows]
        scale = max(max(abs(r["kinetic_energy"]), abs(r["potential_energy"])) for r in rows)
        drift = max(abs(x - e[0]) for x in e) / scale
        drifts.append(drift)
        print(f"energy: --tol {tol:g}: {len(rows)} rows, max |E - E0| / {scale:.3g} J = {drift:.3e}")
    ok = drifts[1] * ENERGY_DRIFT_REDUCTION < drifts[0] and drifts[1] < ENERGY_DRIFT_BOUND
    print(f"energy: drift shrinks {drifts[0] / max(drifts[1], 1e-300):.3g}x (need > {ENERGY_DRIFT_REDUCTION}), "
          f"{drifts[1]:.3e} < {ENERGY_DRIFT_BOUND:g}: {'ok' if ok else 'FAILED'}")
    return 0 if ok else 1


# ---------------------------------------------------------------- compliant contact
BOUNCING_BALL = "examples/bouncing_ball.cap"
BALL_ON_TABLE = "examples/ball_on_table.cap"


def total_energy(rows):
    return [r["kinetic_energy"] + r["potential_energy"] for r in rows]


def contact(capstan):
    """HuntCrossleyContact (interpreted: the generated code is checked
    against it by golden.agreement): energy is conserved to the integrator's
    tolerance without dissipation and friction, and never grows with them;
    a ball sliding without spin on a table rolls at 5/7 of its speed."""
    failures = 0
    # Elastic bounces: the drift shrinks with the tolerance.
    elastic = ["--set", "contact.dissipation=0", "--set", "contact.staticFriction=0",
               "--set", "contact.dynamicFriction=0"]
    drifts = []
    for tol in (1e-8, 1e-10):
        proc = check_ok(run(capstan, "simulate", BOUNCING_BALL, "--interpret", *elastic, "--tol", tol), "simulate")
        _, rows = read_csv(proc.stdout)
        e = total_energy(rows)
        bounces = sum(1 for a, b in zip(rows, rows[1:]) if a["float.u[5]"] < 0 <= b["float.u[5]"])
        drifts.append(max(abs(x - e[0]) for x in e) / e[0])
        print(f"contact: elastic bouncing ball, --tol {tol:g}: {bounces} bounces, max |E - E0| / E0 = {drifts[-1]:.3e}")
        if bounces < 2:
            print("contact: FAILED: the ball should bounce at least twice in 3 s")
            failures += 1
    if not (drifts[1] < 1e-6 and drifts[1] * 30 < drifts[0]):
        print("contact: FAILED: the elastic contact's energy drift should be below 1e-6 and shrink with the tolerance")
        failures += 1
    # With dissipation and friction: energy never grows, and most of it goes.
    for model, lost in ((BOUNCING_BALL, 0.5), (BALL_ON_TABLE, 0.3)):
        proc = check_ok(run(capstan, "simulate", model, "--interpret"), "simulate")
        _, rows = read_csv(proc.stdout)
        e = total_energy(rows)
        rise = max(b - a for a, b in zip(e, e[1:]))
        print(f"contact: {model}: E {e[0]:.6g} J -> {e[-1]:.6g} J, largest rise between rows {rise:.3e} J")
        if rise > 1e-9 * e[0] or e[-1] > (1 - lost) * e[0]:
            print(f"contact: FAILED: energy should only fall, by at least {lost:.0%}")
            failures += 1
        if model == BALL_ON_TABLE:
            # Before the balls meet (about 1 s), the cue ball rolls: v = 5/7 v0, w_z = -v / r.
            row = min(rows, key=lambda r: abs(r["time"] - 0.8))
            v, w = row["cueJoint.u[4]"], row["cueJoint.u[3]"]
            print(f"contact: cue ball at t = {row['time']:g}: v = {v:.6f} m/s (5/7 v0 = {5 / 7 * 2:.6f}), "
                  f"w_z r = {w * 0.05:.6f} m/s")
            if abs(v - 5 / 7 * 2) > 1e-3 * 2 or abs(w * 0.05 + v) > 1e-3 * 2:
                print("contact: FAILED: a ball sliding without spin should end rolling at 5/7 of its speed")
                failures += 1
            final = rows[-1]
            if not final["targetJoint.u[4]"] > 0.5:
                print("contact: FAILED: the cue ball should have set the target ball rolling")
                failures += 1
    return 1 if failures else 0


# ---------------------------------------------------------------- non-finite state
def nonfinite(capstan):
    failures = []
    with tempfile.TemporaryDirectory() as d:
        csv = pathlib.Path(d) / "trajectory.csv"
        # rk4 with dt = 0.125: the step from t = 0.25 evaluates its last stage at t = 0.375 = tPole: 0.01 / 0 = inf.
        for extra in ([], ["--interpret"]):
            proc = run(capstan, "simulate", SINGULAR, "--t-end", 1, "--dt", 0.125, "--integrator", "rk4", "-o", csv,
                       *extra)
            what = "rk4" + (" --interpret" if extra else "")
            expected = "non-finite state in the step from t = 0.25 to t = 0.375: "
            if proc.returncode != 1 or expected not in proc.stderr or "`pivot.u[1]`" not in proc.stderr:
                failures.append(f"{what}: exit {proc.returncode}, expected 1 and `{expected}` naming `pivot.u[1]`:\n"
                                f"{proc.stderr}")
            header, rows = read_csv(csv.read_text())
            times = [r["time"] for r in rows]
            if times != [0, 0.125, 0.25] or not all(math.isfinite(v) for r in rows for v in r.values()):
                failures.append(f"{what}: the rows before the failure are not all kept: times {times}")
            print(f"nonfinite {what}: {proc.stderr.strip()}; rows at {times}")
        # dopri5: the torque is NaN after tRoot = 0.3; trial steps past it are rejected until the step is negligible.
        proc = run(capstan, "simulate", SINGULAR, "--t-end", 1, "--dt", 0.01, "--set", "tPole=-1", "--set", "tRoot=0.3",
                   "-o", csv)
        message = proc.stderr
        at = message.split("in the step from t = ")[-1].split(" ")[0] if "in the step from t = " in message else "nan"
        if proc.returncode != 1 or "non-finite state" not in message or "`pivot.u[1]`" not in message or not \
                abs(float(at) - 0.3) < 1e-6:
            failures.append(f"dopri5: exit {proc.returncode}; expected a non-finite state at t = 0.3 naming "
                            f"`pivot.u[1]`:\n{message}")
        _, rows = read_csv(csv.read_text())
        times = [r["time"] for r in rows]
        # Output times before the failure: 0, 0.01, ..., 0.29 (0.3 itself is not reached).
        if len(rows) != 30 or abs(times[-1] - 0.29) > 1e-12 or not all(math.isfinite(v) for r in rows for v in r.values()):
            failures.append(f"dopri5: expected the 30 rows t = 0 .. 0.29 to be kept, got {len(rows)} ending at {times[-1]}")
        print(f"nonfinite dopri5: {message.strip()}; {len(rows)} rows up to t = {times[-1]}")
    for f in failures:
        print("FAILED:", f)
    return 1 if failures else 0


# ---------------------------------------------------------------- bench
# A call the optimizer deleted would cost about a loop iteration (< 1 ns).
BENCH_MIN_US = 0.002


def bench(capstan):
    with tempfile.TemporaryDirectory() as d:
        state = pathlib.Path(d) / "state.json"
        state.write_text(json.dumps({"q": {"shoulder": [0.3], "elbow": [-0.2]}, "u": {"elbow": [1.5]}}))
        proc = check_ok(run(capstan, "bench", DOUBLE_PENDULUM, "--state", state, "--seconds", 0.3), "bench")
    result = json.loads(proc.stdout)
    print(json.dumps(result, indent=2))
    failures = []
    for key in ("forward_dynamics_us", "mass_matrix_us", "kinematics_us"):
        v = result.get(key)
        if not isinstance(v, (int, float)) or not math.isfinite(v) or not BENCH_MIN_US < v < 1e4:
            failures.append(f"`{key}` is {v!r}, expected a time per call in ({BENCH_MIN_US}, 1e4) us")
    if result.get("nq") != 2 or result.get("nu") != 2:
        failures.append("nq and nu should be 2")
    if "-O" not in result.get("flags", "") or not result.get("compiler"):
        failures.append("`flags` (with -O) and `compiler` should be given")
    for f in failures:
        print("FAILED:", f)
    return 1 if failures else 0


# ---------------------------------------------------------------- interrupt
def processes_naming(text):
    """The pids of the processes whose command line contains `text`."""
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(int(entry.name))
    return found


def interrupted_run(capstan, csv, sig, extra):
    """Starts a long simulation, signals capstan once rows arrive; returns (status, stderr)."""
    argv = [capstan, "simulate", DOUBLE_PENDULUM, "--t-end", 1e6, "--dt", 1e-4, "-o", csv, *extra]
    proc = subprocess.Popen(list(map(str, argv)),
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not csv.exists() or csv.stat().st_size < 200_000):
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        return None, err
    return proc.returncode, err


def interrupt(capstan):
    failures = []
    with tempfile.TemporaryDirectory() as d:
        # Build (and cache) the driver first, so the signal meets the run.
        check_ok(run(capstan, "simulate", DOUBLE_PENDULUM, "--t-end", 0.01, "-o", pathlib.Path(d) / "warm.csv"),
                 "simulate")
        for sig, extra in ((signal.SIGTERM, []), (signal.SIGINT, []), (signal.SIGTERM, ["--interpret"])):
            what = f"{signal.Signals(sig).name}{' --interpret' if extra else ''}"
            csv = pathlib.Path(d) / f"run-{sig}-{len(extra)}.csv"
            status, err = interrupted_run(capstan, csv, sig, extra)
            time.sleep(0.2)
            survivors = processes_naming(str(csv))
            if survivors:
                failures.append(f"{what}: processes {survivors} still run after capstan exited")
                for pid in survivors:
                    os.kill(pid, signal.SIGKILL)
            if status != 128 + sig:
                failures.append(f"{what}: exit status {status}, expected {128 + sig}:\n{err}")
            m = re.search(r"^capstan: interrupted at t = (\S+); ([\d,]+) rows? written$", err, re.M)
            text = csv.read_text()
            lines = text.split("\n")
            if not text.endswith("\n"):
                failures.append(f"{what}: the CSV does not end on a whole row: ...{text[-80:]!r}")
            lines = lines[:-1]
            width = len(lines[0].split(","))
            torn = [i for i, line in enumerate(lines) if len(line.split(",")) != width]
            if torn:
                failures.append(f"{what}: rows {torn[:5]} do not have {width} fields")
            if not m:
                failures.append(f"{what}: no `interrupted at t = ...; N rows written` message:\n{err}")
            else:
                rows = int(m.group(2).replace(",", ""))
                last = float(lines[-1].split(",")[0])
                if rows != len(lines) - 1 or abs(last - float(m.group(1))) > 1e-5 * max(1, last):
                    failures.append(f"{what}: message says {m.group(0)!r}; the file has {len(lines) - 1} rows "
                                    f"up to t = {last}")
                print(f"{what}: exit {status}; {m.group(0)}; {len(lines) - 1} rows in the file")
        # A time limit stops the run the same way, and says so.
        csv = pathlib.Path(d) / "limited.csv"
        start = time.monotonic()
        proc = run(capstan, "simulate", DOUBLE_PENDULUM, "--t-end", 1e6, "--dt", 1e-4, "-o", csv, "--timeout", 1)
        took = time.monotonic() - start
        expected = "capstan: error: the simulation ran longer than 1 s (`--timeout`) and was stopped"
        if proc.returncode != 1 or expected not in proc.stderr or took > 20 or processes_naming(str(csv)):
            failures.append(f"--timeout 1: exit {proc.returncode} after {took:.1f} s, expected 1 with "
                            f"`{expected}`:\n{proc.stderr}")
        elif not csv.read_text().endswith("\n"):
            failures.append("--timeout 1: the CSV does not end on a whole row")
        print(f"--timeout 1: exit {proc.returncode} after {took:.1f} s: {proc.stderr.strip()}")
    for f in failures:
        print("FAILED:", f)
    return 1 if failures else 0
# ---------------------------------------------------------------- built-ins
# Parameter values that leave a function's domain, and the functions they break
# (c_F at compile time, y_F at run time).
OUT_OF_DOMAIN = [
    ({"a": 1.5}, {"acos"}),
    ({"a": -0.5}, {"sqrt", "log", "log10"}),
    ({"a": 0}, {"log", "log10"}),
    ({"b": -1.5}, {"asin"}),
    ({"b": 1000}, {"exp", "cosh"}),
    ({"v": [0, 0, 0]}, {"normalize"}),
    ({"a": 0, "b": 0}, {"log", "log10", "quaternion"}),  # Capstan.Frames.quaternion normalizes {0, 0, 0, 0}
]


def crash(capstan):
    """A C++ function the model calls crashes the driver at t = 0.3: capstan
    names the function, its call in the model and the time (the driver left
    the state it was evaluating; the interpreter finds the call there),
    exits 1, and the CSV holds the header and every row computed before it
    (t = 0 .. 0.25), whole."""
    with tempfile.TemporaryDirectory() as tmp:
        csv = pathlib.Path(tmp) / "crash.csv"
        p = run(capstan, "simulate", CRASH, "--t-end", "1", "--dt", "0.05", "--integrator", "rk4", "-o", csv)
        text = csv.read_text()
    errors = []
    if p.returncode != 1:
        errors.append(f"exit status {p.returncode}, not 1")
    for want in ("crash.cap:17:", "the C++ function `crashlib::crashAfter` crashed at t = 0.3",
                 "(Segmentation fault, signal 11)", "[ExternalCallCrashed]", "6 rows written before it"):
        if want not in p.stderr:
            errors.append(f"no `{want}` in:\n{p.stderr}")
    if "exit status" in p.stderr:
        errors.append(f"a second, unlocated message in:\n{p.stderr}")
    if not text.endswith("\n"):
        errors.append(f"the CSV does not end on a whole row: {text[-40:]!r}")
    header, rows = read_csv(text)
    times = [round(row["time"], 12) for row in rows]
    if times != [round(0.05 * k, 12) for k in range(6)]:
        errors.append(f"rows at {times}, not t = 0, 0.05, ..., 0.25")
    # The same crash in capstan itself (--interpret): capstan survives it,
    # names the function, its call in the model and the time, keeps the rows.
    with tempfile.TemporaryDirectory() as tmp:
        csv = pathlib.Path(tmp) / "crash.csv"
        p = run(capstan, "simulate", CRASH, "--t-end", "1", "--dt", "0.05", "--integrator", "rk4", "-o", csv,
                "--interpret")
        text = csv.read_text() if csv.exists() else ""
    if p.returncode != 1:
        errors.append(f"--interpret: exit status {p.returncode}, not 1:\n{p.stderr}")
    for want in ("crash.cap:17:", "the C++ function `crashlib::crashAfter` crashed at t = 0.3",
                 "(Segmentation fault, signal 11)", "[ExternalCallCrashed]"):
        if want not in p.stderr:
            errors.append(f"--interpret: no `{want}` in:\n{p.stderr}")
    if not text.endswith("\n"):
        errors.append(f"--interpret: the CSV does not end on a whole row: {text[-40:]!r}")
    elif [round(row["time"], 12) for row in read_csv(text)[1]] != [round(0.05 * k, 12) for k in range(6)]:
        errors.append(f"--interpret: rows at {[row['time'] for row in read_csv(text)[1]]}, not t = 0 .. 0.25")
    if errors:
        raise AssertionError("\n".join(errors))


HANG = HERE / "models/hang.cap"
EXITS = HERE / "models/exits.cap"


def guard(capstan):
    """What ends a run from inside the model's code, in both paths (the driver
    program and --interpret): exit(0), a function that never returns past
    --timeout; --timeout on a long run; a crash under --interpret (`crash`
    covers the driver's). Each time: the rows before it on disk, whole
    (t = 0 .. 0.25 where the function misbehaves after t = 0.25), a message
    that says what happened, exit status 1."""
    errors = []

    def expect(what, model, extra, status, wants, rows=6, seconds=None):
        with tempfile.TemporaryDirectory() as tmp:
            csv = pathlib.Path(tmp) / "out.csv"
            start = time.monotonic()
            p = run(capstan, "simulate", model, "--dt", "0.05", "--integrator", "rk4", "-o", csv, *extra)
            took = time.monotonic() - start
            text = csv.read_text() if csv.exists() else ""
        if p.returncode != status:
            errors.append(f"{what}: exit status {p.returncode}, not {status}; stderr:\n{p.stderr}")
        for want in wants:
            if want not in p.stderr:
                errors.append(f"{what}: no `{want}` in:\n{p.stderr}")
        if not text.endswith("\n"):
            errors.append(f"{what}: the CSV does not end on a whole row: {text[-40:]!r}")
            return
        header, data = read_csv(text)
        times = [round(row["time"], 12) for row in data]
        if rows is not None and times != [round(0.05 * k, 12) for k in range(rows)]:
            errors.append(f"{what}: rows at {times}, not t = 0, 0.05, ..., {0.05 * (rows - 1):g}")
        if rows is None and not times:
            errors.append(f"{what}: no rows")
        if seconds is not None and took > seconds:
            errors.append(f"{what}: took {took:.1f} s, more than {seconds} s")

    for mode in ([], ["--interpret"]):
        label = " ".join(mode) or "driver"
        expect(f"exit(0), {label}", EXITS, ["--t-end", "1", *mode], 1,
               ["the model's code called exit() during the simulation", "6 rows written"])
        # The time limit counts from the run's start (not the driver's build):
        # 2 s, then 1 s for the model's code to return, then the rows.
        expect(f"never returns, {label}", HANG, ["--t-end", "1", "--timeout", "2", *mode], 1,
               ["ran longer than 2 s (`--timeout`)", "did not return"], seconds=60 if not mode else 8)
    # (`interrupt` checks a long run's --timeout through the driver.)
    expect("long run, --interpret", DOUBLE_PENDULUM, ["--t-end", "1e6", "--timeout", "2", "--interpret"], 1,
           ["ran longer than 2 s (`--timeout`) and was stopped at t = "], rows=None, seconds=8)
    expect("crash, --interpret", CRASH, ["--t-end", "1", "--interpret"], 1,
           ["the C++ function `crashlib::crashAfter` crashed at t = "])
    if errors:
        raise AssertionError("\n".join(errors))


def orphans(capstan):
    """SIGKILL to `capstan test -j2`, which cannot be caught: its `capstan
    simulate` children and their drivers die with it (PR_SET_PDEATHSIG),
    instead of running on into the report folder."""
    tag = f"capstan-orphans-{os.getpid()}"
    def ours():
        pids = []
        for d in pathlib.Path("/proc").iterdir():
            if not d.name.isdigit() or int(d.name) == os.getpid():
                continue
            try:
                if tag.encode() in (d / "environ").read_bytes():
                    status = (d / "status").read_text()
                    if "\nState:\tZ" not in status:  # a zombie is dead already
                        pids.append(int(d.name))
            except OSError:
                pass
        return pids
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("A", "B"):
            (pathlib.Path(tmp) / f"{name}.cap").write_text(
                PENDULUM.read_text().replace("model Pendulum", f"model {name}").replace(
                    "end Pendulum;", f"  annotation(experiment(StopTime = 1e6, Interval = 1e-3));\nend {name};"))
        env = dict(os.environ, CAPSTAN_ORPHAN_TAG=tag)
        proc = subprocess.Popen([capstan, "test", "-j2", "--report", pathlib.Path(tmp) / "report", tmp], cwd=tmp,
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # Wait until both drivers (the children of the children) write rows.
        results = [pathlib.Path(tmp) / "report" / name / "result.csv" for name in ("A", "B")]
        deadline = time.time() + 280
        while time.time() < deadline and not all(r.exists() and r.stat().st_size > 0 for r in results):
            time.sleep(0.2)
        running = len(ours())
        proc.kill()
        proc.wait()
        deadline = time.time() + 10
        while time.time() < deadline and ours():
            time.sleep(0.1)
        left = ours()
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    print(f"orphans: {running} processes under `capstan test -j2` before SIGKILL, {len(left)} after")
    if running < 5:
        raise AssertionError(f"only {running} processes started (capstan test, 2 simulate, 2 drivers expected)")
    if left:
        raise AssertionError(f"{len(left)} processes outlived a SIGKILLed `capstan test`: {left}")


def limited(size):
    """A preexec_fn: files of at most `size` bytes, EFBIG instead of SIGXFSZ."""
    def apply():
        import resource
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, resource.RLIM_INFINITY))
    return apply


def full_disk(capstan):
    """A file size limit (as a full disk): `compile` keeps the header it wrote
    before (files are written aside and renamed when whole) and says why;
    `simulate` (its header and IR fit; its CSV does not) keeps whole rows and
    says why and how many."""
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp)
        check_ok(run(capstan, "compile", DOUBLE_PENDULUM, "-o", out), "compile")
        header = out / "DoublePendulum.hpp"
        good = header.read_bytes()
        header.write_bytes(good + b"// the header as the user had it\n")
        before = header.read_bytes()
        p = subprocess.run([capstan, "compile", DOUBLE_PENDULUM, "-o", out], capture_output=True, text=True,
                           preexec_fn=limited(4096))
        if p.returncode != 1 or "cannot write" not in p.stderr or "File too large" not in p.stderr:
            errors.append(f"compile under a 4 KiB limit: exit {p.returncode}, stderr:\n{p.stderr}")
        if header.read_bytes() != before:
            errors.append("compile under a 4 KiB limit replaced the header with a partial one")
        if sorted(f.name for f in out.iterdir()) != ["DoublePendulum.hpp"]:
            errors.append(f"files left beside the header: {sorted(f.name for f in out.iterdir())}")
        # The driver is built first, without the limit (its executable is larger).
        csv = out / "pendulum.csv"
        args = ["simulate", DOUBLE_PENDULUM, "--t-end", "5", "--dt", "0.001", "--integrator", "rk4", "-o", csv]
        check_ok(run(capstan, *args[:-2], "-o", out / "warm.csv"), "simulate")
        p = subprocess.run([capstan, *map(str, args)], capture_output=True, text=True, preexec_fn=limited(200000))
        text = csv.read_text()
        m = re.search(r"cannot write `.*`: File too large; ([\d,]+) rows? written", p.stderr)
        if p.returncode != 1 or not m:
            errors.append(f"simulate under a 200 kB limit: exit {p.returncode}, stderr:\n{p.stderr}")
        elif int(m.group(1).replace(",", "")) != text.count("\n") - 1:
            errors.append(f"simulate says {m.group(1)} rows; the CSV has {text.count(chr(10)) - 1}")
        if not text.endswith("\n"):
            errors.append(f"the CSV does not end on a whole row: {text[-40:]!r}")
    if errors:
        raise AssertionError("\n".join(errors))


def damaged_cache(capstan):
    """A cached driver cut short (a full disk, a crash) is noticed and built
    again, with a note; temporaries a killed capstan left in the cache are
    removed when it builds there next."""
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, CAPSTAN_CACHE_DIR=str(pathlib.Path(tmp) / "cache"))
        args = [capstan, "simulate", str(DOUBLE_PENDULUM), "--t-end", "0.1", "-o", str(pathlib.Path(tmp) / "a.csv")]
        first = subprocess.run(args, capture_output=True, text=True, env=env)
        drivers = list((pathlib.Path(tmp) / "cache").glob("*/driver"))
        if first.returncode != 0 or len(drivers) != 1:
            raise AssertionError(f"first run: exit {first.returncode}, drivers {drivers}:\n{first.stderr}")
        driver = drivers[0]
        with open(driver, "r+b") as f:
            f.truncate(1000)
        stale = [driver.parent / "driver.tmp9999999", driver.parent / "build.log9999999"]
        for path in stale:
            path.write_text("left by a capstan that was killed")
        again = subprocess.run(args, capture_output=True, text=True, env=env)
        if again.returncode != 0 or "is damaged; building it again" not in again.stderr:
            errors.append(f"second run: exit {again.returncode}, stderr:\n{again.stderr}")
        if driver.stat().st_size <= 1000:
            errors.append("the damaged driver was not built again")
        if any(path.exists() for path in stale):
            errors.append("stale temporaries were left in the cache")
    if errors:
        raise AssertionError("\n".join(errors))


def one_build(capstan):
    """One build of a model serves simulate, eval and bench: another --set, an
    edited default, start value or comment, another integrator or --t-end run
    the same program (builds.log in the cache folder counts the builds, and a
    build says so on stderr); a structural change builds again; cvode's exact
    Jacobian adds the build with derivatives, which then serves every run
    of this capstan (another capstan's build at the same version builds it
    again: its derivative code may differ).
    The simulation engine they all link is built once, by `capstan prepare`
    (or capstan's build), before the first simulate.
    The run with edited defaults agrees with --interpret: the driver is given
    every parameter, since its build does not hold their defaults."""
    errors = []
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        cache = tmp / "cache"
        env = {k: v for k, v in os.environ.items() if k != "CAPSTAN_BENCH_CXXFLAGS"}
        env["CAPSTAN_CACHE_DIR"] = str(cache)
        model = tmp / "pendulum.cap"
        base = PENDULUM.read_text()

        def builds(what="`Pendulum`"):
            log = cache / "builds.log"
            return sum(what in line for line in log.read_text().splitlines()) if log.exists() else 0

        def step(what, text, command, *args, new_builds=0, exe=capstan):
            model.write_text(text)
            before = builds()
            proc = subprocess.run([exe, command, str(model), *map(str, args)], capture_output=True, text=True,
                                  env=env, timeout=300)
            if proc.returncode != 0:
                errors.append(f"{what}: exit {proc.returncode}:\n{proc.stderr}")
                return proc
            said = "capstan: compiling the generated code of `Pendulum`" in proc.stderr
            if builds() - before != new_builds or said != (new_builds > 0):
                errors.append(f"{what}: {builds() - before} builds (expected {new_builds}), stderr:\n{proc.stderr}")
            return proc

        # `capstan prepare`: the runtime's objects every program links are
        # ready (compiled into this cache, or capstan's build's own), so the
        # first simulate compiles only the model.
        prepared = subprocess.run([capstan, "prepare"], capture_output=True, text=True, env=env, timeout=300)
        ready = [line.split(": ", 1)[1] for line in prepared.stdout.splitlines() if line.startswith("ready: ")]
        if prepared.returncode != 0 or sorted(pathlib.Path(p).name for p in ready) != ["cable_solver.o", "engine.o"]:
            errors.append(f"capstan prepare: exit {prepared.returncode}, stdout:\n{prepared.stdout}{prepared.stderr}")
        for p in ready:
            if not pathlib.Path(p).is_file() or not pathlib.Path(p + ".ok").is_file():
                errors.append(f"capstan prepare: `{p}` is not there with its fingerprint")
        extra = subprocess.run([capstan, "prepare", "model.cap"], capture_output=True, text=True, env=env, timeout=60)
        if extra.returncode != 2 or "unexpected argument `model.cap`" not in extra.stderr:
            errors.append(f"capstan prepare model.cap: exit {extra.returncode} (expected 2), stderr:\n{extra.stderr}")
        csv = tmp / "a.csv"
        first = step("the first simulate", base, "simulate", "--t-end", 1, "-o", csv, new_builds=1)
        if "simulation engine" in first.stderr:
            errors.append(f"the first simulate after `capstan prepare` compiled the engine:\n{first.stderr}")
        step("--set", base, "simulate", "--t-end", 1, "-o", csv, "--set", "m=2")
        edited = "// a comment that moves every line\n" + base.replace("= 1.5 \"mass\"", "= 2.5 \"mass\"").replace(
            "= 0.01 \"initial angle\"", "= 0.3 \"initial angle\"")
        if edited.count("2.5") != 1 or "0.3" not in edited:
            raise AssertionError("tests/cli/models/pendulum.cap changed: the edits below no longer apply")
        step("edited defaults, start value and a comment", edited, "simulate", "--t-end", 1, "-o", csv)
        interpreted = tmp / "b.csv"
        step("--interpret", edited, "simulate", "--t-end", 1, "-o", interpreted, "--interpret")
        if pathlib.Path(csv).exists() and interpreted.exists():
            header, rows_a = read_csv(pathlib.Path(csv).read_text())
            _, rows_b = read_csv(interpreted.read_text())
            if len(rows_a) != len(rows_b) or max_difference(rows_a, rows_b, header) > 1e-12:
                errors.append("the edited model's run differs from --interpret: were the new defaults given?")
            elif abs(rows_a[0]["pivot.q[1]"] - 0.3) > 1e-15:
                errors.append(f"the run started at q = {rows_a[0]['pivot.q[1]']}, not the edited start value 0.3")
        step("--integrator rk4", edited, "simulate", "--t-end", 0.5, "-o", csv, "--integrator", "rk4")
        state = tmp / "state.json"
        state.write_text("{}")
        step("eval", edited, "eval", "--state", state)
        step("bench", edited, "bench", "--seconds", 0.05)
        probe = run(capstan, "simulate", model, "--t-end", 0, "-o", os.devnull, "--integrator", "cvode", "--interpret")
        if "needs SUNDIALS" not in probe.stderr:  # a capstan built with CVODE
            step("cvode (the build with derivatives)", edited, "simulate", "--t-end", 0.5, "-o", csv, "--integrator",
                 "cvode", new_builds=1)
            step("eval --derivatives", edited, "eval", "--state", state, "--derivatives")
            # Another capstan at the same version (this one with a byte
            # appended: another build of the generator) builds the
            # derivatives anew rather than run the code this one emitted.
            other = pathlib.Path(capstan).with_name(f"capstan-other-{os.getpid()}")
            try:
                shutil.copy2(capstan, other)
                with open(other, "ab") as f:
                    f.write(b"\0")
                step("eval --derivatives by another capstan", edited, "eval", "--state", state, "--derivatives",
                     new_builds=1, exe=other)
            finally:
                other.unlink(missing_ok=True)
            step("dopri5 after cvode", edited, "simulate", "--t-end", 0.5, "-o", csv)
        structural = edited.replace("equation\n", "equation\n  pivot.tau = -0.1 * pivot.u;\n")
        step("a force law added", structural, "simulate", "--t-end", 0.5, "-o", csv, new_builds=1)
        # The simulation engine every model's program links: compiled at most
        # once (by `capstan prepare` into this cache, where capstan's build has none).
        if builds("the simulation engine") > 1:
            errors.append(f"the simulation engine was built {builds('the simulation engine')} times (expected 1)")
    if errors:
        raise AssertionError("\n".join(errors))


def lost_output(capstan):
    """`check --json` and `eval` print to standard output: a full device or a
    closed descriptor there is an error (exit 1, the reason), never a silent 0."""
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        state = pathlib.Path(tmp) / "state.json"
        state.write_text("{}")
        for args in (["check", DOUBLE_PENDULUM, "--json"], ["eval", DOUBLE_PENDULUM, "--state", state, "--interpret"]):
            for where, kwargs in (("/dev/full", {"stdout": open("/dev/full", "w")}),
                                  ("a closed stdout", {"preexec_fn": lambda: os.close(1)})):
                p = subprocess.run([capstan, *map(str, args)], stderr=subprocess.PIPE, text=True, **kwargs)
                if p.returncode != 1 or "cannot write the standard output" not in p.stderr:
                    errors.append(f"{args[0]} to {where}: exit {p.returncode}, stderr:\n{p.stderr}")
    if errors:
        raise AssertionError("\n".join(errors))


def builtins(capstan):
    def literal(x):
        return "{" + ", ".join(map(str, x)) + "}" if isinstance(x, list) else str(x)

    def with_defaults(values):
        text = BUILTINS.read_text()
        for name, x in values.items():
            lines = [l for l in text.split("\n") if l.startswith(f"  parameter Real {name}")]
            assert len(lines) == 1, name
            text = text.replace(lines[0], lines[0].split("=")[0] + "= " + literal(x) + ";")
        return text

    def outputs(model, mode, state):
        with tempfile.TemporaryDirectory() as tmp:
            state_file = pathlib.Path(tmp) / "state.json"
            state_file.write_text(json.dumps(state))
            return run(capstan, "eval", model, "--state", state_file, *mode)

    # In the domain: the same value everywhere.
    check = check_ok(run(capstan, "check", BUILTINS, "--json"), "check --json")
    compile_time = {v["path"][2:]: v["value"] for v in json.loads(check.stdout)["variables"] if v["path"].startswith("c_")}
    assert len(compile_time) >= 30, compile_time
    for mode in ([], ["--interpret"]):
        got = json.loads(check_ok(outputs(BUILTINS, mode, {}), f"eval {mode}").stdout)["outputs"]
        for name, want in compile_time.items():
            y = got["y_" + name]
            if not math.isclose(y, want, rel_tol=1e-14, abs_tol=1e-15):
                raise AssertionError(f"{name}: compile time {want!r}, eval {mode} {y!r}")
    # Out of the domain: the same error everywhere.
    for values, broken in OUT_OF_DOMAIN:
        with tempfile.TemporaryDirectory() as tmp:
            model = pathlib.Path(tmp) / "builtins.cap"
            model.write_text(with_defaults(values))
            proc = run(capstan, "check", model)
        failed = set()
        for line in proc.stderr.split("\n"):
            m = re.search(r"error: .*\[EvaluationFailed\]$", line)
            if m:
                failed.add(line)
        if proc.returncode != 1 or len(failed) < 1:
            raise AssertionError(f"{values}: check should fail:\n{proc.stderr}")
        # eval with those values (STATE.json `parameters`, as --set) refuses
        # them with the diagnostics check gives (docs/language.md: --set is
        # checked as check checks the model), generated and interpreted.
        def messages(text):
            return sorted(re.sub(r"^\S+:\d+:\d+: ", "", l) for l in text.split("\n") if "[EvaluationFailed]" in l)
        for mode in ([], ["--interpret"]):
            p = outputs(BUILTINS, mode, {"parameters": values})
            if p.returncode != 1 or messages(p.stderr) != messages("\n".join(failed)):
                raise AssertionError(f"{values}: eval {mode} should refuse with check's diagnostics "
                                     f"{messages(chr(10).join(failed))}:\n{p.stderr}")
        if len(failed) < len(broken):
            raise AssertionError(f"{values}: compile time {sorted(failed)} should fail for each of {sorted(broken)}")
    # A force law out of the domain at run time: the same error, generated and
    # interpreted, at the force law's line.
    errors = []
    line = next(i + 1 for i, l in enumerate(BUILTINS.read_text().split("\n")) if "hinge.tau =" in l)
    for mode in ([], ["--interpret"]):
        p = outputs(BUILTINS, mode, {"parameters": {"d": -1}})
        want = re.compile(rf"builtins\.cap:{line}:\d+: error: the force law for `hinge\.tau` is not a number \(NaN\) "
                          rf"at t = 0;.*\[NonFiniteForceLaw\]")
        if p.returncode != 1 or not any(want.search(l) for l in p.stderr.split("\n")):
            raise AssertionError(f"force law: eval {mode} should fail at the force law's line {line}:\n{p.stderr}")
        errors.append([l for l in p.stderr.split("\n") if "error:" in l])
    if errors[0] != errors[1]:
        raise AssertionError(f"force law: generated and interpreted differ: {errors}")
    print("built-ins agree at compile time, generated and interpreted")


# ---------------------------------------------------------------- external forces
# Virtual work on the double pendulum (both joints revolute about z; the
# shoulder at the World origin, the elbow at the origin of `lower`, upper's
# origin at the shoulder): a spatial force F_B = [n; f] about Bo in World is
# worth Q_j = e_z . n + (e_z x (p_WBo - p_joint)) . f at each joint j that
# moves B, and must change udot by M^-1 Q. EXTERNAL_FORCES_TOLERANCE is
# relative to max(1, |Q|): roundoff of a 2-dof solve.
EXTERNAL_FORCES_TOLERANCE = 1e-10
EXTERNAL_FORCES_STATE = {"q": {"shoulder": [0.7], "elbow": [-1.1]}, "u": {"shoulder": [0.4], "elbow": [-0.9]}}
EXTERNAL_FORCES = {"upper": [0.3, -0.2, 1.5, 4.0, -2.0, 0.7], "lower": [-0.4, 0.9, -0.8, -3.0, 5.0, 1.2]}


def external_forces(capstan):
    def evaluate(mode, state):
        with tempfile.TemporaryDirectory() as d:
            path = pathlib.Path(d) / "state.json"
            path.write_text(json.dumps(state))
            return json.loads(check_ok(run(capstan, "eval", DOUBLE_PENDULUM, "--state", path, *mode),
                                       f"eval {mode}").stdout)

    def cross_z(p):  # e_z x p
        return [-p[1], p[0], 0.0]

    def dot(a, b):
        return sum(x * y for x, y in zip(a, b))

    failures = 0
    for mode in ([], ["--interpret"]):
        free = evaluate(mode, EXTERNAL_FORCES_STATE)
        pushed = evaluate(mode, {**EXTERNAL_FORCES_STATE, "external_forces": EXTERNAL_FORCES})
        p_upper, p_lower = free["bodies"]["upper"]["p_WB"], free["bodies"]["lower"]["p_WB"]
        up, lo = EXTERNAL_FORCES["upper"], EXTERNAL_FORCES["lower"]
        q_shoulder = up[2] + dot(cross_z(p_upper), up[3:]) + lo[2] + dot(cross_z(p_lower), lo[3:])
        q_elbow = lo[2]  # lower's origin is on the elbow axis
        M = pushed["mass_matrix"]
        dudot = [pushed["udot"][j][0] - free["udot"][j][0] for j in ("shoulder", "elbow")]
        q = [dot(M[0], dudot), dot(M[1], dudot)]
        error = max(abs(a - b) for a, b in zip(q, [q_shoulder, q_elbow])) / max(1.0, abs(q_shoulder), abs(q_elbow))
        ok = error < EXTERNAL_FORCES_TOLERANCE and abs(q_shoulder) > 1 and abs(q_elbow) > 0.1
        print(f"external forces, eval {' '.join(mode) or '(generated)'}: M dudot = {q}, J^T F = "
              f"{[q_shoulder, q_elbow]}, relative error {error:.2e}: {'ok' if ok else 'FAILED'}")
        failures += not ok
    return 1 if failures else 0


# ---------------------------------------------------------------- stiff: cvode
# `--stats` block: `  NAME   VALUE` lines after `capstan: statistics (INTEGRATOR: METHOD):`.
def statistics(stderr):
    m = re.search(r"^capstan: statistics \((\w+): (.*)\):\n((?:  .*\n?)*)", stderr, re.M)
    if not m:
        raise AssertionError(f"no statistics block on stderr:\n{stderr}")
    values = {}
    for line in m.group(3).splitlines():
        name, value = re.match(r"^  (.*?)\s{2,}(\S+)$", line).groups()
        values[name.strip()] = float(value)
    return m.group(1), m.group(2), values


def state_columns(header):
    return [c for c in header if re.search(r"\.[qu]\[\d+\]$", c)]


def max_difference(rows_a, rows_b, columns):
    """max over rows and columns of |a - b| / max(1, max |b| of that column)."""
    if [r["time"] for r in rows_a] != [r["time"] for r in rows_b]:
        raise AssertionError("the two runs have different output times")
    worst = 0.0
    for c in columns:
        scale = max(1.0, max(abs(r[c]) for r in rows_b))
        worst = max(worst, max(abs(a[c] - b[c]) for a, b in zip(rows_a, rows_b)) / scale)
    return worst


# The figure: cvode with the exact Jacobian takes at least this many
# times fewer right-hand-side evaluations than dopri5 on the stiff chain, at
# the same tolerance.
STIFF_EVALUATION_RATIO = 20
# Accuracy. Both integrators keep each step's local error under the
# tolerance; what accumulates over the run differs. dopri5's steps are
# limited by stability here (the springs), so it is far more accurate than
# asked: about 3x the tolerance against a 100x tighter dopri5 run. cvode's
# steps follow the swing, and its global error is that of ~400 steps each
# near the tolerance: about 140x the tolerance at 1e-6 (260x at 1e-8),
# shrinking in proportion. So:
# - at the same tolerance the two agree within STIFF_SAME_TOLERANCE_FACTOR x it;
# - cvode at a 100x tighter tolerance matches dopri5 to STIFF_MATCH_FACTOR x
#   the tolerance, still with STIFF_EVALUATION_RATIO x fewer evaluations.
# A wrong Jacobian cannot change the solution (Newton converges or the step
# fails and shrinks), but a wrong qdot or udot, projection or dense output
# would not shrink with the tolerance.
STIFF_SAME_TOLERANCE_FACTOR = 500
STIFF_MATCH_FACTOR = 10
# The free body on a spring: measured 30x fewer evaluations; its swing and
# tumble are faster than the chain's, so cvode's steps are shorter.
FREE_BODY_EVALUATION_RATIO = 10


def simulate_with_stats(capstan, model, csv, *extra):
    """`capstan simulate --stats`: (header, rows, statistics, wall seconds)."""
    start = time.monotonic()
    proc = check_ok(run(capstan, "simulate", model, "--stats", "-o", csv, *extra), f"simulate {' '.join(map(str, extra))}")
    seconds = time.monotonic() - start
    header, rows = read_csv(pathlib.Path(csv).read_text())
    return header, rows, statistics(proc.stderr), seconds


def evaluations(stats):
    return stats["right-hand-side evaluations"] + stats.get("for difference-quotient Jacobians", 0)


def stiff(capstan):
    """One driver is built (the stiff chain's, cvode with derivatives, which
    examples.capstan_test builds too: the same cache entry); every other run
    is interpreted, the same integrators on the interpreter's dynamics and
    derivatives, so that the test costs one compilation."""
    failures = []
    with tempfile.TemporaryDirectory() as d:
        d = pathlib.Path(d)
        tol = 1e-6  # the annotation's
        # The annotation's integrator: cvode, with the exact Jacobian, generated.
        header, cv_rows, (name, method, cv), _ = simulate_with_stats(capstan, STIFF_CHAIN, d / "cvode.csv")
        if name != "cvode" or "exact Jacobian" not in method:
            failures.append(f"the annotation's integrator should be cvode with the exact Jacobian, got {name}: {method}")
        if cv["for difference-quotient Jacobians"] != 0:
            failures.append("the exact Jacobian should need no right-hand-side evaluations")
        _, dp_rows, (name, _, dp), dp_seconds = simulate_with_stats(capstan, STIFF_CHAIN, d / "dopri5.csv",
                                                                    "--integrator", "dopri5", "--interpret")
        if name != "dopri5":
            failures.append(f"--integrator dopri5 should win over the annotation, got {name}")
        _, tight_rows, (_, _, tight), _ = simulate_with_stats(capstan, STIFF_CHAIN, d / "cvode_tight.csv", "--tol",
                                                              tol / 100)
        columns = state_columns(header)
        ratio = dp["right-hand-side evaluations"] / evaluations(cv)
        tight_ratio = dp["right-hand-side evaluations"] / evaluations(tight)
        same = max_difference(cv_rows, dp_rows, columns)
        matched = max_difference(tight_rows, dp_rows, columns)
        print(f"stiff chain, --tol {tol:g}: cvode {cv['steps']:.0f} steps, {evaluations(cv):.0f} right-hand-side "
              f"evaluations, {cv['Newton iterations']:.0f} Newton iterations, {cv['Jacobian evaluations']:.0f} "
              f"Jacobians, {cv['error-test failures']:.0f} error-test failures; dopri5 {dp['steps']:.0f} steps, "
              f"{dp['right-hand-side evaluations']:.0f} evaluations: {ratio:.0f}x fewer; they differ by {same:.2e} "
              f"(relative to each signal's scale)")
        print(f"stiff chain, cvode at --tol {tol / 100:g}: {evaluations(tight):.0f} evaluations ({tight_ratio:.0f}x "
              f"fewer than dopri5 at {tol:g}); differs from dopri5 by {matched:.2e}")
        if ratio < STIFF_EVALUATION_RATIO or tight_ratio < STIFF_EVALUATION_RATIO:
            failures.append(f"cvode takes only {ratio:.1f}x ({tight_ratio:.1f}x at --tol {tol / 100:g}) fewer "
                            f"evaluations than dopri5 (need {STIFF_EVALUATION_RATIO})")
        if same > STIFF_SAME_TOLERANCE_FACTOR * tol:
            failures.append(f"cvode and dopri5 at --tol {tol:g} differ by {same:.2e} > {STIFF_SAME_TOLERANCE_FACTOR} x tol")
        if matched > STIFF_MATCH_FACTOR * tol or matched > same / 10:
            failures.append(f"cvode at --tol {tol / 100:g} differs from dopri5 by {matched:.2e}: not within "
                            f"{STIFF_MATCH_FACTOR} x {tol:g}, or not 10x closer than at {tol:g} ({same:.2e})")
        # The interpreter: the same method with its dual-number derivatives,
        # the same steps as the generated code's to round-off.
        _, in_rows, (name, method, interp), in_seconds = simulate_with_stats(capstan, STIFF_CHAIN,
                                                                             d / "interpreted.csv", "--interpret")
        difference = max_difference(in_rows, cv_rows, columns)
        print(f"stiff chain --interpret: {interp['steps']:.0f} steps ({method}); max difference to generated "
              f"{difference:.2e}")
        if name != "cvode" or "exact Jacobian" not in method or interp["steps"] != cv["steps"]:
            failures.append(f"--interpret should run cvode with the exact Jacobian and the generated code's "
                            f"{cv['steps']:.0f} steps, got {name}: {method}, {interp['steps']:.0f} steps")
        if difference > tol:
            failures.append(f"interpreted and generated cvode differ by {difference:.2e} > {tol:g}")
        # For comparison, CVODE's own difference-quotient Jacobian (nq + nu
        # evaluations each, the Newton iteration on an approximate matrix):
        # the same solution to the tolerance, with more evaluations.
        _, dq_rows, (_, method, dq), dq_seconds = simulate_with_stats(
            capstan, STIFF_CHAIN, d / "quotients.csv", "--interpret", "--jacobian", "quotients")
        quotient_difference = max_difference(dq_rows, in_rows, columns)
        print(f"stiff chain --interpret --jacobian quotients: {dq['steps']:.0f} steps, {evaluations(dq):.0f} "
              f"evaluations ({dq['for difference-quotient Jacobians']:.0f} for {dq['Jacobian evaluations']:.0f} "
              f"Jacobians), {dq['Newton iterations']:.0f} Newton iterations, {dq_seconds:.2f} s wall; exact "
              f"Jacobian {evaluations(interp):.0f} evaluations, {interp['Newton iterations']:.0f} Newton iterations, "
              f"{in_seconds:.2f} s wall (dopri5 {dp_seconds:.2f} s); the two differ by {quotient_difference:.2e}")
        if "difference-quotient Jacobian" not in method or dq["for difference-quotient Jacobians"] <= 0:
            failures.append(f"--jacobian quotients should use difference quotients, got {method}")
        if evaluations(dq) <= evaluations(interp):
            failures.append(f"difference quotients took {evaluations(dq):.0f} evaluations, no more than the exact "
                            f"Jacobian's {evaluations(interp):.0f}")
        if quotient_difference > STIFF_SAME_TOLERANCE_FACTOR * tol:
            failures.append(f"cvode with difference quotients differs by {quotient_difference:.2e} > "
                            f"{STIFF_SAME_TOLERANCE_FACTOR} x tol")
        # Quaternions: a free body on a stiff spring; raw q in the Jacobian.
        header, cv_rows, (_, method, cv), _ = simulate_with_stats(capstan, STIFF_FREE_BODY, d / "free_cvode.csv",
                                                                  "--integrator", "cvode", "--tol", tol / 100,
                                                                  "--interpret")
        _, dp_rows, (_, _, dp), _ = simulate_with_stats(capstan, STIFF_FREE_BODY, d / "free_dopri5.csv",
                                                        "--integrator", "dopri5", "--tol", tol, "--interpret")
        difference = max_difference(cv_rows, dp_rows, state_columns(header))
        ratio = dp["right-hand-side evaluations"] / evaluations(cv)
        norms = [math.sqrt(sum(r[f"hang.q[{k}]"] ** 2 for k in range(1, 5))) for r in cv_rows]
        per_step = cv["Newton iterations"] / cv["steps"]
        print(f"stiff free body: cvode at --tol {tol / 100:g} {cv['steps']:.0f} steps, {per_step:.2f} Newton iterations "
              f"per step, {cv['Jacobian evaluations']:.0f} Jacobians, {ratio:.0f}x fewer evaluations than dopri5 at "
              f"{tol:g}; they differ by {difference:.2e}; |quaternion| - 1 within "
              f"{max(abs(n - 1) for n in norms):.1e}")
        if "exact Jacobian" not in method or difference > STIFF_MATCH_FACTOR * tol or \
                ratio < FREE_BODY_EVALUATION_RATIO:
            failures.append(f"free body: {method}, difference {difference:.2e}, {ratio:.1f}x fewer evaluations")
        if max(abs(n - 1) for n in norms) > 1e-12:
            failures.append("free body: the recorded quaternions are not normalized")
    for f in failures:
        print("FAILED:", f)
    return 1 if failures else 0


def cvode_nonfinite(capstan):
    failures = []
    with tempfile.TemporaryDirectory() as d:
        csv = pathlib.Path(d) / "trajectory.csv"
        line = next(i + 1 for i, l in enumerate(SINGULAR.read_text().split("\n")) if "pivot.tau =" in l)
        # The torque is NaN after tRoot = 0.3: cvode's steps past it fail until it gives up.
        for extra in ([], ["--interpret"]):
            what = "cvode" + (" --interpret" if extra else "")
            proc = run(capstan, "simulate", SINGULAR, "--t-end", 1, "--dt", 0.01, "--integrator", "cvode",
                       "--set", "tPole=-1", "--set", "tRoot=0.3", "-o", csv, *extra)
            message = proc.stderr
            m = re.search(r"non-finite state in the step from t = (\S+) to t = (\S+): coordinate \d+ \(`pivot\.u\[1\]`\)",
                          message)
            located = re.search(rf"singular\.cap:{line}:\d+: error: the force law for `pivot\.tau` is not a number "
                                rf"\(NaN\) at t = (\S+);", message)
            if proc.returncode != 1 or not m or not 0.29 <= float(m.group(1)) <= 0.3 or \
                    not 0.3 <= float(m.group(2)) <= 0.31:
                failures.append(f"{what}: exit {proc.returncode}; expected a non-finite state just before t = 0.3 "
                                f"naming `pivot.u[1]`:\n{message}")
            if not located or not float(located.group(1)) >= 0.3:
                failures.append(f"{what}: the force law should be named at its line {line}:\n{message}")
            # Output times before the failure: 0, 0.01, ..., 0.29 (cvode's last
            # step ends a negligible step, 1e-12 s, before 0.3).
            _, rows = read_csv(csv.read_text())
            times = [r["time"] for r in rows]
            if len(rows) != 30 or abs(times[-1] - 0.29) > 1e-12 or \
                    not all(math.isfinite(v) for r in rows for v in r.values()):
                failures.append(f"{what}: expected the 30 rows t = 0 .. 0.29 to be kept, got {len(rows)} "
                                f"ending at {times[-1]}")
            print(f"nonfinite {what}: {message.strip()}; {len(rows)} rows up to t = {times[-1]}")
    for f in failures:
        print("FAILED:", f)
    return 1 if failures else 0


# cvode on a model with constraints: its udot comes from the constraint
# solver, which the generated derivatives do not cover, so CVODE's own
# difference quotients (with a note), and CVODE's projection is the
# constraint projection. Interpreted: no driver to build.
CVODE_CONSTRAINT_ERROR = 1e-9     # the projection's tolerance is 1e-10
CVODE_CONSTRAINT_AGREEMENT = 1e-4  # vs dopri5 at --tol 1e-8, relative to each signal's scale


def cvode_constraints(capstan):
    failures = []
    with tempfile.TemporaryDirectory() as d:
        d = pathlib.Path(d)
        common = ["--t-end", "1", "--tol", "1e-8", "--interpret", "--constraint-errors"]
        proc = check_ok(run(capstan, "simulate", FOURBAR, "--integrator", "cvode", "--stats", "-o", d / "cvode.csv",
                            *common), "simulate fourbar --integrator cvode")
        header, cv_rows = read_csv((d / "cvode.csv").read_text())
        _, method, stats = statistics(proc.stderr)
        check_ok(run(capstan, "simulate", FOURBAR, "--integrator", "dopri5", "-o", d / "dopri5.csv", *common),
                 "simulate fourbar --integrator dopri5")
        _, dp_rows = read_csv((d / "dopri5.csv").read_text())
        errors = [c for c in header if c.endswith("_error")]
        worst = max(abs(r[c]) for r in cv_rows for c in errors)
        difference = max_difference(cv_rows, dp_rows, state_columns(header))
        print(f"fourbar, cvode: {method}; {stats['steps']:.0f} steps, {stats['projections']:.0f} projections; "
              f"largest constraint error {worst:.1e}; differs from dopri5 by {difference:.1e}")
        if "note: the model has constraints" not in proc.stderr or "difference-quotient Jacobian" not in method:
            failures.append(f"cvode on a model with constraints should use difference quotients, with a note:\n"
                            f"{proc.stderr}")
        if not errors or worst > CVODE_CONSTRAINT_ERROR:
            failures.append(f"the loop should stay closed to {CVODE_CONSTRAINT_ERROR:g}: {worst:.1e} ({errors})")
        if stats["projections"] < stats["steps"]:
            failures.append("CVODE's projection should run after every step")
        if difference > CVODE_CONSTRAINT_AGREEMENT:
            failures.append(f"cvode and dopri5 differ by {difference:.1e} > {CVODE_CONSTRAINT_AGREEMENT:g}")
    for f in failures:
        print("FAILED:", f)
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--capstan", required=True)
    ap.add_argument("mode", choices=["bad_input", "period", "energy", "contact", "nonfinite", "bench", "interrupt", "builtins", "crash", "guard", "orphans",
                                     "full_disk", "lost_output",
                                     "damaged_cache", "one_build",
                                     "external_forces", "stiff", "cvode_nonfinite", "cvode_constraints", "list"])
    ap.add_argument("case", nargs="?")
    opts = ap.parse_args()
    capstan = os.path.abspath(opts.capstan)
    if opts.mode == "list":
        print(";".join(CASES))
        return 0
    if opts.mode == "bad_input":
        return bad_input(capstan, opts.case)
    return {"period": period, "energy": energy, "contact": contact, "nonfinite": nonfinite, "bench": bench,
            "interrupt": interrupt, "builtins": builtins, "crash": crash, "guard": guard, "orphans": orphans, "full_disk": full_disk, "lost_output": lost_output, "damaged_cache": damaged_cache, "one_build": one_build, "external_forces": external_forces, "stiff": stiff,
            "cvode_nonfinite": cvode_nonfinite, "cvode_constraints": cvode_constraints}[opts.mode](capstan)


if __name__ == "__main__":
    sys.exit(main())
