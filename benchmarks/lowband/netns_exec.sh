#!/bin/sh
# gradwire lowband: the launch agent the MPI launcher calls instead of ssh: OpenMPI's rsh
# launcher (mpirun --mca plm_rsh_agent benchmarks/lowband/netns_exec.sh), or MPICH's Hydra
# (mpiexec -launcher rsh -launcher-exec benchmarks/lowband/netns_exec.sh).
#
# Either calls it as `netns_exec.sh HOST COMMAND...`, where HOST is a name from the hostfile:
# here the address of one virtual host, 10.231.0.X. The command runs in that host's network
# namespace, GWLB_PREFIX-hX-1, through `ip netns exec`, so the daemon it starts (Open MPI's orted,
# Hydra's proxy) and the ranks under it see only that host's shaped link. Anything else is
# refused.
set -eu
if [ $# -lt 2 ]; then
  echo "netns_exec.sh: usage: netns_exec.sh HOST COMMAND... (called by mpirun)" >&2
  exit 2
fi
host=$1
shift
prefix=${GWLB_PREFIX:-gwlb}
subnet=${GWLB_SUBNET:-10.231.0}
case "$host" in
  "$subnet".*) last=${host##*.} ;;
  *)
    echo "netns_exec.sh: host '$host' is not an address in $subnet.0/24 (the lowband cluster)" >&2
    exit 2 ;;
esac
case "$last" in
  ''|*[!0-9]*) echo "netns_exec.sh: host '$host' has no numeric last part" >&2; exit 2 ;;
esac
ns="$prefix-h$((last - 1))"
if ! ip netns list | awk '{print $1}' | grep -qx "$ns"; then
  echo "netns_exec.sh: namespace '$ns' for host '$host' does not exist" >&2
  exit 2
fi
# With GWLB_TMPDIR set, the host's programs keep their temporary files in GWLB_TMPDIR/<namespace>:
# the virtual hosts share this machine's hostname and /tmp, where Open MPI's daemons would race
# on one session folder.
if [ -n "${GWLB_TMPDIR:-}" ]; then
  mkdir -p "$GWLB_TMPDIR/$ns"
  export TMPDIR="$GWLB_TMPDIR/$ns"
fi
# A hostname of its own (a UTS namespace): MPI tells nodes apart by hostname, and hosts that all
# answered this machine's name would disagree on which ranks share a node (Open MPI's
# MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) then hangs with several ranks per host).
exec ip netns exec "$ns" unshare --uts /bin/sh -c "hostname $ns && $*"
