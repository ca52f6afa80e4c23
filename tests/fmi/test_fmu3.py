"""FMI 3.0 FMUs that `capstan fmu --fmi 3` writes, loaded by a small
importer of our own (ctypes, FMI 3.0's calling sequences): the same
trajectories as `capstan simulate`, exact directional derivatives, states
that round-trip, refused bad calls, and the description's structure."""

import ctypes
import os
import subprocess
import xml.etree.ElementTree as ET
import zipfile

import numpy as np
import pytest

from test_fmu import CAPSTAN, ERROR, OK, ROOT, simulate

LOG = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p)

# Every function of FMI 3.0 (section 2.2), which every binary FMU exports.
FUNCTIONS = """fmi3GetVersion fmi3SetDebugLogging fmi3InstantiateModelExchange fmi3InstantiateCoSimulation
fmi3InstantiateScheduledExecution fmi3FreeInstance fmi3EnterInitializationMode fmi3ExitInitializationMode
fmi3EnterEventMode fmi3Terminate fmi3Reset fmi3GetFloat32 fmi3GetFloat64 fmi3GetInt8 fmi3GetUInt8 fmi3GetInt16
fmi3GetUInt16 fmi3GetInt32 fmi3GetUInt32 fmi3GetInt64 fmi3GetUInt64 fmi3GetBoolean fmi3GetString fmi3GetBinary
fmi3GetClock fmi3SetFloat32 fmi3SetFloat64 fmi3SetInt8 fmi3SetUInt8 fmi3SetInt16 fmi3SetUInt16 fmi3SetInt32
fmi3SetUInt32 fmi3SetInt64 fmi3SetUInt64 fmi3SetBoolean fmi3SetString fmi3SetBinary fmi3SetClock
fmi3GetNumberOfVariableDependencies fmi3GetVariableDependencies fmi3GetFMUState fmi3SetFMUState fmi3FreeFMUState
fmi3SerializedFMUStateSize fmi3SerializeFMUState fmi3DeserializeFMUState fmi3GetDirectionalDerivative
fmi3GetAdjointDerivative fmi3EnterConfigurationMode fmi3ExitConfigurationMode fmi3GetIntervalDecimal
fmi3GetIntervalFraction fmi3GetShiftDecimal fmi3GetShiftFraction fmi3SetIntervalDecimal fmi3SetIntervalFraction
fmi3SetShiftDecimal fmi3SetShiftFraction fmi3EvaluateDiscreteStates fmi3UpdateDiscreteStates
fmi3EnterContinuousTimeMode fmi3CompletedIntegratorStep fmi3SetTime fmi3SetContinuousStates
fmi3GetContinuousStateDerivatives fmi3GetEventIndicators fmi3GetContinuousStates fmi3GetNominalsOfContinuousStates
fmi3GetNumberOfEventIndicators fmi3GetNumberOfContinuousStates fmi3EnterStepMode fmi3GetOutputDerivatives
fmi3DoStep fmi3ActivateModelPartition""".split()

c_p, vr_p, dbl_p, b_p = ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_double), \
    ctypes.POINTER(ctypes.c_bool)


