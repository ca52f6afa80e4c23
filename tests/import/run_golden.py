#!/usr/bin/env python3
"""Golden files of `capstan import`: the model written for each robot of
examples/urdf/, tests/import/urdf/ and tests/import/sdf/ (with the options in CASES) must equal
tests/import/golden/NAME.cap, and `capstan check` must accept the robot with
the same options; a robot with <mimic> joints (COUPLED) is also run, and its
couplers must hold at every row.

  run_golden.py --capstan build/compiler/capstan            # compare
  run_golden.py --capstan build/compiler/capstan --update   # re-bless after an intended change
"""
import argparse
import difflib
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"
# golden name -> (robot, options); a robot's path is relative to the root
CASES = {
    "arm": ("examples/urdf/arm.urdf", []),
    "slider": ("examples/urdf/slider.urdf", []),
    "quadruped": ("examples/urdf/quadruped.urdf", []),
    "quadruped_floating": ("examples/urdf/quadruped.urdf", ["--floating-base"]),
    "arm_sdf": ("tests/import/sdf/arm.sdf", []),
    "quadruped_sdf": ("tests/import/sdf/quadruped.sdf", []),
    "gimbal_sdf": ("tests/import/sdf/gimbal.sdf", ["--package-path", "tests/import/sdf"]),
    "odd_names": ("tests/import/urdf/odd_names.urdf", []),
    "gripper": ("tests/import/urdf/gripper.urdf", ["--floating-base"]),
}
# golden name -> the <mimic> relations (follower, ratio, leader, offset) a
# run of the imported robot (`simulate --interpret`, from the start the
# settings give, assembled onto the couplers) keeps at every row
COUPLED = {
    "gripper": ([("finger_right", -1.0, "finger_left", 0.0), ("tilt", 0.5, "wrist", 0.1)],
                ["--set", "wrist.u0=2", "--set", "finger_left.u0=0.05"]),
}


def check_coupled(capstan, name, robot, args, env):
    """The couplers hold along a run: q_f = ratio q_l + offset at every row."""
    relations, settings = COUPLED[name]
    run = subprocess.run([capstan, "simulate", robot, *args, *settings, "--interpret", "--t-end", "0.5"], cwd=ROOT, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:
        return [f"FAIL {name}: capstan simulate {robot}: exit {run.returncode}\n{run.stderr}"]
    lines = run.stdout.strip().split("\n")
    header = lines[0].split(",")
    rows = [[float(x) for x in line.split(",")] for line in lines[1:]]
    failures = []
    for follower, ratio, leader, offset in relations:
        f, l = header.index(follower + ".q[1]"), header.index(leader + ".q[1]")
        worst = max(abs(r[f] - ratio * r[l] - offset) for r in rows)
        moved = max(abs(r[l] - rows[0][l]) for r in rows)
        if worst > 1e-8 or moved < 1e-3:
            failures.append(f"FAIL {name}: {follower} = {ratio} {leader} + {offset} off by {worst} "
                            f"({leader} moved {moved})")
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--capstan", required=True)
    ap.add_argument("--update", action="store_true")
    opts = ap.parse_args()
    env = dict(os.environ, NO_COLOR="1")
    failed = 0
    for name, (robot, args) in CASES.items():
        rel = robot
        got = subprocess.run([opts.capstan, "import", rel, *args], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        golden = GOLDEN / (name + ".cap")
        if opts.update:
            golden.write_text(got.stdout)
            continue
        want = golden.read_text() if golden.exists() else ""
        if got.returncode != 0 or got.stdout != want:
            failed += 1
            print(f"FAIL {name}: exit {got.returncode}\n{got.stderr}")
            for d in difflib.unified_diff(want.splitlines(), got.stdout.splitlines(), "golden", "actual", lineterm=""):
                print("  " + d)
        if name in COUPLED and not opts.update:
            for failure in check_coupled(opts.capstan, name, rel, args, env):
                failed += 1
                print(failure)
        check = subprocess.run([opts.capstan, "check", rel, *args], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if check.returncode != 0 or "warning" in check.stderr or "error" in check.stderr:
            failed += 1
            print(f"FAIL {name}: capstan check {rel} {' '.join(args)}: exit {check.returncode}\n{check.stderr}")
    if not opts.update:
        print(f"{len(CASES) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
