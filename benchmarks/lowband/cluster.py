"""The virtual cluster: N hosts as network namespaces joined by a bridge in a switch namespace,
every link shaped in both directions by tbf; and the checks and cleanup around it. Only
namespaces named <PREFIX>-* are ever made, shaped or removed."""

import os
import re
import shutil
import signal
import sys
import time

from .common import PREFIX, SUBNET, HarnessError, sh

LATENCY = "50ms"  # how long tbf queues a packet beyond the bucket before it drops it


def existing_namespaces():
    p = sh(["ip", "netns", "list"], check=False)
    if p.returncode != 0:
        return []
    names = [line.split()[0] for line in p.stdout.splitlines() if line.strip()]
    return [n for n in names if n.startswith(PREFIX + "-")]


def remove_namespace(name):
    """Kills whatever still runs inside namespace `name`, then deletes it (its veths go with it)."""
    for pid in sh(["ip", "netns", "pids", name], check=False).stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    sh(["ip", "netns", "del", name], check=False)


def cleanup_leftovers():
    left = existing_namespaces()
    for ns in left:
        remove_namespace(ns)
    return left


def namespaces_unavailable():
    """Why namespaces cannot be made here, or None when they can."""
    if os.geteuid() != 0:
        return "not root (network namespaces and tc need root)"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"'{tool}' not found (Debian package iproute2)"
    probe = f"{PREFIX}-probe{os.getpid()}"
    p = sh(["ip", "netns", "add", probe], check=False)
    if p.returncode != 0:
        return f"'ip netns add' failed: {p.stderr.strip()}"
    try:
        q = sh(["ip", "-n", probe, "link", "add", "gwlbp0", "type", "veth", "peer", "name",
                "gwlbp1"], check=False)
        if q.returncode != 0:
            return f"veth pairs cannot be made: {q.stderr.strip()}"
        q = sh(["ip", "netns", "exec", probe, "tc", "qdisc", "add", "dev", "gwlbp0", "root",
                "tbf", "rate", "100mbit", "burst", "64kb", "latency", LATENCY], check=False)
        if q.returncode != 0:
            return f"the tbf qdisc is not available: {q.stderr.strip()}"
    finally:
        sh(["ip", "netns", "del", probe], check=False)
    return None


