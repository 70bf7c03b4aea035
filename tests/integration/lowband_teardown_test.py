#!/usr/bin/env python3
"""The harness's wait on a job (benchmarks/lowband/launch.py, wait_or_end): a job whose program
wrote its whole report but whose launcher stays up is ended after the grace and counts as done;
a half-written report, or none, does not count; a job that exits gives its own code; a job past
its timeout is ended and gives None. Usage: lowband_teardown_test.py SOURCE_DIR"""
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(sys.argv[1], "benchmarks"))
from lowband.launch import wait_or_end  # noqa: E402

failures = 0


def check(label, ok):
    global failures
    failures += not ok
    print(f"{'ok' if ok else 'FAIL'}: {label}")


def job(script, timeout, report, grace):
    child = subprocess.Popen(["sh", "-c", script], start_new_session=True)

    def kill():
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    with tempfile.TemporaryFile("w+") as logf:
        start = time.monotonic()
        rc = wait_or_end(child, timeout, report, kill, logf, grace=grace, poll=0.1)
        logf.seek(0)
        return rc, time.monotonic() - start, logf.read(), child.poll()


with tempfile.TemporaryDirectory() as tmp:
    report = os.path.join(tmp, "r.json")
    rc, took, text, left = job(f"echo '{{\"a\": 1}}' > {report}; sleep 60", 30, report, 1.0)
    check(f"whole report, launcher stays up: done (rc {rc}) after the grace ({took:.1f} s), "
          "said in the log, the job ended",
          rc == 0 and took < 10 and "was written" in text and left is not None)
    os.remove(report)
    rc, took, text, left = job(f"printf '{{\"a\":' > {report}; sleep 60", 2, report, 0.5)
    check(f"half-written report: timed out (rc {rc}), not done", rc is None and
          "was written" not in text and left is not None)
    os.remove(report)
    rc, took, text, _ = job("sleep 60", 1, report, 0.5)
    check(f"no report: timed out (rc {rc}) after {took:.1f} s", rc is None and took < 10)
    rc, took, text, _ = job(f"echo '{{}}' > {report}; exit 3", 30, report, 5)
    check(f"the job exits by itself: its code (rc {rc})", rc == 3 and took < 5)
    rc, took, text, _ = job("exit 0", 30, None, 5)
    check(f"no report asked for: the job's code (rc {rc})", rc == 0 and took < 5)
sys.exit(1 if failures else 0)
