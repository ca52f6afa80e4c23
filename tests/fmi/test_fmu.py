"""FMUs that `capstan fmu` writes, loaded by a small importer of our own
(ctypes: dlopen, and FMI 2.0's calling sequences for Model Exchange and
Co-Simulation): the trajectories of `capstan simulate`, FMU states that
round-trip, bad calls refused with a message, and a modelDescription.xml
with the structure the standard asks for. The sampled examples are a tree,
a bushing (quaternions), a cable and a closed loop (constraints)."""

import ctypes
import csv
import io
import os
import subprocess
import xml.etree.ElementTree as ET
import zipfile

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CAPSTAN = os.environ.get("CAPSTAN", os.path.join(ROOT, "build", "compiler", "capstan"))

OK, WARNING, DISCARD, ERROR, FATAL = range(5)
MODEL_EXCHANGE, CO_SIMULATION = 0, 1

LOGGER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p)


class Callbacks(ctypes.Structure):
    _fields_ = [("logger", LOGGER), ("allocateMemory", ctypes.c_void_p), ("freeMemory", ctypes.c_void_p),
                ("stepFinished", ctypes.c_void_p), ("componentEnvironment", ctypes.c_void_p)]


class EventInfo(ctypes.Structure):
    _fields_ = [("newDiscreteStatesNeeded", ctypes.c_int), ("terminateSimulation", ctypes.c_int),
                ("nominalsOfContinuousStatesChanged", ctypes.c_int), ("valuesOfContinuousStatesChanged", ctypes.c_int),
                ("nextEventTimeDefined", ctypes.c_int), ("nextEventTime", ctypes.c_double)]


# Every function of FMI 2.0 (sections 2.1, 3.2, 4.2), which an FMU of both interfaces must export.
FUNCTIONS = """fmi2GetTypesPlatform fmi2GetVersion fmi2SetDebugLogging fmi2Instantiate fmi2FreeInstance
fmi2SetupExperiment fmi2EnterInitializationMode fmi2ExitInitializationMode fmi2Terminate fmi2Reset fmi2GetReal
fmi2GetInteger fmi2GetBoolean fmi2GetString fmi2SetReal fmi2SetInteger fmi2SetBoolean fmi2SetString fmi2GetFMUstate
fmi2SetFMUstate fmi2FreeFMUstate fmi2SerializedFMUstateSize fmi2SerializeFMUstate fmi2DeSerializeFMUstate
fmi2GetDirectionalDerivative fmi2EnterEventMode fmi2NewDiscreteStates fmi2EnterContinuousTimeMode
fmi2CompletedIntegratorStep fmi2SetTime fmi2SetContinuousStates fmi2GetDerivatives fmi2GetEventIndicators
fmi2GetContinuousStates fmi2GetNominalsOfContinuousStates fmi2SetRealInputDerivatives fmi2GetRealOutputDerivatives
fmi2DoStep fmi2CancelStep fmi2GetStatus fmi2GetRealStatus fmi2GetIntegerStatus fmi2GetBooleanStatus
fmi2GetStringStatus""".split()


