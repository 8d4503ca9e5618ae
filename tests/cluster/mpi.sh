#!/usr/bin/env bash
# cpplan run under Open MPI's mpirun (OMPI_COMM_WORLD_*) and MPICH's mpiexec (PMI_*): the MPI
# ranks are the plan's ranks, one run recorded ok; a killed rank fails the launcher and the run is
# recorded failed.
# usage: mpi.sh CPPLAN [--check]
source "$(dirname "$0")/common.sh"
cpplan=$1
need mpirun openmpi-bin
need mpiexec.mpich mpich
mpirun --version 2>&1 | grep -q "Open MPI" || skip "mpirun is not Open MPI's (update-alternatives --display mpirun)"
[ "${2:-}" == "--check" ] && exit 0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
on_path "$work" "$cpplan"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # CI runs as root

echo "== mpirun -np 2 cpplan run"
readme "mpirun -np 2 --oversubscribe cpplan run --model flux-tiny --res 128x128 --ulysses 2" > mpi.log 2>&1 ||
  { cat mpi.log; exit 1; }
check "one run recorded ok, 2 ranks" "1|ok|2" "$(sql "$default_db" 'select count(*), status, world_size from runs')"

echo "== a rank killed under mpirun"
rc=$(exit_code_of killed.log mpirun -np 2 --oversubscribe -x CPPLAN_FAULT_KILL=1:1 cpplan run "${tiny[@]}" --steps 4 \
  --ulysses 2 --db killed.db)
check "mpirun fails" "1" "$((rc != 0))"
check "the run is recorded failed" "failed" "$(sql killed.db 'select status from runs')"
echo "== MPICH: mpiexec.mpich -n 2 cpplan run"
readme "mpiexec.mpich -n 2 cpplan run --model flux-tiny --res 128x128 --ulysses 2" > mpich.log 2>&1 ||
  { cat mpich.log; exit 1; }
check "one more run recorded ok, 2 ranks" "2|ok|2" \
  "$(sql "$default_db" 'select count(*), group_concat(distinct status), max(world_size) from runs')"
rc=$(exit_code_of mpich-killed.log env CPPLAN_FAULT_KILL=1:1 mpiexec.mpich -n 2 cpplan run "${tiny[@]}" --steps 4 \
  --ulysses 2 --db mpich-killed.db)
check "mpiexec fails" "1" "$((rc != 0))"
check_contains "and names the killed rank's signal" "Killed (signal 9)" mpich-killed.log
# Hydra ends the surviving ranks with SIGKILL at once: nothing is recorded, and never ok.
ok_runs=0
[ -f mpich-killed.db ] && ok_runs=$(sql mpich-killed.db "select count(*) from runs where status = 'ok'")
check "no run recorded ok" "0" "$ok_runs"
finish
