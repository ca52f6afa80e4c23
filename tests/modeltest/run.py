#!/usr/bin/env python3
"""Tests of `capstan test` (ctest label `modeltest`), each in a scratch folder
with copies of tests/modeltest/models/:

  run.py --capstan BIN CASE      CASE one of CASES below

The falling block's trajectory is a polynomial that dopri5 integrates exactly,
so the report text is checked exactly.
"""
import argparse
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

HERE = pathlib.Path(__file__).resolve().parent
MODELS = HERE / "models"


class Failed(Exception):
    pass


def capstan_test(capstan, cwd, *args, status=None):
    proc = subprocess.run([capstan, "test", *map(str, args)], cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=600)
    print(f"$ capstan test {' '.join(map(str, args))}  (exit {proc.returncode})\n{proc.stdout}{proc.stderr}")
    if status is not None and proc.returncode != status:
        raise Failed(f"exit status {proc.returncode}, expected {status}")
    return proc


def expect_text(actual, expected, what="stdout"):
    if actual != expected:
        raise Failed(f"{what} differs; expected:\n{expected}\ngot:\n{actual}")


def read_csv(path):
    lines = pathlib.Path(path).read_text().strip().split("\n")
    return lines[0].split(","), [[float(v) for v in line.split(",")] for line in lines[1:]]


def write_csv(path, header, rows):
    with open(path, "w") as f:
        f.write(",".join(header) + "\n")
        for row in rows:
            f.write(",".join(repr(v) for v in row) + "\n")


def setup(d, *models):
    for m in models:
        shutil.copy(MODELS / m, d / m)


def blessed(capstan, d):
    """falling.cap with its reference, written by --update."""
    setup(d, "falling.cap")
    capstan_test(capstan, d, "falling.cap", "--update", status=0)


# ---------------------------------------------------------------- cases
def missing(capstan, d):
    setup(d, "falling.cap")
    proc = capstan_test(capstan, d, "falling.cap", status=1)
    expect_text(proc.stdout, "FAIL Falling (falling.cap): no reference `Falling.ref.csv`\n"
                             "  create it from this result with `capstan test falling.cap --update`\n"
                             "report: capstan-test-report/index.html\n"
                             "0 passed, 1 failed\n")


def update(capstan, d):
    setup(d, "falling.cap")
    proc = capstan_test(capstan, d, "falling.cap", "--update", status=0)
    expect_text(proc.stdout, "UPDATED Falling (falling.cap): wrote Falling.ref.csv\n1 passed, 0 failed\n")
    header, rows = read_csv(d / "Falling.ref.csv")
    if header != ["time", "slider.q[1]", "slider.u[1]", "switched", "kinetic_energy", "potential_energy"] or \
            len(rows) != 101:
        raise Failed(f"unexpected reference: {header}, {len(rows)} rows")
    proc = capstan_test(capstan, d, ".", status=0)
    expect_text(proc.stdout, "PASS Falling (falling.cap): 5 signals\n1 passed, 0 failed\n")
    # A changed model fails; --update re-blesses it, in the references/ folder it was found in.
    (d / "references").mkdir()
    (d / "Falling.ref.csv").rename(d / "references" / "Falling.ref.csv")
    model = d / "falling.cap"
    model.write_text(model.read_text().replace("mass = 2", "mass = 3"))
    proc = capstan_test(capstan, d, ".", status=1)
    if not proc.stdout.startswith("FAIL Falling (falling.cap): 2 of 5 signals differ\n"):
        raise Failed("a changed mass must change the energies")
    proc = capstan_test(capstan, d, ".", "--update", status=0)
    expect_text(proc.stdout, "UPDATED Falling (falling.cap): wrote references/Falling.ref.csv\n1 passed, 0 failed\n")
    if (d / "Falling.ref.csv").exists():
        raise Failed("--update wrote a second reference beside the model")
    capstan_test(capstan, d, ".", status=0)