class Fmu3:
    def __init__(self, path, folder):
        with zipfile.ZipFile(path) as z:
            z.extractall(folder)
        self.folder = folder
        self.description = ET.parse(os.path.join(folder, "modelDescription.xml")).getroot()
        self.token = self.description.get("instantiationToken").encode()
        self.variables = self.description.find("ModelVariables").findall("Float64")
        self.vr = {v.get("name"): int(v.get("valueReference")) for v in self.variables}
        self.interfaces = [e.tag for e in self.description if e.tag in ("ModelExchange", "CoSimulation")]
        ident = [e for e in self.description if e.tag in self.interfaces][0].get("modelIdentifier")
        self.binary = os.path.join(folder, "binaries", "x86_64-linux", ident + ".so")
        L = self.lib = ctypes.CDLL(self.binary, mode=os.RTLD_LOCAL | os.RTLD_NOW)
        L.fmi3InstantiateModelExchange.restype = c_p
        L.fmi3InstantiateModelExchange.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_bool,
                                                   ctypes.c_bool, c_p, LOG]
        L.fmi3InstantiateCoSimulation.restype = c_p
        L.fmi3InstantiateCoSimulation.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_bool,
                                                  ctypes.c_bool, ctypes.c_bool, ctypes.c_bool, vr_p, ctypes.c_size_t,
                                                  c_p, LOG, c_p]
        L.fmi3FreeInstance.argtypes = [c_p]
        L.fmi3EnterInitializationMode.argtypes = [c_p, ctypes.c_bool, ctypes.c_double, ctypes.c_double, ctypes.c_bool,
                                                  ctypes.c_double]
        for f in ("fmi3ExitInitializationMode", "fmi3EnterEventMode", "fmi3EnterContinuousTimeMode", "fmi3Terminate"):
            getattr(L, f).argtypes = [c_p]
        L.fmi3GetFloat64.argtypes = L.fmi3SetFloat64.argtypes = [c_p, vr_p, ctypes.c_size_t, dbl_p, ctypes.c_size_t]
        L.fmi3SetTime.argtypes = [c_p, ctypes.c_double]
        L.fmi3SetContinuousStates.argtypes = L.fmi3GetContinuousStateDerivatives.argtypes = \
            L.fmi3GetContinuousStates.argtypes = [c_p, dbl_p, ctypes.c_size_t]
        L.fmi3GetNumberOfContinuousStates.argtypes = [c_p, ctypes.POINTER(ctypes.c_size_t)]
        L.fmi3UpdateDiscreteStates.argtypes = [c_p, b_p, b_p, b_p, b_p, b_p, dbl_p]
        L.fmi3CompletedIntegratorStep.argtypes = [c_p, ctypes.c_bool, b_p, b_p]
        L.fmi3DoStep.argtypes = [c_p, ctypes.c_double, ctypes.c_double, ctypes.c_bool, b_p, b_p, b_p, dbl_p]
        L.fmi3GetFMUState.argtypes = [c_p, ctypes.POINTER(c_p)]
        L.fmi3SetFMUState.argtypes = [c_p, c_p]
        L.fmi3FreeFMUState.argtypes = [c_p, ctypes.POINTER(c_p)]
        L.fmi3SerializedFMUStateSize.argtypes = [c_p, c_p, ctypes.POINTER(ctypes.c_size_t)]
        L.fmi3SerializeFMUState.argtypes = [c_p, c_p, ctypes.c_char_p, ctypes.c_size_t]
        L.fmi3DeserializeFMUState.argtypes = [c_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(c_p)]
        L.fmi3GetDirectionalDerivative.argtypes = [c_p, vr_p, ctypes.c_size_t, vr_p, ctypes.c_size_t, dbl_p,
                                                   ctypes.c_size_t, dbl_p, ctypes.c_size_t]
        L.fmi3GetVersion.restype = ctypes.c_char_p
        self.messages = []
        self.log = LOG(lambda env, status, category, message: self.messages.append(message.decode()))

    def instantiate(self, model_exchange, token=None):
        L = self.lib
        if model_exchange:
            return L.fmi3InstantiateModelExchange(b"test", token or self.token, b"", False, False, None, self.log)
        return L.fmi3InstantiateCoSimulation(b"test", token or self.token, b"", False, False, False, False, None, 0,
                                             None, self.log, None)

    def start(self, model_exchange, tolerance=None):
        c = self.instantiate(model_exchange)
        assert c, self.messages
        assert self.lib.fmi3EnterInitializationMode(c, tolerance is not None, tolerance or 0.0, 0.0, False, 0.0) == OK
        assert self.lib.fmi3ExitInitializationMode(c) == OK, self.messages
        return c

    def get(self, c, refs):
        refs = list(refs)
        out = (ctypes.c_double * len(refs))()
        assert self.lib.fmi3GetFloat64(c, (ctypes.c_uint32 * len(refs))(*refs), len(refs), out, len(refs)) == OK, \
            self.messages
        return np.array(out[:])


