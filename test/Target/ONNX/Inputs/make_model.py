#!/usr/bin/env python3
"""Generate small ONNX models for the HeterPS-MLIR ONNX importer tests.

Usage:
  make_model.py NAME OUT.onnx   write model NAME to OUT.onnx
  make_model.py --list          print the known model names
  make_model.py --all OUTDIR    write every model to OUTDIR/NAME.onnx

Every model is built with onnx.helper, uses small seeded random float32
initializers and named nodes (the importer uses node names as locations).
Valid models are checked with onnx.checker.check_model (custom_domain and
opset_too_new included: onnx 1.12 accepts both). Deliberately broken files
(truncated, garbage, text_file, empty, no_graph, external_data_missing) are
written without it; shape_inference_error passes the checker but fails strict
shape inference.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FLOAT = TensorProto.FLOAT
INT64 = TensorProto.INT64

# opset -> IR version that introduced support for it.
_IR_FOR_OPSET = {6: 3, 7: 3, 8: 3, 9: 4, 10: 5, 11: 6, 12: 7, 13: 7, 14: 7,
                 15: 8, 16: 8, 17: 8, 18: 8}

_rng = np.random.default_rng(0)


def _reseed():
    global _rng
    _rng = np.random.default_rng(0)


def weight(name, shape, scale=0.1):
    """A random float32 initializer."""
    data = (_rng.standard_normal(shape) * scale).astype(np.float32)
    return numpy_helper.from_array(data, name)


def const(name, values, dtype=np.int64):
    """A constant initializer with the given values."""
    return numpy_helper.from_array(np.asarray(values, dtype=dtype), name)


def const_node(node_name, out, values, dtype=np.int64):
    """A Constant node producing `values`."""
    return helper.make_node(
        "Constant", [], [out], name=node_name,
        value=numpy_helper.from_array(np.asarray(values, dtype=dtype), out))


def vi(name, shape, elem=FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, opset, inits=(), name="test",
          extra_opsets=()):
    graph = helper.make_graph(nodes, name, inputs, outputs,
                              initializer=list(inits))
    opsets = [helper.make_opsetid("", opset)]
    opsets += [helper.make_opsetid(d, v) for d, v in extra_opsets]
    m = helper.make_model(graph, opset_imports=opsets,
                          producer_name="heterps-make_model")
    m.ir_version = _IR_FOR_OPSET[opset]
    onnx.checker.check_model(m)
    return m


# --------------------------------------------------------------------------
# Valid models
# --------------------------------------------------------------------------

def conv_relu():
    nodes = [
        helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv1",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"], name="relu1"),
    ]
    return model(nodes, [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 8, 8])], 13,
                 [weight("W", [4, 3, 3, 3]), weight("B", [4])], "conv_relu")


def conv_autopad():
    nodes = [
        # [1,2,7,7] -> [1,4,4,4]
        helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], name="conv_same",
                         auto_pad="SAME_UPPER", strides=[2, 2],
                         kernel_shape=[3, 3]),
        # grouped + dilated, explicit pads: [1,4,4,4] -> [1,4,4,4]
        helper.make_node("Conv", ["c1", "W2"], ["c2"], name="conv_group",
                         group=2, dilations=[2, 2], pads=[2, 2, 2, 2],
                         kernel_shape=[3, 3]),
        # [1,4,4,4] -> [1,3,2,2]
        helper.make_node("Conv", ["c2", "W3", "B3"], ["y"], name="conv_valid",
                         auto_pad="VALID", kernel_shape=[3, 3]),
    ]
    inits = [weight("W1", [4, 2, 3, 3]), weight("B1", [4]),
             weight("W2", [4, 2, 3, 3]),
             weight("W3", [3, 4, 3, 3]), weight("B3", [3])]
    return model(nodes, [vi("x", [1, 2, 7, 7])], [vi("y", [1, 3, 2, 2])], 11,
                 inits, "conv_autopad")


def conv1d():
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["y"], name="conv1d",
                              kernel_shape=[3])]
    return model(nodes, [vi("x", [2, 4, 16])], [vi("y", [2, 8, 14])], 13,
                 [weight("W", [8, 4, 3]), weight("B", [8])], "conv1d")


def conv_transpose():
    nodes = [
        # default: (4-1)*2 + 3 = 9
        helper.make_node("ConvTranspose", ["x", "W", "B"], ["y1"],
                         name="deconv1", strides=[2, 2], kernel_shape=[3, 3]),
        # explicit output_shape equal to the default size
        helper.make_node("ConvTranspose", ["x", "W"], ["y2"], name="deconv2",
                         strides=[2, 2], output_shape=[9, 9]),
        # output_shape one larger, made exact by output_padding
        helper.make_node("ConvTranspose", ["x", "W"], ["y3"], name="deconv3",
                         strides=[2, 2], output_shape=[10, 10],
                         output_padding=[1, 1]),
    ]
    outputs = [vi("y1", [1, 3, 9, 9]), vi("y2", [1, 3, 9, 9]),
               vi("y3", [1, 3, 10, 10])]
    return model(nodes, [vi("x", [1, 2, 4, 4])], outputs, 13,
                 [weight("W", [2, 3, 3, 3]), weight("B", [3])],
                 "conv_transpose")


def _bn_params(prefix, c):
    return [
        const(prefix + "_scale", 1.0 + 0.1 * _rng.standard_normal(c),
              np.float32),
        const(prefix + "_bias", 0.1 * _rng.standard_normal(c), np.float32),
        const(prefix + "_mean", 0.1 * _rng.standard_normal(c), np.float32),
        const(prefix + "_var", 1.0 + 0.1 * _rng.random(c), np.float32),
    ]


def _bn_inputs(prefix):
    return [prefix + s for s in ("_scale", "_bias", "_mean", "_var")]


def resnet_block():
    c = 8
    nodes = [
        helper.make_node("Conv", ["x", "conv1_W"], ["c1"], name="conv1",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1"] + _bn_inputs("bn1"),
                         ["b1"], name="bn1", epsilon=1e-5),
        helper.make_node("Relu", ["b1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "conv2_W"], ["c2"], name="conv2",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c2"] + _bn_inputs("bn2"),
                         ["b2"], name="bn2", epsilon=1e-5),
        helper.make_node("Add", ["b2", "x"], ["s"], name="add_skip"),
        helper.make_node("Relu", ["s"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc_W", "fc_B"], ["logits"], name="fc",
                         transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax",
                         axis=1),
    ]
    inits = ([weight("conv1_W", [c, c, 3, 3])] + _bn_params("bn1", c) +
             [weight("conv2_W", [c, c, 3, 3])] + _bn_params("bn2", c) +
             [weight("fc_W", [10, c]), weight("fc_B", [10])])
    return model(nodes, [vi("x", ["N", c, 8, 8])], [vi("probs", ["N", 10])],
                 13, inits, "resnet_block")


def multi_io():
    nodes = [
        helper.make_node("Add", ["a", "b"], ["sum"], name="add1"),
        helper.make_node("Sigmoid", ["b"], ["sb"], name="sigmoid1"),
        helper.make_node("Mul", ["a", "sb"], ["prod"], name="mul1"),
        helper.make_node("Identity", ["a"], ["a_copy"], name="identity1"),
    ]
    return model(nodes, [vi("a", [2, 3]), vi("b", [2, 3])],
                 [vi("sum", [2, 3]), vi("prod", [2, 3]), vi("a_copy", [2, 3])],
                 13, [], "multi_io")


def broadcast():
    nodes = [
        helper.make_node("Add", ["x", "c4"], ["t_add"], name="add_bc"),  # [2,3,4]+[4]
        helper.make_node("Sub", ["p", "q"], ["t_sub"], name="sub_bc"),   # [3,1]-[1,4]
        helper.make_node("Mul", ["t_add", "t_sub"], ["t_mul"],
                         name="mul_bc"),                                 # [2,3,4]*[3,4]
        helper.make_node("Div", ["t_mul", "d"], ["t_div"],
                         name="div_bc"),                                 # [2,3,4]/[2,1,1]
        helper.make_node("Add", ["t_div", "s"], ["y"], name="add_scalar"),  # +[]
    ]
    inits = [weight("c4", [4]), const("d", [[[2.0]], [[4.0]]], np.float32),
             const("s", 1.5, np.float32)]
    return model(nodes, [vi("x", [2, 3, 4]), vi("p", [3, 1]), vi("q", [1, 4])],
                 [vi("y", [2, 3, 4])], 13, inits, "broadcast")


def activations():
    nodes = [
        helper.make_node("LeakyRelu", ["x"], ["a1"], name="leaky1", alpha=0.2),
        helper.make_node("Elu", ["a1"], ["a2"], name="elu1"),
        helper.make_node("Selu", ["a2"], ["a3"], name="selu1"),
        helper.make_node("Tanh", ["a3"], ["a4"], name="tanh1"),
        const_node("clip_max_const", "clip_max", 0.5, np.float32),
        helper.make_node("Clip", ["a4", "clip_min", "clip_max"], ["a5"],
                         name="clip1"),
        helper.make_node("Sigmoid", ["a5"], ["a6"], name="sigmoid1"),
        helper.make_node("Dropout", ["a6", "ratio"], ["a7"], name="dropout1"),
        helper.make_node("LogSoftmax", ["a7"], ["y"], name="logsoftmax1",
                         axis=1),
    ]
    inits = [const("clip_min", -0.5, np.float32),
             const("ratio", 0.25, np.float32)]
    return model(nodes, [vi("x", [2, 5])], [vi("y", [2, 5])], 13, inits,
                 "activations")


def dropout_training():
    """Dropout as PyTorch exports a module in train mode: training_mode=true."""
    nodes = [helper.make_node("Dropout", ["x", "ratio", "mode"], ["y"],
                              name="dropout1")]
    inits = [const("ratio", 0.25, np.float32), const("mode", True, np.bool_)]
    return model(nodes, [vi("x", [2, 5])], [vi("y", [2, 5])], 13, inits,
                 "dropout_training")


def dropout_runtime_ratio_training():
    """A ratio from a graph input with training_mode=true: hps cannot train
    with a ratio known only at run time."""
    nodes = [helper.make_node("Dropout", ["x", "r", "mode"], ["y"],
                              name="dropout1")]
    inits = [const("mode", True, np.bool_)]
    return model(nodes, [vi("x", [2, 5]), vi("r", [])], [vi("y", [2, 5])],
                 13, inits, "dropout_runtime_ratio_training")


def clip_opset6():
    nodes = [helper.make_node("Clip", ["x"], ["y"], name="clip1",
                              min=-1.0, max=1.0)]
    return model(nodes, [vi("x", [2, 5])], [vi("y", [2, 5])], 9, [],
                 "clip_opset6")


def pools():
    nodes = [
        # ceil((10 + 2 - 3) / 2) + 1 = 6 (floor would give 5)
        helper.make_node("MaxPool", ["x"], ["p1"], name="maxpool1",
                         kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1], ceil_mode=1),
        helper.make_node("AveragePool", ["p1"], ["p2"], name="avgpool1",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                         count_include_pad=1),
        helper.make_node("LRN", ["p2"], ["l"], name="lrn1", size=5,
                         alpha=1e-4, beta=0.75, bias=1.0),
        helper.make_node("GlobalMaxPool", ["l"], ["g"], name="gmp1"),
    ]
    return model(nodes, [vi("x", [1, 6, 10, 10])],
                 [vi("l", [1, 6, 6, 6]), vi("g", [1, 6, 1, 1])], 12, [],
                 "pools")


def shapes_opset13():
    nodes = [
        helper.make_node("Unsqueeze", ["x", "axes0"], ["u"],
                         name="unsqueeze1"),                      # [1,2,5,4]
        helper.make_node("Squeeze", ["u", "axes0"], ["sq"],
                         name="squeeze1"),                        # [2,5,4]
        helper.make_node("Split", ["sq", "split_sizes"], ["s0", "s1"],
                         name="split1", axis=1),                  # [2,2,4] [2,3,4]
        helper.make_node("Slice", ["s1", "sl_starts", "sl_ends", "sl_axes",
                                   "sl_steps"], ["sl"],
                         name="slice1"),                          # [2,3,2]
        helper.make_node("Transpose", ["sl"], ["tr"], name="transpose1",
                         perm=[0, 2, 1]),                         # [2,2,3]
        helper.make_node("Concat", ["s0", "tr"], ["cat"], name="concat1",
                         axis=-1),                                # [2,2,7]
        helper.make_node("Pad", ["cat", "pads"], ["pd"], name="pad1",
                         mode="reflect"),                         # [2,4,9]
        helper.make_node("Reshape", ["pd", "new_shape"], ["reshaped"],
                         name="reshape1"),                        # [2,36]
        helper.make_node("ReduceSum", ["pd", "rs_axes"], ["rsum"],
                         name="reducesum1", keepdims=0),          # [2,9]
        helper.make_node("ReduceMean", ["pd"], ["rmean"],
                         name="reducemean1", axes=[2]),           # [2,4,1]
    ]
    inits = [
        const("axes0", [0]),
        const("split_sizes", [2, 3]),
        # dim 1: -3..3 step 1 -> 0,1,2 ; dim 2: -1..-5 step -2 -> 3,1
        const("sl_starts", [-3, -1]),
        const("sl_ends", [3, -5]),
        const("sl_axes", [1, -1]),
        const("sl_steps", [1, -2]),
        const("pads", [0, 1, 1, 0, 1, 1]),
        const("new_shape", [0, -1]),
        const("rs_axes", [1]),
    ]
    return model(nodes, [vi("x", [2, 5, 4])],
                 [vi("reshaped", [2, 36]), vi("rsum", [2, 9]),
                  vi("rmean", [2, 4, 1])], 13, inits, "shapes_opset13")


def shapes_opset9():
    nodes = [
        helper.make_node("Unsqueeze", ["x"], ["u"], name="unsqueeze1",
                         axes=[0]),                               # [1,2,5,4]
        helper.make_node("Squeeze", ["u"], ["sq"], name="squeeze1",
                         axes=[0]),                               # [2,5,4]
        helper.make_node("Split", ["sq"], ["s0", "s1"], name="split1",
                         axis=1, split=[2, 3]),                   # [2,2,4] [2,3,4]
        helper.make_node("Slice", ["s1"], ["sl"], name="slice1",
                         starts=[1, -2], ends=[1000, 4],
                         axes=[1, 2]),                            # [2,2,2]
        helper.make_node("Transpose", ["s0"], ["tr"], name="transpose1",
                         perm=[0, 2, 1]),                         # [2,4,2]
        helper.make_node("Concat", ["tr", "sl"], ["cat"], name="concat1",
                         axis=1),                                 # [2,6,2]
        helper.make_node("Pad", ["cat"], ["pd"], name="pad1", mode="constant",
                         pads=[0, 1, 0, 0, 1, 2], value=0.5),     # [2,8,4]
        helper.make_node("ReduceSum", ["pd"], ["rsum"], name="reducesum1",
                         axes=[2], keepdims=0),                   # [2,8]
        # opset < 13: input coerced to 2-D [2, 8*4] around axis 1
        helper.make_node("Softmax", ["pd"], ["sm"], name="softmax1",
                         axis=1),                                 # [2,8,4]
    ]
    return model(nodes, [vi("x", [2, 5, 4])],
                 [vi("rsum", [2, 8]), vi("sm", [2, 8, 4])], 9, [],
                 "shapes_opset9")


def shape_folding():
    nodes = [
        helper.make_node("Shape", ["x"], ["shp"], name="shape1"),
        const_node("const_idx", "idx0", 0),
        helper.make_node("Gather", ["shp", "idx0"], ["n"], name="gather1",
                         axis=0),
        const_node("const_axes", "uaxes", [0]),
        helper.make_node("Unsqueeze", ["n", "uaxes"], ["n1"],
                         name="unsqueeze1"),
        const_node("const_minus1", "minus1", [-1]),
        helper.make_node("Concat", ["n1", "minus1"], ["new_shape"],
                         name="concat1", axis=0),
        helper.make_node("Reshape", ["x", "new_shape"], ["y"],
                         name="reshape1"),
    ]
    return model(nodes, [vi("x", [2, 4, 3, 3])], [vi("y", [2, 36])], 13, [],
                 "shape_folding")


def dynamic_shapes():
    """Attention-like graph over x [batch, seq, 8]: positions from
    Range(0, seq), a causal mask (Greater, Where), a Reshape to a shape
    computed from batch * seq, and an Expand to [batch, 1, 8]."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shp"], name="shape"),
        const_node("c0", "zero", 0),
        const_node("c1", "one", 1),
        helper.make_node("Gather", ["shp", "zero"], ["batch"], name="batch",
                         axis=0),
        helper.make_node("Gather", ["shp", "one"], ["seq"], name="seq",
                         axis=0),
        helper.make_node("Range", ["zero", "seq", "one"], ["pos"],
                         name="positions"),
        helper.make_node("Gather", ["table", "pos"], ["pe"], name="embed",
                         axis=0),
        helper.make_node("Add", ["x", "pe"], ["h"], name="add_pos"),
        const_node("c_ax0", "ax0", [0]),
        const_node("c_ax1", "ax1", [1]),
        helper.make_node("Unsqueeze", ["pos", "ax1"], ["rows"], name="rows"),
        helper.make_node("Unsqueeze", ["pos", "ax0"], ["cols"], name="cols"),
        helper.make_node("Greater", ["cols", "rows"], ["future"],
                         name="future"),
        helper.make_node("Transpose", ["h"], ["ht"], name="ht",
                         perm=[0, 2, 1]),
        helper.make_node("MatMul", ["h", "ht"], ["scores"], name="scores"),
        const_node("c_neg", "neg", -np.inf, np.float32),
        helper.make_node("Where", ["future", "neg", "scores"], ["masked"],
                         name="mask"),
        helper.make_node("Softmax", ["masked"], ["att"], name="softmax",
                         axis=-1),
        helper.make_node("MatMul", ["att", "h"], ["y"], name="attend"),
        helper.make_node("Mul", ["batch", "seq"], ["rows_total"],
                         name="batch_times_seq"),
        helper.make_node("Unsqueeze", ["rows_total", "ax0"], ["rows1"],
                         name="rows1"),
        const_node("c_w", "width", [8]),
        helper.make_node("Concat", ["rows1", "width"], ["flat_shape"],
                         name="flat_shape", axis=0),
        helper.make_node("Reshape", ["y", "flat_shape"], ["flat"],
                         name="flatten"),
        helper.make_node("Unsqueeze", ["batch", "ax0"], ["batch1"],
                         name="batch1"),
        helper.make_node("Concat", ["batch1", "one_list", "width"],
                         ["cls_shape"], name="cls_shape", axis=0),
        helper.make_node("Expand", ["cls", "cls_shape"], ["cls_out"],
                         name="expand_cls"),
    ]
    inits = [weight("table", [16, 8]), weight("cls", [1, 1, 8]),
             const("one_list", [1])]
    return model(nodes, [vi("x", ["batch", "seq", 8])],
                 [vi("flat", [None, 8]), vi("cls_out", ["batch", 1, 8])], 17,
                 inits, "dynamic_shapes")


