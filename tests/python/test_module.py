"""The Python module against the command line: the same runs, numbers,
refusals and locations (docs/python.md). Run by CTest as python.module with
PYTHONPATH=build/python and CAPSTAN the build's capstan; the examples
sampled here cover a tree, a model with constraints, a bushing and a cable.
"""

import csv
import io
import json
import os
import subprocess
import threading
import time

import numpy as np
import pytest

import capstan

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")
# A tree, a closed loop (constraints, projection), a bushing, a cable over a surface.
SAMPLED = ["double_pendulum.cap", "fourbar.cap", "bushing.cap", "cable.cap"]


def cli(*args):
    """capstan ARGS...: (status, stdout, stderr without build progress)."""
    p = subprocess.run([capstan.capstan_executable()] + list(args), capture_output=True, text=True,
                       env=dict(os.environ, NO_COLOR="1"), cwd=ROOT)
    err = "\n".join(l for l in p.stderr.replace("\r", "\n").splitlines()
                    if l and not l.startswith(("capstan: compiling", "capstan: compiled")))
    return p.returncode, p.stdout, err


def read_csv(text):
    rows = list(csv.reader(io.StringIO(text)))
    return rows[0], np.array([[float(x) for x in r] for r in rows[1:]])


@pytest.fixture(scope="module")
def models():
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        yield {name: capstan.compile(os.path.join("examples", name)) for name in SAMPLED}
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("name", SAMPLED)
def test_simulate_equals_cli(models, name):
    m = models[name]
    t_end = 0.5
    status, out, err = cli("simulate", os.path.join("examples", name), "--t-end", str(t_end))
    assert status == 0, err
    names, values = read_csv(out)
    r = m.simulate(t_end)
    assert r.columns == names
    assert r.values.shape == values.shape
    # The CSV holds 15 significant digits; the module the doubles themselves.
    np.testing.assert_allclose(r.values, values, rtol=1e-12, atol=1e-12)


def test_simulate_options_and_settings_equal_cli(models):
    m = models["double_pendulum.cap"]
    status, out, err = cli("simulate", "examples/double_pendulum.cap", "--t-end", "0.4", "--dt", "0.02",
                           "--integrator", "rk4", "--set", "m1=1.7")
    assert status == 0, err
    names, values = read_csv(out)
    r = m.simulate(0.4, dt=0.02, integrator="rk4", set={"m1": 1.7})
    np.testing.assert_allclose(r.values, values, rtol=1e-12, atol=1e-12)
    # `set` is for that run only.
    assert m.params["m1"] == 1.0
    again = m.simulate(0.4, dt=0.02, integrator="rk4")
    assert not np.allclose(again.values, r.values)
    only = m.simulate(0.4, dt=0.02, integrator="rk4", outputs=["shoulder.q[1]"])
    assert only.columns == ["time", "shoulder.q[1]"]


