"""A partition, as a cluster sees it: starts one process per rank of a job
(as test/Distributed/Inputs/launch_ranks.py does), and when rank 0's
output matches --when, stops rank --rank with SIGSTOP. Playing the
cluster's scheduler, it starts a replacement of that rank once rank 0
says it waits for one; once rank 0 says the job recovered and --after
more of its lines have come, the stopped process gets SIGCONT: it wakes
in a job that moved on without it. With --kill instead, rank --rank is
killed with SIGKILL and nothing is restarted (a dead coordinator).

Prints every process's output under its rank ("[rank 4 old]" for the
stopped one), then each exit status. Exits 0 when every process of the
job that was not given up exited 0. Everything is killed at --timeout.

Usage: partition.py --ranks N --rank R --when REGEX [--after K] [--kill]
           [--timeout S] -- COMMAND...
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Distributed", "Inputs"))
from launch_ranks import free_port  # noqa: E402


class Rank:
    """One process and the lines it printed."""

    def __init__(self, name, command, env, on_line=None):
        self.name = name
        self.lines = []
        self.proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.reader = threading.Thread(target=self.read, args=(on_line,))
        self.reader.start()

    def read(self, on_line):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            if on_line:
                on_line(self.lines[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, required=True)
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--when", required=True)
    parser.add_argument("--after", type=int, default=4)
    parser.add_argument("--kill", action="store_true")
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    port = str(free_port())
    command = [a.replace("{port}", port) for a in command]
    env = dict(os.environ)
    env.setdefault("HETERPS_JOB_TOKEN", "partition-test-token-0123456789ab")

    def rank_env(r):
        return dict(env, HETERPS_RANK=str(r))

    ranks = {}
    stale = []
    state = {"struck": False, "replaced": False, "recovered": None}
    trigger = re.compile(args.when)

    def coordinator_line(line):
        target = ranks.get(args.rank)
        if not state["struck"] and trigger.search(line):
            state["struck"] = True
            if args.kill:
                target.proc.kill()
            else:
                target.proc.send_signal(signal.SIGSTOP)
                stale.append(target)
        elif "for the launcher to restart" in line and not state["replaced"]:
            state["replaced"] = True
            ranks[args.rank] = Rank(str(args.rank), command,
                                    rank_env(args.rank))
        elif "recovered" in line and state["recovered"] is None:
            state["recovered"] = 0
        elif state["recovered"] is not None:
            state["recovered"] += 1
            if state["recovered"] == args.after and stale:
                stale[0].proc.send_signal(signal.SIGCONT)

    for r in range(args.ranks):
        ranks[r] = Rank(str(r), command, rank_env(r),
                        coordinator_line if r == 0 else None)
        if r == 0:
            time.sleep(0.2)  # the coordinator listens first
    deadline = time.time() + args.timeout
    everyone = lambda: list(ranks.values()) + stale  # noqa: E731
    while time.time() < deadline and any(p.proc.poll() is None
                                         for p in everyone()):
        time.sleep(0.1)
    for p in everyone():
        if p.proc.poll() is None:
            p.proc.send_signal(signal.SIGCONT)
            p.proc.kill()
            p.lines.append("(killed at the timeout)")
        p.proc.wait()
        p.reader.join()
    for p in stale:
        p.name += " old"
    for p in sorted(everyone(), key=lambda p: (int(p.name.split()[0]),
                                               p.name)):
        for line in p.lines:
            print("[rank %s] %s" % (p.name, line))
    for p in sorted(everyone(), key=lambda p: (int(p.name.split()[0]),
                                               p.name)):
        print("rank %s exited %d" % (p.name, p.proc.returncode))
    given_up = {id(p) for p in stale}
    if args.kill:
        given_up.add(id(ranks[args.rank]))
    sys.exit(0 if all(p.proc.returncode == 0 for p in everyone()
                      if id(p) not in given_up) else 1)


if __name__ == "__main__":
    main()
