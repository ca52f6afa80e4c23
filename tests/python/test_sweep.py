"""Sweeps on a real local Dask cluster (python3-distributed): the same
numbers as serial runs, no point lost to a killed worker, failed points
reported with their values, and `capstan sweep` writing its CSV."""

import csv
import os
import signal
import subprocess

import numpy as np
import pytest

import capstan

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, "examples", "double_pendulum.cap")
GRID = {"m1": [0.5, 1.0, 1.5, 2.0], "L2": [0.4, 0.6, 0.8, 1.0]}  # 16 points
OUTPUTS = ["shoulder.q[1]", "elbow.u[1]"]


@pytest.fixture(scope="module")
def serial():
    """The 16 points run one after the other in this process."""
    m = capstan.compile(MODEL)
    points = capstan.sweep_grid(GRID)
    return points, {o: np.array([m.simulate(1.0, set=p, outputs=OUTPUTS)[o][-1] for p in points]) for o in OUTPUTS}


@pytest.fixture(scope="module")
def cluster():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
        with Client(c) as client:
            yield client


def test_sweep_equals_serial_runs(cluster, serial):
    points, expected = serial
    r = capstan.sweep(MODEL, GRID, outputs=OUTPUTS, client=cluster, t_end=1.0)
    assert r.points == points
    assert r.errors == []
    for o in OUTPUTS:
        np.testing.assert_array_equal(r[o], expected[o])  # the same library, the same doubles


def test_sweep_on_a_scheduler_address(cluster, serial):
    # As on a remote cluster: capstan.sweep connects to the scheduler by its address.
    points, expected = serial
    r = capstan.sweep(MODEL, points[:4], outputs=OUTPUTS[:1], client=cluster.scheduler.address, t_end=1.0)
    np.testing.assert_array_equal(r[OUTPUTS[0]], expected[OUTPUTS[0]][:4])


def test_sweep_of_trajectories_and_statistics(cluster, serial):
    points, _ = serial
    m = capstan.compile(MODEL)
    r = capstan.sweep(MODEL, points[:3], outputs=OUTPUTS[:1], client=cluster, t_end=1.0, reduce="trajectory")
    s = capstan.sweep(MODEL, points[:3], outputs=OUTPUTS[:1], client=cluster, t_end=1.0, reduce="max")
    for k, p in enumerate(points[:3]):
        one = m.simulate(1.0, set=p, outputs=OUTPUTS[:1])
        np.testing.assert_array_equal(r["time"][k], one["time"])
        np.testing.assert_array_equal(r[OUTPUTS[0]][k], one[OUTPUTS[0]])
        assert s[OUTPUTS[0]][k] == one[OUTPUTS[0]].max()
    with pytest.raises(ValueError):
        capstan.sweep(MODEL, points[:1], client=cluster, reduce="median")


def test_killed_worker_loses_no_point(cluster, serial):
    points, expected = serial
    pids = list(cluster.run(os.getpid).values())
    killed = []

    def progress(done, total):
        if done == 2 and not killed:  # mid-sweep: most points still queued or running
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])

    r = capstan.sweep(MODEL, GRID, outputs=OUTPUTS, client=cluster, t_end=1.0, progress=progress)
    assert killed
    assert r.errors == []
    for o in OUTPUTS:
        np.testing.assert_array_equal(r[o], expected[o])


def test_failed_point_reported_others_complete(cluster, serial):
    points, expected = serial
    grid = dict(GRID, m1=GRID["m1"] + [-1.0])  # m1 = -1 breaks its bound: 4 points refused
    r = capstan.sweep(MODEL, grid, outputs=OUTPUTS, client=cluster, t_end=1.0)
    assert len(r.points) == 20
    failed = [i for i, _, _ in r.errors]
    assert failed == [16, 17, 18, 19]
    for i, point, message in r.errors:
        assert point["m1"] == -1.0
        assert "below its minimum 0 [ValueBelowMin]" in message
    for o in OUTPUTS:
        np.testing.assert_array_equal(r[o][:16], expected[o])
        assert np.isnan(r[o][16:]).all()


def test_capstan_sweep_command(tmp_path, serial):
    points, expected = serial
    out = tmp_path / "results.csv"
    p = subprocess.run([capstan.capstan_executable(), "sweep", MODEL, "--param", "m1=0.5:2:4",
                        "--param", "L2=0.4,0.6,0.8,1.0", "--output", OUTPUTS[0], "--output", OUTPUTS[1],
                        "--t-end", "1", "--workers", "2", "-o", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "wrote %s: 16 points, 0 failed" % out in p.stderr
    rows = list(csv.reader(open(out)))
    assert rows[0] == ["m1", "L2"] + OUTPUTS + ["error"]
    values = np.array([[float(x) for x in r[:4]] for r in rows[1:]])
    np.testing.assert_array_equal(values[:, 0], [p["m1"] for p in points])
    np.testing.assert_array_equal(values[:, 2], expected[OUTPUTS[0]])
    np.testing.assert_array_equal(values[:, 3], expected[OUTPUTS[1]])
    bad = subprocess.run([capstan.capstan_executable(), "sweep", MODEL, "--param", "m1=1:2:x", "-o", str(out)],
                         capture_output=True, text=True)
    assert bad.returncode == 2
    assert "`--param m1=1:2:x`: expected NAME=START:STOP:COUNT" in bad.stderr
