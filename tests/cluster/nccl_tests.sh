#!/usr/bin/env bash
# README "Calibrate on your cluster", run word for word: nccl-tests logs of one cluster (a
# two-node MPI log under kubectl, a one-node log) imported into the default database, then a plan
# whose Ulysses group crosses the nodes priced from the two-node curve. Usage: nccl_tests.sh CPPLAN
source "$(dirname "$0")/common.sh"
work=$(mktemp -d /tmp/cpplan-nccl-readme-XXXXXX)
trap 'rm -rf "$work"' EXIT
on_path "$work" "$1"
cd "$here/../.."  # the README's paths are the repository's

readme 'cpplan import-nccl-tests tests/data/nccl-tests/alltoall_perf-kubectl-2nodes.txt   # mpirun under kubectl: 16 ranks on 2 nodes' > "$work/two.txt"
check_contains "the two-node log's cluster" "cluster nccl-tests-worker: machine" "$work/two.txt"
check_contains "its nodes" "ranks on 2 nodes, at most 8 per node: nccl-tests-worker-0, nccl-tests-worker-1" "$work/two.txt"
readme 'cpplan import-nccl-tests tests/data/nccl-tests/alltoall_perf-1node.txt            # 8 ranks inside one node of it' > "$work/one.txt"
check_contains "the one-node log joins it" "cluster nccl-tests-worker: machine" "$work/one.txt"
check "samples per node span" "1|6
2|6" "$(sql "$default_db" 'SELECT nodes, count(*) FROM collective_samples GROUP BY nodes ORDER BY nodes')"

readme 'cpplan check --cluster nccl-tests-worker --hardware h100-sxm --topology dgx-h100 --nodes 2 --model flux.2-dev --ulysses 16 --explain' > "$work/across.txt"
check_contains "Ulysses across the nodes" "priced by: measured all_to_all, 16 ranks on 2 nodes" "$work/across.txt"
cpplan check --cluster nccl-tests-worker --hardware h100-sxm --topology dgx-h100 --nodes 2 --model flux.2-dev --ulysses 8 --ring 2 --explain > "$work/inside.txt"
check_contains "Ulysses inside a node" "priced by: measured all_to_all, 8 ranks on 1 node" "$work/inside.txt"
finish
