#!/usr/bin/env python3
"""Export torchvision models to ONNX for the import and inference benchmarks.

Usage: export_torchvision.py OUTDIR [NAME...]

NAME is one of the zoo (the models of the benchmark tables, `Models:` in
--help), of its variants (`Variants:`, the other sizes of the same
families, the transformers Debian's torchvision also has, and a few of
its segmentation and video models: models the kernels were never tuned
on, swept for correctness and speed) or of the others (`Others:`,
other_models.py: architectures outside torchvision's classifiers).

Models are built with random weights (weights=None, no network access needed),
torch.manual_seed(0), eval mode, and exported with opset 13 (the vision
transformers with 17, where LayerNormalization is one op), input name "input",
output name "output" and a dynamic batch axis on both. A model whose
OUTDIR/<name>.onnx already exists is skipped, so reruns are cheap.
"""

import os
import sys
import time

import torch
import torchvision.models as models
from torchvision.models import segmentation, video

from other_models import OTHERS

OPSET = 13

# name -> (constructor, input spatial size)
MODELS = {
    "alexnet": (lambda: models.alexnet(weights=None), 224),
    "vgg16": (lambda: models.vgg16(weights=None), 224),
    "resnet18": (lambda: models.resnet18(weights=None), 224),
    "resnet50": (lambda: models.resnet50(weights=None), 224),
    "inception_v3": (
        lambda: models.inception_v3(weights=None, aux_logits=False,
                                    init_weights=False), 299),
    "mobilenet_v2": (lambda: models.mobilenet_v2(weights=None), 224),
    "squeezenet1_0": (lambda: models.squeezenet1_0(weights=None), 224),
    "densenet121": (lambda: models.densenet121(weights=None), 224),
    "googlenet": (
        lambda: models.googlenet(weights=None, aux_logits=False,
                                 init_weights=False), 224),
    "shufflenet_v2_x1_0": (lambda: models.shufflenet_v2_x1_0(weights=None),
                           224),
    # Beyond the set the kernels were tuned on.
    "squeezenet1_1": (lambda: models.squeezenet1_1(weights=None), 224),
    "mobilenet_v3_small": (lambda: models.mobilenet_v3_small(weights=None),
                           224),
    "efficientnet_b0": (lambda: models.efficientnet_b0(weights=None), 224),
    "mnasnet1_0": (lambda: models.mnasnet1_0(weights=None), 224),
    "regnet_y_400mf": (lambda: models.regnet_y_400mf(weights=None), 224),
    "resnext50_32x4d": (lambda: models.resnext50_32x4d(weights=None), 224),
    "convnext_tiny": (lambda: models.convnext_tiny(weights=None), 224),
    # The rest of the zoo, at torchvision's evaluation sizes.
    "wide_resnet50_2": (lambda: models.wide_resnet50_2(weights=None), 224),
    "mobilenet_v3_large": (lambda: models.mobilenet_v3_large(weights=None),
                           224),
    "regnet_x_400mf": (lambda: models.regnet_x_400mf(weights=None), 224),
    "efficientnet_b1": (lambda: models.efficientnet_b1(weights=None), 240),
    "efficientnet_b2": (lambda: models.efficientnet_b2(weights=None), 288),
    "efficientnet_b3": (lambda: models.efficientnet_b3(weights=None), 300),
    "efficientnet_v2_s": (lambda: models.efficientnet_v2_s(weights=None),
                          384),
    # The vision transformers torchvision 0.14 has, at their base sizes.
    "vit_b_16": (lambda: vit(models.vit_b_16), 224),
    "vit_b_32": (lambda: vit(models.vit_b_32), 224),
    "swin_t": (lambda: models.swin_t(weights=None), 224),
}