def shifted(capstan, d):
    blessed(capstan, d)
    header, rows = read_csv(d / "Falling.ref.csv")
    u = header.index("slider.u[1]")
    for row in rows:
        if row[0] >= 0.7:
            row[u] += 0.01
    write_csv(d / "Falling.ref.csv", header, rows)
    proc = capstan_test(capstan, d, "falling.cap", "--junit", "junit.xml", status=1)
    expect_text(proc.stdout, "FAIL Falling (falling.cap): 1 of 5 signals differ\n"
                             "  slider.u[1]: leaves the tube at t = 0.7 (-0.7; reference -0.69, tube -0.69199 .. "
                             "-0.68901); worst deviation 0.00901 beyond the tube at t = 1\n"
                             "report: capstan-test-report/index.html\n"
                             "0 passed, 1 failed\n")
    svg = d / "capstan-test-report" / "Falling" / "slider.u_1_.svg"
    root = ET.parse(svg).getroot()
    if not root.tag.endswith("svg") or len(root.findall("{http://www.w3.org/2000/svg}polyline")) != 2:
        raise Failed("the plot needs the reference and the result as polylines")
    index = (d / "capstan-test-report" / "index.html").read_text()
    for needle in ("FAIL Falling", "slider.u[1]", "Falling/slider.u_1_.svg", "kinetic_energy", "Falling/view.html"):
        if needle not in index:
            raise Failed(f"index.html does not mention {needle}")
    # The failing model's page (`capstan view` of the result; docs/view.md).
    page = (d / "capstan-test-report" / "Falling" / "view.html").read_text()
    if "const SCENE = " not in page or '"slider"' not in page:
        raise Failed("the failing model's page is missing or holds no scene")


def plot_limit(capstan, d):
    """A plot that does not fit (a file size limit, as a full disk) is never
    left half written: plots are written aside and renamed when whole, and
    the report says why the plot is missing. The reference is sampled finely
    (2,001 rows) so that the plot is the largest file the run writes (the
    report's files, and the header and IR that rendering the model writes)."""
    blessed(capstan, d)
    header, rows = read_csv(d / "Falling.ref.csv")
    u = header.index("slider.u[1]")
    fine = []
    for k in range(2001):  # linear interpolation of the reference, every 0.0005 s
        t = k * (rows[-1][0] - rows[0][0]) / 2000
        i = min(int(t / (rows[1][0] - rows[0][0])), len(rows) - 2)
        a, b = rows[i], rows[i + 1]
        w = (t - a[0]) / (b[0] - a[0])
        fine.append([t] + [x + w * (y - x) for x, y in zip(a[1:], b[1:])])
        if t >= 0.7:
            fine[-1][u] += 0.01
    write_csv(d / "Falling.ref.csv", header, fine)
    capstan_test(capstan, d, "falling.cap", status=1)
    report = d / "capstan-test-report"
    svg = report / "Falling" / "slider.u_1_.svg"
    # (The failing model's page, view.html, is larger than the plot: under
    # the limit it is not written at all, checked below.)
    largest_other = max(f.stat().st_size for f in report.rglob("*")
                        if f.is_file() and f != svg and not f.name.startswith("view.html"))
    # What capstan writes besides the report: the header and the IR (the
    # renderer writes its own copy of the IR, the same size).
    compiled = d / "compiled"
    subprocess.run([capstan, "compile", "falling.cap", "-o", compiled, "--ir"], cwd=d, check=True, capture_output=True)
    largest_other = max([largest_other] + [f.stat().st_size for f in compiled.iterdir()])
    if svg.stat().st_size <= largest_other + 1024:
        raise Failed(f"the plot ({svg.stat().st_size} bytes) must be the largest file (others up to {largest_other})")
    limit = (largest_other + svg.stat().st_size) // 2

    def limited():
        import resource
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

    proc = subprocess.run([capstan, "test", "falling.cap"], cwd=d, capture_output=True, text=True, timeout=600,
                          preexec_fn=limited)
    print(f"$ capstan test falling.cap  (file size limit {limit}, exit {proc.returncode})\n{proc.stdout}{proc.stderr}")
    if proc.returncode != 1 or "its plot cannot be written: File too large" not in proc.stdout:
        raise Failed("the report must say that the plot cannot be written, and why")
    left = sorted(str(f.relative_to(report)) for f in [*report.rglob("*.svg*"), *report.rglob("view.html*")])
    if left:
        raise Failed(f"a plot that does not fit leaves nothing behind; found {left}")
    if "slider.u_1_.svg" in (report / "index.html").read_text():
        raise Failed("index.html links a plot that was not written")


def parameter(capstan, d):
    blessed(capstan, d)
    model = d / "falling.cap"
    model.write_text(model.read_text().replace("= 1 \"gravity\"", "= 1.1 \"gravity\""))
    proc = capstan_test(capstan, d, "falling.cap", status=1)
    expect_text(proc.stdout,
                "FAIL Falling (falling.cap): 4 of 5 signals differ\n"
                "  slider.q[1]: leaves the tube at t = 0.12 (-0.00792; reference -0.0072, tube -0.007825 .. "
                "-0.006585); worst deviation 0.0495 beyond the tube at t = 1\n"
                "  slider.u[1]: leaves the tube at t = 0.03 (-0.033; reference -0.03, tube -0.032 .. -0.028); "
                "worst deviation 0.099 beyond the tube at t = 1\n"
                "  kinetic_energy: leaves the tube at t = 0.08 (0.007744; reference 0.0064, tube 0.00525 .. "
                "0.00757); worst deviation 0.209 beyond the tube at t = 1\n"
                "  potential_energy: leaves the tube at t = 0.08 (-0.007744; reference -0.0064, tube -0.00757 .. "
                "-0.00525); worst deviation 0.209 beyond the tube at t = 1\n"
                "report: capstan-test-report/index.html\n"
                "0 passed, 1 failed\n")


