"""What every lowband module shares: the errors, the log line, running a command, the names."""

import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# The namespaces' prefix (tests use their own, apart from a user's runs) and the hosts' subnet.
PREFIX = os.environ.get("GWLB_PREFIX", "gwlb")
SUBNET = "10.231.0"

EXIT_FAILED = 1  # a run failed, or --check-probe found the shaping off
EXIT_ERROR = 2  # a HarnessError: bad options, a missing build, leftovers of another run
EXIT_SKIP = 77  # CTest's SKIP_RETURN_CODE: namespaces cannot be made here
EXIT_INTERRUPTED = 130


class HarnessError(Exception):
    """A problem the user must fix; printed without a traceback."""


class Interrupted(Exception):
    pass


def log(msg):
    print(f"[lowband] {msg}", flush=True)


def sh(cmd, check=True):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and p.returncode != 0:
        raise HarnessError(f"'{' '.join(cmd)}' failed ({p.returncode}): {p.stderr.strip()}")
    return p


def tail(path, lines=15):
    try:
        with open(path) as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""
