"""Starts a parameter-server shard on mutual TLS (certs/ from
make-test-certs.sh), points a trainer at it whose certificate the rogue CA
signed, and prints the trainer's error with the port as PORT, its exit
status, and the shard's once it is stopped."""
import os
import signal
import subprocess
import sys
import time

model = sys.argv[1]
env = dict(os.environ, HETERPS_JOB_TOKEN="tls-test-token-0123456789")
tls = lambda who: ["--tls-ca", "certs/ca.pem", "--tls-cert",
                   "certs/%s.pem" % who, "--tls-key", "certs/%s.key" % who]
if os.path.exists("port"):
    os.remove("port")
shard = subprocess.Popen(["heterps-run", "--role=ps", "--shard", "0",
                          "--ps-shards", "1", "--port-file", "port"] +
                         tls("server"), env=env, stderr=subprocess.DEVNULL)
deadline = time.time() + 30
while not os.path.exists("port") and time.time() < deadline:
    time.sleep(0.05)
port = open("port").read().strip()
trainer = subprocess.run(
    ["heterps-run", model, "--train", "--data", "inputs=x.npy,targets=y.npy",
     "--batch", "16", "--ps", "127.0.0.1:" + port, "--ps-shards", "1",
     "--connect-timeout", "2"] + tls("rogue"),
    env=env, capture_output=True, text=True, timeout=60)
print("trainer:", trainer.stderr.strip().replace(port, "PORT"))
print("trainer exited", trainer.returncode)
shard.send_signal(signal.SIGTERM)
print("shard stopped", shard.wait(timeout=30))
