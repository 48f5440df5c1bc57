"""Runs a distributed training job and injects a failure into it: when a
line of the job's output matches --when (or while the file --when-file, a
glob pattern, is being written for the --nth time, "{pid}" in it the
job's pid), it sends --signal to the process of rank --rank (found by its
command line, as the local launcher starts it: "--rank=N"; rank 0 is the
job's own process).
SIGSTOP is followed by SIGCONT after --resume-after seconds. Prints the
job's output, each line after the strike prefixed with the seconds since
it, then a summary line: when the failure was detected, when the job was
back (its "recovered" line) and when its next step line came. Exits with
the job's status; the job is killed at --timeout.

Usage: inject.py (--when REGEX | --when-file PATH [--nth K]) --rank N
           [--signal KILL|STOP] [--resume-after S] [--timeout S]
           -- COMMAND...
"""
import argparse
import glob
import os
import re
import signal
import subprocess
import sys
import threading
import time


def find_rank(rank, parent):
    """The pid of the job's process of `rank` (a child of `parent`)."""
    if rank == 0:
        return parent
    wanted = ("--rank=%d" % rank).encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                args = f.read().split(b"\0")
            with open("/proc/%s/stat" % pid) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if wanted in args and ppid == parent:
            return int(pid)
    return None


def watch_file(path, args, job):
    """Strikes while `path` is being written the --nth time (it exists and
    is not empty: a save first makes an empty one to check that it can),
    and says whether the strike left it behind, half written."""
    # Found before the watch: a strike must follow what it saw at once.
    pid = None
    while pid is None and job.poll() is None:
        pid = find_rank(args.rank, job.pid)
        time.sleep(0.01)
    seen, there = 0, False
    while job.poll() is None:
        writing = False
        for match in glob.glob(path):
            try:
                writing = writing or os.path.getsize(match) > 0
            except OSError:
                pass
        seen += writing and not there
        there = writing or (there and bool(glob.glob(path)))
        if writing and seen == args.nth:
            os.kill(pid, getattr(signal, "SIG" + args.signal))
            # Whether it was left half written, once the process is gone
            # (and before the job's next save cleans it up).
            deadline = time.time() + 5
            while os.path.exists("/proc/%d/cmdline" % pid) and \
                    open("/proc/%d/cmdline" % pid, "rb").read() and \
                    time.time() < deadline:
                time.sleep(0.001)
            left = bool(glob.glob(path))
            print("inject: sent SIG%s to rank %d while %s was written; %s"
                  % (args.signal, args.rank, os.path.basename(path),
                     "it was left behind, half written" if left
                     else "it was complete"), flush=True)
            return
        time.sleep(0.0002)


def resume(pid):
    """SIGCONT, unless the job already killed the stopped process."""
    try:
        os.kill(pid, signal.SIGCONT)
    except ProcessLookupError:
        pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--when")
    parser.add_argument("--when-file")
    parser.add_argument("--nth", type=int, default=1)
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--signal", default="KILL", choices=["KILL", "STOP"])
    parser.add_argument("--resume-after", type=float, default=0)
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    job = subprocess.Popen(command, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, bufsize=1)
    killer = threading.Timer(args.timeout, job.kill)
    killer.start()
    watcher = None
    if args.when_file:
        path = args.when_file.replace("{pid}", str(job.pid))
        watcher = threading.Thread(target=watch_file, args=(path, args, job))
        watcher.start()
    trigger = re.compile(args.when) if args.when else None
    struck = None
    detected = recovered = next_step = None
    for line in job.stdout:
        line = line.rstrip("\n")
        now = time.monotonic()
        if struck is None and trigger and trigger.search(line):
            pid = find_rank(args.rank, job.pid)
            if pid is None:
                print("inject: no process of rank %d" % args.rank)
            else:
                os.kill(pid, getattr(signal, "SIG" + args.signal))
                struck = time.monotonic()
                print("inject: sent SIG%s to rank %d" % (args.signal, args.rank))
                if args.signal == "STOP":
                    threading.Timer(args.resume_after, resume, (pid,)).start()
        if struck is None:
            print(line)
            continue
        print("[+%.2f s] %s" % (now - struck, line))
        if detected is None and "given up for dead" in line:
            detected = now - struck
        if recovered is None and "recovered" in line:
            recovered = now - struck
        elif recovered is not None and next_step is None and " step " in line:
            next_step = now - struck
    status = job.wait()
    killer.cancel()
    if watcher:
        watcher.join()  # its line comes before the exit
    if struck is not None:
        def fmt(t):
            return "-" if t is None else "%.2f s" % t
        print("inject: detected after %s, recovered after %s, next step "
              "after %s" % (fmt(detected), fmt(recovered), fmt(next_step)))
    sys.exit(status)


if __name__ == "__main__":
    main()
