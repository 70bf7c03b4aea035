"""The build's MPI launcher, across the virtual cluster (shaped) or on loopback (--no-shaping):
which MPI the programs were built against, the mpirun / mpiexec command lines, and running one
job at a time, killable."""

import json
import os
import re
import shutil
import signal
import subprocess
import time

from .cluster import Cluster
from .common import HERE, PREFIX, SUBNET, HarnessError, sh

AGENT = os.path.join(HERE, "netns_exec.sh")  # what the launcher calls instead of ssh


def load_mpi(bin_dir):
    """The MPI the programs in bin_dir were built against: bin/gw_mpi.json, which CMake writes
    (cmake/GradwireMpiLauncher.cmake): its flavor (openmpi or mpich), launcher and flags."""
    path = os.path.join(bin_dir, "gw_mpi.json")
    try:
        with open(path) as f:
            mpi = json.load(f)
    except (OSError, ValueError) as e:
        raise HarnessError(f"cannot read {path} ({e}); CMake writes it: rebuild with "
                           "./gradwire.sh build, or give --bin a build's bin folder")
    if mpi.get("flavor") not in ("openmpi", "mpich"):
        raise HarnessError(f"{path}: flavor {mpi.get('flavor')!r}; accepted: openmpi, mpich")
    if not os.access(mpi.get("mpiexec", ""), os.X_OK):
        raise HarnessError(f"{path}: the launcher {mpi.get('mpiexec')!r} is not executable")
    return mpi


def launcher_version(mpi):
    """The launcher's name and version in one line: "mpirun (Open MPI) 4.1.4", "MPICH 4.0.2"."""
    p = sh([mpi["mpiexec"], "--version"], check=False)
    text = p.stdout if p.returncode == 0 else ""
    if mpi["flavor"] == "mpich":
        m = re.search(r"^\s*Version:\s*(\S+)", text, re.M)
        return f"MPICH {m.group(1)} (Hydra)" if m else "MPICH (version unknown)"
    return text.splitlines()[0] if text else "unknown"


# Seconds a launcher may take to exit after its program's report. A normal teardown takes well
# under one; MPICH over UCX's TCP transport between the namespaces leaves a rank flushing its
# connections in MPI_Finalize forever in a good part of the runs (the allreduce probe's, most
# often; openucx/ucx issue 8738), and each such run waited out this whole grace.
TEARDOWN_GRACE = 10.0


def whole_json(path):
    """Whether path holds a complete JSON document (a report being written does not parse)."""
    try:
        with open(path) as f:
            json.load(f)
        return True
    except (OSError, ValueError):
        return False


def wait_or_end(child, timeout, report, kill, logf, grace=TEARDOWN_GRACE, poll=0.5):
    """child's exit code; None (after kill()) past `timeout`; 0 (after kill(), and a line in logf)
    where `report` has been whole for `grace` seconds and child has not exited."""
    deadline = time.monotonic() + timeout
    written = None
    while True:
        try:
            return child.wait(timeout=poll)
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if report and written is None and whole_json(report):
            written = now
        if written is not None and now - written >= grace:
            logf.write(f"[lowband] {report} was written {grace:.0f} s ago and the launcher had "
                       "not exited: ended it, and the run counts as done (a hang in the MPI "
                       "library's or launcher's teardown, after the program's work)\n")
            logf.flush()
            kill()
            return 0
        if now >= deadline:
            kill()
            return None