# Other sizes of the zoo's families, and the transformers added after it,
# at torchvision's evaluation sizes; the largest of each family (ResNet-152,
# VGG-19, RegNet 8-128GF, EfficientNet B5-B7 and V2-L, ViT-L/H,
# ConvNeXt-B/L, Swin-B) are left out for the sweep's time, and Swin V2,
# which Debian's PyTorch does not export ("aten::zero" at opset 17).
VARIANTS = {
    "resnet34": (lambda: models.resnet34(weights=None), 224),
    "resnet101": (lambda: models.resnet101(weights=None), 224),
    "resnext101_32x8d": (lambda: models.resnext101_32x8d(weights=None), 224),
    "wide_resnet101_2": (lambda: models.wide_resnet101_2(weights=None), 224),
    "vgg11_bn": (lambda: models.vgg11_bn(weights=None), 224),
    "vgg13": (lambda: models.vgg13(weights=None), 224),
    "densenet161": (lambda: models.densenet161(weights=None), 224),
    "densenet169": (lambda: models.densenet169(weights=None), 224),
    "mnasnet0_5": (lambda: models.mnasnet0_5(weights=None), 224),
    "mnasnet0_75": (lambda: models.mnasnet0_75(weights=None), 224),
    "mnasnet1_3": (lambda: models.mnasnet1_3(weights=None), 224),
    "shufflenet_v2_x0_5": (lambda: models.shufflenet_v2_x0_5(weights=None),
                           224),
    "shufflenet_v2_x1_5": (lambda: models.shufflenet_v2_x1_5(weights=None),
                           224),
    "shufflenet_v2_x2_0": (lambda: models.shufflenet_v2_x2_0(weights=None),
                           224),
    "regnet_x_800mf": (lambda: models.regnet_x_800mf(weights=None), 224),
    "regnet_x_1_6gf": (lambda: models.regnet_x_1_6gf(weights=None), 224),
    "regnet_x_3_2gf": (lambda: models.regnet_x_3_2gf(weights=None), 224),
    "regnet_y_800mf": (lambda: models.regnet_y_800mf(weights=None), 224),
    "regnet_y_1_6gf": (lambda: models.regnet_y_1_6gf(weights=None), 224),
    "regnet_y_3_2gf": (lambda: models.regnet_y_3_2gf(weights=None), 224),
    "efficientnet_b4": (lambda: models.efficientnet_b4(weights=None), 380),
    "efficientnet_v2_m": (lambda: models.efficientnet_v2_m(weights=None),
                          480),
    "convnext_small": (lambda: models.convnext_small(weights=None), 224),
    "swin_s": (lambda: models.swin_s(weights=None), 224),
    "maxvit_t": (lambda: models.maxvit_t(weights=None), 224),
    # Segmentation (Resize, dilated convolutions) and video (3-D
    # convolutions on 8 frames of 112x112) models.
    "fcn_resnet50": (lambda: segmentation.fcn_resnet50(
        weights=None, weights_backbone=None), 224),
    "deeplabv3_mobilenet_v3_large": (
        lambda: segmentation.deeplabv3_mobilenet_v3_large(
            weights=None, weights_backbone=None), 224),
    "lraspp_mobilenet_v3_large": (
        lambda: segmentation.lraspp_mobilenet_v3_large(
            weights=None, weights_backbone=None), 224),
    "r3d_18": (lambda: video.r3d_18(weights=None), (8, 112, 112)),
}

TRANSFORMERS = {"vit_b_16", "vit_b_32", "swin_t", "swin_s", "maxvit_t"}


def vit(ctor):
    model = ctor(weights=None)
    # torchvision zeroes the head: every output would be 0 whatever the
    # network before it computed.
    torch.nn.init.normal_(model.heads.head.weight, std=0.02)
    return model


def export(name, path):
    if name in OTHERS:
        ctor, shape, opset = OTHERS[name]
    else:
        ctor, size = {**MODELS, **VARIANTS}[name]
        # A side, or the trailing dimensions (frames, height, width).
        shape = (3, *(size if isinstance(size, tuple) else (size, size)))
        opset = 17 if name in TRANSFORMERS else OPSET
    torch.manual_seed(0)
    model = ctor().eval()
    x = torch.randn(1, *shape)
    start = time.perf_counter()
    # Not under no_grad at opset 17 (the transformers): PyTorch's fused
    # attention path, taken for inference without gradients, has no ONNX
    # export.
    with torch.set_grad_enabled(opset == 17):
        torch.onnx.export(
            model, x, path,
            opset_version=opset,
            input_names=["input"],
            output_names=["output"],
            dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
        )
    return time.perf_counter() - start


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        print("Models: " + " ".join(MODELS))
        print("Variants: " + " ".join(VARIANTS))
        print("Others: " + " ".join(OTHERS))
        return 0 if len(argv) >= 2 else 2
    outdir = argv[1]
    names = argv[2:] or list(MODELS)
    unknown = [n for n in names
               if n not in MODELS and n not in VARIANTS and n not in OTHERS]
    if unknown:
        print("unknown model(s): " + " ".join(unknown), file=sys.stderr)
        return 2
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    for name in names:
        path = os.path.join(outdir, name + ".onnx")
        if os.path.exists(path):
            size = os.path.getsize(path)
            print(f"{name:20s} {size / 2**20:9.1f} MiB  skipped (exists)",
                  flush=True)
            continue
        tmp = path + ".tmp"
        secs = export(name, tmp)
        os.replace(tmp, path)
        size = os.path.getsize(path)
        print(f"{name:20s} {size / 2**20:9.1f} MiB  {secs:7.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