def test_eval_equals_cli(models, tmp_path):
    m = models["double_pendulum.cap"]
    q = np.array([0.3, -0.7])
    u = np.array([1.1, 0.4])
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"q": {"shoulder": [0.3], "elbow": [-0.7]}, "u": {"shoulder": [1.1], "elbow": [0.4]}}))
    status, out, err = cli("eval", "examples/double_pendulum.cap", "--state", str(state))
    assert status == 0, err
    ref = json.loads(out)
    e = m.evaluate(q, u)
    np.testing.assert_allclose(e["udot"], np.concatenate([ref["udot"][j] for j in ("shoulder", "elbow")]),
                               rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(e["mass_matrix"], np.array(ref["mass_matrix"]), rtol=1e-13, atol=1e-13)
    assert e["kinetic_energy"] == pytest.approx(ref["kinetic_energy"], rel=1e-13)
    np.testing.assert_allclose(m.forward_dynamics(q, u), e["udot"], rtol=1e-14, atol=1e-14)
    # eval: capstan eval's own JSON, with the model's parameter values.
    assert m.eval(json.loads(state.read_text())) == ref
    m.params["m2"] = 0.9
    status, out, _ = cli("eval", "examples/double_pendulum.cap", "--state", str(state), "--set", "m2=0.9")
    assert m.eval({"q": {"shoulder": q[:1], "elbow": q[1:]}, "u": {"shoulder": u[:1], "elbow": u[1:]}}) == json.loads(out)
    m.params["m2"] = 0.6


def test_constrained_forward_dynamics_is_the_solver_s(models):
    m = models["fourbar.cap"]
    e = m.evaluate()
    q, u = m.initial_state()
    np.testing.assert_allclose(m.forward_dynamics(q, u), e["udot"], rtol=1e-12, atol=1e-12)
    # The acceleration-level constraint errors vanish at eval's udot.
    assert np.max(np.abs(e["acceleration_errors"])) < 1e-9


def test_derivatives_against_differences():
    m = capstan.compile(os.path.join(EXAMPLES, "double_pendulum.cap"), derivatives=True)
    q = np.array([0.3, -0.7])
    u = np.array([1.1, 0.4])
    dq, du, dtau = m.derivatives(q, u)
    h = 1e-6
    for k in range(m.nq):
        e = np.zeros(m.nq)
        e[k] = h
        fd = (m.forward_dynamics(q + e, u) - m.forward_dynamics(q - e, u)) / (2 * h)
        np.testing.assert_allclose(dq[:, k], fd, rtol=1e-6, atol=1e-6)
    assert m.has_derivatives


def test_parameter_refusals_equal_cli(models):
    m = models["double_pendulum.cap"]
    for setting in ("m1=-2", "nosuch=1", "m1=x"):
        name, value = setting.split("=")
        status, _, err = cli("simulate", "examples/double_pendulum.cap", "--t-end", "0.1", "--set", setting)
        assert status == 1
        with pytest.raises(capstan.ParameterError) as refused:
            m.params[name] = value if value == "x" else float(value)
        # The CLI's words, all of them (the module's value is written as capstan takes it).
        assert refused.value.message == err.replace("=-2`", "=-2.0`")
    # Folded into the generated code: an armature the model does not give, a Boolean.
    fourbar = models["fourbar.cap"]
    for setting, value in (("crankPivot.armature=0.1", 0.1), ("crankPivot.cut=true", True)):
        status, _, err = cli("simulate", "examples/fourbar.cap", "--t-end", "0.1", "--set", setting)
        assert status == 1 and "[SettingFoldedParameter]" in err
        with pytest.raises(capstan.ParameterError) as refused:
            fourbar.params[setting.split("=")[0]] = value
        assert refused.value.message == err
    assert m.params["m1"] == 1.0  # a refused value changes nothing
    m.params["m1"] = 2.0
    assert m.params["m1"] == 2.0
    m.params["m1"] = 1.0


def test_errors_carry_locations(tmp_path):
    bad = tmp_path / "bad.cap"
    bad.write_text("model Bad\n  parameter Real m = ;\nend Bad;\n")
    with pytest.raises(capstan.CapstanError) as e:
        capstan.compile(str(bad))
    assert e.value.location == (str(bad), 2, 22)
    assert e.value.errors[0]["kind"] == "ExpectedExpression"


def test_failed_run_keeps_its_rows(models):
    m = models["double_pendulum.cap"]
    with pytest.raises(capstan.SimulationError) as e:
        m.simulate(5.0, timeout=1e-9)
    assert "--timeout" in e.value.message or "longer than" in e.value.message
    assert e.value.trajectory.columns[0] == "time"
    with pytest.raises(capstan.CapstanError):
        m.simulate(1.0, tol=1e-20)


def test_gil_released_while_simulating(models):
    m = models["double_pendulum.cap"]  # chaotic: dopri5 keeps its steps short, about 0.4 s of computing
    done = threading.Event()
    result = {}

    def run():
        result["r"] = m.simulate(10000.0, dt=10.0)
        done.set()

    ticks = 0
    thread = threading.Thread(target=run)
    started = time.perf_counter()
    thread.start()
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    thread.join()
    elapsed = time.perf_counter() - started
    # With the GIL held for the run this thread would not tick at all.
    assert elapsed > 0.05 and ticks > 10, (elapsed, ticks)
    assert result["r"]["time"][-1] == 10000.0


def test_progress_and_a_callback_that_stops_the_run(models):
    m = models["double_pendulum.cap"]
    seen = []
    r = m.simulate(2000.0, dt=1.0, progress=seen.append)
    assert r["time"][-1] == 2000.0 and seen and seen[-1] == 1.0 and seen == sorted(seen)

    def stop(fraction):
        if fraction > 0:
            raise RuntimeError("enough")

    with pytest.raises(RuntimeError, match="enough"):
        m.simulate(10000.0, dt=1.0, progress=stop)
    # The model is whole after it: the next run is the same as before.
    np.testing.assert_array_equal(m.simulate(2000.0, dt=1.0).values, r.values)