class Fmu:
    """An unpacked FMU: its description and its binary's functions."""

    def __init__(self, path, folder):
        with zipfile.ZipFile(path) as z:
            z.extractall(folder)
        self.folder = folder
        self.description = ET.parse(os.path.join(folder, "modelDescription.xml")).getroot()
        self.guid = self.description.get("guid").encode()
        self.variables = self.description.find("ModelVariables").findall("ScalarVariable")
        self.vr = {v.get("name"): int(v.get("valueReference")) for v in self.variables}
        self.nx = len(self.description.find("ModelStructure").find("Derivatives"))
        interfaces = [e for e in self.description if e.tag in ("ModelExchange", "CoSimulation")]
        self.identifier = interfaces[0].get("modelIdentifier")
        self.interfaces = [e.tag for e in interfaces]
        self.binary = os.path.join(folder, "binaries", "linux64", self.identifier + ".so")
        self.lib = ctypes.CDLL(self.binary, mode=os.RTLD_LOCAL | os.RTLD_NOW)
        L = self.lib
        c, vr_p, dbl_p = ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_double)
        L.fmi2Instantiate.restype = c
        L.fmi2Instantiate.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p,
                                      ctypes.POINTER(Callbacks), ctypes.c_int, ctypes.c_int]
        L.fmi2FreeInstance.argtypes = [c]
        L.fmi2SetupExperiment.argtypes = [c, ctypes.c_int, ctypes.c_double, ctypes.c_double, ctypes.c_int,
                                          ctypes.c_double]
        for f in ("fmi2EnterInitializationMode", "fmi2ExitInitializationMode", "fmi2Terminate", "fmi2Reset",
                  "fmi2EnterEventMode", "fmi2EnterContinuousTimeMode", "fmi2CancelStep"):
            getattr(L, f).argtypes = [c]
        L.fmi2GetReal.argtypes = L.fmi2SetReal.argtypes = [c, vr_p, ctypes.c_size_t, dbl_p]
        L.fmi2SetTime.argtypes = [c, ctypes.c_double]
        L.fmi2SetContinuousStates.argtypes = L.fmi2GetDerivatives.argtypes = [c, dbl_p, ctypes.c_size_t]
        L.fmi2GetContinuousStates.argtypes = [c, dbl_p, ctypes.c_size_t]
        L.fmi2NewDiscreteStates.argtypes = [c, ctypes.POINTER(EventInfo)]
        L.fmi2CompletedIntegratorStep.argtypes = [c, ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                                                  ctypes.POINTER(ctypes.c_int)]
        L.fmi2DoStep.argtypes = [c, ctypes.c_double, ctypes.c_double, ctypes.c_int]
        L.fmi2GetFMUstate.argtypes = [c, ctypes.POINTER(ctypes.c_void_p)]
        L.fmi2SetFMUstate.argtypes = [c, ctypes.c_void_p]
        L.fmi2FreeFMUstate.argtypes = [c, ctypes.POINTER(ctypes.c_void_p)]
        L.fmi2SerializedFMUstateSize.argtypes = [c, ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
        L.fmi2SerializeFMUstate.argtypes = [c, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
        L.fmi2DeSerializeFMUstate.argtypes = [c, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]
        L.fmi2GetVersion.restype = L.fmi2GetTypesPlatform.restype = ctypes.c_char_p
        L.fmi2GetDirectionalDerivative.argtypes = [c, vr_p, ctypes.c_size_t, vr_p, ctypes.c_size_t, dbl_p, dbl_p]
        self.messages = []
        self.logger = LOGGER(lambda env, name, status, category, message: self.messages.append(message.decode()))
        self.callbacks = Callbacks(self.logger, None, None, None, None)

    def instantiate(self, kind, guid=None):
        return self.lib.fmi2Instantiate(b"test", kind, guid or self.guid, b"", ctypes.byref(self.callbacks), 0, 0)

    def get(self, c, refs):
        refs = list(refs)
        out = (ctypes.c_double * len(refs))()
        assert self.lib.fmi2GetReal(c, (ctypes.c_uint * len(refs))(*refs), len(refs), out) == OK, self.messages
        return np.array(out[:])

    def directional(self, c, unknowns, knowns):
        """J[i, j] = d unknowns[i] / d knowns[j] (value references) by fmi2GetDirectionalDerivative, a column per
        known, at the current state."""
        J = np.zeros((len(unknowns), len(knowns)))
        for j, known in enumerate(knowns):
            out = (ctypes.c_double * len(unknowns))()
            assert self.lib.fmi2GetDirectionalDerivative(c, (ctypes.c_uint * len(unknowns))(*unknowns), len(unknowns),
                                                         (ctypes.c_uint * 1)(known), 1, (ctypes.c_double * 1)(1.0),
                                                         out) == OK, self.messages
            J[:, j] = out[:]
        return J

    def start(self, kind, tolerance=None):
        c = self.instantiate(kind)
        assert c, self.messages
        L = self.lib
        assert L.fmi2SetupExperiment(c, tolerance is not None, tolerance or 0.0, 0.0, 0, 0.0) == OK
        assert L.fmi2EnterInitializationMode(c) == OK
        assert L.fmi2ExitInitializationMode(c) == OK, self.messages
        return c


def build(name, folder, *options):
    path = os.path.join(folder, name + ".fmu")
    p = subprocess.run([CAPSTAN, "fmu", os.path.join(ROOT, "examples", name + ".cap"), "-o", path] + list(options),
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return Fmu(path, os.path.join(folder, name)), p.stderr


def simulate(name, *options):
    p = subprocess.run([CAPSTAN, "simulate", os.path.join(ROOT, "examples", name + ".cap")] + list(options),
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    rows = list(csv.reader(io.StringIO(p.stdout)))
    return rows[0], np.array([[float(x) for x in r] for r in rows[1:]])


@pytest.fixture(scope="module")
def fmus(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("fmus"))
    return {name: build(name, folder) for name in ("double_pendulum", "bushing", "cable", "fourbar")}


def state_columns(fmu, names):
    """The CSV columns of the states, in the FMU's state order (value references of q then u)."""
    states = [v.get("name") for v in fmu.variables if v.get("causality") == "local" and not v.get("name").startswith("der(")]
    return [names.index(s) for s in states]


@pytest.mark.parametrize("name", ["double_pendulum", "bushing", "cable"])
def test_model_exchange_with_rk4_equals_simulate(fmus, name):
    fmu, _ = fmus[name]
    h, t_end = 0.01, 0.5
    names, expected = simulate(name, "--integrator", "rk4", "--dt", str(h), "--t-end", str(t_end))
    c = fmu.start(MODEL_EXCHANGE)
    L, nx = fmu.lib, fmu.nx
    info = EventInfo()
    assert L.fmi2NewDiscreteStates(c, ctypes.byref(info)) == OK
    assert L.fmi2EnterContinuousTimeMode(c) == OK
    x = (ctypes.c_double * nx)()
    assert L.fmi2GetContinuousStates(c, x, nx) == OK

    def f(t, state):
        assert L.fmi2SetTime(c, t) == OK
        assert L.fmi2SetContinuousStates(c, (ctypes.c_double * nx)(*state), nx) == OK, fmu.messages
        dx = (ctypes.c_double * nx)()
        assert L.fmi2GetDerivatives(c, dx, nx) == OK, fmu.messages
        return np.array(dx[:])

    state, rows = np.array(x[:]), [np.array(x[:])]
    steps = int(round(t_end / h))
    for k in range(steps):  # the classical Runge-Kutta method, as capstan's rk4
        t = k * h
        k1 = f(t, state)
        k2 = f(t + h / 2, state + h / 2 * k1)
        k3 = f(t + h / 2, state + h / 2 * k2)
        k4 = f(t + h, state + h * k3)
        state = state + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        entering, terminate = ctypes.c_int(), ctypes.c_int()
        assert L.fmi2SetContinuousStates(c, (ctypes.c_double * nx)(*state), nx) == OK
        assert L.fmi2CompletedIntegratorStep(c, 1, ctypes.byref(entering), ctypes.byref(terminate)) == OK
        assert not entering.value and not terminate.value
        rows.append(state)
    L.fmi2Terminate(c)
    L.fmi2FreeInstance(c)
    # capstan normalizes quaternions after each step; this importer does not, as an FMI master would not.
    np.testing.assert_allclose(np.array(rows), expected[:, state_columns(fmu, names)], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", ["double_pendulum", "bushing", "cable", "fourbar"])
def test_co_simulation_equals_simulate(fmus, name):
    fmu, _ = fmus[name]
    h, t_end = 0.02, 0.5
    names, expected = simulate(name, "--dt", str(h), "--t-end", str(t_end), "--tol", "1e-10")
    c = fmu.start(CO_SIMULATION, tolerance=1e-10)
    outputs = [v for v in fmu.variables if v.get("causality") == "output"]
    refs = [fmu.vr[names[k]] for k in range(1, len(names))]  # every column after time: states, then outputs
    rows = [fmu.get(c, refs)]
    for k in range(int(round(t_end / h))):
        assert fmu.lib.fmi2DoStep(c, k * h, h, 1) == OK, fmu.messages
        rows.append(fmu.get(c, refs))
    fmu.lib.fmi2FreeInstance(c)
    assert len(outputs) == len(names) - 1 - fmu.nx
    # Each doStep starts the integrator anew: agreement to the tolerance, not to the last digit.
    np.testing.assert_allclose(np.array(rows), expected[:, 1:], rtol=1e-6, atol=1e-6)


def test_constrained_model_is_co_simulation_only(fmus, tmp_path):
    fmu, stderr = fmus["fourbar"]
    assert fmu.interfaces == ["CoSimulation"]
    assert "[FmuCoSimulationOnly]" in stderr
    assert not fmu.instantiate(MODEL_EXCHANGE)
    assert "no Model Exchange interface" in fmu.messages[-1]
    p = subprocess.run([CAPSTAN, "fmu", os.path.join(ROOT, "examples", "fourbar.cap"), "-o", str(tmp_path / "x.fmu"),
                        "--interface", "me"], capture_output=True, text=True)
    assert p.returncode == 1 and "[FmuModelExchangeConstraints]" in p.stderr
    assert not (tmp_path / "x.fmu").exists()


def test_fmu_state_round_trips(fmus):
    fmu, _ = fmus["double_pendulum"]
    L = fmu.lib
    c = fmu.start(CO_SIMULATION)
    refs = list(range(len(fmu.variables)))
    assert L.fmi2DoStep(c, 0.0, 0.1, 1) == OK
    state = ctypes.c_void_p()
    assert L.fmi2GetFMUstate(c, ctypes.byref(state)) == OK
    size = ctypes.c_size_t()
    assert L.fmi2SerializedFMUstateSize(c, state, ctypes.byref(size)) == OK
    data = ctypes.create_string_buffer(size.value)
    assert L.fmi2SerializeFMUstate(c, state, data, size) == OK
    before = fmu.get(c, refs)
    assert L.fmi2DoStep(c, 0.1, 0.1, 1) == OK
    after = fmu.get(c, refs)
    assert L.fmi2SetFMUstate(c, state) == OK
    np.testing.assert_array_equal(fmu.get(c, refs), before)
    assert L.fmi2DoStep(c, 0.1, 0.1, 1) == OK
    np.testing.assert_array_equal(fmu.get(c, refs), after)  # the same step from the same state
    restored = ctypes.c_void_p()
    assert L.fmi2DeSerializeFMUstate(c, data, size, ctypes.byref(restored)) == OK
    assert L.fmi2SetFMUstate(c, restored) == OK
    np.testing.assert_array_equal(fmu.get(c, refs), before)
    assert L.fmi2DeSerializeFMUstate(c, data, size.value - 3, ctypes.byref(ctypes.c_void_p())) == ERROR
    assert "cut short" in fmu.messages[-1]
    L.fmi2FreeFMUstate(c, ctypes.byref(state))
    L.fmi2FreeFMUstate(c, ctypes.byref(restored))
    L.fmi2FreeInstance(c)


def test_parameters_are_tunable(fmus):
    fmu, _ = fmus["double_pendulum"]
    c = fmu.start(CO_SIMULATION)
    m1 = fmu.vr["m1"]
    assert fmu.get(c, [m1])[0] == 1.0
    assert fmu.lib.fmi2SetReal(c, (ctypes.c_uint * 1)(m1), 1, (ctypes.c_double * 1)(1.7)) == OK
    for k in range(20):
        assert fmu.lib.fmi2DoStep(c, k * 0.02, 0.02, 1) == OK
    names, expected = simulate("double_pendulum", "--set", "m1=1.7", "--dt", "0.02", "--t-end", "0.4", "--tol", "1e-10")
    np.testing.assert_allclose(fmu.get(c, [fmu.vr[names[1]]]), expected[-1, 1:2], rtol=1e-3)
    fmu.lib.fmi2FreeInstance(c)


def test_every_function_present_and_bad_calls_refused(fmus):
    fmu, _ = fmus["double_pendulum"]
    for f in FUNCTIONS:
        assert hasattr(fmu.lib, f), f
    L = fmu.lib
    assert L.fmi2GetVersion() == b"2.0" and L.fmi2GetTypesPlatform() == b"default"
    assert not fmu.instantiate(CO_SIMULATION, guid=b"{not-this-one}")
    assert "is not this FMU's" in fmu.messages[-1]
    c = fmu.instantiate(CO_SIMULATION)
    assert L.fmi2DoStep(c, 0.0, 0.1, 1) == ERROR  # before initialization
    assert "may not be called" in fmu.messages[-1]
    assert L.fmi2EnterInitializationMode(c) == OK and L.fmi2ExitInitializationMode(c) == OK
    bad = (ctypes.c_uint * 1)(10 ** 6)
    assert L.fmi2GetReal(c, bad, 1, (ctypes.c_double * 1)()) == ERROR
    assert "no variable has value reference 1000000" in fmu.messages[-1]
    output = fmu.vr["kinetic_energy"]
    assert L.fmi2SetReal(c, (ctypes.c_uint * 1)(output), 1, (ctypes.c_double * 1)(1.0)) == ERROR
    assert "computed, not set" in fmu.messages[-1]
    assert L.fmi2SetReal(c, (ctypes.c_uint * 1)(fmu.vr["m1"]), 1, (ctypes.c_double * 1)(float("nan"))) == ERROR
    assert L.fmi2DoStep(c, 5.0, 0.1, 1) == ERROR  # not the FMU's time
    assert L.fmi2DoStep(c, 0.0, -0.1, 1) == ERROR
    assert L.fmi2GetDerivatives(c, (ctypes.c_double * fmu.nx)(), fmu.nx) == ERROR  # a Co-Simulation instance
    assert L.fmi2GetReal(c, None, 2, None) == ERROR  # null arrays with a count
    assert "a null array for 2 values" in fmu.messages[-1]
    L.fmi2FreeInstance(c)


def test_model_description_structure(fmus):
    for name, (fmu, _) in fmus.items():
        d = fmu.description
        assert d.get("fmiVersion") == "2.0"
        refs = [int(v.get("valueReference")) for v in fmu.variables]
        assert len(set(refs)) == len(refs), name
        units = {u.get("name") for u in d.find("UnitDefinitions")}
        for v in fmu.variables:
            real = v.find("Real")
            assert real.get("unit") is None or real.get("unit") in units, (name, v.get("name"))
            if real.get("derivative"):
                state = fmu.variables[int(real.get("derivative")) - 1]
                assert "der(" + state.get("name") + ")" == v.get("name")
        structure = d.find("ModelStructure")
        outputs = {int(u.get("index")) for u in structure.find("Outputs")}
        assert outputs == {k + 1 for k, v in enumerate(fmu.variables) if v.get("causality") == "output"}, name
        assert len(structure.find("Derivatives")) == fmu.nx
        # der(q) of a joint without a quaternion is its u: that one dependency, listed, and linear.
        for unknown in structure.find("Derivatives"):
            derivative = fmu.variables[int(unknown.get("index")) - 1].get("name")
            if unknown.get("dependenciesKind") == "constant":
                speed = fmu.variables[int(unknown.get("dependencies")) - 1].get("name")
                assert derivative.startswith("der(") and speed == derivative[4:-1].replace(".q[", ".u["), derivative
        if name == "double_pendulum":
            kinds = [u.get("dependenciesKind") for u in structure.find("Derivatives")]
            assert kinds == ["constant", "constant", None, None]
        initial = {int(u.get("index")) for u in structure.find("InitialUnknowns")}
        assert outputs <= initial
        # Loads with nothing but the C library: no C++ runtime, no SUNDIALS.
        needed = subprocess.run(["readelf", "-d", fmu.binary], capture_output=True, text=True).stdout
        libraries = {line.split("[")[1].split("]")[0] for line in needed.splitlines() if "(NEEDED)" in line}
        assert libraries <= {"libc.so.6", "libm.so.6", "ld-linux-x86-64.so.2"}, (name, libraries)
        assert os.path.exists(os.path.join(fmu.folder, "sources", "capstan_fmu.cpp"))
        assert os.path.exists(os.path.join(fmu.folder, "sources", "capstan", "sim", "fmu2.hpp"))


@pytest.mark.parametrize("name", ["double_pendulum", "bushing", "cable"])
def test_dependencies_hold(fmus, name):
    """The ModelStructure's dependencies (from the generated code's structure) name states only, and no unknown
    changes when a state it does not list changes: each state moved in turn from the start state. The potential
    energy lists no speed; a cable's columns (its path solver's) list nothing, which FMI reads as everything."""
    fmu, _ = fmus[name]
    structure = fmu.description.find("ModelStructure")
    unknowns = list(structure.find("Derivatives")) + list(structure.find("Outputs"))
    states = {k + 1 for k, v in enumerate(fmu.variables) if v.get("causality") == "local"
              and not v.get("name").startswith("der(")}
    first = min(states)
    listed = {}
    for u in unknowns:
        if u.get("dependencies") is not None:
            listed[int(u.get("index"))] = {int(k) for k in u.get("dependencies").split()}
            assert listed[int(u.get("index"))] <= states, (name, u.get("index"))
    names = {int(u.get("index")): fmu.variables[int(u.get("index")) - 1].get("name") for u in unknowns}
    by_name = {n: k for k, n in names.items()}
    speeds = {k for k in states if ".u[" in fmu.variables[k - 1].get("name")}
    if name == "cable":
        assert by_name["rope.length"] not in listed and by_name["potential_energy"] not in listed
    else:
        assert set(listed) == set(names), name  # every unknown's dependencies known
        assert listed[by_name["potential_energy"]] and not listed[by_name["potential_energy"]] & speeds
    L = fmu.lib
    c = fmu.start(MODEL_EXCHANGE)
    info = EventInfo()
    assert L.fmi2NewDiscreteStates(c, ctypes.byref(info)) == OK
    assert L.fmi2EnterContinuousTimeMode(c) == OK
    x0 = (ctypes.c_double * fmu.nx)()
    assert L.fmi2GetContinuousStates(c, x0, fmu.nx) == OK
    refs = [int(fmu.variables[k - 1].get("valueReference")) for k in names]

    def values(x):
        assert L.fmi2SetContinuousStates(c, (ctypes.c_double * fmu.nx)(*x), fmu.nx) == OK, fmu.messages
        return fmu.get(c, refs)

    base = values(list(x0))
    for j in range(fmu.nx):
        x = list(x0)
        x[j] += 1e-3
        moved = values(x) != base
        for k, index in enumerate(names):
            if index in listed and first + j not in listed[index]:
                assert not moved[k], (name, names[index], fmu.variables[first + j - 1].get("name"))
    L.fmi2FreeInstance(c)


def test_directional_derivatives(fmus, tmp_path):
    fmu, _ = build("double_pendulum", str(tmp_path), "--derivatives")
    me = [e for e in fmu.description if e.tag == "ModelExchange"][0]
    assert me.get("providesDirectionalDerivative") == "true"
    assert fmu.guid != fmus["double_pendulum"][0].guid  # another binary: one description cannot pass for the other's
    L, nx = fmu.lib, fmu.nx
    c = fmu.start(MODEL_EXCHANGE)
    x = np.array([0.3, -0.7, 1.1, 0.4])
    states = [fmu.vr[n] for n in ("shoulder.q[1]", "elbow.q[1]", "shoulder.u[1]", "elbow.u[1]")]
    unknowns = list(range(states[-1] + 1, len(fmu.variables)))  # der(q), der(u), then the outputs
    assert len(unknowns) == nx + 2

    def values(state):
        assert L.fmi2SetContinuousStates(c, (ctypes.c_double * nx)(*state), nx) == OK
        dx = (ctypes.c_double * nx)()
        assert L.fmi2GetDerivatives(c, dx, nx) == OK
        return np.concatenate([dx[:], fmu.get(c, unknowns[nx:])])

    values(x)
    J = fmu.directional(c, unknowns, states)
    h = 1e-6
    for j in range(nx):
        e = np.zeros(nx)
        e[j] = h
        np.testing.assert_allclose(J[:, j], (values(x + e) - values(x - e)) / (2 * h), rtol=1e-6, atol=1e-6)
    # The generated derivatives themselves, as `capstan eval --derivatives` gives them.
    state = tmp_path / "state.json"
    state.write_text('{"q": {"shoulder": [0.3], "elbow": [-0.7]}, "u": {"shoulder": [1.1], "elbow": [0.4]}}')
    p = subprocess.run([CAPSTAN, "eval", os.path.join(ROOT, "examples", "double_pendulum.cap"), "--state", str(state),
                        "--derivatives"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    import json
    d = json.loads(p.stdout)["derivatives"]
    np.testing.assert_allclose(J[2:4, 0:2], np.array(d["dudot_dq"]), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(J[2:4, 2:4], np.array(d["dudot_du"]), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(J[0:2], np.hstack([np.zeros((2, 2)), np.eye(2)]))  # der(q) = u
    # The outputs (kinetic, then potential energy) exactly, from the generated outputDerivatives:
    # dKE/du = M u, dPE/du = 0, and at rest dPE/dq = gravity's generalized force = -M udot.
    M = np.array(json.loads(p.stdout)["mass_matrix"])
    np.testing.assert_allclose(J[nx, 2:4], M @ x[2:4], rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(J[nx + 1, 2:4], np.zeros(2))
    rest = np.concatenate([x[:2], np.zeros(2)])
    values(rest)
    J[nx + 1, 0:2] = fmu.directional(c, [unknowns[nx + 1]], states[0:2])[0]
    state.write_text('{"q": {"shoulder": [0.3], "elbow": [-0.7]}, "u": {"shoulder": [0], "elbow": [0]}}')
    p = subprocess.run([CAPSTAN, "eval", os.path.join(ROOT, "examples", "double_pendulum.cap"), "--state", str(state)],
                       capture_output=True, text=True)
    r = json.loads(p.stdout)
    udot = np.array([r["udot"]["shoulder"][0], r["udot"]["elbow"][0]])
    np.testing.assert_allclose(J[nx + 1, 0:2], -np.array(r["mass_matrix"]) @ udot, rtol=1e-12, atol=1e-12)
    bad = (ctypes.c_double * 1)()
    assert L.fmi2GetDirectionalDerivative(c, (ctypes.c_uint * 1)(unknowns[0]), 1, (ctypes.c_uint * 1)(0), 1,
                                          (ctypes.c_double * 1)(1.0), bad) == ERROR
    assert "is not a continuous state" in fmu.messages[-1]
    L.fmi2FreeInstance(c)


def fmu_with_derivatives(model, tmp_path):
    """`capstan fmu MODEL --derivatives`, unpacked and loaded."""
    path = str(tmp_path / "model.fmu")
    p = subprocess.run([CAPSTAN, "fmu", model, "-o", path, "--derivatives"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return Fmu(path, str(tmp_path / "model"))


def eval_derivatives(model, tmp_path, state):
    """`capstan eval --derivatives` at the state (STATE.json's text): {False: generated, True: interpreted}."""
    import json
    path = tmp_path / "state.json"
    path.write_text(state)
    d = {}
    for mode in ([], ["--interpret"]):
        p = subprocess.run([CAPSTAN, "eval", model, "--state", str(path), "--derivatives"] + mode,
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        d[bool(mode)] = json.loads(p.stdout)["derivatives"]
    return d


def test_directional_derivatives_through_an_external_function(tmp_path):
    """examples/external_friction: the pivot's friction is a C++ function whose derivative annotation names its
    differential, so the FMU's directional derivatives go through it: against central differences of the FMU's
    derivatives and outputs (1e-6), and `capstan eval --derivatives` (generated) against the interpreter's dual
    numbers calling the same C++ differential (1e-12). Near w = 0 the smoothed friction is steep: the test
    state sits in the Stribeck region."""
    model = os.path.join(ROOT, "examples", "external_friction", "friction.cap")
    fmu = fmu_with_derivatives(model, tmp_path)
    L, nx = fmu.lib, fmu.nx
    c = fmu.start(MODEL_EXCHANGE)
    x = np.array([0.3, 0.05])
    states = [fmu.vr["pivot.q[1]"], fmu.vr["pivot.u[1]"]]
    unknowns = [fmu.vr[n] for n in ("der(pivot.q[1])", "der(pivot.u[1])", "frictionTorque")]

    def values(state):
        assert L.fmi2SetContinuousStates(c, (ctypes.c_double * nx)(*state), nx) == OK
        return fmu.get(c, unknowns)

    values(x)
    J = fmu.directional(c, unknowns, states)
    assert abs(J[2, 1]) > 1.0  # the friction's slope in the Stribeck region, through the C++ differential
    h = 1e-7
    for j in range(nx):
        e = np.zeros(nx)
        e[j] = h
        np.testing.assert_allclose(J[:, j], (values(x + e) - values(x - e)) / (2 * h), rtol=1e-6, atol=1e-6)
    L.fmi2FreeInstance(c)
    d = eval_derivatives(model, tmp_path, '{"q": {"pivot": [0.3]}, "u": {"pivot": [0.05]}}')
    for key in ("dudot_dq", "dudot_du"):
        np.testing.assert_allclose(np.array(d[False][key]), np.array(d[True][key]), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.array(d[False]["dudot_du"])[0, 0], J[1, 1], rtol=1e-12)


def test_directional_derivatives_of_a_cable_model(tmp_path):
    """tests/fmi/models/cable_arm.cap: a cable over a sphere on a moving link, to a link on a ball joint, pulled
    by a damped spring and a winch whose law reads the state. The FMU's directional derivatives of the state
    derivatives and of every output (the cable's length, rate and tension, the energies with the spring's)
    against central differences in the raw states (a quaternion's four numbers; 1e-6); then `eval --derivatives`,
    generated (symbolic frame derivatives) against the interpreter (dual numbers), to 1e-9."""
    model = os.path.join(ROOT, "tests", "fmi", "models", "cable_arm.cap")
    fmu = fmu_with_derivatives(model, tmp_path)
    L, nx = fmu.lib, fmu.nx
    c = fmu.start(MODEL_EXCHANGE)
    states = [v for v in range(len(fmu.variables)) if fmu.variables[v].get("causality") == "local"][:nx]
    derivatives = [states[-1] + 1 + k for k in range(nx)]
    outputs = [int(v.get("valueReference")) for v in fmu.variables if v.get("causality") == "output"]
    names = [v.get("name") for v in fmu.variables if v.get("causality") == "output"]
    assert names == ["rope.length", "rope.length_dot", "rope.tension", "kinetic_energy", "potential_energy"]
    unknowns = derivatives + outputs
    x = (ctypes.c_double * nx)()
    assert L.fmi2GetContinuousStates(c, x, nx) == OK
    x0 = np.array(x[:])

    def f(state):
        assert L.fmi2SetContinuousStates(c, (ctypes.c_double * nx)(*state), nx) == OK
        dx = (ctypes.c_double * nx)()
        assert L.fmi2GetDerivatives(c, dx, nx) == OK, fmu.messages
        return np.concatenate([np.array(dx[:]), fmu.get(c, outputs)])

    y0 = f(x0)
    assert y0[nx + 2] > 0  # taut: the spring and the winch pull
    J = fmu.directional(c, unknowns, states)
    # Central differences agree to about 1.5e-8 of each column's scale at this step (1.5e-7 at 1e-6, where
    # rounding takes over).
    h = 1e-5
    for j in range(nx):
        e = np.zeros(nx)
        e[j] = h
        np.testing.assert_allclose(J[:, j], (f(x0 + e) - f(x0 - e)) / (2 * h), rtol=1e-6,
                                   atol=1e-6 * max(1.0, np.abs(J[:, j]).max()))
    # The cable's derivatives count: its tension's by the shoulder angle is more than the winch's gain.
    assert abs(J[nx + 2, 0]) > 10
    L.fmi2FreeInstance(c)
    d = eval_derivatives(model, tmp_path, "{}")
    for key in ("dudot_dq", "dudot_du", "dudot_dtau"):
        scale = np.abs(np.array(d[True][key])).max()
        np.testing.assert_allclose(np.array(d[False][key]), np.array(d[True][key]), rtol=0, atol=1e-9 * scale)


def test_directional_derivatives_with_quaternions(tmp_path):
    """A free body on a bushing: J in the raw coordinates (a quaternion's four numbers) against differences."""
    fmu, _ = build("bushing", str(tmp_path), "--derivatives")
    L, nx = fmu.lib, fmu.nx
    c = fmu.start(MODEL_EXCHANGE)
    x = (ctypes.c_double * nx)()
    assert L.fmi2GetContinuousStates(c, x, nx) == OK
    x0 = np.array(x[:])
    x0[nx // 2:] += 0.3  # moving, so that the velocity terms count
    states = [v for v in range(len(fmu.variables)) if fmu.variables[v].get("causality") == "local"][:nx]
    derivatives = [states[-1] + 1 + k for k in range(nx)]

    def f(state):
        assert L.fmi2SetContinuousStates(c, (ctypes.c_double * nx)(*state), nx) == OK
        dx = (ctypes.c_double * nx)()
        assert L.fmi2GetDerivatives(c, dx, nx) == OK, fmu.messages
        return np.array(dx[:])

    h = 1e-6
    f(x0)
    J = fmu.directional(c, derivatives, states)
    for j in range(nx):
        e = np.zeros(nx)
        e[j] = h
        np.testing.assert_allclose(J[:, j], (f(x0 + e) - f(x0 - e)) / (2 * h), rtol=1e-5,
                                   atol=1e-5 * max(1.0, np.abs(J[:, j]).max()))
    L.fmi2FreeInstance(c)


def test_fmi1_refused(tmp_path):
    p = subprocess.run([CAPSTAN, "fmu", os.path.join(ROOT, "examples", "double_pendulum.cap"), "-o",
                        str(tmp_path / "x.fmu"), "--fmi", "1"], capture_output=True, text=True)
    assert p.returncode == 1 and "[FmiVersionUnsupported]" in p.stderr


def test_external_function_headers_in_sources(tmp_path):
    """A model calling external C++: its header travels in sources/, which then compile on their own."""
    path = str(tmp_path / "friction.fmu")
    p = subprocess.run([CAPSTAN, "fmu", os.path.join(ROOT, "examples", "external_friction", "friction.cap"), "-o", path],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    fmu = Fmu(path, str(tmp_path / "friction"))
    sources = os.path.join(fmu.folder, "sources")
    assert os.path.exists(os.path.join(sources, "friction_law.hpp"))
    p = subprocess.run(["g++", "-std=c++20", "-fsyntax-only", "-DCAPSTAN_MODEL_CLASS=FrictionPendulum",
                        "-DCAPSTAN_FMI_VERSION=2", "-DCAPSTAN_CABLE_COMPILED_APART", "-isystem", "/usr/include/eigen3",
                        "-I", sources, os.path.join(sources, "capstan_fmu.cpp")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    c = fmu.start(CO_SIMULATION)
    assert fmu.lib.fmi2DoStep(c, 0.0, 0.1, 1) == OK, fmu.messages
    fmu.lib.fmi2FreeInstance(c)


def test_fixed_step_co_simulation_takes_simulate_s_steps(tmp_path):
    """rk4 in steps of the experiment's Interval inside each doStep: a master at 0.1 s gets simulate's rows."""
    model = os.path.join(ROOT, "tests", "fmi", "models", "rk4_pendulum.cap")
    path = str(tmp_path / "rk4.fmu")
    p = subprocess.run([CAPSTAN, "fmu", model, "-o", path], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    fmu = Fmu(path, str(tmp_path / "rk4"))
    p = subprocess.run([CAPSTAN, "simulate", model], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    rows = list(csv.reader(io.StringIO(p.stdout)))
    names, expected = rows[0], np.array([[float(x) for x in r] for r in rows[1:]])
    c = fmu.start(CO_SIMULATION)
    refs = [fmu.vr[n] for n in names[1:]]
    for k in range(10):
        assert fmu.lib.fmi2DoStep(c, k * 0.1, 0.1, 1) == OK, fmu.messages
        np.testing.assert_allclose(fmu.get(c, refs), expected[10 * (k + 1), 1:], rtol=1e-13, atol=1e-13)
    fmu.lib.fmi2FreeInstance(c)


def test_event_indicators_of_a_compliant_contact(tmp_path):
    """The bouncing ball: one event indicator, the contact's penetration depth r - y, which a Model Exchange
    importer stepping with Euler sees change sign where the ball meets the floor (y = r, after a free fall from
    y = h: t = sqrt(2 (h - r) / g)); the event mode then returns to continuous time with no discrete state."""
    fmu, _ = build("bouncing_ball", str(tmp_path))
    assert fmu.description.get("numberOfEventIndicators") == "1"
    L, nx = fmu.lib, fmu.nx
    L.fmi2GetEventIndicators.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_double), ctypes.c_size_t]
    c = fmu.start(MODEL_EXCHANGE)
    info = EventInfo()
    assert L.fmi2NewDiscreteStates(c, ctypes.byref(info)) == OK
    assert L.fmi2EnterContinuousTimeMode(c) == OK
    y = fmu.vr["float.q[6]"] - fmu.vr["float.q[1]"]  # the height's place in the states
    r, h, g = 0.1, 1.0, 9.81

    def indicator():
        z = (ctypes.c_double * 1)()
        assert L.fmi2GetEventIndicators(c, z, 1) == OK, fmu.messages
        return z[0]

    x = (ctypes.c_double * nx)()
    assert L.fmi2GetContinuousStates(c, x, nx) == OK
    state = np.array(x[:])
    assert indicator() == pytest.approx(r - state[y], abs=1e-15) and indicator() < 0
    dt, t, crossing = 1e-4, 0.0, None
    while t < 0.6 and crossing is None:
        before = indicator()
        dx = (ctypes.c_double * nx)()
        assert L.fmi2GetDerivatives(c, dx, nx) == OK
        state = state + dt * np.array(dx[:])
        t += dt
        assert L.fmi2SetTime(c, t) == OK
        assert L.fmi2SetContinuousStates(c, (ctypes.c_double * nx)(*state), nx) == OK
        after = indicator()
        assert after == pytest.approx(r - state[y], abs=1e-15)
        if before < 0 <= after:
            crossing = t
    assert crossing == pytest.approx(np.sqrt(2 * (h - r) / g), abs=2e-3)
    assert L.fmi2EnterEventMode(c) == OK
    assert L.fmi2NewDiscreteStates(c, ctypes.byref(info)) == OK
    assert not info.newDiscreteStatesNeeded and not info.terminateSimulation
    assert L.fmi2EnterContinuousTimeMode(c) == OK
    z = (ctypes.c_double * 2)()
    assert L.fmi2GetEventIndicators(c, z, 2) == ERROR
    assert "2 event indicators asked for; the FMU has 1" in fmu.messages[-1]
    L.fmi2FreeInstance(c)


def test_event_indicators_of_a_cable(tmp_path):
    """A pendulum on an elastic cable that catches on a drum (tests/fmi/models/swinging_cable.cap): two event
    indicators, the wrap's contact and the spring's stretch, at the states of `capstan simulate`'s trajectory.
    Checked against the plane geometry in closed form: the spring's is L - L0; the wrap's, while the cable is
    straight (L = the anchor-bob distance), is minus the segment's clearance from the drum, and while it wraps
    (L longer than that), the arc L - t1 - t2 (t: the tangents' lengths from anchor and bob, sqrt(d^2 - r^2)).
    Over 3 s the cable touches down, lifts off and touches down again, and so goes taut, slack and taut."""
    model = os.path.join(ROOT, "tests", "fmi", "models", "swinging_cable.cap")
    path = str(tmp_path / "cable.fmu")
    p = subprocess.run([CAPSTAN, "fmu", model, "-o", path], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    fmu = Fmu(path, str(tmp_path / "cable"))
    assert fmu.description.get("numberOfEventIndicators") == "2"
    p = subprocess.run([CAPSTAN, "simulate", model], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    rows = list(csv.reader(io.StringIO(p.stdout)))
    names, trajectory = rows[0], np.array([[float(x) for x in r] for r in rows[1:]])
    L = fmu.lib
    L.fmi2GetEventIndicators.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_double), ctypes.c_size_t]
    c = fmu.start(MODEL_EXCHANGE)
    info = EventInfo()
    assert L.fmi2NewDiscreteStates(c, ctypes.byref(info)) == OK
    assert L.fmi2EnterContinuousTimeMode(c) == OK
    anchor, center, r, slack = np.array([2.0, -1.0]), np.array([1.0, -0.92]), 0.1, 2.2
    contact, stretch = [], []
    for row in trajectory:
        t, q = row[0], row[names.index("hinge.q[1]")]
        assert L.fmi2SetTime(c, t) == OK
        x = (ctypes.c_double * 2)(q, row[names.index("hinge.u[1]")])
        assert L.fmi2SetContinuousStates(c, x, 2) == OK
        z = (ctypes.c_double * 2)()
        assert L.fmi2GetEventIndicators(c, z, 2) == OK, fmu.messages
        length = fmu.get(c, [fmu.vr["rope.length"]])[0]
        assert length == pytest.approx(row[names.index("rope.length")], abs=1e-9)
        assert z[1] == pytest.approx(length - slack, abs=1e-12)
        bob = np.array([np.sin(q), -np.cos(q)])
        straight = np.linalg.norm(bob - anchor)
        if z[0] < 0:  # clear: the straight cable's clearance from the drum
            assert length == pytest.approx(straight, abs=1e-12)
            e = (bob - anchor) / straight
            s = np.clip(np.dot(center - anchor, e), 0.0, straight)
            assert -z[0] == pytest.approx(np.linalg.norm(anchor + s * e - center) - r, abs=1e-8)
        else:  # wrapped: the arc between the two tangents
            assert length > straight + 1e-9
            tangents = sum(np.sqrt(np.dot(p - center, p - center) - r * r) for p in (anchor, bob))
            assert z[0] == pytest.approx(length - tangents, abs=1e-8)
        contact.append(z[0])
        stretch.append(z[1])
    for z in (np.array(contact), np.array(stretch)):
        changes = np.flatnonzero(np.diff(np.sign(z)))
        assert z[0] < 0 and len(changes) >= 3, changes  # on, off and on again
    L.fmi2FreeInstance(c)