def resize_head():
    """A segmentation head's upsampling, as PyTorch exports
    F.interpolate(y, size=x.shape[-2:], mode="bilinear") over y [batch, 4,
    3, 3] and x [batch, 2, 7, 6]: sizes = Concat(Shape(y)[0:2],
    Shape(x)[2:4]), the batch dynamic; and a nearest Resize by constant
    scales."""
    nodes = [
        helper.make_node("Shape", ["y"], ["yshape"], name="yshape"),
        const_node("c_s0", "s0", [0]),
        const_node("c_s2", "s2", [2]),
        const_node("c_s4", "s4", [4]),
        helper.make_node("Slice", ["yshape", "s0", "s2"], ["nc"], name="nc"),
        helper.make_node("Shape", ["x"], ["xshape"], name="xshape"),
        helper.make_node("Slice", ["xshape", "s2", "s4"], ["hw"], name="hw"),
        helper.make_node("Concat", ["nc", "hw"], ["sizes"], name="sizes",
                         axis=0),
        helper.make_node("Resize", ["y", "", "", "sizes"], ["up"],
                         name="upsample", mode="linear",
                         coordinate_transformation_mode="pytorch_half_pixel"),
        helper.make_node("Resize", ["y", "", "scales"], ["near"],
                         name="nearest", mode="nearest"),
    ]
    inits = [const("scales", [1, 1, 2, 1.5], np.float32)]
    return model(nodes,
                 [vi("y", ["batch", 4, 3, 3]), vi("x", ["batch", 2, 7, 6])],
                 [vi("up", ["batch", 4, 7, 6]), vi("near", ["batch", 4, 6, 4])], 13,
                 inits, "resize_head")


