"""torchrun's agent, as far as its workers see it: a c10d TCPStore hosted the way the agent hosts
it (this process is the server, the workers its clients), and the variables torchrun sets for
each worker. Starts N copies of a command as ranks (their output in rank-R.log here), waits for
them, and prints a JSON line:
{"exit_codes": [...], "error_files": {rank: parsed TORCHELASTIC_ERROR_FILE}}.

usage: agent_store.py NPROC PORT [--restart-counts A,B,..] -- COMMAND...
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

import torch.distributed as dist


def worker_env(rank, nproc, port, restart_count, error_file):
    env = dict(os.environ)
    env.update({
        "RANK": str(rank), "LOCAL_RANK": str(rank), "GROUP_RANK": "0", "ROLE_RANK": str(rank),
        "ROLE_NAME": "default", "WORLD_SIZE": str(nproc), "LOCAL_WORLD_SIZE": str(nproc),
        "ROLE_WORLD_SIZE": str(nproc), "GROUP_WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port), "TORCHELASTIC_RESTART_COUNT": str(restart_count),
        "TORCHELASTIC_MAX_RESTARTS": "0", "TORCHELASTIC_RUN_ID": "none",
        "TORCHELASTIC_USE_AGENT_STORE": "True", "TORCHELASTIC_ERROR_FILE": error_file,
        "OMP_NUM_THREADS": "1",
    })
    return env


def main():
    split = sys.argv.index("--")
    ap = argparse.ArgumentParser()
    ap.add_argument("nproc", type=int)
    ap.add_argument("port", type=int)
    ap.add_argument("--restart-counts", default="", help="a restart count per rank (default: 0 for all)")
    a = ap.parse_args(sys.argv[1:split])
    command = sys.argv[split + 1:]
    counts = [int(c) for c in a.restart_counts.split(",")] if a.restart_counts else [0] * a.nproc
    store = dist.TCPStore("127.0.0.1", a.port, a.nproc, True, datetime.timedelta(seconds=120),
                          wait_for_workers=False)
    with tempfile.TemporaryDirectory() as tmp:
        files = [os.path.join(tmp, f"error-{r}.json") for r in range(a.nproc)]
        logs = [open(f"rank-{r}.log", "w") for r in range(a.nproc)]
        procs = [subprocess.Popen(command, env=worker_env(r, a.nproc, a.port, counts[r], files[r]),
                                  stdout=logs[r], stderr=subprocess.STDOUT)
                 for r in range(a.nproc)]
        codes = [p.wait() for p in procs]
        errors = {}
        for r, f in enumerate(files):
            if os.path.exists(f):
                with open(f) as fp:
                    errors[r] = json.load(fp)
    del store
    print(json.dumps({"exit_codes": codes, "error_files": errors}))


if __name__ == "__main__":
    sys.exit(main())
