#!/usr/bin/env python3
"""same_rows.py A.csv B.csv [TOLERANCE]: the two trajectories have the same
header and the same rows, each value equal to TOLERANCE (default 1e-12)
relative to its column's largest magnitude. Exit 1 with the first
difference otherwise."""
import sys


def read(path):
    with open(path) as f:
        lines = f.read().splitlines()
    return lines[0].split(","), [[float(x) for x in line.split(",")] for line in lines[1:]]


def main():
    a_path, b_path = sys.argv[1], sys.argv[2]
    tolerance = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-12
    a_header, a = read(a_path)
    b_header, b = read(b_path)
    if a_header != b_header:
        sys.exit(f"headers differ:\n  {a_path}: {a_header}\n  {b_path}: {b_header}")
    if len(a) != len(b):
        sys.exit(f"{a_path} has {len(a)} rows, {b_path} {len(b)}")
    for c, name in enumerate(a_header):
        scale = max([1.0] + [abs(row[c]) for row in a])
        for r, (x, y) in enumerate(zip(a, b)):
            if abs(x[c] - y[c]) > tolerance * scale:
                sys.exit(f"row {r + 1}, column `{name}`: {x[c]!r} against {y[c]!r}")
    print(f"same rows: {len(a)} rows of {len(a_header)} columns agree to {tolerance:g}")


if __name__ == "__main__":
    main()