def _resize_error(name, inputs, inits, **attrs):
    """A Resize of x [1, 2, 3, 3] the importer refuses: `inputs` after x
    ('' for one left out), constant `inits` (name, values, dtype)."""
    nodes = [helper.make_node("Resize", ["x"] + inputs, ["y"], name="up",
                              **attrs)]
    return model(nodes, [vi("x", [1, 2, 3, 3])], [vi("y", list("nchw"))], 13,
                 [const(n, v, t) for n, v, t in inits], name)


F32, I64 = np.float32, np.int64
RESIZE_ERRORS = {
    # scales and sizes both given
    "resize_both": (["", "scales", "sizes"],
                    [("scales", [1, 1, 2, 2], F32),
                     ("sizes", [1, 2, 6, 6], I64)], {}),
    "resize_scales_count": (["", "scales"], [("scales", [2, 2], F32)], {}),
    "resize_sizes_count": (["", "", "sizes"], [("sizes", [6, 6], I64)], {}),
    "resize_sizes_float": (["", "", "sizes"],
                           [("sizes", [1, 2, 6, 6], F32)], {}),
    "resize_sizes_negative": (["", "", "sizes"],
                              [("sizes", [1, 2, -6, 6], I64)], {}),
    "resize_sizes_zero": (["", "", "sizes"], [("sizes", [1, 2, 0, 6], I64)],
                          {}),
    "resize_roi_count": (["roi", "scales"],
                         [("roi", [0, 1], F32),
                          ("scales", [1, 1, 2, 2], F32)],
                         {"coordinate_transformation_mode":
                          "tf_crop_and_resize", "mode": "linear"}),
}