class Launcher:
    """The build's MPI launcher across the cluster (shaped) or on loopback (--no-shaping): Open
    MPI's mpirun with MCA parameters, or MPICH's Hydra with environment settings."""

    def __init__(self, args, cluster, workdir, mpi):
        self.args = args
        self.cluster = cluster
        self.workdir = workdir
        self.mpi = mpi
        self.child = None
        if cluster:
            self.hostfile = os.path.join(workdir, "hostfile")
            with open(self.hostfile, "w") as f:
                for i in range(args.hosts):
                    r = args.ranks_per_host
                    slots = f" slots={r}" if mpi["flavor"] == "openmpi" else f":{r}"
                    f.write(f"{Cluster.address(i)}{slots}\n")

    def base_env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("GRADWIRE_")}
        if os.geteuid() == 0 and self.mpi["flavor"] == "openmpi":
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
        env["GWLB_PREFIX"] = PREFIX
        env["GWLB_SUBNET"] = SUBNET
        if self.cluster:
            # Each virtual host's daemon keeps its session files in a folder of its own: the
            # hosts share this machine's hostname and /tmp, and Open MPI's daemons, each taking
            # itself for the only one on "its" node, would otherwise race on one session folder
            # (mkdir "File exists") and on one hwloc topology file (a segfault in
            # hwloc_shmem_topology_write), failing a launch now and then (docs/LOWBAND.md).
            env["GWLB_TMPDIR"] = os.path.join(self.workdir, "hosts")
        if self.mpi["flavor"] == "mpich":
            env.update(self.mpich_env())
        return env

    def settings(self):
        """The MPI's settings: {"mca": ...} (Open MPI) or {"env": ...} (MPICH)."""
        if self.mpi["flavor"] == "openmpi":
            return {"mca": self.mca()}
        return {"env": self.mpich_env()}

    def mpich_env(self):
        """The MPICH (ch4 over UCX) settings of every launch."""
        env = {
            # TCP only, on the cluster's links (or loopback): UCX would otherwise see one machine
            # (the namespaces share its hostname) and move the bytes through shared memory,
            # around the shaped links.
            "UCX_TLS": "tcp,self",
            "UCX_NET_DEVICES": "eth0" if self.cluster else "lo",
            # The virtual hosts share this machine's cores, one rank each, so no node looks
            # oversubscribed to GRADWIRE_MPI_WAIT=auto; MPICH's waiting ranks would spin and take
            # the core from a rank that computes. gradwire's yielding wait gives it back.
            "GRADWIRE_MPI_WAIT": "yield",
        }
        if not self.cluster:
            env["MPIR_CVAR_NOLOCAL"] = "1"  # loopback TCP, not MPICH's shared memory
        return env

    def mca(self):
        """The MCA parameters of every launch: the defaults below, then --mca overrides."""
        if self.cluster:
            subnet = f"{SUBNET}.0/24"
            params = {"plm_rsh_agent": AGENT, "routed": "direct",
                      "btl_tcp_if_include": subnet, "oob_tcp_if_include": subnet}
        else:
            params = {"btl_tcp_if_include": "lo", "oob_tcp_if_include": "lo"}
        params.update({
            # OpenMPI's TCP transport, and no other.
            "pml": "ob1", "btl": "tcp,self",
            # No "put": with it, an exchange in both directions at once runs at half the link
            # rate (docs/LOWBAND.md).
            "btl_tcp_flags": "send,inplace",
            # Allreduce by ring: OpenMPI 4.1's fixed decision picks slower algorithms for these
            # sizes on a shaped link at 4 hosts (docs/LOWBAND.md).
            "coll_tuned_use_dynamic_rules": "1", "coll_tuned_allreduce_algorithm": "4",
            # Every ring step's message goes whole, without the rendezvous round trip whose reply
            # queues behind the replying host's own data on its shaped link. 4 MiB holds a whole
            # default bucket (GRADWIRE_FUSION_THRESHOLD_MB=4), so a ring step's share of one at
            # any host count (docs/LOWBAND.md).
            "btl_tcp_eager_limit": "4194304", "btl_tcp_rndv_eager_limit": "4194304",
            # The virtual hosts share this machine's cores, but each daemon sees one slot of its
            # own and lets its rank spin while it waits, taking the core from a rank that
            # computes. Yielding when idle gives the core back.
            "mpi_yield_when_idle": "1",
        })
        params.update(self.args.mca_overrides)
        return params

    def topology_env(self, flat=False):
        """The settings that say which ranks share a virtual host: consecutive blocks of
        --ranks-per-host (MPI sees the hosts' shared machine, not the namespaces); with flat,
        also the flat exchange (the probe's)."""
        env = {"GRADWIRE_HIERARCHY_LOCAL_SIZE": str(self.args.ranks_per_host)}
        if flat:
            env["GRADWIRE_HIERARCHICAL"] = "0"
        return env

    @staticmethod
    def own_hostname():
        """The launcher's prefix that gives host 0 a hostname of its own (a UTS namespace), as
        netns_exec.sh gives the other hosts theirs: MPI tells nodes apart by hostname."""
        return ["unshare", "--uts", "/bin/sh", "-c", f'hostname {Cluster.host_ns(0)} && exec "$@"',
                "sh"]

    def command(self, program, env_names):
        mpiexec, n = self.mpi["mpiexec"], str(self.args.ranks)
        if self.mpi["flavor"] == "mpich":
            # Hydra: its rsh launcher calls the agent as `agent HOST COMMAND...`; the proxies
            # call back over eth0; every variable of mpiexec's environment reaches the ranks.
            if self.cluster:
                return ["ip", "netns", "exec", Cluster.host_ns(0)] + self.own_hostname() + [
                        mpiexec, "-f", self.hostfile,
                        "-n", n, "-launcher", "rsh", "-launcher-exec", AGENT,
                        "-iface", "eth0"] + program
            return [mpiexec] + self.mpi["flags"] + ["-n", n] + program
        if self.cluster:
            # One rank per host: by node. Several: by slot, so that consecutive ranks share a host
            # (GRADWIRE_HIERARCHY_LOCAL_SIZE's blocks).
            mapping = "node" if self.args.ranks_per_host == 1 else "slot"
            # Host 0's hostname of its own, as netns_exec.sh gives the others theirs.
            cmd = ["ip", "netns", "exec", Cluster.host_ns(0)] + self.own_hostname() + [
                   mpiexec, "-np", n, "--hostfile", self.hostfile, "--map-by", mapping,
                   "--bind-to", "none"]
        else:
            cmd = [mpiexec] + self.mpi["flags"] + ["-np", n]
        for name, value in self.mca().items():
            cmd += ["--mca", name, value]
        for name in sorted(set(env_names) | {"OPENBLAS_NUM_THREADS"}):
            cmd += ["-x", name]
        return cmd + program

    def run(self, program, extra_env, log_path, timeout, report=None):
        """Runs program on every host with extra_env added; its exit code, None if it timed out.
        `report`: the JSON file the program writes last. Once it is whole, the launcher has
        TEARDOWN_GRACE seconds to exit; past them the job is ended and counts as done, with a
        line in the log saying so (MPICH over UCX's TCP transport: a rank can stay in MPI_Finalize).
        A report left from an earlier run is removed first: only this run's may count."""
        if report and os.path.exists(report):
            os.remove(report)
        env = self.base_env()
        env.update(extra_env)
        cmd = self.command(program, list(extra_env.keys()))
        with open(log_path, "w") as logf:
            logf.write(" ".join(f"{k}={v}" for k, v in extra_env.items()) + " " +
                       " ".join(cmd) + "\n")
            logf.flush()
            self.child = subprocess.Popen(cmd, env=env, stdout=logf, stderr=subprocess.STDOUT,
                                          start_new_session=True)
            rc = wait_or_end(self.child, timeout, report, self.kill, logf)
            # An interruption leaves self.child set, for kill().
            self.child = None
        if self.cluster:  # the hosts' session folders (GWLB_TMPDIR), whatever their daemons left
            shutil.rmtree(os.path.join(self.workdir, "hosts"), ignore_errors=True)
        return rc

    def kill(self):
        if self.child and self.child.poll() is None:
            try:
                os.killpg(self.child.pid, signal.SIGTERM)
                self.child.wait(timeout=10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.child.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