def grid(capstan, d):
    """A reference on a coarser grid (h = 0.03 against the result's 0.01),
    with `switched` stepping between two of its samples."""
    setup(d, "falling.cap")
    header = ["time", "slider.q[1]", "slider.u[1]", "switched", "kinetic_energy", "potential_energy"]
    rows = []
    for k in range(35):
        t = min(1.0, 0.03 * k)
        rows.append([t, -t * t / 2, -t, 1.0 if t > 0.505 else 0.0, t * t, -t * t])
    write_csv(d / "Falling.ref.csv", header, rows)
    proc = capstan_test(capstan, d, "falling.cap", status=0)
    expect_text(proc.stdout, "PASS Falling (falling.cap): 5 signals\n1 passed, 0 failed\n")
    # The same reference with the step moved by 0.06 s fails, only there.
    for row in rows:
        row[3] = 1.0 if row[0] > 0.565 else 0.0
    write_csv(d / "Falling.ref.csv", header, rows)
    proc = capstan_test(capstan, d, "falling.cap", status=1)
    expect_text(proc.stdout, "FAIL Falling (falling.cap): 1 of 5 signals differ\n"
                             "  switched: leaves the tube at t = 0.51 (1; reference 0, tube -0.001 .. 0.001); "
                             "worst deviation 0.999 beyond the tube at t = 0.51\n"
                             "report: capstan-test-report/index.html\n"
                             "0 passed, 1 failed\n")


def failures(capstan, d):
    """A simulation that fails and one that runs out of time are reported;
    the other model still runs and passes."""
    blessed(capstan, d)
    setup(d, "singular.cap", "endless.cap")
    proc = capstan_test(capstan, d, ".", "--timeout", 1, "-j", 2, "--junit", "junit.xml", status=1)
    lines = proc.stdout.split("\n")
    expected = [
        "FAIL Endless (endless.cap): the simulation failed",
        # One line: where the limit stopped the run, and the rows kept.
        re.compile(r"  capstan: error: the simulation ran longer than 1 s \(`--timeout`\) and was stopped "
                   r"at t = \S+; \S+ rows? written"),
        "PASS Falling (falling.cap): 5 signals",
        "FAIL Singular (singular.cap): the simulation failed",
        re.compile(r"  capstan: error: step size became negligible at t = 0\.3749999\d*; the problem may be stiff"),
        "report: capstan-test-report/index.html",
        "1 passed, 2 failed",
        "",
    ]
    if len(lines) != len(expected) or not all(
            (e.fullmatch(l) if isinstance(e, re.Pattern) else e == l) for e, l in zip(expected, lines)):
        raise Failed("unexpected report:\n" + proc.stdout)
    suite = ET.parse(d / "junit.xml").getroot().find("testsuite")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    if suite.get("tests") != "3" or suite.get("failures") != "2" or sorted(cases) != ["Endless", "Falling", "Singular"]:
        raise Failed("junit.xml: expected 3 testcases, 2 failures")
    if cases["Falling"].find("failure") is not None or "negligible" not in cases["Singular"].find("failure").text:
        raise Failed("junit.xml: wrong failures")


def long_name(capstan, d):
    """A model whose name is longer than a file name may be (300 characters)
    fails on its own, with the reason; the other model still runs and
    passes, and the report is written."""
    blessed(capstan, d)
    name = "Falling" + "X" * 293
    (d / "long.cap").write_text((MODELS / "falling.cap").read_text().replace("Falling", name))
    proc = capstan_test(capstan, d, ".", status=1)
    lines = proc.stdout.split("\n")
    if "PASS Falling (falling.cap): 5 signals" not in lines or "1 passed, 1 failed" not in lines:
        raise Failed("unexpected report:\n" + proc.stdout)
    failed = [l for l in lines if l.startswith(f"FAIL {name} (long.cap)")]
    if not failed:
        raise Failed("no FAIL line for the long-named model:\n" + proc.stdout)
    if not (d / "capstan-test-report" / "index.html").stat().st_size:
        raise Failed("empty report index")


