"""A stand-in for `ssh HOST -- SCRIPT` that runs SCRIPT here and logs everything it was given:
its arguments and every byte of input (for the test of what leaves the learner's machine)."""

import json
import os
import subprocess
import sys

args = sys.argv[1:]
script = args[args.index("--") + 1]
log = os.environ["FAKE_SSH_LOG"]
with open(log, "a") as fh:
    fh.write(json.dumps({"argv": args}) + "\n")
child = subprocess.Popen(["sh", "-c", script], stdin=subprocess.PIPE)
assert child.stdin is not None
for line in sys.stdin.buffer:
    with open(log, "a") as fh:
        fh.write(json.dumps({"stdin": line.decode()}) + "\n")
    child.stdin.write(line)
    child.stdin.flush()
child.stdin.close()
sys.exit(child.wait())
