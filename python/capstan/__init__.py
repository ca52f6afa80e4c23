"""Capstan models from Python.

    import capstan
    m = capstan.compile("examples/chain.cap")        # built once, cached
    r = m.simulate(2.0)                               # in process, numpy arrays
    r["time"][-1], r["joint[1].phi"]
    m.params["link[2].m"] = 1.3                       # checked as `--set` is
    udot = m.forward_dynamics(q, u)

`compile` runs the `capstan` command to check the model and build its model
library (`capstan library`: the generated class, the simulation engine and a
C interface, capstan/model_library.h); the library is then loaded into this
process and every call runs there, with the GIL released. Parameter values
are checked by capstan exactly as `capstan simulate --set` checks them, and
refused with its message. Sweeps over many parameter values, on a local or a
remote Dask cluster: `capstan.sweep` (capstan/sweep.py). docs/python.md says
the rest.
"""

import json
import os
import re
import subprocess
import threading

import numpy as np

from . import _capstan
from ._paths import CAPSTAN_EXECUTABLE

__all__ = [
    "CapstanError",
    "ParameterError",
    "SimulationError",
    "Model",
    "Trajectory",
    "compile",
    "sweep",
    "sweep_grid",
    "SweepResult",
    "capstan_executable",
]


# ----------------------------------------------------------------- errors

_LOCATED = re.compile(
    r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?P<column>\d+): (?P<severity>error|warning|note): "
    r"(?P<message>.*?)(?: \[(?P<kind>\w+)\])?$"
)
_UNLOCATED = re.compile(r"^capstan: (?P<severity>error|warning|note): (?P<message>.*?)(?: \[(?P<kind>\w+)\])?$")


def _diagnostics(text):
    """capstan's diagnostics in `text` (its stderr), as dicts: file, line,
    column (None where the diagnostic has no place), severity, message, kind."""
    found = []
    for line in text.splitlines():
        m = _LOCATED.match(line)
        if m:
            d = m.groupdict()
            d["line"], d["column"] = int(d["line"]), int(d["column"])
            found.append(d)
            continue
        m = _UNLOCATED.match(line)
        if m:
            d = m.groupdict()
            d.update(file=None, line=None, column=None)
            found.append(d)
    return found


class CapstanError(Exception):
    """What capstan refused or what failed, with its text as capstan prints
    it (`message`) and its diagnostics parsed (`diagnostics`: dicts with
    file, line, column, severity, message, kind)."""

    def __init__(self, message, diagnostics=None):
        super().__init__(message)
        self.message = message
        self.diagnostics = _diagnostics(message) if diagnostics is None else diagnostics

    @property
    def errors(self):
        return [d for d in self.diagnostics if d["severity"] == "error"]

    @property
    def location(self):
        """(file, line, column) of the first located error, or None."""
        for d in self.errors:
            if d["file"] is not None:
                return d["file"], d["line"], d["column"]
        return None


class ParameterError(CapstanError, ValueError):
    """A parameter value capstan refuses (unknown, folded, out of bounds...)."""


class SimulationError(CapstanError):
    """A run that failed part way: `trajectory` holds the rows computed
    before it (a Trajectory), `time` where it stopped."""

    def __init__(self, message, trajectory):
        super().__init__(message, [])
        self.trajectory = trajectory
        self.time = float(trajectory["time"][-1]) if len(trajectory) and trajectory.rows else 0.0


# --------------------------------------------------------------- capstan


def capstan_executable():
    """The `capstan` command this package runs: $CAPSTAN, else the one it
    was built or installed with."""
    return os.environ.get("CAPSTAN") or CAPSTAN_EXECUTABLE


_PROGRESS = re.compile(r"^capstan: (compiling|compiled) ")


def _run(args, cwd=None):
    """capstan ARGS... (in `cwd`); its stdout, or CapstanError with its
    stderr (build progress lines left out)."""
    env = dict(os.environ, NO_COLOR="1")
    proc = subprocess.run([capstan_executable()] + list(args), capture_output=True, text=True, env=env, cwd=cwd)
    if proc.returncode != 0:
        lines = [l for l in proc.stderr.replace("\r", "\n").splitlines() if l and not _PROGRESS.match(l)]
        raise CapstanError("\n".join(lines) or "capstan exited with status %d" % proc.returncode)
    return proc.stdout


