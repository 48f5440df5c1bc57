"""Prints whether a heterps-run process is still running in this
directory (a distributed job's processes run where it was started)."""
import os

here = os.path.realpath(os.getcwd())
left = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            program = f.read().split(b"\0")[0]
        cwd = os.path.realpath("/proc/%s/cwd" % pid)
    except OSError:
        continue
    if program.endswith(b"heterps-run") and cwd == here:
        left.append(pid)
print("job processes left: " + " ".join(left) if left
      else "no job processes left")