def window_mask():
    """What Swin's export computes around its windows, on x [batch, 4, 6, 8]:
    pads to a multiple of the window (4) from Mod of the shape, through
    PyTorch's pad chain (ConstantOfShape, Reshape to [-1, 2], a Slice with
    step -1, Transpose, Reshape, Cast), one of them all zeros; a float mask
    written by ScatterND; batch % 3 at run time; and an Add to a Reshape by
    a shape computed from the batch (batch / 1), which ONNX cannot type."""
    def pad_chain(prefix, size_input, out, pad_input):
        nodes = [
            helper.make_node("Gather", ["shp", size_input], [prefix + "dim"],
                             name=prefix + "dim", axis=0),
            helper.make_node("Mod", [prefix + "dim", "window"],
                             [prefix + "rem"], name=prefix + "rem"),
            helper.make_node("Sub", ["window", prefix + "rem"],
                             [prefix + "gap"], name=prefix + "gap"),
            helper.make_node("Mod", [prefix + "gap", "window"],
                             [prefix + "pad"], name=prefix + "pad"),
            helper.make_node("Unsqueeze", [prefix + "pad", "ax0"],
                             [prefix + "pad1"], name=prefix + "pad1"),
            helper.make_node("ConstantOfShape", ["six"], [prefix + "zeros"],
                             name=prefix + "zeros",
                             value=numpy_helper.from_array(
                                 np.array([0], dtype=np.int64))),
            # [0, 0, pad, 0] then the zeros: (begin, end) pairs, last
            # axis first, as PyTorch's F.pad lists them.
            helper.make_node("Concat", ["zero1", "zero1", prefix + "pad1",
                                        "zero1", prefix + "zeros"],
                             [prefix + "flat"], name=prefix + "flat", axis=0),
            helper.make_node("Reshape", [prefix + "flat", "pairs"],
                             [prefix + "pairs"], name=prefix + "pairs"),
            helper.make_node("Slice", [prefix + "pairs", "minus1", "lowest",
                                       "zero1", "minus1"],
                             [prefix + "reversed"], name=prefix + "reversed"),
            helper.make_node("Transpose", [prefix + "reversed"],
                             [prefix + "t"], name=prefix + "t", perm=[1, 0]),
            helper.make_node("Reshape", [prefix + "t", "minus1"],
                             [prefix + "onnx_pads"], name=prefix + "onnx_pads"),
            helper.make_node("Cast", [prefix + "onnx_pads"],
                             [prefix + "pads"], name=prefix + "pads",
                             to=TensorProto.INT64),
            helper.make_node("Pad", [pad_input, prefix + "pads"], [out],
                             name=prefix + "pad_op"),
        ]
        return nodes

    nodes = [helper.make_node("Shape", ["x"], ["shp"], name="shape")]
    # W = 6 pads by 2 (on axis 2); H = 4 by 0, the identity.
    nodes += pad_chain("w_", "two", "padded", "x")
    nodes += pad_chain("h_", "one", "padded_h", "padded")
    nodes += [
        helper.make_node("ConstantOfShape", ["mask_shape"], ["mask0"],
                         name="mask_zeros",
                         value=numpy_helper.from_array(
                             np.array([0], dtype=np.float32))),
        helper.make_node("ScatterND", ["mask0", "rows", "row_values"],
                         ["mask"], name="mask"),
        helper.make_node("Gather", ["shp", "zero"], ["batch"], name="batch",
                         axis=0),
        helper.make_node("Mod", ["batch", "three"], ["batch_mod"],
                         name="batch_mod"),
        helper.make_node("Div", ["batch", "one"], ["groups"], name="groups"),
        helper.make_node("Unsqueeze", ["groups", "ax0"], ["groups1"],
                         name="groups1"),
        helper.make_node("Concat", ["groups1", "four", "forty_eight"],
                         ["grouped_shape"], name="grouped_shape", axis=0),
        helper.make_node("Reshape", ["x", "grouped_shape"], ["grouped"],
                         name="grouped"),
        helper.make_node("Add", ["grouped", "bias"], ["biased"],
                         name="biased"),
        helper.make_node("Relu", ["biased"], ["out"], name="out"),
    ]
    inits = [const("window", 4), const("zero", 0), const("one", 1),
             const("two", 2), const("three", 3), const("ax0", [0]),
             const("zero1", [0]), const("six", [4]), const("pairs", [-1, 2]),
             const("minus1", [-1]), const("lowest", [-(2**63) + 1]),
             const("mask_shape", [4, 8]), const("rows", [[1], [3]]),
             const("four", [4]), const("forty_eight", [48]),
             numpy_helper.from_array(np.ones((2, 8), np.float32),
                                     "row_values"),
             weight("bias", [1, 4, 48])]
    return model(nodes, [vi("x", ["batch", 4, 6, 8])],
                 [vi("padded_h", ["batch", 4, 8, 8]), vi("mask", [4, 8]),
                  vi("batch_mod", [], TensorProto.INT64),
                  vi("out", ["batch", 4, 48])], 17, inits,
                 "window_mask")