def _literal(value):
    """A value as `--set` takes it: a number (exact: repr round-trips), a
    brace literal for an array, a string as it is."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, np.integer, np.floating)):
        return repr(float(value)) if not isinstance(value, (int, np.integer)) else str(int(value))
    if isinstance(value, str):
        return value  # as written: `{1, 0, 0}`, `2.5`
    a = np.asarray(value, dtype=float)
    if a.ndim == 0:
        return repr(float(a))
    return "{" + ",".join(_literal(x) for x in a) + "}"


# ------------------------------------------------------------------ model


class Trajectory(dict):
    """A simulation's column table (the columns of `capstan simulate`'s
    CSV): a dict from column name to a numpy array, `time` first, in
    column order; `values` is the whole table (rows x columns)."""

    def __init__(self, names, values):
        super().__init__((n, values[:, k]) for k, n in enumerate(names))
        self.columns = list(names)
        self.values = values

    @property
    def rows(self):
        return self.values.shape[0]


class _Parameters:
    """model.params: the runtime parameters, by name (`link[2].m`) or
    element (`world.gravity[2]`). Reading gives the value (a float, or an
    array for an array parameter); assigning is checked by capstan first."""

    def __init__(self, model):
        self._model = model

    def __getitem__(self, name):
        p = self._model._parameter(name)
        if p is None:
            raise KeyError(name)
        values = self._model._values[p["name"]]
        if name != p["name"]:
            return values[p["elements"].index(name)]
        return values[0] if not p["shape"] else np.array(values).reshape(p["shape"])

    def __setitem__(self, name, value):
        self._model._assign({name: value})

    def update(self, values):
        self._model._assign(dict(values))

    def __contains__(self, name):
        return self._model._parameter(name) is not None

    def __iter__(self):
        return iter(p["name"] for p in self._model.parameters)

    def __len__(self):
        return len(self._model.parameters)

    def keys(self):
        return list(self)

    def items(self):
        return [(n, self[n]) for n in self]

    def __repr__(self):
        return "{" + ", ".join("%r: %r" % (n, v) for n, v in self.items()) + "}"


class Model:
    """A compiled model (capstan.compile): its sizes and names, its runtime
    parameters, and the engine's calls, in this process. Each Model is one
    instance of the model library: threads may run different Models at
    once; calls on one Model take turns."""

    def __init__(self, path, manifest, options):
        self.path = path  # as given (capstan's messages name it so), from the folder compile ran in:
        self._cwd = os.getcwd()
        self._options = options  # compile's: model, include, derivatives
        self._manifest = manifest
        self._instance = _capstan.Library(manifest["library"]).instance()
        shape = json.loads(self._instance.shape())
        self.name = shape["model"]
        self.nq, self.nu, self.nb = shape["nq"], shape["nu"], shape["nb"]
        self.q_names, self.u_names = shape["q_names"], shape["u_names"]
        self.output_names, self.body_names = shape["output_names"], shape["body_names"]
        self.constraints = [c["name"] for c in shape["constraints"]]
        self.has_derivatives = shape["derivatives"]
        self.parameters = manifest["parameters"]
        self.experiment = manifest["experiment"]
        self._settings = {}  # NAME -> --set literal, every change from the model's values
        self._values = {p["name"]: list(p["value"]) for p in self.parameters}
        self._lock = threading.Lock()
        self._apply(manifest)
        self.params = _Parameters(self)

    def __repr__(self):
        return "<capstan.Model %s: nq=%d, nu=%d, %d parameters>" % (self.name, self.nq, self.nu, len(self.parameters))

    # -- parameters

    def _parameter(self, name):
        for p in self.parameters:
            if name == p["name"] or name in p["elements"]:
                return p
        return None

    def _check(self, settings):
        """capstan's manifest with `settings` (NAME -> literal) applied, or
        ParameterError with its message."""
        args = ["library", self.path, "--json", "--no-build"] + self._common()
        for name, literal in settings.items():
            args += ["--set", "%s=%s" % (name, literal)]
        try:
            return json.loads(_run(args, cwd=self._cwd))
        except CapstanError as e:
            raise ParameterError(e.message) from None

    def _apply(self, manifest):
        for name, value in manifest["settings"]:
            self._instance.set_parameter(name, value)
        self._values = {p["name"]: list(p["value"]) for p in manifest["parameters"]}

    def _assign(self, values):
        settings = dict(self._settings)
        settings.update({n: _literal(v) for n, v in values.items()})
        manifest = self._check(settings)
        with self._lock:
            self._apply(manifest)
            self._settings = settings

    def _common(self):
        args = []
        if self._options.get("model"):
            args += ["--model", self._options["model"]]
        for d in self._options.get("include", ()):
            args += ["-I", str(d)]
        return args

    # -- the engine

    def initial_state(self):
        """(q, u): the model's start state (its joints' q0 and u0)."""
        return self._instance.initial_state()

    def forward_dynamics(self, q, u, t=0.0, external_forces=None):
        """udot at (t, q, u), as `capstan eval` gives it (with the
        constraint solver's solution for a model with constraints);
        external_forces: nb x 6, [n; f] about each body origin, in World."""
        try:
            return self._instance.forward_dynamics(t, q, u, external_forces)
        except RuntimeError as e:
            raise CapstanError(str(e), []) from None

    def derivatives(self, q, u, t=0.0):
        """(d udot/dq, d udot/du, d udot/dtau), each nu x nu, from the
        generated analytical derivatives: compile(..., derivatives=True)."""
        try:
            return self._instance.derivatives(t, q, u)
        except RuntimeError as e:
            raise CapstanError(str(e), []) from None

    def evaluate(self, q=None, u=None, t=0.0, external_forces=None, derivatives=False):
        """Every number `capstan eval` reports at (t, q, u), computed in
        this process, as a dict by the engine's record keys: `q`, `u`,
        `qdot`, `udot`, `mass_matrix` (nu x nu), `kinetic_energy`, ...;
        keys per element (`R_WB`, `p_WB`, `J`, `F_A_A`, ...) give a list in
        the model's order of bodies, frames, bushings. q, u: the start state
        where absent; external_forces: nb x 6; derivatives: d udot / d(q,
        u, tau) too, where the library has them."""
        q0, u0 = self.initial_state()
        q = q0 if q is None else np.asarray(q, dtype=float)
        u = u0 if u is None else np.asarray(u, dtype=float)
        try:
            records = self._instance.evaluate(float(t), q, u, external_forces, bool(derivatives))
        except RuntimeError as e:
            raise CapstanError(str(e), []) from None
        return _records(records, self.nu)

    def eval(self, state=None, derivatives=False, assemble=False):
        """`capstan eval`'s JSON at a state, as a dict: the same keys and
        numbers (it runs capstan eval, with this model's parameter values;
        the first call builds the model's program). `state`: a dict in
        STATE.json's form ({"time": .., "q": {JOINT: [..]}, "u": {..},
        "external_forces": {BODY: [..]}}) or a STATE.json path; the start
        state where absent. For many states, evaluate() is the fast path."""
        import tempfile

        args = ["eval", self.path] + self._common()
        with tempfile.TemporaryDirectory() as folder:
            if state is None or isinstance(state, dict):
                path = os.path.join(folder, "state.json")
                with open(path, "w") as f:
                    json.dump(_jsonable(state or {}), f)
            else:
                path = os.path.abspath(os.fspath(state))
            args += ["--state", path]
            if derivatives:
                args.append("--derivatives")
            if assemble:
                args.append("--assemble")
            for name, literal in self._settings.items():
                args += ["--set", "%s=%s" % (name, literal)]
            return json.loads(_run(args, cwd=self._cwd))

    def simulate(self, t_end=None, dt=None, integrator=None, tol=None, set=None, outputs=None,
                 constraint_errors=False, baumgarte=None, constraint_tol=None, timeout=None, progress=None):
        """Runs the model from its start state to t_end in this process,
        with the engine's one loop (as `capstan simulate` runs it); returns a
        Trajectory (column name -> numpy array). What the model's
        experiment annotation gives is the default for t_end, dt, tol and
        integrator. `set`: parameter values for this run only (checked as
        `--set`). `outputs`: the columns to keep (time always). A run that
        fails part way raises SimulationError with the rows before it."""
        ex = self.experiment
        t_end = ex["t_end"] if t_end is None else t_end
        if t_end is None:
            raise CapstanError("the model has no experiment StopTime: give simulate(t_end=...)", [])
        args = ["--t-end=%r" % float(t_end)]
        dt = ex["dt"] if dt is None else dt
        if dt is not None:
            args.append("--dt=%r" % float(dt))
        tol = ex["tol"] if tol is None else tol
        if tol is not None:
            args.append("--tol=%r" % float(tol))
        integrator = ex["integrator"] if integrator is None else integrator
        if integrator is not None:
            args.append("--integrator=%s" % integrator)
        if constraint_errors:
            args.append("--constraint-errors")
        if baumgarte is not None:
            args.append("--baumgarte=%r" % float(baumgarte))
        if constraint_tol is not None:
            args.append("--constraint-tol=%r" % float(constraint_tol))
        if timeout is not None:
            args.append("--wall-clock-limit=%r" % float(timeout))
        if set:
            settings = dict(self._settings)
            settings.update({n: _literal(v) for n, v in set.items()})
            args += ["%s=%r" % (n, float(v)) for n, v in self._check(settings)["settings"]]
        else:
            args += ["%s=%r" % (n, float(v)) for n, v in self._manifest_settings()]
        with self._lock:
            status, message, names, values = self._instance.simulate(args, progress)
            if set:  # the model's own values again, for the calls after this run
                for name, value in self._manifest_settings():
                    self._instance.set_parameter(name, value)
        trajectory = Trajectory(names, values)
        if outputs is not None:
            unknown = [o for o in outputs if o not in trajectory]
            if unknown:
                raise CapstanError("no column %s; the columns are %s" % (
                    ", ".join("`%s`" % o for o in unknown), ", ".join(trajectory.columns)), [])
            keep = ["time"] + [o for o in outputs if o != "time"]
            trajectory = Trajectory(keep, values[:, [names.index(k) for k in keep]])
        if status == 2:
            raise CapstanError(message, [])
        if status != 0:
            raise SimulationError(message, trajectory)
        return trajectory

    def _manifest_settings(self):
        """Every runtime parameter element with its value now."""
        out = []
        for p in self.parameters:
            out += list(zip(p["elements"], self._values[p["name"]]))
        return out


def _jsonable(value):
    """numpy arrays and numbers in `value` as JSON's lists and floats."""
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return value


