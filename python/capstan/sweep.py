"""Parameter sweeps on Dask: many runs of one model, each a task on a
worker of a local or remote Dask cluster (python3-distributed).

    import capstan
    r = capstan.sweep("examples/cable.cap",
                      {"rope.stiffness": [1e3, 2e3, 4e3], "load.m": [0.5, 1.0]},
                      outputs=["rope.tension"], reduce="max")
    r.points          # [{"rope.stiffness": 1e3, "load.m": 0.5}, ...] (the grid)
    r["rope.tension"] # numpy array, one value per point (nan where it failed)
    r.errors          # [(index, point, message)] of the points that failed

Each worker process compiles the model once (capstan's cache makes that a
load after the first) and runs its points in process; each point's values
are checked as `--set` checks them. A point that fails (a value capstan
refuses, an assembly that fails, a run that stops) is reported with its
values and the others complete; a worker that dies mid-sweep has its
points run again elsewhere by Dask (`retries`), so none is lost.

`python3 -m capstan.sweep` (and `capstan sweep`) is the same from the
command line, writing a CSV.
"""

import itertools
import math
import os
import sys

import numpy as np

REDUCTIONS = ("final", "max", "min", "mean", "trajectory")


def grid(parameters):
    """The points of a grid: every combination of the values given for
    each parameter (the first parameter varies slowest)."""
    names = list(parameters)
    return [dict(zip(names, values)) for values in itertools.product(*(parameters[n] for n in names))]


_models = {}  # per worker process: (path, options) -> Model


def _model(path, options):
    import capstan

    key = (path, repr(sorted(options.items())))
    if key not in _models:
        _models[key] = capstan.compile(path, **options)
    return _models[key]


def run_point(index, point, path, options, outputs, reduce, simulate):
    """One point on a worker: (index, values per output or trajectories,
    None), or (index, None, message) for a point that failed."""
    import capstan

    try:
        model = _model(path, options)
        trajectory = model.simulate(set=point, outputs=outputs, **simulate)
    except capstan.CapstanError as e:
        return index, None, e.message
    names = outputs if outputs is not None else [c for c in trajectory.columns if c != "time"]
    if reduce == "trajectory":
        return index, {n: trajectory[n] for n in ["time"] + list(names)}, None
    op = {"final": lambda a: a[-1], "max": np.max, "min": np.min, "mean": np.mean}[reduce]
    return index, {n: float(op(trajectory[n])) for n in names}, None


class SweepResult(dict):
    """Output name -> numpy array with one value per point (nan where the
    point failed); with reduce="trajectory", output name -> list of arrays
    (None where it failed), and "time" the same. `points`: the parameter
    values of each point; `errors`: (index, point, message) of each failed
    one."""

    def __init__(self, points, outputs, reduce, results):
        super().__init__()
        self.points = points
        self.reduce = reduce
        self.errors = []
        names = list(outputs or [])
        for index, values, _ in results:
            if values is not None and not names:
                names = [n for n in values if n != "time"]
        if reduce == "trajectory":
            names = ["time"] + [n for n in names if n != "time"]
        for n in names:
            self[n] = [None] * len(points) if reduce == "trajectory" else np.full(len(points), math.nan)
        for index, values, message in results:
            if values is None:
                self.errors.append((index, points[index], message))
                continue
            for n in names:
                self[n][index] = values[n]
        self.errors.sort(key=lambda e: e[0])


def _client(client, workers):
    """The Dask client to use, and whether this call started it: `client`
    itself, a Client on a scheduler address, or a new local cluster of
    `workers` processes (one thread each)."""
    from distributed import Client, LocalCluster

    if isinstance(client, Client):
        return client, False
    if isinstance(client, str):
        return Client(client), True
    cluster = LocalCluster(n_workers=workers or min(os.cpu_count() or 1, 4), threads_per_worker=1,
                           processes=True, dashboard_address=None)
    return Client(cluster), True


def sweep(model_path, parameters, outputs=None, client=None, reduce="final", t_end=None, workers=None,
          retries=3, progress=None, compile_options=None, **simulate_options):
    """Runs the model once per point of `parameters` on a Dask cluster and
    gathers each output, reduced per point ("final": its value at t_end;
    "max", "min", "mean"; "trajectory": the whole columns).

    parameters: a dict NAME -> list of values (the grid of every
    combination) or a list of dicts NAME -> value (the points themselves).
    client: None (a local cluster of `workers` processes, started and
    stopped here), a distributed.Client, or a scheduler address
    ("tcp://host:8786"); the workers must be able to import this package
    and read the model file. compile_options: capstan.compile's (model,
    include, derivatives, set); simulate_options: Model.simulate's (dt,
    integrator, tol, ...). progress(done, total) after each point."""
    if reduce not in REDUCTIONS:
        raise ValueError("reduce must be one of %s, not %r" % (", ".join(REDUCTIONS), reduce))
    points = grid(parameters) if isinstance(parameters, dict) else [dict(p) for p in parameters]
    path = os.path.abspath(os.fspath(model_path))
    options = dict(compile_options or {})
    simulate = dict(simulate_options, t_end=t_end)
    outputs = list(outputs) if outputs is not None else None
    dask, owned = _client(client, workers)
    try:
        from distributed import as_completed

        futures = [dask.submit(run_point, i, p, path, options, outputs, reduce, simulate, retries=retries, pure=False)
                   for i, p in enumerate(points)]
        results = []
        for future in as_completed(futures):
            results.append(future.result())
            if progress:
                progress(len(results), len(points))
    finally:
        if owned:
            cluster = dask.cluster
            dask.close()
            if cluster is not None:
                cluster.close()
    return SweepResult(points, outputs, reduce, results)


