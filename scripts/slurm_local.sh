#!/usr/bin/env bash
# Configure and start a single-node Slurm cluster on this machine (Debian's slurm-wlm and munge).
# For ppolab's tests and for trying `ppolab slurm --submit` on a workstation. Needs root.
#   bash scripts/slurm_local.sh start   # install if missing, configure, start; waits until the node is idle
#   bash scripts/slurm_local.sh stop
set -euo pipefail

STATE=/var/lib/ppolab-slurm
CONF=/etc/slurm/slurm.conf

stop() {
    pkill -x slurmd 2>/dev/null || true
    pkill -x slurmctld 2>/dev/null || true
}

if [[ "${1:-start}" == stop ]]; then
    stop
    exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
    echo "slurm_local.sh: needs root (to install packages and start munged, slurmctld, slurmd)" >&2
    exit 1
fi
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
fi

host=$(hostname -s)
cpus=$(nproc)
mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
mkdir -p "$STATE/ctld" "$STATE/d" /var/log/slurm /run/munge
cat > "$CONF" <<CONF
ClusterName=ppolab-local
SlurmctldHost=$host
SlurmUser=root
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
# a requeued job waits this long before it starts again (default 120 s); short for a test cluster
AuthInfo=cred_expire=10
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
JobRequeue=1
MaxArraySize=10001
SchedulerParameters=defer_batch=0
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=10
MinJobAge=600
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
printf 'ConstrainCores=no\nConstrainRAMSpace=no\n' > /etc/slurm/cgroup.conf

if [[ ! -s /etc/munge/munge.key ]]; then
    dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
fi
chown munge:munge /etc/munge/munge.key /run/munge 2>/dev/null || true
chmod 400 /etc/munge/munge.key
if ! pgrep -x munged >/dev/null; then
    su -s /bin/sh munge -c "munged" 2>/dev/null || munged --force
fi

stop
sleep 1
slurmctld
slurmd
for _ in $(seq 60); do
    if sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
        echo "slurm: node $host is up ($(sinfo -h -o '%P %T %c'))"
        exit 0
    fi
    scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true
    sleep 1
done
echo "slurm_local.sh: the node did not come up; see /var/log/slurm/slurmctld.log and slurmd.log" >&2
exit 1
