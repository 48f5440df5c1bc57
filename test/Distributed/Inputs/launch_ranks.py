"""Starts one process per rank of a distributed job, the way a cluster
launcher does (srun sets SLURM_PROCID; a StatefulSet gives each pod an
ordinal): the same command line for every rank, the rank in the
environment variable --rank-env. "{port}" in the command becomes a free
loopback port for the coordinator. Waits at most --timeout seconds, kills
whatever is left, and prints each rank's output under its rank, then each
rank's exit status. Exits 0 when every rank did.

Usage: launch_ranks.py --ranks N [--rank-env NAME] [--timeout S]
           [--rank-args R=ARGS ...] -- COMMAND...
"""
import argparse
import os
import random
import shlex
import socket
import subprocess
import sys
import time


def free_port():
    """A free loopback port below the ephemeral range, so that no process's
    port-0 server can be handed it before the coordinator listens."""
    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(10000, low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise SystemExit("no free port")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, required=True)
    parser.add_argument("--rank-env", default="SLURM_PROCID")
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--rank-args", action="append", default=[],
                        help="R=ARGS: extra arguments for rank R only")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    port = str(free_port())
    command = [a.replace("{port}", port) for a in command]
    extra = {}
    for spec in args.rank_args:
        rank, _, more = spec.partition("=")
        extra[int(rank)] = shlex.split(more)
    env = dict(os.environ)
    env.setdefault("HETERPS_JOB_TOKEN", "launch-ranks-test-token-0123456789")
    procs = []
    for rank in range(args.ranks):
        env_rank = dict(env, **{args.rank_env: str(rank)})
        procs.append(subprocess.Popen(
            command + extra.get(rank, []), env=env_rank,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    deadline = time.time() + args.timeout
    outputs = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
            out += "(killed at the timeout)\n"
        outputs.append(out)
    for rank, out in enumerate(outputs):
        for line in out.splitlines():
            print("[rank %d] %s" % (rank, line))
    for rank, p in enumerate(procs):
        print("rank %d exited %d" % (rank, p.returncode))
    sys.exit(0 if all(p.returncode == 0 for p in procs) else 1)


if __name__ == "__main__":
    main()