def untyped_layers():
    """Layers after x.reshape(batch * 2, 2, 8) (multi-head attention's
    q.reshape(len, batch * heads, dim) in ViT's export), which ONNX 1.12's
    shape inference leaves untyped: a Transpose, a batched MatMul, a
    ReduceMean, a Gather and a Gemm, each behind a Relu so that no graph
    output types it."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shp"], name="shape"),
        helper.make_node("Gather", ["shp", "zero"], ["batch"], name="batch",
                         axis=0),
        helper.make_node("Mul", ["batch", "two"], ["rows"], name="rows"),
        helper.make_node("Unsqueeze", ["rows", "ax0"], ["rows1"],
                         name="rows1"),
        helper.make_node("Concat", ["rows1", "two1", "eight"], ["target"],
                         name="target", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["r"], name="r"),
        helper.make_node("Transpose", ["r"], ["t"], name="t", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["r", "t"], ["m"], name="m"),
        helper.make_node("ReduceMean", ["m"], ["mean"], name="mean",
                         axes=[2], keepdims=1),
        helper.make_node("Gather", ["r", "zero"], ["first"], name="first",
                         axis=1),
        helper.make_node("Gemm", ["first", "w"], ["g"], name="g"),
        helper.make_node("Relu", ["mean"], ["mean_out"], name="mean_out"),
        helper.make_node("Relu", ["g"], ["g_out"], name="g_out"),
    ]
    inits = [const("zero", 0), const("two", 2), const("ax0", [0]),
             const("two1", [2]), const("eight", [8]), weight("w", [8, 5])]
    return model(nodes, [vi("x", ["batch", 4, 8])],
                 [vi("mean_out", [None, 2, 1]), vi("g_out", [None, 5])], 13,
                 inits, "untyped_layers")


def reshape_overflow():
    """A Reshape of the known shape of x to a shape whose product passes
    int64 (a fuzzer's find: the constant folding multiplied it out)."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shp"], name="shape1"),
        const_node("const_to", "to", [216172782113783807, 255]),
        helper.make_node("Reshape", ["shp", "to"], ["y"], name="reshape1"),
    ]
    return model(nodes, [vi("x", [2, 4, 3, 3])], [vi("y", [None, None], INT64)],
                 13, [], "reshape_overflow")


def computed_bounds():
    """Inputs that only fail at run time: a Reshape to the shape input `s`,
    a Range from `start` to `limit`, and an Add of two [batch, seq, 4]
    inputs."""
    nodes = [
        helper.make_node("Reshape", ["x", "s"], ["reshaped"],
                         name="reshape_to_s"),
        const_node("c1", "step", 1),
        helper.make_node("Range", ["start", "limit", "step"], ["range"],
                         name="range"),
        helper.make_node("Add", ["a", "b"], ["sum"], name="add_ab"),
    ]
    return model(nodes,
                 [vi("x", [2, 6]), vi("s", [2], INT64), vi("start", [], INT64),
                  vi("limit", [], INT64), vi("a", ["batch", "seq", 4]),
                  vi("b", ["batch", "seq", 4])],
                 [vi("reshaped", [None, None]), vi("range", [None], INT64),
                  vi("sum", ["batch", "seq", 4])], 17, [], "computed_bounds")