# ------------------------------------------------------------ command line


def _parse_param(text):
    """NAME=START:STOP:COUNT (COUNT values, evenly spaced) or NAME=V1,V2,..."""
    name, sep, spec = text.partition("=")
    if not sep or not name:
        raise ValueError("`--param %s`: expected NAME=START:STOP:COUNT or NAME=V1,V2,..." % text)
    try:
        if ":" in spec:
            start, stop, count = spec.split(":")
            n = int(count)
            if n < 1 or str(n) != count.strip():
                raise ValueError
            return name, list(np.linspace(float(start), float(stop), n))
        return name, [float(v) for v in spec.split(",")]
    except ValueError:
        raise ValueError("`--param %s`: expected NAME=START:STOP:COUNT (COUNT a whole number >= 1) "
                         "or NAME=V1,V2,... of numbers" % text) from None


def first_error(message):
    """The first error line of capstan's message (its located diagnostic,
    without the notes and source excerpts), else its first line."""
    lines = message.splitlines()
    for line in lines:
        if ": error: " in line or line.startswith("capstan: error: "):
            return line
    return lines[0] if lines else ""


def main(argv=None):
    import argparse
    import csv

    import capstan

    parser = argparse.ArgumentParser(
        prog="capstan sweep",
        description="Run a model once per point of a parameter grid on a Dask cluster; one CSV row per point.")
    parser.add_argument("model", help="the model file (.cap, .urdf, .sdf)")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=START:STOP:COUNT",
                        help="a parameter's values (repeat for a grid of every combination); also NAME=V1,V2,...")
    parser.add_argument("--output", action="append", default=None, metavar="COLUMN",
                        help="a column to collect (repeat); default: every column")
    parser.add_argument("--reduce", default="final", choices=[r for r in REDUCTIONS if r != "trajectory"],
                        help="what of each column a point gives (default: its final value)")
    parser.add_argument("--scheduler", help="a Dask scheduler's address (default: a local cluster)")
    parser.add_argument("--workers", type=int, help="the local cluster's worker processes")
    parser.add_argument("--t-end", type=float)
    parser.add_argument("--dt", type=float)
    parser.add_argument("--integrator")
    parser.add_argument("--tol", type=float)
    parser.add_argument("--model-name", dest="model_name", help="which model of the file (capstan's --model)")
    parser.add_argument("-o", dest="out", required=True, help="the results CSV")
    args = parser.parse_args(argv)
    try:
        parameters = dict(_parse_param(p) for p in args.param)
    except ValueError as e:
        parser.error(str(e))
    if not parameters:
        parser.error("give at least one --param")
    total = math.prod(len(v) for v in parameters.values())
    tty = sys.stderr.isatty()

    def bar(done, total):
        width = 40
        filled = done * width // total
        end = "" if tty and done < total else "\n"
        if tty or done == total:
            sys.stderr.write("\r[%s%s] %d/%d points%s" % ("#" * filled, " " * (width - filled), done, total, end))
            sys.stderr.flush()

    simulate = {k: v for k, v in (("dt", args.dt), ("integrator", args.integrator), ("tol", args.tol))
                if v is not None}
    try:
        result = sweep(args.model, parameters, outputs=args.output, client=args.scheduler, reduce=args.reduce,
                       t_end=args.t_end, workers=args.workers, progress=bar,
                       compile_options={"model": args.model_name} if args.model_name else None, **simulate)
    except capstan.CapstanError as e:
        sys.stderr.write(e.message + "\n")
        return 1
    names = list(result)
    tmp = args.out + ".tmp%d" % os.getpid()
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(list(parameters) + names + ["error"])
        failed = {i: m for i, _, m in result.errors}
        for i, point in enumerate(result.points):
            w.writerow([repr(float(point[n])) for n in parameters] +
                       ["" if i in failed else repr(float(result[n][i])) for n in names] +
                       [first_error(failed.get(i, ""))])
    os.replace(tmp, args.out)  # whole or not at all
    for i, point, message in result.errors:
        sys.stderr.write("capstan: error: point %d (%s): %s\n" % (
            i, ", ".join("%s=%r" % (n, float(v)) for n, v in point.items()), first_error(message)))
    sys.stderr.write("wrote %s: %d points, %d failed\n" % (args.out, total, len(result.errors)))
    return 1 if result.errors else 0


if __name__ == "__main__":
    sys.exit(main())
