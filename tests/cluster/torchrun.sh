#!/usr/bin/env bash
# cpplan run under torchrun: ranks are clients of the agent's c10d TCPStore
# (TORCHELASTIC_USE_AGENT_STORE=True), a failed rank's error reaches the agent through
# TORCHELASTIC_ERROR_FILE, and the run is recorded once, ok or failed.
#   1. a TCPStore hosted by Python as torchrun's agent hosts it, with torchrun's variables: 2 and 4
#      ranks; ranks of different restart attempts do not meet; a killed rank: the survivor writes
#      the error file and records the run failed;
#   2. torchrun itself (torch.distributed.run): README's torchrun line, the script `cpplan sweep
#      --emit torchrun` writes, run as emitted, and a failing run reported in torchrun's summary.
# usage: torchrun.sh CPPLAN [--check]
source "$(dirname "$0")/common.sh"
cpplan=$1
"$PY" -c 'import torch.distributed.run' 2>/dev/null || skip "$PY has no torch (scripts/install-deps.sh installs python3-torch)"
[ "${2:-}" == "--check" ] && exit 0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

agent() {  # agent NPROC [agent options] -- cpplan run args...: the agent's JSON line
  local nproc=$1; shift
  "$PY" "$here/agent_store.py" "$nproc" "$(free_port)" "$@" > agent.json
}
field() { "$PY" -c "import json,sys; print(eval(sys.argv[1], {}, json.load(open('agent.json'))))" "$1"; }

echo "== agent store hosted by python3-torch's TCPStore"
agent 2 -- "$cpplan" run "${tiny[@]}" --steps 2 --ulysses 2 --db two.db
check "2 ranks exit 0" "[0, 0]" "$(field exit_codes)"
check "2 ranks: one run recorded ok" "ok|2" "$(sql two.db 'select status, world_size from runs')"
agent 4 -- "$cpplan" run "${tiny[@]}" --steps 2 --ring 2 --ulysses 2 --db four.db
check "4 ranks exit 0" "[0, 0, 0, 0]" "$(field exit_codes)"
check "4 ranks: one run recorded ok" "ok|4" "$(sql four.db 'select status, world_size from runs')"

# Keys live under /worker/attempt_<restart count>: ranks of different attempts never meet.
agent 2 --restart-counts 0,1 -- "$cpplan" run "${tiny[@]}" --steps 2 --ulysses 2 --timeout 3 --db attempts.db
check "ranks of attempts 0 and 1 both fail" "[4, 4]" "$(field exit_codes)"
check "the timeout is recorded failed" "failed" "$(sql attempts.db 'select status from runs')"
check_contains "rank 0 says what it waited for, where" "not set within 3 s in torchrun's agent store" rank-0.log

# Rank 1 kills itself (SIGKILL) at step 1: rank 0 loses its peer, reports through the error file.
CPPLAN_FAULT_KILL=1:1 agent 2 -- "$cpplan" run "${tiny[@]}" --steps 4 --ulysses 2 --db killed.db
check "exit codes: rank 0 fails (4), rank 1 killed (-9)" "[4, -9]" "$(field exit_codes)"
check "only rank 0 wrote an error file" "[0]" "$(field 'sorted(int(k) for k in error_files)')"
check "its message, in torchelastic's layout" "cpplan run: rank 0:" \
  "$(field 'error_files["0"]["message"]["message"][:19]')"
check "its timestamp is a number" "True" "$(field 'error_files["0"]["message"]["extraInfo"]["timestamp"].isdigit()')"
check "the run is recorded failed" "failed" "$(sql killed.db 'select status from runs')"

# A bad command line under torchrun: exit 3 on every rank, and the line in each error file.
agent 2 -- "$cpplan" run "${tiny[@]}" --steps 2 --ring 2 --ulysses 2 --db bad.db
check "a plan of 4 ranks on 2: exit 3 on both" "[3, 3]" "$(field exit_codes)"
check "its line in the error file" "True" \
  "$(field 'error_files["1"]["message"]["message"].startswith("cpplan run: WORLD_SIZE = 2: the plan ") and error_files["1"]["message"]["message"].endswith(" needs 4 ranks")')"
check "nothing recorded" "0" "$(ls bad.db 2>/dev/null | wc -l)"

echo "== torchrun (torch.distributed.run): README's commands"
on_path "$work" "$cpplan"
printf '#!/usr/bin/env bash\nexec "%s" "%s" "$@"\n' "$PY" "$here/torchrun.py" > "$work/bin/torchrun"
chmod +x "$work/bin/torchrun"
PET_MASTER_PORT=$(free_port) readme "torchrun --nproc_per_node 2 --no_python cpplan run --model flux-tiny --res 128x128 --ulysses 2" > readme.log 2>&1 ||
  { echo "FAILED:"; cat readme.log; exit 1; }
check "one run recorded ok, 2 ranks" "1|ok|2" "$(sql "$default_db" 'select count(*), status, world_size from runs')"
# --standalone: the c10d rendezvous backend, which in torch 1.x hosts no agent store for the workers
# (TORCHELASTIC_USE_AGENT_STORE=False): rank 0 serves cpplan's own on the MASTER_PORT torchrun chose.
torchrun --standalone --nproc_per_node 2 --no_python cpplan run "${tiny[@]}" --steps 2 --ulysses 2 --db standalone.db \
  > standalone.log 2>&1 || { echo "FAILED: torchrun --standalone:"; cat standalone.log; exit 1; }
check "torchrun --standalone: one run recorded ok" "ok|2" "$(sql standalone.db 'select status, world_size from runs')"
write_sweep sweep.toml
readme "cpplan sweep sweep.toml --emit torchrun > sweep.sh"
MASTER_PORT=$(free_port) readme "bash sweep.sh" > sweep.log 2>&1 || { echo "FAILED: the emitted torchrun script:"; cat sweep.log; exit 1; }
readme "cpplan db merge sweep-*.db --into all.db" > /dev/null
check "each of the 3 runs recorded once, ok" "3|3|ok" \
  "$(sql all.db 'select count(*), count(distinct run_key), group_concat(distinct status) from runs')"

rc=$(exit_code_of torchrun.log env CPPLAN_FAULT_KILL=1:1 torchrun --nproc_per_node 2 --master_port "$(free_port)" \
  --no_python cpplan run "${tiny[@]}" --steps 4 --ulysses 2 --db failed.db)
check "torchrun exits 1 when a rank fails" "1" "$rc"
check_contains "torchrun's summary shows rank 0's error from its error file" "traceback : cpplan run: rank 0:" torchrun.log
check "the run is recorded failed" "failed" "$(sql failed.db 'select status from runs')"
finish