def matmul_gather():
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["emb"], name="embed",
                         axis=0),                                 # [N,5,16]
        helper.make_node("ReduceMean", ["emb"], ["pooled"], name="mean1",
                         axes=[1], keepdims=0),                   # [N,16]
        helper.make_node("MatMul", ["pooled", "proj_W"], ["mm"],
                         name="matmul1"),                         # [N,8]
        helper.make_node("Add", ["mm", "proj_B"], ["out"], name="add_bias"),
        helper.make_node("MatMul", ["p", "q"], ["bmm"],
                         name="batched_matmul"),                  # [2,3,5]
    ]
    inits = [weight("table", [100, 16]), weight("proj_W", [16, 8]),
             weight("proj_B", [8])]
    return model(nodes,
                 [vi("ids", ["N", 5], INT64), vi("p", [2, 3, 4]),
                  vi("q", [2, 4, 5])],
                 [vi("out", ["N", 8]), vi("bmm", [2, 3, 5])], 13, inits,
                 "matmul_gather")


def unsupported_op():
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu1"),
        helper.make_node("Hardmax", ["r"], ["y"], name="hm1"),
    ]
    return model(nodes, [vi("x", [2, 5])], [vi("y", [2, 5])], 13, [],
                 "unsupported_op")


def rearrange_norm():
    """Super-resolution's pixel shuffle and GroupNorm, as PyTorch exports
    them, on x [batch, 8, 4, 6]: DepthToSpace (DCR and CRD), SpaceToDepth,
    InstanceNormalization by weights, and GroupNorm(2 groups): a Reshape to
    [batch, 2, -1], an InstanceNormalization by Constant ones and zeros,
    a Reshape back and the affine Mul and Add."""
    nodes = [
        helper.make_node("DepthToSpace", ["x"], ["dcr"], name="dcr",
                         blocksize=2),
        helper.make_node("DepthToSpace", ["x"], ["crd"], name="crd",
                         blocksize=2, mode="CRD"),
        helper.make_node("SpaceToDepth", ["dcr"], ["back"], name="back",
                         blocksize=2),
        helper.make_node("InstanceNormalization", ["back", "scale", "bias"],
                         ["inorm"], name="inorm", epsilon=1e-3),
        helper.make_node("Reshape", ["x", "grouped"], ["xg"], name="xg"),
        const_node("c_ones", "ones", [1.0, 1.0], np.float32),
        const_node("c_zeros", "zeros", [0.0, 0.0], np.float32),
        helper.make_node("InstanceNormalization", ["xg", "ones", "zeros"],
                         ["gnorm"], name="gnorm"),
        helper.make_node("Shape", ["x"], ["xshape"], name="xshape"),
        helper.make_node("Reshape", ["gnorm", "xshape"], ["gback"],
                         name="gback"),
        helper.make_node("Mul", ["gback", "gamma"], ["gscaled"],
                         name="gscaled"),
        helper.make_node("Add", ["gscaled", "beta"], ["group"], name="group"),
    ]
    inits = [weight("scale", [8]), weight("bias", [8]),
             weight("gamma", [8, 1, 1]), weight("beta", [8, 1, 1]),
             const("grouped", [0, 2, -1])]
    return model(nodes, [vi("x", ["batch", 8, 4, 6])],
                 [vi("crd", ["batch", 2, 8, 12]),
                  vi("inorm", ["batch", 8, 4, 6]),
                  vi("group", ["batch", 8, 4, 6])], 13, inits,
                 "rearrange_norm")


def recurrent():
    """LSTM, GRU and RNN on x [3 steps, 2, 4]: an LSTM with initial states
    and peepholes (Y, Y_h, Y_c; unrolled); a bidirectional GRU with
    linear_before_reset, no initial state; a batch-first (layout 1) GRU
    without linear_before_reset; a reverse RNN with Relu (unrolled); a
    bidirectional LSTM with initial states (Y, Y_h)."""
    nodes = [
        helper.make_node("LSTM", ["x", "lw", "lr", "lb", "", "lh0", "lc0",
                                  "lp"], ["lstm_y", "lstm_h", "lstm_c"],
                         name="lstm", hidden_size=5),
        helper.make_node("GRU", ["x", "gw", "gr", "gb"], ["gru_y", "gru_h"],
                         name="gru", hidden_size=3, direction="bidirectional",
                         linear_before_reset=1),
        helper.make_node("Transpose", ["x"], ["xb"], name="xb",
                         perm=[1, 0, 2]),
        helper.make_node("GRU", ["xb", "bw", "br", "bb"], ["batch_y"],
                         name="gru_batch_first", hidden_size=3, layout=1),
        helper.make_node("RNN", ["x", "rw", "rr", "rb"], ["rnn_y"],
                         name="rnn", hidden_size=5, direction="reverse",
                         activations=["Relu"]),
        helper.make_node("LSTM", ["x", "pw", "pr", "pb", "", "ph0", "pc0"],
                         ["plain_y", "plain_h"], name="lstm_plain",
                         hidden_size=5, direction="bidirectional"),
    ]
    inits = [weight("lw", [1, 20, 4], 0.5), weight("lr", [1, 20, 5], 0.5),
             weight("lb", [1, 40], 0.5), weight("lh0", [1, 2, 5], 0.5),
             weight("lc0", [1, 2, 5], 0.5), weight("lp", [1, 15], 0.5),
             weight("gw", [2, 9, 4], 0.5), weight("gr", [2, 9, 3], 0.5),
             weight("gb", [2, 18], 0.5),
             weight("bw", [1, 9, 4], 0.5), weight("br", [1, 9, 3], 0.5),
             weight("bb", [1, 18], 0.5),
             weight("rw", [1, 5, 4], 0.5), weight("rr", [1, 5, 5], 0.5),
             weight("rb", [1, 10], 0.5),
             weight("pw", [2, 20, 4], 0.5), weight("pr", [2, 20, 5], 0.5),
             weight("pb", [2, 40], 0.5), weight("ph0", [2, 2, 5], 0.5),
             weight("pc0", [2, 2, 5], 0.5)]
    return model(nodes, [vi("x", [3, 2, 4])],
                 [vi("lstm_y", [3, 1, 2, 5]), vi("lstm_h", [1, 2, 5]),
                  vi("lstm_c", [1, 2, 5]), vi("gru_y", [3, 2, 2, 3]),
                  vi("gru_h", [2, 2, 3]), vi("batch_y", [2, 3, 1, 3]),
                  vi("rnn_y", [3, 1, 2, 5]), vi("plain_y", [3, 2, 2, 5]),
                  vi("plain_h", [2, 2, 5])], 14, inits, "recurrent")