def junit(capstan, d):
    blessed(capstan, d)
    setup(d, "singular.cap")
    (d / "sub").mkdir()
    model = d / "sub" / "falling.cap"
    model.write_text((MODELS / "falling.cap").read_text().replace("mass = 2", "mass = 2.5"))
    shutil.copy(d / "Falling.ref.csv", d / "sub" / "Falling.ref.csv")
    (d / "out").mkdir()
    capstan_test(capstan, d, "falling.cap", "sub", "--junit", "out/junit.xml", status=1)
    root = ET.parse(d / "out" / "junit.xml").getroot()
    if root.tag != "testsuites" or root.get("tests") != "2" or root.get("failures") != "1":
        raise Failed(f"junit.xml: <testsuites> says tests={root.get('tests')} failures={root.get('failures')}")
    suites = root.findall("testsuite")
    cases = suites[0].findall("testcase")
    if len(suites) != 1 or [(c.get("name"), c.get("classname")) for c in cases] != [
            ("Falling", "falling"), ("Falling", "sub.falling")]:
        raise Failed("junit.xml: expected the testcases Falling (falling) and Falling (sub.falling)")
    if cases[0].find("failure") is not None:
        raise Failed("junit.xml: the passing model has a failure")
    failure = cases[1].find("failure")
    if failure is None or failure.get("message") != "2 of 5 signals differ" or \
            not all(s in failure.text for s in ("kinetic_energy: leaves the tube", "potential_energy: leaves the tube")):
        raise Failed("junit.xml: the failure must list the signals")
    for c in cases:
        float(c.get("time"))
    # Both models named Falling get their own report folder.
    if not (d / "capstan-test-report" / "Falling-2" / "kinetic_energy.svg").exists():
        raise Failed("the second Falling's plots are missing")


def annotation(capstan, d):
    """Per-signal tolerances and ignored signals from __capstan_test."""
    blessed(capstan, d)
    header, rows = read_csv(d / "Falling.ref.csv")
    u, s = header.index("slider.u[1]"), header.index("switched")
    for row in rows:
        row[u] += 0.05
        row[s] = 1 - row[s]
    write_csv(d / "Falling.ref.csv", header, rows)
    capstan_test(capstan, d, "falling.cap", status=1)
    model = d / "falling.cap"
    model.write_text(model.read_text().replace(
        "Tolerance = 1e-8)", "Tolerance = 1e-8),\n  __capstan_test(ignore = {\"switched\"}, "
                             "signals = {signal(\"slider.u[1]\", absTol = 0.06)})"))
    proc = capstan_test(capstan, d, "falling.cap", status=0)
    expect_text(proc.stdout, "PASS Falling (falling.cap): 4 signals\n1 passed, 0 failed\n")
    model.write_text(model.read_text().replace("absTol = 0.06", "absTol = 0.04"))
    proc = capstan_test(capstan, d, "falling.cap", status=1)
    if not proc.stdout.startswith("FAIL Falling (falling.cap): 1 of 5 signals differ\n  slider.u[1]: leaves the tube at t = 0 "):
        raise Failed("absTol = 0.04 must not cover a shift of 0.05")


def interrupt(capstan, d):
    """SIGTERM to `capstan test` stops every simulation it started."""
    setup(d, "endless.cap")
    proc = subprocess.Popen([capstan, "test", "endless.cap"], cwd=d, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    csv = d / "capstan-test-report" / "Endless" / "result.csv"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (csv.exists() and csv.stat().st_size > 0):
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    print(out, err)
    time.sleep(0.2)
    survivors = []
    for entry in pathlib.Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and str(csv).encode() in (entry / "cmdline").read_bytes():
                survivors.append(int(entry.name))
        except OSError:
            pass
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    if survivors:
        raise Failed(f"processes {survivors} survived")
    if proc.returncode != 128 + signal.SIGTERM or "capstan: interrupted" not in err:
        raise Failed(f"exit status {proc.returncode}, expected 143 and `capstan: interrupted`")
    if not csv.read_text().endswith("\n"):
        raise Failed("the result does not end on a whole row")


CASES = {f.__name__: f for f in (missing, update, shifted, plot_limit, parameter, grid, failures, long_name, junit,
                                  annotation, interrupt)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--capstan", required=True)
    ap.add_argument("case", choices=[*CASES, "list"])
    opts = ap.parse_args()
    if opts.case == "list":
        print(";".join(CASES))
        return 0
    with tempfile.TemporaryDirectory() as d:
        try:
            CASES[opts.case](os.path.abspath(opts.capstan), pathlib.Path(d))
        except Failed as e:
            print(f"FAILED: {e}")
            return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
