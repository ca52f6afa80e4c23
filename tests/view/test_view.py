"""Pages that `capstan view` writes, opened in a real browser: Debian's
chromium, headless, with every host name unresolvable (the page must need no
network), WebGL on SwiftShader. Each page tests itself when its address ends
in `#selftest=T1,T2` (compiler/templates/view.html) and writes what it found
into <pre id="capstan-selftest">, which `--dump-dom` prints; screenshots are
kept in $CAPSTAN_VIEW_ARTIFACTS (default build/view-artifacts).

For each sampled example, against its stored reference trajectory (so the
page is the same on every run):
  - the page loads offline and `window.capstanView.ready` becomes true;
  - its bodies are `capstan check --json`'s (World left out), each drawn by
    at least one mesh, and the bodies cover pixels of a picture that is not
    blank;
  - setTime to two rows' times puts every body origin where the generated
    code (`capstan eval --state`, compiled) puts it for those rows' joint
    coordinates, so a body moves between them by what the CSV says;
  - the default plot shows the energies;
  - a cable is drawn along its solved path, ending at its end frames.
Also: the page is the same bytes for the same inputs (a golden hash of its
data), a trajectory of 10^5 rows keeps at most 4000 points per column and
2000 animation frames, and `simulate --view` writes the page of its run.

  CAPSTAN=build/compiler/capstan pytest tests/view   (CAPSTAN_VIEW_ALL=1: every example)
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CAPSTAN = os.environ.get("CAPSTAN", os.path.join(ROOT, "build", "compiler", "capstan"))
ARTIFACTS = os.environ.get("CAPSTAN_VIEW_ARTIFACTS", os.path.join(ROOT, "build", "view-artifacts"))
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

# model -> its reference trajectory (examples/references/)
EXAMPLES = {
    "cable": "CableOverCylinder",
    "double_pendulum": "DoublePendulum",
    "fourbar": "FourBar",
    "bushing": "BushingMount",
    "bouncing_ball": "BouncingBall",
    "chain": "Chain",
    "ball_on_table": "BallOnTable",
    "pendulum_contact": "PendulumContact",
    "sphere_on_sphere": "SphereOnSphere",
    "stiff_chain": "StiffChain",
}
# Per-example loops are sampled (the suite's time); CAPSTAN_VIEW_ALL=1 runs all.
SAMPLED = ["cable", "double_pendulum", "fourbar", "bushing"]
CASES = list(EXAMPLES) if os.environ.get("CAPSTAN_VIEW_ALL") else SAMPLED


def capstan(*args, check=True):
    proc = subprocess.run([CAPSTAN, *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"capstan {' '.join(args)}: exit {proc.returncode}\n{proc.stderr}")
    return proc


def chromium(url, *flags, timeout=180):
    assert os.path.exists(CHROMIUM), "chromium is not installed (scripts/setup.sh installs Debian's chromium)"
    with tempfile.TemporaryDirectory() as profile:
        proc = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
             "--host-resolver-rules=MAP * ~NOTFOUND", "--no-first-run", f"--user-data-dir={profile}",
             "--window-size=1200,700", *flags, url],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    return proc


def selftest(page, times):
    url = "file://" + os.path.abspath(page) + "#selftest=" + ",".join(repr(float(t)) for t in times)
    proc = chromium(url, "--virtual-time-budget=10000", "--dump-dom")
    m = re.search(r'<pre id="capstan-selftest"[^>]*>([^<]*)</pre>', proc.stdout)
    assert m and m.group(1).strip(), f"the page did not test itself:\n{proc.stderr[-2000:]}"
    return json.loads(m.group(1))


def screenshot(page, name):
    os.makedirs(ARTIFACTS, exist_ok=True)
    png = os.path.join(ARTIFACTS, name + ".png")
    chromium("file://" + os.path.abspath(page), "--virtual-time-budget=3000", f"--screenshot={png}")
    assert os.path.getsize(png) > 1000


def read_csv(path):
    with open(path) as f:
        names = f.readline().strip().split(",")
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    return names, data


def state_of(names, row):
    """STATE.json of one CSV row: every `JOINT.q[i]` and `JOINT.u[i]`."""
    q, u = {}, {}
    for name, value in zip(names, row):
        m = re.fullmatch(r"(.+)\.([qu])\[(\d+)\]", name)
        if m:
            (q if m.group(2) == "q" else u).setdefault(m.group(1), []).append(float(value))
    return {"time": float(row[0]), "q": q, "u": u}


def body_names(model):
    bodies = json.loads(capstan("check", model, "--json").stdout)["bodies"]
    return [b["name"] for b in bodies if b["name"] != "world"]


@pytest.mark.parametrize("example", CASES)
def test_example_page(example, tmp_path):
    model = f"examples/{example}.cap"
    csv = f"examples/references/{EXAMPLES[example]}.ref.csv"
    page = tmp_path / f"{example}.html"
    capstan("view", model, csv, "-o", str(page))
    names, data = read_csv(os.path.join(ROOT, csv))
    rows = [len(data) // 4, (3 * len(data)) // 4]
    found = selftest(page, [data[r, 0] for r in rows])
    screenshot(page, example)

    assert found["ready"] is True
    assert found["duration"] == pytest.approx(data[-1, 0] - data[0, 0], abs=1e-9)
    bodies = body_names(model)
    assert found["bodies"] == bodies
    assert all(found["meshes"][b] >= 1 for b in bodies), found["meshes"]
    assert found["columns"] == names[1:]
    assert ["kinetic_energy", "potential_energy"] in found["plots"]
    assert found["variance"] > 20, "the picture is blank"
    assert found["bodyPixels"] > 200, "the bodies cover no pixels"

    # Every body origin where the generated code puts it, at both rows.
    expected = []
    for r, at in zip(rows, found["at"]):
        assert at["t"] == pytest.approx(data[r, 0], abs=1e-12)
        state = tmp_path / f"state{r}.json"
        state.write_text(json.dumps(state_of(names, data[r])))
        evaluated = json.loads(capstan("eval", model, "--state", str(state)).stdout)["bodies"]
        expected.append({b: evaluated[b]["p_WB"] for b in bodies})
        for b in bodies:
            assert at["positions"][b] == pytest.approx(evaluated[b]["p_WB"], abs=1e-6), (r, b)
    moved = {b: np.subtract(expected[1][b], expected[0][b]) for b in bodies}
    for b in bodies:
        shown = np.subtract(found["at"][1]["positions"][b], found["at"][0]["positions"][b])
        assert shown == pytest.approx(moved[b], abs=2e-6)
    q_columns = [k for k, n in enumerate(names) if re.fullmatch(r".+\.q\[\d+\]", n)]
    if np.abs(data[rows[1], q_columns] - data[rows[0], q_columns]).max() > 1e-3:  # (a model at rest stays)
        assert any(np.linalg.norm(m) > 1e-4 for m in moved.values()), "no body moves between the two times"

    # A bushing: its halfway frame B moves with the mount, a pose per frame.
    if example == "bushing":
        markers = json.loads(scene_data(page))["markers"]
        assert [m["name"] for m in markers] == ["mount B (halfway)"]
        assert len(markers[0]["poses"]) == 7 * len(data)
    # A cable: a path of several points, from its origin's frame to the weight.
    if example == "cable":
        for at, r in zip(found["at"], rows):
            points = np.array(at["cables"]["rope"]).reshape(-1, 3)
            assert len(points) > 10  # the geodesic over the drum, not a chord
            assert points[0] == pytest.approx([-1, 1, 0], abs=1e-6)
            assert points[-1] == pytest.approx(at["positions"]["weight"], abs=1e-6)
            # Over the drum (radius 0.1 about z through (0, 1)), on its surface.
            over = [p for p in points if abs(p[0]) < 0.099 and p[1] > 1.0]
            assert over and all(np.hypot(p[0], p[1] - 1.0) == pytest.approx(0.1, abs=1e-6) for p in over)


def scene_data(page):
    text = page.read_text()
    m = re.search(r"const SCENE = (.*?);\n", text)
    assert m
    return m.group(1)


def test_same_page_for_same_inputs(tmp_path):
    pages = [tmp_path / "a.html", tmp_path / "b.html"]
    for p in pages:
        capstan("view", "examples/double_pendulum.cap", "examples/references/DoublePendulum.ref.csv", "-o", str(p))
    assert pages[0].read_bytes() == pages[1].read_bytes()
    # The data part's hash, as written on the day the page's format was set
    # (update it with the page's format: tests/view/golden_hash.txt).
    digest = hashlib.sha256(scene_data(pages[0]).encode()).hexdigest()
    golden = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden_hash.txt")
    if os.environ.get("CAPSTAN_VIEW_UPDATE"):
        with open(golden, "w") as f:
            f.write(digest + "\n")
    with open(golden) as f:
        assert digest == f.read().strip()


def test_long_trajectory_is_thinned(tmp_path):
    # 10^5 rows of the double pendulum's coordinates, and six more columns.
    n = 100_000
    t = np.linspace(0.0, 100.0, n)
    a, b = 0.8 * np.sin(2.0 * t), 0.5 * np.cos(3.0 * t)
    extra = [np.sin(k * t) + (t > 50.0) * (k == 1) for k in range(1, 7)]
    spike = np.zeros(n)
    spike[54321] = 7.0  # one row's peak: thinned for display, never lost
    columns = [t, a, b, np.gradient(a, t), np.gradient(b, t), spike, *extra]
    header = "time,shoulder.q[1],elbow.q[1],shoulder.u[1],elbow.u[1],spike," + ",".join(f"x{k}" for k in range(1, 7))
    csv = tmp_path / "long.csv"
    np.savetxt(csv, np.column_stack(columns), delimiter=",", header=header, comments="", fmt="%.10g")
    page = tmp_path / "long.html"
    capstan("view", "examples/double_pendulum.cap", str(csv), "-o", str(page))
    scene = json.loads(scene_data(page))
    assert len(scene["times"]) == 2000
    assert scene["times"][0] == 0.0 and scene["times"][-1] == 100.0
    for c in scene["plots"]["columns"]:
        assert len(c["y"]) <= 4000 and len(c["t"]) == len(c["y"])
    spikes = next(c for c in scene["plots"]["columns"] if c["name"] == "spike")
    assert max(spikes["y"]) == 7.0
    assert page.stat().st_size < 8_000_000
    found = selftest(page, [25.0, 75.0])
    assert found["ready"] is True and found["duration"] == pytest.approx(100.0)


def test_simulate_writes_the_page_of_its_run(tmp_path):
    page, csv = tmp_path / "run.html", tmp_path / "run.csv"
    proc = capstan("simulate", "examples/double_pendulum.cap", "--t-end", "0.5", "-o", str(csv), "--view", str(page))
    assert "wrote" in proc.stderr
    names, data = read_csv(str(csv))
    scene = json.loads(scene_data(page))
    assert len(scene["times"]) == len(data)
    assert scene["trajectory"] == "run.csv"
    # Without -o: the page alone, nothing on stdout.
    alone = tmp_path / "alone.html"
    proc = capstan("simulate", "examples/double_pendulum.cap", "--t-end", "0.5", "--view", str(alone))
    assert proc.stdout == "" and alone.exists()
    assert json.loads(scene_data(alone))["times"] == scene["times"]


def test_visual_shapes_and_meshes(tmp_path):
    # Every shape of `Visual`, a binary and an ASCII STL and an OBJ mesh.
    tri = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=np.float32)
    binary = b"\0" * 80 + np.uint32(1).tobytes() + np.zeros(3, np.float32).tobytes() + tri.tobytes() + b"\0\0"
    (tmp_path / "tri.stl").write_bytes(binary)
    (tmp_path / "tri_ascii.stl").write_text(
        "solid t\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 0 1 0\nendloop\nendfacet\nendsolid t\n")
    (tmp_path / "quad.obj").write_text("v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3 4\n")
    shapes = [('"box"', ""), ('"sphere"', ""), ('"cylinder"', ""), ('"capsule"', ""),
              ('"mesh"', ', file = "tri.stl", scale = {0.1, 0.1, 0.1}'),
              ('"mesh"', ', file = "tri_ascii.stl", scale = {0.1, 0.1, 0.1}'),
              ('"mesh"', ', file = "quad.obj", scale = {0.1, 0.1, 0.1}')]
    decls = "\n".join(f"  Visual v{k}(shape = {s}, size = {{0.05, 0.05, 0.2}}, color = {{0.2, 0.6, 0.3}}{extra});"
                      for k, (s, extra) in enumerate(shapes))
    connects = "\n".join(f"  connect(arm.frame_a, v{k}.frame_a);" for k in range(len(shapes)))
    (tmp_path / "shapes.cap").write_text(f"""model Shapes
  import Capstan.*;
  World world;
  Revolute hinge(q0 = 0.5);
  Body arm(mass = 1, com = {{0.5, 0, 0}}, inertia = diagonal({{1e-3, 0.1, 0.1}}));
{decls}
equation
  connect(world.frame_b, hinge.frame_a);
  connect(hinge.frame_b, arm.frame_a);
{connects}
  annotation(experiment(StopTime = 0.5, Interval = 0.01));
end Shapes;
""")
    page = tmp_path / "shapes.html"
    capstan("view", str(tmp_path / "shapes.cap"), "-o", str(page), "--interpret")
    scene = json.loads(scene_data(page))
    drawn = scene["bodies"][0]["shapes"]
    assert [s["kind"] for s in drawn] == ["box", "sphere", "cylinder", "capsule", "mesh", "mesh", "mesh"]
    assert drawn[4]["triangles"] == pytest.approx([0, 0, 0, 0.1, 0, 0, 0, 0.1, 0])
    assert drawn[5]["triangles"] == drawn[4]["triangles"]
    assert len(drawn[6]["triangles"]) == 18  # a quad: two triangles
    found = selftest(page, [0.1, 0.4])
    # The capsule is a group of three meshes; the six others one each.
    assert found["meshes"]["arm"] == 9