def build3(name, folder, *options):
    path = os.path.join(folder, name + ".fmu")
    p = subprocess.run([CAPSTAN, "fmu", os.path.join(ROOT, "examples", name + ".cap"), "-o", path, "--fmi", "3"] +
                       list(options), capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return Fmu3(path, os.path.join(folder, name))


@pytest.fixture(scope="module")
def fmus(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("fmus3"))
    return {name: build3(name, folder) for name in ("double_pendulum", "bushing", "fourbar")}


def states_of(fmu):
    return [v.get("name") for v in fmu.variables if v.get("causality") == "local" and not v.get("name").startswith("der(")]


@pytest.mark.parametrize("name", ["double_pendulum", "bushing"])
def test_model_exchange_with_rk4_equals_simulate(fmus, name):
    fmu = fmus[name]
    h, t_end = 0.01, 0.5
    names, expected = simulate(name, "--integrator", "rk4", "--dt", str(h), "--t-end", str(t_end))
    L = fmu.lib
    c = fmu.start(True)
    nx = ctypes.c_size_t()
    assert L.fmi3GetNumberOfContinuousStates(c, ctypes.byref(nx)) == OK
    nx = nx.value
    flags = [ctypes.c_bool() for _ in range(5)]
    assert L.fmi3UpdateDiscreteStates(c, *[ctypes.byref(f) for f in flags], ctypes.byref(ctypes.c_double())) == OK
    assert not any(f.value for f in flags)
    assert L.fmi3EnterContinuousTimeMode(c) == OK
    x = (ctypes.c_double * nx)()
    assert L.fmi3GetContinuousStates(c, x, nx) == OK

    def f(t, state):
        assert L.fmi3SetTime(c, t) == OK
        assert L.fmi3SetContinuousStates(c, (ctypes.c_double * nx)(*state), nx) == OK
        dx = (ctypes.c_double * nx)()
        assert L.fmi3GetContinuousStateDerivatives(c, dx, nx) == OK, fmu.messages
        return np.array(dx[:])

    state, rows = np.array(x[:]), [np.array(x[:])]
    for k in range(int(round(t_end / h))):
        t = k * h
        k1 = f(t, state)
        k2 = f(t + h / 2, state + h / 2 * k1)
        k3 = f(t + h / 2, state + h / 2 * k2)
        k4 = f(t + h, state + h * k3)
        state = state + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        assert L.fmi3SetContinuousStates(c, (ctypes.c_double * nx)(*state), nx) == OK
        entering, terminate = ctypes.c_bool(), ctypes.c_bool()
        assert L.fmi3CompletedIntegratorStep(c, True, ctypes.byref(entering), ctypes.byref(terminate)) == OK
        rows.append(state)
    L.fmi3FreeInstance(c)
    columns = [names.index(s) for s in states_of(fmu)]
    np.testing.assert_allclose(np.array(rows), expected[:, columns], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", ["double_pendulum", "fourbar"])
def test_co_simulation_equals_simulate(fmus, name):
    fmu = fmus[name]
    h, t_end = 0.02, 0.5
    names, expected = simulate(name, "--dt", str(h), "--t-end", str(t_end), "--tol", "1e-10")
    c = fmu.start(False, tolerance=1e-10)
    refs = [fmu.vr[n] for n in ["time"] + names[1:]]
    rows = [fmu.get(c, refs)]
    flags = [ctypes.c_bool() for _ in range(3)]
    last = ctypes.c_double()
    for k in range(int(round(t_end / h))):
        assert fmu.lib.fmi3DoStep(c, k * h, h, True, *[ctypes.byref(f) for f in flags], ctypes.byref(last)) == OK
        assert last.value == pytest.approx((k + 1) * h) and not any(f.value for f in flags)
        rows.append(fmu.get(c, refs))
    fmu.lib.fmi3FreeInstance(c)
    np.testing.assert_allclose(np.array(rows), expected, rtol=1e-6, atol=1e-6)


def test_directional_derivatives(tmp_path):
    fmu = build3("double_pendulum", str(tmp_path), "--derivatives")
    me = [e for e in fmu.description if e.tag == "ModelExchange"][0]
    assert me.get("providesDirectionalDerivatives") == "true"
    L = fmu.lib
    c = fmu.start(True)
    states = [fmu.vr[n] for n in states_of(fmu)]
    derivatives = [fmu.vr["der(%s)" % n] for n in states_of(fmu)]
    x = (ctypes.c_double * 4)(0.3, -0.7, 1.1, 0.4)
    assert L.fmi3SetContinuousStates(c, x, 4) == OK
    J = np.zeros((4, 4))
    for j in range(4):
        out = (ctypes.c_double * 4)()
        assert L.fmi3GetDirectionalDerivative(c, (ctypes.c_uint32 * 4)(*derivatives), 4, (ctypes.c_uint32 * 1)(states[j]),
                                              1, (ctypes.c_double * 1)(1.0), 1, out, 4) == OK, fmu.messages
        J[:, j] = out[:]

    def f(state):
        assert L.fmi3SetContinuousStates(c, (ctypes.c_double * 4)(*state), 4) == OK
        dx = (ctypes.c_double * 4)()
        assert L.fmi3GetContinuousStateDerivatives(c, dx, 4) == OK
        return np.array(dx[:])

    x0, h = np.array(x[:]), 1e-6
    for j in range(4):
        e = np.zeros(4)
        e[j] = h
        np.testing.assert_allclose(J[:, j], (f(x0 + e) - f(x0 - e)) / (2 * h), rtol=1e-6, atol=1e-6)
    assert L.fmi3GetDirectionalDerivative(c, (ctypes.c_uint32 * 4)(*derivatives), 4, (ctypes.c_uint32 * 1)(states[0]), 1,
                                          (ctypes.c_double * 1)(1.0), 1, (ctypes.c_double * 4)(), 3) == ERROR
    L.fmi3FreeInstance(c)


def test_state_round_trips_and_bad_calls(fmus):
    fmu = fmus["double_pendulum"]
    L = fmu.lib
    for f in FUNCTIONS:
        assert hasattr(L, f), f
    assert L.fmi3GetVersion() == b"3.0"
    c = fmu.start(False)
    refs = list(range(len(fmu.variables)))
    flags = [ctypes.c_bool() for _ in range(3)]
    step = lambda t, h: L.fmi3DoStep(c, t, h, True, *[ctypes.byref(f) for f in flags], ctypes.byref(ctypes.c_double()))
    assert step(0.0, 0.1) == OK
    state = ctypes.c_void_p()
    assert L.fmi3GetFMUState(c, ctypes.byref(state)) == OK
    size = ctypes.c_size_t()
    assert L.fmi3SerializedFMUStateSize(c, state, ctypes.byref(size)) == OK
    data = ctypes.create_string_buffer(size.value)
    assert L.fmi3SerializeFMUState(c, state, data, size) == OK
    before = fmu.get(c, refs)
    assert step(0.1, 0.1) == OK
    after = fmu.get(c, refs)
    restored = ctypes.c_void_p()
    assert L.fmi3DeserializeFMUState(c, data, size, ctypes.byref(restored)) == OK
    assert L.fmi3SetFMUState(c, restored) == OK
    np.testing.assert_array_equal(fmu.get(c, refs), before)
    assert step(0.1, 0.1) == OK
    np.testing.assert_array_equal(fmu.get(c, refs), after)
    L.fmi3FreeFMUState(c, ctypes.byref(state))
    L.fmi3FreeFMUState(c, ctypes.byref(restored))
    one = (ctypes.c_uint32 * 1)(0)
    assert L.fmi3GetFloat64(c, one, 1, (ctypes.c_double * 2)(), 2) == ERROR
    assert "nValues must be nValueReferences" in fmu.messages[-1]
    assert L.fmi3SetFloat64(c, (ctypes.c_uint32 * 1)(fmu.vr["time"]), 1, (ctypes.c_double * 1)(1.0), 1) == ERROR
    assert step(5.0, 0.1) == ERROR
    L.fmi3FreeInstance(c)
    assert not fmu.instantiate(False, token=b"{not-this-one}")
    assert "is not this FMU's" in fmu.messages[-1]
    assert not fmus["fourbar"].instantiate(True)


def test_model_description_structure(fmus, tmp_path):
    for name, fmu in fmus.items():
        d = fmu.description
        assert d.get("fmiVersion") == "3.0"
        refs = [int(v.get("valueReference")) for v in fmu.variables]
        assert len(set(refs)) == len(refs), name
        by_ref = {int(v.get("valueReference")): v for v in fmu.variables}
        independent = [v for v in fmu.variables if v.get("causality") == "independent"]
        assert [v.get("name") for v in independent] == ["time"]
        for v in fmu.variables:
            if v.get("derivative"):
                assert v.get("name") == "der(%s)" % by_ref[int(v.get("derivative"))].get("name")
        structure = d.find("ModelStructure")
        outputs = {int(e.get("valueReference")) for e in structure.findall("Output")}
        assert outputs == {int(v.get("valueReference")) for v in fmu.variables if v.get("causality") == "output"}
        derivatives = {int(e.get("valueReference")) for e in structure.findall("ContinuousStateDerivative")}
        assert derivatives == {int(v.get("valueReference")) for v in fmu.variables if v.get("derivative")}
        assert outputs <= {int(e.get("valueReference")) for e in structure.findall("InitialUnknown")}
        # Dependencies by value reference: of the states (and the time), each of a Model Exchange FMU's
        # derivatives listing some, the potential energy no speed.
        states = {int(v.get("valueReference")) for v in fmu.variables if v.get("causality") == "local"
                  and not v.get("name").startswith("der(")}
        time = int(independent[0].get("valueReference"))
        for e in structure.findall("Output") + structure.findall("ContinuousStateDerivative"):
            if e.get("dependencies") is not None:
                assert {int(k) for k in e.get("dependencies").split()} <= states | {time}, (name, e.attrib)
            elif "ModelExchange" in fmu.interfaces:
                assert e.tag == "Output", (name, e.attrib)
        if "ModelExchange" in fmu.interfaces:
            pe = [e for e in structure.findall("Output")
                  if by_ref[int(e.get("valueReference"))].get("name") == "potential_energy"][0]
            assert not any(".u[" in by_ref[int(k)].get("name") for k in pe.get("dependencies").split()), name
        build = ET.parse(os.path.join(fmu.folder, "sources", "buildDescription.xml")).getroot()
        files = [e.get("name") for e in build.iter("SourceFile")]
        assert "capstan_fmu.cpp" in files and all(os.path.exists(os.path.join(fmu.folder, "sources", f)) for f in files)
        needed = subprocess.run(["readelf", "-d", fmu.binary], capture_output=True, text=True).stdout
        libraries = {line.split("[")[1].split("]")[0] for line in needed.splitlines() if "(NEEDED)" in line}
        assert libraries <= {"libc.so.6", "libm.so.6", "ld-linux-x86-64.so.2"}, (name, libraries)


@pytest.mark.parametrize("cxx", ["g++", "clang++"])
def test_sources_compile_without_warnings(fmus, tmp_path, cxx):
    """sources/ as buildDescription.xml describes it, under the project's warnings."""
    from test_fmu import build

    for folder, version in ((fmus["double_pendulum"].folder, 3), (build("double_pendulum", str(tmp_path))[0].folder, 2)):
        sources = os.path.join(folder, "sources")
        model = [f for f in os.listdir(sources) if f.endswith(".hpp") and not f.startswith("capstan_")][0][:-4]
        p = subprocess.run([cxx, "-std=c++20", "-fsyntax-only", "-Wall", "-Wextra", "-Wpedantic", "-Werror",
                            "-DCAPSTAN_MODEL_CLASS=" + model, "-DCAPSTAN_FMI_VERSION=%d" % version,
                            "-DCAPSTAN_CABLE_COMPILED_APART", "-isystem", "/usr/include/eigen3", "-I", sources,
                            os.path.join(sources, "capstan_fmu.cpp")], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr


def test_event_indicators_of_a_compliant_contact(tmp_path):
    """FMI 3.0: the bouncing ball's contact depth r - y is an event indicator, a variable of its own named in
    the ModelStructure, the same through fmi3GetEventIndicators and fmi3GetFloat64."""
    fmu = build3("bouncing_ball", str(tmp_path))
    indicators = fmu.description.find("ModelStructure").findall("EventIndicator")
    assert [int(e.get("valueReference")) for e in indicators] == [fmu.vr["contact.depth"]]
    L = fmu.lib
    L.fmi3GetNumberOfEventIndicators.argtypes = [c_p, ctypes.POINTER(ctypes.c_size_t)]
    L.fmi3GetEventIndicators.argtypes = [c_p, dbl_p, ctypes.c_size_t]
    c = fmu.start(True)
    n = ctypes.c_size_t()
    assert L.fmi3GetNumberOfEventIndicators(c, ctypes.byref(n)) == OK and n.value == 1
    flags = [ctypes.c_bool() for _ in range(5)]
    assert L.fmi3UpdateDiscreteStates(c, *[ctypes.byref(f) for f in flags], ctypes.byref(ctypes.c_double())) == OK
    assert L.fmi3EnterContinuousTimeMode(c) == OK
    for height in (1.0, 0.05):  # apart, then in the floor
        x = (ctypes.c_double * 13)()
        assert L.fmi3GetContinuousStates(c, x, 13) == OK
        x[5] = height
        assert L.fmi3SetContinuousStates(c, x, 13) == OK, fmu.messages
        z = (ctypes.c_double * 1)()
        assert L.fmi3GetEventIndicators(c, z, 1) == OK, fmu.messages
        assert z[0] == pytest.approx(0.1 - height, abs=1e-15)
        assert fmu.get(c, [fmu.vr["contact.depth"]])[0] == z[0]
    L.fmi3FreeInstance(c)


def test_event_indicators_of_a_cable(tmp_path):
    """FMI 3.0: a cable's event indicators are variables named after the cable, the wrap and the spring, listed
    in the ModelStructure, the same through fmi3GetEventIndicators and fmi3GetFloat64 (their values are checked
    against the geometry in test_fmu.py)."""
    path = str(tmp_path / "cable.fmu")
    p = subprocess.run([CAPSTAN, "fmu", os.path.join(ROOT, "tests", "fmi", "models", "swinging_cable.cap"), "-o", path,
                        "--fmi", "3"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    fmu = Fmu3(path, str(tmp_path / "cable"))
    names = ["rope.overDrum.contact", "elastic.stretch"]
    indicators = fmu.description.find("ModelStructure").findall("EventIndicator")
    assert [int(e.get("valueReference")) for e in indicators] == [fmu.vr[n] for n in names]
    L = fmu.lib
    L.fmi3GetEventIndicators.argtypes = [c_p, dbl_p, ctypes.c_size_t]
    c = fmu.start(True)
    flags = [ctypes.c_bool() for _ in range(5)]
    assert L.fmi3UpdateDiscreteStates(c, *[ctypes.byref(f) for f in flags], ctypes.byref(ctypes.c_double())) == OK
    assert L.fmi3EnterContinuousTimeMode(c) == OK
    for q in (1.0, 0.0):  # the cable straight and slack, then wrapped and still slack
        assert L.fmi3SetContinuousStates(c, (ctypes.c_double * 2)(q, 0.0), 2) == OK, fmu.messages
        z = (ctypes.c_double * 2)()
        assert L.fmi3GetEventIndicators(c, z, 2) == OK, fmu.messages
        assert list(fmu.get(c, [fmu.vr[n] for n in names])) == list(z)
        assert (z[0] > 0) == (q == 0.0) and z[1] < 0
    L.fmi3FreeInstance(c)
