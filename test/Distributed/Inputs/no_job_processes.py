"""Prints whether a heterps-run process is still running in this
directory (a distributed job's processes run where it was started). A
process may take a moment to go after its parent was killed (the kernel
sends it SIGKILL then): it looks for up to 10 s."""
import os
import time

here = os.path.realpath(os.getcwd())


def left():
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                program = f.read().split(b"\0")[0]
            cwd = os.path.realpath("/proc/%s/cwd" % pid)
        except OSError:
            continue
        if program.endswith(b"heterps-run") and cwd == here:
            found.append(pid)
    return found


deadline = time.time() + 10
while left() and time.time() < deadline:
    time.sleep(0.1)
running = left()
print("job processes left: " + " ".join(running) if running
      else "no job processes left")
