"""Prints an MLIR function of N chained hps.relu layers (for tests)."""
import sys

n = int(sys.argv[1])
print("func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {")
for i in range(n):
    src = "%x" if i == 0 else "%%r%d" % (i - 1)
    print('  %%r%d = hps.relu %s : tensor<2xf32> loc("r%d")' % (i, src, i))
print("  return %%r%d : tensor<2xf32>" % (n - 1))
print("}")