def hard_swish():
    """HardSwish, an operator since opset 14 (PyTorch 1.13's default export
    opset): MobileNetV3 exported there has it instead of HardSigmoid and
    Mul."""
    nodes = [helper.make_node("HardSwish", ["x"], ["y"], name="hswish")]
    return model(nodes, [vi("x", ["batch", 3, 4])], [vi("y", ["batch", 3, 4])],
                 14, (), "hard_swish")


def reduce_forms():
    """The reductions written around a ReduceSum, on x [batch, 3, 4]: L2
    (F.normalize's), L1, the sum of squares, the log of the sum of |x|,
    Sum of three tensors, and log-sum-exp (of 200 x too, where exp alone
    overflows)."""
    nodes = [
        helper.make_node("ReduceL2", ["x"], ["l2"], name="l2", axes=[2],
                         keepdims=0),
        helper.make_node("ReduceL1", ["x"], ["l1"], name="l1", axes=[1]),
        helper.make_node("ReduceSumSquare", ["x"], ["sq"], name="sq",
                         axes=[-1]),
        helper.make_node("Abs", ["x"], ["ax"], name="ax"),
        helper.make_node("ReduceLogSum", ["ax"], ["ls"], name="ls",
                         axes=[1, 2], keepdims=0),
        helper.make_node("Sum", ["x", "ax", "x"], ["sum"], name="sum"),
        helper.make_node("ReduceLogSumExp", ["x"], ["lse"], name="lse",
                         axes=[1], keepdims=0),
        const_node("c_big", "big", 200.0, np.float32),
        helper.make_node("Mul", ["x", "big"], ["xbig"], name="xbig"),
        helper.make_node("ReduceLogSumExp", ["xbig"], ["lse_big"],
                         name="lse_big", axes=[1, 2]),
    ]
    return model(nodes, [vi("x", ["batch", 3, 4])],
                 [vi("l2", ["batch", 3]), vi("l1", ["batch", 1, 4]),
                  vi("sq", ["batch", 3, 1]), vi("ls", ["batch"]),
                  vi("sum", ["batch", 3, 4]), vi("lse", ["batch", 4]),
                  vi("lse_big", ["batch", 1, 1])], 13, (), "reduce_forms")


def _rearrange_error(name, op, **attrs):
    """A DepthToSpace or SpaceToDepth of x [1, 8, 3, 3] the importer
    refuses."""
    nodes = [helper.make_node(op, ["x"], ["y"], name="move", **attrs)]
    return model(nodes, [vi("x", [1, 8, 3, 3])], [vi("y", list("nchw"))], 13,
                 (), name)


def _recurrent_error(name, steps, lens=None, **attrs):
    """An RNN of x [steps, 2, 4] (hidden size 3 unless `attrs` say) the
    importer refuses; `lens`: sequence_lens as a graph input ("input") or
    these constant values."""
    attrs.setdefault("hidden_size", 3)
    inputs, inits = [vi("x", [steps, 2, 4])], [weight("w", [1, 3, 4]),
                                                weight("r", [1, 3, 3])]
    names = ["x", "w", "r"]
    if lens is not None:
        names += ["", "lens"]
        if lens == "input":
            inputs.append(vi("lens", [2], onnx.TensorProto.INT32))
        else:
            inits.append(const("lens", lens, np.int32))
    nodes = [helper.make_node("RNN", names, ["y"], name="cell", **attrs)]
    return model(nodes, inputs, [vi("y", list("tdnh"))], 14, inits, name)


RECURRENT_ERRORS = {
    "recurrent_affine": (3, {"activations": ["Affine"]}),
    "recurrent_clip": (3, {"clip": 1.0}),
    "recurrent_dynamic": ("steps", {}),
    "recurrent_hidden": (3, {"hidden_size": 0}),
    "recurrent_direction": (3, {"direction": "sideways"}),
    "recurrent_weights": (3, {"hidden_size": 4}),
    "recurrent_lens_input": (3, {"lens": "input"}),
    "recurrent_lens_short": (3, {"lens": [3, 2]}),
}


def instance_norm_scale():
    """An InstanceNormalization of 8 channels with a scale of 4."""
    nodes = [helper.make_node("InstanceNormalization", ["x", "s", "b"],
                              ["y"], name="norm")]
    return model(nodes, [vi("x", [1, 8, 3, 3])], [vi("y", [1, 8, 3, 3])], 13,
                 [weight("s", [4]), weight("b", [8])], "instance_norm_scale")


def reduce_log_sum_exp_axis():
    """A ReduceLogSumExp of x [2, 3] over axis 5."""
    nodes = [helper.make_node("ReduceLogSumExp", ["x"], ["y"], name="lse",
                              axes=[5])]
    return model(nodes, [vi("x", [2, 3])], [vi("y", ["a", "b"])], 13, (),
                 "reduce_log_sum_exp_axis")


REARRANGE_ERRORS = {
    "depth_to_space_mode": ("DepthToSpace", {"blocksize": 2,
                                             "mode": "RCD"}),
    "depth_to_space_channels": ("DepthToSpace", {"blocksize": 3}),
    "space_to_depth_size": ("SpaceToDepth", {"blocksize": 2}),
}


def custom_domain():
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu1"),
        helper.make_node("FancyOp", ["r"], ["y"], name="custom1",
                         domain="com.example", flavor="spicy"),
    ]
    return model(nodes, [vi("x", [2, 5])], [vi("y", [2, 5])], 13, [],
                 "custom_domain", extra_opsets=[("com.example", 1)])


def _relu_model(opset):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu1")]
    return model(nodes, [vi("x", [2, 5])], [vi("y", [2, 5])], opset, [],
                 "relu_opset%d" % opset)


