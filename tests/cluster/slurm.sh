#!/usr/bin/env bash
# cpplan run under Slurm, on a one-node cluster this test starts and stops (munged, slurmctld and
# slurmd as root, a generated slurm.conf; nothing outside a temporary folder is touched):
#   - `srun -n 2 cpplan run ...` with no wrapper: the tasks are the ranks, one run recorded ok;
#     srun -n 3 for a 2-rank plan is one line per task and a failed step, nothing recorded;
#   - the script `cpplan sweep --emit slurm` writes, submitted as emitted with sbatch, waited for,
#     its databases merged: every run recorded once, ok;
#   - a rank killed mid-run: srun fails, the run is recorded failed;
#   - scancel of a running job: recorded cancelled, never ok.
# usage: slurm.sh CPPLAN [--check]
source "$(dirname "$0")/common.sh"
cpplan=$1
[ "$(id -u)" -eq 0 ] || skip "not root: slurmd and munged of a test cluster need root (CI runs as root)"
need munged munge
need slurmctld slurmctld
need slurmd slurmd
need srun slurm-client
[ "${2:-}" == "--check" ] && exit 0

work=$(mktemp -d)
chmod 755 "$work"
export SLURM_CONF=$work/slurm.conf
stop_cluster() {
  for pid in "$work"/run/*.pid; do [ -f "$pid" ] && kill "$(cat "$pid")" 2>/dev/null || true; done
  sleep 1
  rm -rf "$work"
}
trap stop_cluster EXIT

start_cluster() {
  mkdir -p "$work"/{state,spool,log,run,munge}
  local host ctld_port slurmd_port
  host=$(hostname -s)
  ctld_port=$(free_port)
  slurmd_port=$(free_port)
  head -c 1024 /dev/urandom > "$work/munge/munge.key"
  chmod 700 "$work/munge"
  chmod 400 "$work/munge/munge.key"
  munged --key-file="$work/munge/munge.key" --socket="$work/munge/socket" --pid-file="$work/run/munged.pid" \
    --log-file="$work/log/munged.log" --seed-file="$work/munge/seed" -f
  cat > "$SLURM_CONF" <<CONF
ClusterName=cpplan-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$work/munge/socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/run/slurmctld.pid
SlurmdPidFile=$work/run/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
KillWait=30
NodeName=$host NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
CONF
  slurmctld -f "$SLURM_CONF"
  slurmd -f "$SLURM_CONF"
  for _ in $(seq 1 60); do
    sinfo -h -o %t 2>/dev/null | grep -q idle && return 0
    sleep 0.5
  done
  echo "FAILED: the test cluster did not come up:"; tail -n 20 "$work"/log/*.log; exit 1
}

start_cluster
cd "$work"
on_path "$work" "$cpplan"

echo "== srun -n 2 cpplan run, no wrapper"
readme "srun -n 2 cpplan run --model flux-tiny --res 128x128 --ulysses 2" > srun.log 2>&1 || { cat srun.log; exit 1; }
check "one run recorded ok, 2 ranks" "1|ok|2" "$(sql "$default_db" 'select count(*), status, world_size from runs')"
check_contains "rank 0 printed it" "recorded: run 1 in $default_db" srun.log
rc=$(exit_code_of wrong.log srun -n 3 cpplan run "${tiny[@]}" --steps 2 --ulysses 2 --db wrong.db)
check "srun -n 3 for a 2-rank plan fails" "1" "$((rc != 0))"
check_contains "each task says why" "SLURM_NTASKS = 3: the plan ulysses 2 needs 2 ranks" wrong.log
check "nothing recorded" "0" "$(ls wrong.db 2>/dev/null | wc -l)"

echo "== the emitted sweep script, through sbatch"
write_sweep sweep.toml
readme "cpplan sweep sweep.toml --emit slurm > sweep.sh"
readme "sbatch --wait sweep.sh" > sbatch.log || { cat sbatch.log slurm-*.out; exit 1; }
readme "cpplan db merge sweep-*.db --into all.db" > /dev/null
check "each of the 3 runs recorded once, ok" "3|3|ok" \
  "$(sql all.db 'select count(*), count(distinct run_key), group_concat(distinct status) from runs')"

echo "== a rank killed under srun"
rc=$(exit_code_of killed.log env CPPLAN_FAULT_KILL=1:1 srun -n 2 cpplan run "${tiny[@]}" --steps 4 --ulysses 2 \
  --db killed.db)
check "srun fails" "1" "$((rc != 0))"
check_contains "srun names the killed task" "task 1" killed.log
check "the run is recorded failed" "failed" "$(sql killed.db 'select status from runs')"

echo "== scancel of a running job"
printf '#!/usr/bin/env bash\n#SBATCH --ntasks=2\nsrun cpplan run %s --steps 100000 --ulysses 2 --db "%s"\n' "${tiny[*]}" "$work/cancel.db" > long.sh
job=$(sbatch --parsable -o long.log long.sh)
# Until both ranks have set their stop handler (a fixed wait lost the race on a loaded machine,
# where SIGTERM came while LibTorch was still loading), then a second into their steps. The ranks
# are this job's cpplan processes (its database on their command line), not other tests'.
ranks_catch_sigterm() {
  local n=0 pid mask command
  for pid in $(pgrep -x 'cpplan(-exec)?'); do  # a pattern under 16 characters: pgrep's name limit
    command=$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null) || continue
    [[ $command == *"$work/cancel.db"* ]] || continue
    mask=$(awk '/^SigCgt/ {print $2}' "/proc/$pid/status" 2>/dev/null) || continue
    (( (16#${mask:-0} >> 14) & 1 )) && n=$((n + 1))  # bit 14: SIGTERM (15)
  done
  [ "$n" -ge 2 ]
}
for _ in $(seq 1 240); do
  ranks_catch_sigterm && break
  sleep 0.5
done
sleep 1
scancel "$job"
# Slurm's SIGKILL follows SIGTERM after KillWait (30 s, Slurm's default: rank 0 records the run
# in that time, seconds under load), so the job may take that long to leave the queue.
for _ in $(seq 1 80); do
  [ -n "$(squeue -h -j "$job" 2>/dev/null)" ] || break
  sleep 0.5
done
status=$(sql cancel.db 'select status from runs' 2>/dev/null || true)
check "the cancelled run is recorded cancelled" "cancelled" "$status"
check_contains "and why" "ended by SIGTERM from srun" <(sql cancel.db 'select error from runs')
finish