def _records(records, nu):
    """evaluate's records as a dict: a key of the model as a whole gives its
    numbers (a float for one, a matrix for nu x nu ones, else an array); a
    key with elements (bodies, frames, bushings...) a list in element order."""
    out = {}
    square = {"mass_matrix", "dudot_dq", "dudot_du", "dudot_dtau", "dtau_dq", "dtau_du", "dtau_dudot"}
    for key, element, values in records:
        if key in square:
            values = values.reshape(nu, -1)
        elif key in ("R_WB", "contact_R"):
            values = values.reshape(3, 3)
        elif key == "J":
            values = values.reshape(6, -1)
        if element < 0:
            out[key] = float(values[0]) if values.size == 1 and key not in ("q", "u", "qdot", "udot") else values
        else:
            out.setdefault(key, [])
            out[key].append(values)
    return out


def compile(path, set=None, derivatives=False, model=None, include=()):
    """The model in `path` (a .cap file, or a robot's .urdf/.sdf), checked
    and built into a model library by capstan (cached: a second compile of
    the same model, even in another process, loads the first build).
    `set`: parameter values (checked as `--set`); `derivatives`: with the
    analytical derivatives (Model.derivatives); `model`: which model of the
    file; `include`: library folders (-I). Errors raise CapstanError
    carrying capstan's diagnostics and their locations."""
    path = os.fspath(path)
    args = ["library", path, "--json"]
    options = {"model": model, "include": [os.fspath(d) for d in include], "derivatives": derivatives}
    if model:
        args += ["--model", model]
    for d in options["include"]:
        args += ["-I", d]
    if derivatives:
        args.append("--derivatives")
    literals = {n: _literal(v) for n, v in (set or {}).items()}
    for name, literal in literals.items():
        args += ["--set", "%s=%s" % (name, literal)]
    manifest = json.loads(_run(args))
    m = Model(path, manifest, options)
    m._settings = literals
    return m


from .sweep import SweepResult, sweep  # noqa: E402  (sweep uses compile)
from .sweep import grid as sweep_grid  # noqa: E402