def opset_too_new():
    # Newer than the opsets the importer supports. onnx 1.12 itself only
    # knows opsets up to 17, but its checker still accepts this model.
    return _relu_model(18)


def opset_legacy():
    # Opset 6: read with the legacy attribute forms (imports).
    return _relu_model(6)


def opset_zero():
    # Below every opset the importer supports (the checker would refuse it,
    # so it is built from an opset-6 model without checking).
    m = _relu_model(6)
    m.opset_import[0].version = 0
    return m


def opset_missing():
    # No opset_import for the default domain at all.
    m = _relu_model(13)
    del m.opset_import[:]
    return m


def shape_inference_error():
    nodes = [helper.make_node("Add", ["a", "b"], ["y"], name="add_bad")]
    m = model(nodes, [vi("a", [2, 3]), vi("b", [4, 5])],
              [vi("y", ["d0", "d1"])], 13, [], "shape_inference_error")
    try:
        onnx.shape_inference.infer_shapes(m, strict_mode=True)
    except Exception:  # expected: incompatible broadcast
        return m
    raise RuntimeError("shape_inference_error: strict inference did not fail")


# --------------------------------------------------------------------------
# Writers for models that need files beside them or are not ModelProtos
# --------------------------------------------------------------------------

def _save(m, out):
    onnx.save_model(m, out)


def _write_bytes(data):
    def writer(out):
        with open(out, "wb") as f:
            f.write(data() if callable(data) else data)
    return writer


def _write_external(out, keep_data=True):
    m = conv_relu()
    m.graph.name = "external_data"
    data_name = os.path.basename(out) + ".data"
    data_path = os.path.join(os.path.dirname(os.path.abspath(out)), data_name)
    if os.path.exists(data_path):
        os.remove(data_path)  # save_model appends to an existing file
    onnx.save_model(m, out, save_as_external_data=True,
                    all_tensors_to_one_file=True, location=data_name,
                    size_threshold=0)
    if keep_data:
        onnx.checker.check_model(out)
    else:
        os.remove(data_path)


def _truncated_bytes():
    data = conv_relu().SerializeToString()
    return data[: int(len(data) * 0.6)]


def _garbage_bytes():
    return np.random.default_rng(1234).integers(
        0, 256, 4096, dtype=np.uint8).tobytes()


def _no_graph_bytes():
    m = onnx.ModelProto()
    m.ir_version = 7
    m.producer_name = "heterps-make_model"
    m.opset_import.append(helper.make_opsetid("", 13))
    return m.SerializeToString()


def _proto(builder):
    return lambda out: _save(builder(), out)


MODELS = {
    "conv_relu": _proto(conv_relu),
    "conv_autopad": _proto(conv_autopad),
    "conv1d": _proto(conv1d),
    "conv_transpose": _proto(conv_transpose),
    "resnet_block": _proto(resnet_block),
    "multi_io": _proto(multi_io),
    "broadcast": _proto(broadcast),
    "activations": _proto(activations),
    "dropout_training": _proto(dropout_training),
    "dropout_runtime_ratio_training": _proto(dropout_runtime_ratio_training),
    "clip_opset6": _proto(clip_opset6),
    "pools": _proto(pools),
    "resize_head": _proto(resize_head),
    "shapes_opset13": _proto(shapes_opset13),
    "shapes_opset9": _proto(shapes_opset9),
    "shape_folding": _proto(shape_folding),
    "matmul_gather": _proto(matmul_gather),
    "dynamic_shapes": _proto(dynamic_shapes),
    "computed_bounds": _proto(computed_bounds),
    "reshape_overflow": _proto(reshape_overflow),
    "window_mask": _proto(window_mask),
    "rearrange_norm": _proto(rearrange_norm),
    "recurrent": _proto(recurrent),
    "hard_swish": _proto(hard_swish),
    "reduce_forms": _proto(reduce_forms),
    "instance_norm_scale": _proto(instance_norm_scale),
    "reduce_log_sum_exp_axis": _proto(reduce_log_sum_exp_axis),
    "untyped_layers": _proto(untyped_layers),
    "external_data": lambda out: _write_external(out, keep_data=True),
    "external_data_missing": lambda out: _write_external(out, keep_data=False),
    "unsupported_op": _proto(unsupported_op),
    "custom_domain": _proto(custom_domain),
    "opset_too_new": _proto(opset_too_new),
    "opset_legacy": _proto(opset_legacy),
    "opset_zero": _proto(opset_zero),
    "opset_missing": _proto(opset_missing),
    "shape_inference_error": _proto(shape_inference_error),
    "truncated": _write_bytes(_truncated_bytes),
    "garbage": _write_bytes(_garbage_bytes),
    "text_file": _write_bytes(b"this is not an onnx model\n"),
    "empty": _write_bytes(b""),
    "no_graph": _write_bytes(_no_graph_bytes),
}
MODELS.update({
    name: _proto(lambda name=name, spec=spec: _resize_error(name, spec[0],
                                                            spec[1],
                                                            **spec[2]))
    for name, spec in RESIZE_ERRORS.items()})

MODELS.update({
    name: _proto(lambda name=name, spec=spec: _rearrange_error(name, spec[0],
                                                               **spec[1]))
    for name, spec in REARRANGE_ERRORS.items()})

MODELS.update({
    name: _proto(lambda name=name, spec=spec: _recurrent_error(name, spec[0],
                                                               **spec[1]))
    for name, spec in RECURRENT_ERRORS.items()})


def write(name, out):
    _reseed()  # each model is deterministic on its own
    MODELS[name](out)


def main(argv):
    if len(argv) == 2 and argv[1] == "--list":
        print("\n".join(MODELS))
        return 0
    if len(argv) == 3 and argv[1] == "--all":
        os.makedirs(argv[2], exist_ok=True)
        for name in MODELS:
            write(name, os.path.join(argv[2], name + ".onnx"))
        return 0
    if len(argv) == 3 and not argv[1].startswith("-"):
        if argv[1] not in MODELS:
            print("unknown model '%s'; try --list" % argv[1], file=sys.stderr)
            return 2
        write(argv[1], argv[2])
        return 0
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
