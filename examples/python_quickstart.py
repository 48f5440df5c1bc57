"""The README's examples in Python, on the bundled model: import, layer
figures, a plan on the HeterPS paper's cluster with its report and picture,
a run on NumPy arrays, and training with the trained model saved.

    PYTHONPATH=build/python python3 examples/python_quickstart.py [OUT_DIR]
"""

import os
import sys

import numpy as np

import heterps

here = os.path.dirname(os.path.abspath(__file__))
out = sys.argv[1] if len(sys.argv) > 1 else "."
os.makedirs(out, exist_ok=True)

# heterps-opt model.onnx --hps-layer-stats
model = heterps.import_onnx(os.path.join(here, "models/fashion_cnn.onnx"))
print(f"{model!r}: {model.totals['flops']} FLOPs per sample")
for layer in model.layers[:3]:
    print(f"  {layer['name']:<16} {layer['kind']:<10} {layer['flops']:>8} FLOPs")

# heterps-opt model.onnx --hps-plan=... --hps-report, and format=html
plan = heterps.plan(model, cluster=os.path.join(here, "clusters/heterps-paper.yaml"),
                    strategy="rl", throughput=1500000, time_budget=2)
print(plan.to_text().splitlines()[0])
for stage in plan.stages:
    print(f"  stage {stage['index']}: {stage['device_type']} x{stage['replicas']}, "
          f"{len(stage['layers'])} layers")
with open(os.path.join(out, "plan.html"), "w") as page:
    page.write(plan.to_html())
plan.save(os.path.join(out, "plan.mlir"))

# heterps-run model.onnx --input image=x.npy
session = heterps.Session(model, threads=2)
labels = np.arange(8)
images = np.random.default_rng(0).random((8, 1, 28, 28), dtype=np.float32) * 0.1
for i, c in enumerate(labels):  # class c: a bright square at (3c, 3c)
    images[i, 0, 3 * c:3 * c + 6, 3 * c:3 * c + 6] += 1
(logits,) = session.run(None, {"image": images})
print("logits", logits.shape, "predictions", logits.argmax(1))

# heterps-run model.onnx --train --data ... --save-model trained.onnx
data = (np.repeat(images, 16, axis=0), np.repeat(labels, 16))
report = heterps.train(model, data=data, optimizer="momentum", lr=0.05,
                       epochs=4, batch=16,
                       save_model=os.path.join(out, "trained.onnx"))
for epoch in report["epochs"]:
    print(f"epoch {epoch['epoch']}: loss {epoch['loss']:.4f}, "
          f"{epoch['samples_per_s']:.0f} samples/s")
(trained,) = heterps.Session(os.path.join(out, "trained.onnx")).run(
    None, {"image": images})
print(f"trained model: {(trained.argmax(1) == labels).mean():.0%} of the "
      "8 images right")
print("wrote", ", ".join(os.path.join(out, f)
                         for f in ("plan.html", "plan.mlir", "trained.onnx")))
