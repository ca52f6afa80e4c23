"""`python3 -m capstan sweep ...`: the package's commands (what `capstan sweep` runs)."""
import sys

from .sweep import main

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] != "sweep":
        sys.stderr.write("usage: python3 -m capstan sweep MODEL --param NAME=START:STOP:COUNT ... -o results.csv\n")
        sys.exit(2)
    sys.exit(main(sys.argv[2:]))