class Cluster:
    """N hosts <prefix>-h0.. and a switch <prefix>-sw with bridge br0; host i is 10.231.0.(i+1)
    on its eth0, whose peer p<i> sits on the bridge. Only these namespaces' links are shaped."""

    def __init__(self, hosts, congestion_control=""):
        self.hosts = hosts
        self.congestion_control = congestion_control  # "": the machine's
        self.created = []

    @staticmethod
    def host_ns(i):
        return f"{PREFIX}-h{i}"

    @staticmethod
    def address(i):
        return f"{SUBNET}.{i + 1}"

    def create(self):
        left = existing_namespaces()
        if left:
            raise HarnessError(
                f"namespaces left by another lowband run exist: {', '.join(left)}. If no other "
                f"run is going on, remove them with: {sys.argv[0]} --cleanup")
        sw = f"{PREFIX}-sw"
        self._add_ns(sw)
        sh(["ip", "-n", sw, "link", "set", "lo", "up"])
        sh(["ip", "-n", sw, "link", "add", "br0", "type", "bridge"])
        sh(["ip", "-n", sw, "link", "set", "br0", "up"])
        for i in range(self.hosts):
            ns = self.host_ns(i)
            self._add_ns(ns)
            sh(["ip", "link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", f"p{i}",
                "netns", sw])
            sh(["ip", "-n", sw, "link", "set", f"p{i}", "master", "br0"])
            sh(["ip", "-n", sw, "link", "set", f"p{i}", "up"])
            sh(["ip", "-n", ns, "addr", "add", f"{self.address(i)}/24", "dev", "eth0"])
            sh(["ip", "-n", ns, "link", "set", "eth0", "up"])
            sh(["ip", "-n", ns, "link", "set", "lo", "up"])
            if self.congestion_control:
                # On the host's route to the cluster (per route, Linux 4.0 and later): connections
                # over it use this congestion control whatever the machine's default, which stays
                # untouched.
                p = sh(["ip", "-n", ns, "route", "replace", f"{SUBNET}.0/24", "dev", "eth0",
                        "proto", "kernel", "scope", "link", "src", self.address(i),
                        "congctl", self.congestion_control], check=False)
                if p.returncode != 0:
                    allowed = sh(["cat", "/proc/sys/net/ipv4/tcp_available_congestion_control"],
                                 check=False).stdout.strip()
                    raise HarnessError(
                        f"--congestion-control {self.congestion_control}: the kernel refused it "
                        f"({p.stderr.strip()}); available here: {allowed or 'unknown'}")
        self.wait_reachable()

    def wait_reachable(self, seconds=20):
        """Waits until every host reaches host 0 (a refused connection to a closed port proves the
        path), so that mpirun's daemons can call back as soon as they start."""
        check = ("import socket,sys\ns=socket.socket(); s.settimeout(1)\ntry:\n"
                 f"  s.connect(('{self.address(0)}', 9))\nexcept ConnectionRefusedError:\n"
                 "  sys.exit(0)\nexcept OSError:\n  sys.exit(1)\n")
        deadline = time.monotonic() + seconds
        for i in range(1, self.hosts):
            while sh(["ip", "netns", "exec", self.host_ns(i), sys.executable, "-c", check],
                     check=False).returncode != 0:
                if time.monotonic() > deadline:
                    raise HarnessError(f"host {self.address(i)} cannot reach {self.address(0)} "
                                       f"over the bridge after {seconds} s")
                time.sleep(0.2)

    def _add_ns(self, name):
        sh(["ip", "netns", "add", name])
        self.created.append(name)

    def links(self):
        """(namespace, device) of every shaped queue: each host's egress, and the switch's egress
        towards each host, so both directions of every link are limited."""
        out = []
        for i in range(self.hosts):
            out.append((self.host_ns(i), "eth0"))
            out.append((f"{PREFIX}-sw", f"p{i}"))
        return out

    def shape(self, rate_mbit):
        """Every queue to rate_mbit; returns the bucket size in bytes."""
        rate_bytes = rate_mbit * 1e6 / 8
        # The bucket holds at least 64 KiB (a GSO segment) or 4 ms at the rate; the queue holds
        # 50 ms at the rate beyond it.
        burst = max(64 * 1024, int(rate_bytes * 0.004))
        for ns, dev in self.links():
            assert ns.startswith(PREFIX + "-")
            sh(["ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", dev, "root", "tbf",
                "rate", f"{rate_mbit}mbit", "burst", str(burst), "latency", LATENCY])
        return burst

    def qdisc_stats(self):
        stats = {}
        for ns, dev in self.links():
            p = sh(["ip", "netns", "exec", ns, "tc", "-s", "qdisc", "show", "dev", dev],
                   check=False)
            m = re.search(r"Sent (\d+) bytes (\d+) pkt \(dropped (\d+), overlimits (\d+)", p.stdout)
            if m:
                stats[f"{ns}/{dev}"] = {"sent_bytes": int(m.group(1)), "packets": int(m.group(2)),
                                        "dropped": int(m.group(3))}
        return stats

    def tcp_congestion_control(self):
        """The congestion control TCP uses between the hosts: --congestion-control's, on their
        routes, or else the machine's, which they inherit."""
        if self.congestion_control:
            return self.congestion_control
        return sh(["ip", "netns", "exec", self.host_ns(0), "cat",
                   "/proc/sys/net/ipv4/tcp_congestion_control"]).stdout.strip()

    def destroy(self):
        for ns in reversed(self.created):
            remove_namespace(ns)
        self.created = []
