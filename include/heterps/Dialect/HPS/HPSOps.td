//===- HPSOps.td - hps layer ops ---------------------------*- tablegen -*-===//
//
// One op per ONNX operator. Operator inputs that ONNX passes as tensors and
// that are usually constants (Reshape's shape, Slice's starts, ...) are
// attributes here; the importer folds them. Where the model computes them
// at run time (from a dynamic batch or sequence length) the `dynamic_` forms
// take them as operands. Attributes are explicit: the importer fills every
// ONNX default and resolves `auto_pad` to pads.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_DIALECT_HPS_HPSOPS_TD
#define HETERPS_DIALECT_HPS_HPSOPS_TD

include "heterps/Dialect/HPS/HPSAttrs.td"
include "heterps/Dialect/HPS/HPSInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Base classes
//===----------------------------------------------------------------------===//

// `kind` is the op's LayerKind case; `overrides` lists LayerOpInterface
// methods the op implements itself instead of taking the default.
class HPS_Op<string mnemonic, string kind, list<Trait> traits = [],
             list<string> overrides = []>
    : Op<HPS_Dialect, mnemonic, !listconcat([Pure,
          DeclareOpInterfaceMethods<HPS_LayerOpInterface, overrides>],
          traits)> {
  let extraClassDeclaration =
      "static constexpr ::mlir::hps::LayerKind kLayerKind = "
      "::mlir::hps::LayerKind::" # kind # ";";
}

class HPS_UnaryOp<string mnemonic, string kind, string onnxName,
                  dag attrs = (ins)>
    : HPS_Op<mnemonic, kind, [SameOperandsAndResultType]> {
  let summary = "ONNX " # onnxName # ", applied element-wise";
  let arguments = !con((ins AnyTensor:$input), attrs);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

class HPS_BinaryOp<string mnemonic, string onnxName,
                   list<Trait> traits = [SameOperandsAndResultElementType]>
    : HPS_Op<mnemonic, "eltwise", traits> {
  let summary = "ONNX " # onnxName # " with multidirectional broadcasting";
  let arguments = (ins AnyTensor:$lhs, AnyTensor:$rhs);
  let results = (outs AnyTensor:$output);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

def HPS_WeightOp : HPS_Op<"weight", "constant"> {
  let summary = "A parameter tensor, referenced by name";
  let description = [{
    Refers to the initializer (or `Constant` node output) called `name` in the
    ONNX model named by the module's `hps.source` attribute. The data is
    never copied into the IR; the runtime loads it by name.

    ```mlir
    %w = hps.weight "conv1.weight" : tensor<64x3x7x7xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs AnyStaticShapeTensor:$output);
  let assemblyFormat = "$name attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def HPS_ConstantOp : HPS_Op<"constant", "constant",
                            [ConstantLike, AllTypesMatch<["value", "output"]>]> {
  let summary = "A small constant tensor held in the IR";
  let description = [{
    Holds index-like constants (shapes, axes) and small tensors of the source
    model that are not parameters.
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs AnyStaticShapeTensor:$output);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def HPS_ShapeOp : HPS_Op<"shape", "shape"> {
  let summary = "ONNX Shape: the dimensions [start, end) of the input";
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$start, I64Attr:$end);
  let results = (outs 1DTensorOf<[I64]>:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Convolution and dense layers
//===----------------------------------------------------------------------===//

def HPS_ConvOp : HPS_Op<"conv", "conv", [], ["getFlops"]> {
  let summary = "ONNX Conv (1-D, 2-D or 3-D, grouped, dilated)";
  let description = [{
    `input` is N x C x D1 x ... x Dn, `weight` is M x C/group x k1 x ... x kn
    and the optional `bias` has M elements. `pads` holds the n begin pads
    then the n end pads; `auto_pad` of the source model is already resolved.
  }];
  let arguments = (ins AnyTensor:$input, AnyTensor:$weight,
                       Optional<AnyTensor>:$bias,
                       DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$dilations,
                       DenseI64ArrayAttr:$pads,
                       I64Attr:$group);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HPS_ConvTransposeOp : HPS_Op<"conv_transpose", "conv", [], ["getFlops"]> {
  let summary = "ONNX ConvTranspose (1-D, 2-D or 3-D, grouped, dilated)";
  let description = [{
    `weight` is C x M/group x k1 x ... x kn. Output size per spatial axis:
    `stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - pad_begin
    - pad_end`. An ONNX `output_shape` is resolved into `pads` on import.
  }];
  let arguments = (ins AnyTensor:$input, AnyTensor:$weight,
                       Optional<AnyTensor>:$bias,
                       DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$dilations,
                       DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$output_padding,
                       I64Attr:$group);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HPS_GemmOp : HPS_Op<"gemm", "fc", [], ["getFlops"]> {
  let summary = "ONNX Gemm: alpha * op(A) * op(B) + beta * C";
  let arguments = (ins AnyTensor:$a, AnyTensor:$b, Optional<AnyTensor>:$c,
                       F32Attr:$alpha, F32Attr:$beta,
                       BoolAttr:$trans_a, BoolAttr:$trans_b);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = [{
    $a `,` $b (`,` $c^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HPS_MatMulOp : HPS_Op<"matmul", "fc", [SameOperandsAndResultElementType],
                          ["getFlops", "getLayerKind"]> {
  let summary = "ONNX MatMul (numpy semantics, batched and broadcast)";
  let description = [{
    The layer kind is `fc` when `rhs` is a parameter (`hps.weight`) and
    `matmul` when both operands are activations.
  }];
  let arguments = (ins AnyTensor:$lhs, AnyTensor:$rhs);
  let results = (outs AnyTensor:$output);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Element-wise arithmetic and activations
//===----------------------------------------------------------------------===//

def HPS_AddOp : HPS_BinaryOp<"add", "Add">;
def HPS_SubOp : HPS_BinaryOp<"sub", "Sub">;
def HPS_MulOp : HPS_BinaryOp<"mul", "Mul">;
def HPS_DivOp : HPS_BinaryOp<"div", "Div">;

// The exponent may have another element type than the base (ONNX Pow-12).
def HPS_PowOp : HPS_BinaryOp<"pow", "Pow", []>;
def HPS_MaxOp : HPS_BinaryOp<"max", "Max (two inputs)">;
def HPS_MinOp : HPS_BinaryOp<"min", "Min (two inputs)">;
def HPS_PReluOp : HPS_BinaryOp<"prelu", "PRelu (slope broadcast to the input)">;

def HPS_ReluOp : HPS_UnaryOp<"relu", "activation", "Relu">;
def HPS_SigmoidOp : HPS_UnaryOp<"sigmoid", "activation", "Sigmoid">;
def HPS_TanhOp : HPS_UnaryOp<"tanh", "activation", "Tanh">;
def HPS_LeakyReluOp : HPS_UnaryOp<"leaky_relu", "activation", "LeakyRelu",
                                  (ins F32Attr:$alpha)>;
def HPS_EluOp : HPS_UnaryOp<"elu", "activation", "Elu", (ins F32Attr:$alpha)>;
def HPS_SeluOp : HPS_UnaryOp<"selu", "activation", "Selu",
                             (ins F32Attr:$alpha, F32Attr:$gamma)>;
def HPS_ClipOp : HPS_UnaryOp<"clip", "activation", "Clip",
                             (ins OptionalAttr<F32Attr>:$min,
                                  OptionalAttr<F32Attr>:$max)> {
  let description = "A missing bound is unbounded.";
  let hasVerifier = 1;
}
def HPS_HardSigmoidOp : HPS_UnaryOp<"hard_sigmoid", "activation",
                                    "HardSigmoid",
                                    (ins F32Attr:$alpha, F32Attr:$beta)>;
// x * HardSigmoid(x) with alpha 1/6 and beta 1/2 (opset 14; earlier exports
// write the two ops, which the CPU backend fuses into this one).
def HPS_HardSwishOp : HPS_UnaryOp<"hard_swish", "activation", "HardSwish">;
def HPS_SoftplusOp : HPS_UnaryOp<"softplus", "activation", "Softplus">;
def HPS_SoftsignOp : HPS_UnaryOp<"softsign", "activation", "Softsign">;
def HPS_ErfOp : HPS_UnaryOp<"erf", "activation", "Erf">;
def HPS_AbsOp : HPS_UnaryOp<"abs", "eltwise", "Abs">;
def HPS_NegOp : HPS_UnaryOp<"neg", "eltwise", "Neg">;
def HPS_ExpOp : HPS_UnaryOp<"exp", "eltwise", "Exp">;
def HPS_LogOp : HPS_UnaryOp<"log", "eltwise", "Log">;
def HPS_SqrtOp : HPS_UnaryOp<"sqrt", "eltwise", "Sqrt">;
def HPS_ReciprocalOp : HPS_UnaryOp<"reciprocal", "eltwise", "Reciprocal">;
def HPS_FloorOp : HPS_UnaryOp<"floor", "eltwise", "Floor">;
def HPS_CeilOp : HPS_UnaryOp<"ceil", "eltwise", "Ceil">;
def HPS_IdentityOp : HPS_UnaryOp<"identity", "shape", "Identity">;
def HPS_DropoutOp : HPS_UnaryOp<"dropout", "dropout", "Dropout",
                                (ins F32Attr:$ratio)> {
  let description = [{
    Identity at inference; during training zeroes each element with
    probability `ratio` and scales the others by 1 / (1 - ratio).
  }];
  let hasVerifier = 1;
}

class HPS_SoftmaxBase<string mnemonic, string onnxName>
    : HPS_Op<mnemonic, "softmax", [SameOperandsAndResultType], ["getFlops"]> {
  let summary = "ONNX " # onnxName;
  let description = [{
    Normalises along `axis`. With `coerce_2d` (ONNX opsets before 13) the
    input is viewed as a 2-D matrix [d0 * ... * d(axis-1), d(axis) * ... ]
    and normalised along its second dimension.
  }];
  let arguments = (ins AnyTensor:$input, I64Attr:$axis, UnitAttr:$coerce_2d);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}
def HPS_SoftmaxOp : HPS_SoftmaxBase<"softmax", "Softmax">;
def HPS_LogSoftmaxOp : HPS_SoftmaxBase<"log_softmax", "LogSoftmax">;

//===----------------------------------------------------------------------===//
// Pooling and normalisation
//===----------------------------------------------------------------------===//

def HPS_MaxPoolOp : HPS_Op<"max_pool", "pool", [], ["getFlops"]> {
  let summary = "ONNX MaxPool";
  let arguments = (ins AnyTensor:$input,
                       DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$dilations,
                       DenseI64ArrayAttr:$pads,
                       BoolAttr:$ceil_mode);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def HPS_AveragePoolOp : HPS_Op<"average_pool", "pool", [], ["getFlops"]> {
  let summary = "ONNX AveragePool";
  let arguments = (ins AnyTensor:$input,
                       DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$pads,
                       BoolAttr:$ceil_mode,
                       BoolAttr:$count_include_pad);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

class HPS_GlobalPoolOp<string mnemonic, string onnxName>
    : HPS_Op<mnemonic, "pool", [], ["getFlops"]> {
  let summary = "ONNX " # onnxName # " over all spatial dimensions";
  let arguments = (ins AnyTensor:$input);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}
def HPS_GlobalAveragePoolOp
    : HPS_GlobalPoolOp<"global_average_pool", "GlobalAveragePool">;
def HPS_GlobalMaxPoolOp : HPS_GlobalPoolOp<"global_max_pool", "GlobalMaxPool">;

def HPS_BatchNormOp : HPS_Op<"batch_norm", "norm", [], ["getFlops"]> {
  let summary = "ONNX BatchNormalization (inference form)";
  let description = [{
    `scale`, `bias`, `mean` and `var` have one element per channel
    (dimension 1 of `input`). `momentum` is used when training updates the
    running statistics.
  }];
  let arguments = (ins AnyTensor:$input, AnyTensor:$scale, AnyTensor:$bias,
                       AnyTensor:$mean, AnyTensor:$var,
                       F32Attr:$epsilon, F32Attr:$momentum);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `,` $mean `,` $var attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HPS_LRNOp : HPS_Op<"lrn", "norm", [SameOperandsAndResultType],
                       ["getFlops"]> {
  let summary = "ONNX LRN: local response normalisation across channels";
  let arguments = (ins AnyTensor:$input, I64Attr:$size, F32Attr:$alpha,
                       F32Attr:$beta, F32Attr:$bias);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def HPS_LayerNormOp : HPS_Op<"layer_norm", "norm", [], ["getFlops"]> {
  let summary = "ONNX LayerNormalization over the dimensions from `axis` on";
  let description = [{
    `scale` and the optional `bias` broadcast to the normalised dimensions
    `input[axis:]`.
  }];
  let arguments = (ins AnyTensor:$input, AnyTensor:$scale,
                       Optional<AnyTensor>:$bias, I64Attr:$axis,
                       F32Attr:$epsilon);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = [{
    $input `,` $scale (`,` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Recurrent layers
//===----------------------------------------------------------------------===//

class HPS_RecurrentOp<string mnemonic, string onnxName, int gates>
    : HPS_Op<mnemonic, "fc", [], ["getFlops"]> {
  let summary = "ONNX " # onnxName # " over a whole sequence: its Y output";
  let description = [{
    `input` is [T, N, I] (sequence first), `weights` [D, G*H, I],
    `recurrence` [D, G*H, H] and `bias` [D, 2*G*H] (the input's biases,
    then the recurrence's), G the gates (LSTM 4, GRU 3, RNN 1) in ONNX's
    order; D is 2 for `direction` "bidirectional", else 1 ("forward" or
    "reverse"). `initial_state` is [D, N, H], or for LSTM the initial
    hidden states then the initial cell states, [2D, N, H]; zeros when
    absent. The result Y is [T, D, N, H]; the importer takes ONNX's Y_h
    from it and writes the forms this op does not have (peepholes, other
    activations, the cell states as an output) as ops, unrolled over the
    steps. The activations are ONNX's defaults.
  }];
  let arguments = (ins AnyTensor:$input, AnyTensor:$weights,
                       AnyTensor:$recurrence, AnyTensor:$bias,
                       Optional<AnyTensor>:$initial_state,
                       I64Attr:$hidden_size, StrAttr:$direction,
                       BoolAttr:$linear_before_reset);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = [{
    $input `,` $weights `,` $recurrence `,` $bias (`,` $initial_state^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = !strconcat(
      "static constexpr ::mlir::hps::LayerKind kLayerKind = "
      "::mlir::hps::LayerKind::fc;\n",
      "static constexpr int64_t kGates = ", !cast<string>(gates), ";");
}

def HPS_LSTMOp : HPS_RecurrentOp<"lstm", "LSTM", 4>;
def HPS_GRUOp : HPS_RecurrentOp<"gru", "GRU", 3>;
def HPS_RNNOp : HPS_RecurrentOp<"rnn", "RNN", 1>;

//===----------------------------------------------------------------------===//
// Shape manipulation and data movement
//===----------------------------------------------------------------------===//

def HPS_FlattenOp : HPS_Op<"flatten", "shape"> {
  let summary = "ONNX Flatten: a 2-D view split at `axis`";
  let arguments = (ins AnyTensor:$input, I64Attr:$axis);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def HPS_ReshapeOp : HPS_Op<"reshape", "shape"> {
  let summary = "ONNX Reshape with a constant target shape";
  let description = [{
    `shape` follows ONNX: -1 infers one dimension and, unless `allowzero`,
    0 copies the input dimension at the same index.
  }];
  let arguments = (ins AnyTensor:$input, DenseI64ArrayAttr:$shape,
                       BoolAttr:$allowzero);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def HPS_TransposeOp : HPS_Op<"transpose", "shape"> {
  let summary = "ONNX Transpose";
  let arguments = (ins AnyTensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def HPS_ConcatOp : HPS_Op<"concat", "shape",
                          [SameOperandsAndResultElementType]> {
  let summary = "ONNX Concat along `axis`";
  let arguments = (ins Variadic<AnyTensor>:$inputs, I64Attr:$axis);
  let results = (outs AnyTensor:$output);
  let assemblyFormat =
      "$inputs attr-dict `:` functional-type($inputs, results)";
  let hasVerifier = 1;
}

def HPS_SplitOp : HPS_Op<"split", "shape"> {
  let summary = "ONNX Split along `axis` into pieces of the given sizes";
  let arguments = (ins AnyTensor:$input, I64Attr:$axis,
                       DenseI64ArrayAttr:$split);
  let results = (outs Variadic<AnyTensor>:$outputs);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def HPS_SliceOp : HPS_Op<"slice", "shape"> {
  let summary = "ONNX Slice with constant starts, ends, axes and steps";
  let description = [{
    Negative `starts`/`ends` count from the end of the axis; they are
    clamped as in ONNX. `axes` are non-negative and distinct.
  }];
  let arguments = (ins AnyTensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$ends, DenseI64ArrayAttr:$axes,
                       DenseI64ArrayAttr:$steps);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def HPS_SqueezeOp : HPS_Op<"squeeze", "shape"> {
  let summary = "ONNX Squeeze: remove the size-1 dimensions `axes`";
  let arguments = (ins AnyTensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def HPS_UnsqueezeOp : HPS_Op<"unsqueeze", "shape"> {
  let summary = "ONNX Unsqueeze: insert size-1 dimensions at `axes` of the output";
  let arguments = (ins AnyTensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def HPS_ResizeOp : HPS_Op<"resize", "pool", [SameOperandsAndResultElementType]> {
  let summary = "ONNX Resize (and Upsample) with constant scales or sizes";
  let description = [{
    Without `sizes`, output dimension i is floor(input dimension i *
    `scales[i]`) and maps back to the input with that scale; with `sizes`
    (one per dimension; 0: the input's, a dynamic batch), it is `sizes[i]`
    and the scale is output / input, as in ONNX. An output index maps to
    an input coordinate by `coordinate_transformation_mode` ("half_pixel",
    "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
    "asymmetric", opset 11's "tf_half_pixel_for_nn", or
    "tf_crop_and_resize", which maps into `roi`: the
    normalised begins of every dimension, then the ends, and gives
    `extrapolation_value` outside the input). `mode` "nearest" rounds the
    coordinate by `nearest_mode` ("round_prefer_floor", "round_prefer_ceil",
    "floor", "ceil"); "linear" and "cubic" interpolate each dimension in
    turn (cubic with `cubic_coeff_a`; with `exclude_outside`, taps outside
    the input weigh 0 and the others are renormalised).
  }];
  let arguments = (ins AnyTensor:$input, DenseF32ArrayAttr:$scales,
                       DenseI64ArrayAttr:$sizes, DenseF32ArrayAttr:$roi,
                       StrAttr:$mode, StrAttr:$coordinate_transformation_mode,
                       StrAttr:$nearest_mode, F32Attr:$cubic_coeff_a,
                       BoolAttr:$exclude_outside, F32Attr:$extrapolation_value);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def HPS_PadOp : HPS_Op<"pad", "shape", [SameOperandsAndResultElementType]> {
  let summary = "ONNX Pad with constant pads";
  let description = [{
    `pads` holds the begin pads of every dimension, then the end pads;
    negative pads crop. `mode` is "constant", "reflect" or "edge".
  }];
  let arguments = (ins AnyTensor:$input, DenseI64ArrayAttr:$pads,
                       StrAttr:$mode, F32Attr:$value);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def HPS_GatherOp : HPS_Op<"gather", "shape", [], ["getLayerKind"]> {
  let summary = "ONNX Gather: rows of `data` selected by `indices` along `axis`";
  let description = [{
    The layer kind is `embedding` when `data` is a parameter (`hps.weight`)
    gathered along axis 0: an embedding lookup whose table the parameter
    server can serve sparsely.
  }];
  let arguments = (ins AnyTensor:$data, TensorOf<[I32, I64]>:$indices,
                       I64Attr:$axis);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = "$data `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class HPS_ReduceOp<string mnemonic, string onnxName>
    : HPS_Op<mnemonic, "reduce", [SameOperandsAndResultElementType],
             ["getFlops"]> {
  let summary = "ONNX " # onnxName # " over `axes` (all axes when empty)";
  let arguments = (ins AnyTensor:$input, DenseI64ArrayAttr:$axes,
                       BoolAttr:$keepdims);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}
def HPS_ReduceMeanOp : HPS_ReduceOp<"reduce_mean", "ReduceMean">;
def HPS_ReduceSumOp : HPS_ReduceOp<"reduce_sum", "ReduceSum">;
def HPS_ReduceMaxOp : HPS_ReduceOp<"reduce_max", "ReduceMax">;
def HPS_ReduceMinOp : HPS_ReduceOp<"reduce_min", "ReduceMin">;

class HPS_ArgOp<string mnemonic, string onnxName>
    : HPS_Op<mnemonic, "reduce"> {
  let summary = "ONNX " # onnxName # ": the index of the extreme along `axis`";
  let description = [{
    An i64 tensor: the input's shape with `axis` kept as 1 (`keepdims`) or
    dropped. Ties give the first index, or the last with
    `select_last_index`; a NaN is the extreme, as in ONNX Runtime.
  }];
  let arguments = (ins AnyTensor:$input, I64Attr:$axis, BoolAttr:$keepdims,
                       BoolAttr:$select_last_index);
  let results = (outs TensorOf<[I64]>:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}
def HPS_ArgMaxOp : HPS_ArgOp<"arg_max", "ArgMax">;
def HPS_ArgMinOp : HPS_ArgOp<"arg_min", "ArgMin">;

//===----------------------------------------------------------------------===//
// Run-time shapes, index tensors and masks
//
// Shape arithmetic that depends on a dynamic dimension (the batch, the
// sequence length) cannot fold into attributes; the importer keeps it as
// these ops on i64 and i1 tensors, which run every time, on tiny tensors.
//===----------------------------------------------------------------------===//

def HPS_DynamicReshapeOp : HPS_Op<"dynamic_reshape", "shape"> {
  let summary = "ONNX Reshape to a target shape computed at run time";
  let description = [{
    `shape` follows ONNX, as for `hps.reshape`: -1 infers one dimension and,
    unless `allowzero`, 0 copies the input dimension at the same index.
  }];
  let arguments = (ins AnyTensor:$input, 1DTensorOf<[I64]>:$shape,
                       BoolAttr:$allowzero);
  let results = (outs AnyTensor:$output);
  let assemblyFormat =
      "$input `,` $shape attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def HPS_DynamicSliceOp : HPS_Op<"dynamic_slice", "shape",
                                [AllElementTypesMatch<["input", "output"]>]> {
  let summary = "ONNX Slice with starts, ends, axes and steps computed at run time";
  let description = [{
    The bounds follow ONNX as for `hps.slice`. The importer fills ONNX's
    defaults: the first axes in order, steps of one.
  }];
  let arguments = (ins AnyTensor:$input, 1DTensorOf<[I64]>:$starts,
                       1DTensorOf<[I64]>:$ends, 1DTensorOf<[I64]>:$axes,
                       1DTensorOf<[I64]>:$steps);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = [{
    $input `,` $starts `,` $ends `,` $axes `,` $steps attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HPS_DynamicResizeOp : HPS_Op<"dynamic_resize", "pool",
                                 [AllElementTypesMatch<["input", "output"]>]> {
  let summary = "ONNX Resize with scales or sizes (and roi) computed at run time";
  let description = [{
    `target` holds the scales (f32) or the sizes (i64) of every dimension;
    `roi`, for "tf_crop_and_resize", the normalised begins of every
    dimension, then the ends. The attributes are those of `hps.resize`.
  }];
  let arguments = (ins F32Tensor:$input, 1DTensorOf<[F32, I64]>:$target,
                       Optional<1DTensorOf<[F32]>>:$roi,
                       StrAttr:$mode, StrAttr:$coordinate_transformation_mode,
                       StrAttr:$nearest_mode, F32Attr:$cubic_coeff_a,
                       BoolAttr:$exclude_outside, F32Attr:$extrapolation_value);
  let results = (outs F32Tensor:$output);
  let assemblyFormat = [{
    $input `,` $target (`roi` $roi^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HPS_DynamicPadOp : HPS_Op<"dynamic_pad", "shape",
                              [AllElementTypesMatch<["input", "output"]>]> {
  let summary = "ONNX Pad with pads (and fill value) computed at run time";
  let description = [{
    `pads` holds the begin pads of every dimension, then the end pads, as for
    `hps.pad`; `value` is a one-element fill for mode "constant" (0 when
    absent).
  }];
  let arguments = (ins F32Tensor:$input, 1DTensorOf<[I64]>:$pads,
                       Optional<F32Tensor>:$value, StrAttr:$mode);
  let results = (outs F32Tensor:$output);
  let assemblyFormat = [{
    $input `,` $pads (`value` $value^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HPS_ExpandOp : HPS_Op<"expand", "shape", [AllElementTypesMatch<["input", "output"]>]> {
  let summary = "ONNX Expand: broadcast `input` with the shape `shape`";
  let arguments = (ins AnyTensor:$input, 1DTensorOf<[I64]>:$shape);
  let results = (outs AnyTensor:$output);
  let assemblyFormat =
      "$input `,` $shape attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def HPS_ConstantOfShapeOp : HPS_Op<"constant_of_shape", "shape"> {
  let summary = "ONNX ConstantOfShape: a tensor of the given shape, filled";
  let description = [{
    `to` is the ONNX data type of the result (1 FLOAT, 7 INT64, 9 BOOL),
    which the result type repeats; `value` is converted to it.
  }];
  let arguments = (ins 1DTensorOf<[I64]>:$shape, F32Attr:$value, I64Attr:$to);
  let results = (outs TensorOf<[F32, I64, I1]>:$output);
  let assemblyFormat = "$shape attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def HPS_RangeOp : HPS_Op<"range", "shape"> {
  let summary = "ONNX Range: start, start + delta, ... up to `limit` (excluded)";
  let description = [{
    The three operands are one-element tensors of one type (f32 or i64). A
    negative length or a zero `delta` is an error at run time.
  }];
  let arguments = (ins TensorOf<[F32, I64]>:$start, TensorOf<[F32, I64]>:$limit,
                       TensorOf<[F32, I64]>:$delta);
  let results = (outs 1DTensorOf<[F32, I64]>:$output);
  let assemblyFormat = [{
    $start `,` $limit `,` $delta attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HPS_CastOp : HPS_Op<"cast", "eltwise"> {
  let summary = "ONNX Cast between f32, i64 and i1 (bool)";
  let description = [{
    `to` is the ONNX data type of the result (1 FLOAT, 7 INT64, 9 BOOL).
    Floats convert to integers by truncation; anything non-zero is true.
  }];
  let arguments = (ins TensorOf<[F32, I64, I1]>:$input, I64Attr:$to);
  let results = (outs TensorOf<[F32, I64, I1]>:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

class HPS_CompareOp<string mnemonic, string onnxName>
    : HPS_Op<mnemonic, "eltwise"> {
  let summary = "ONNX " # onnxName # ": an i1 tensor, with broadcasting";
  let arguments = (ins TensorOf<[F32, I64, I1]>:$lhs,
                       TensorOf<[F32, I64, I1]>:$rhs);
  let results = (outs TensorOf<[I1]>:$output);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}
def HPS_EqualOp : HPS_CompareOp<"equal", "Equal">;
def HPS_LessOp : HPS_CompareOp<"less", "Less">;
def HPS_GreaterOp : HPS_CompareOp<"greater", "Greater">;
def HPS_LessOrEqualOp : HPS_CompareOp<"less_or_equal", "LessOrEqual">;
def HPS_GreaterOrEqualOp : HPS_CompareOp<"greater_or_equal", "GreaterOrEqual">;

class HPS_LogicOp<string mnemonic, string onnxName>
    : HPS_Op<mnemonic, "eltwise"> {
  let summary = "ONNX " # onnxName # " of i1 tensors, with broadcasting";
  let arguments = (ins TensorOf<[I1]>:$lhs, TensorOf<[I1]>:$rhs);
  let results = (outs TensorOf<[I1]>:$output);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}
def HPS_AndOp : HPS_LogicOp<"and", "And">;
def HPS_OrOp : HPS_LogicOp<"or", "Or">;
def HPS_XorOp : HPS_LogicOp<"xor", "Xor">;

def HPS_NotOp : HPS_Op<"not", "eltwise", [SameOperandsAndResultType]> {
  let summary = "ONNX Not of an i1 tensor";
  let arguments = (ins TensorOf<[I1]>:$input);
  let results = (outs TensorOf<[I1]>:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def HPS_WhereOp : HPS_Op<"where", "eltwise",
                         [AllElementTypesMatch<["x", "y", "output"]>]> {
  let summary = "ONNX Where: `x` where `condition` holds, else `y`, broadcast";
  let arguments = (ins TensorOf<[I1]>:$condition, AnyTensor:$x, AnyTensor:$y);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = [{
    $condition `,` $x `,` $y attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HPS_CumSumOp : HPS_Op<"cum_sum", "reduce",
                          [AllTypesMatch<["input", "output"]>]> {
  let summary = "ONNX CumSum: running sums along `axis` (a one-element i64)";
  let description = [{
    With `exclusive` each element leaves itself out of its sum; with
    `reverse` the sums run from the end of the axis.
  }];
  let arguments = (ins TensorOf<[F32, I64]>:$input, TensorOf<[I64]>:$axis,
                       BoolAttr:$exclusive, BoolAttr:$reverse);
  let results = (outs TensorOf<[F32, I64]>:$output);
  let assemblyFormat =
      "$input `,` $axis attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def HPS_ModOp : HPS_Op<"mod", "eltwise", [SameOperandsAndResultElementType]> {
  let summary = "ONNX Mod: the remainder of `lhs` by `rhs`, broadcast";
  let description = [{
    With `fmod` false the remainder takes the divisor's sign (Python's
    `%`), for integers only, as ONNX says; with `fmod` true it takes the
    dividend's (C's `fmod`). An integer division by zero is an error at
    run time.
  }];
  let arguments = (ins TensorOf<[F32, I64]>:$lhs, TensorOf<[F32, I64]>:$rhs,
                       BoolAttr:$fmod);
  let results = (outs TensorOf<[F32, I64]>:$output);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def HPS_ScatterNDOp : HPS_Op<"scatter_nd", "shape",
                             [AllTypesMatch<["data", "output"]>]> {
  let summary = "ONNX ScatterND: `data` with the slices `indices` names updated";
  let description = [{
    Each row of `indices` (its last axis, of length k, at most the rank of
    `data`) names the slice `data[i0, ..., ik-1]`; the slice of `updates`
    at the row's position (`updates` has shape `indices.shape[:-1] +
    data.shape[k:]`) replaces it, or with `reduction` "add", "mul", "max"
    or "min" is combined with it. Negative indices count from the end; one
    out of range is an error at run time. Rows naming one slice twice are
    applied in order.
  }];
  let arguments = (ins TensorOf<[F32, I64]>:$data, TensorOf<[I64]>:$indices,
                       TensorOf<[F32, I64]>:$updates, StrAttr:$reduction);
  let results = (outs TensorOf<[F32, I64]>:$output);
  let assemblyFormat = [{
    $data `,` $indices `,` $updates attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HPS_TriluOp : HPS_Op<"trilu", "shape", [AllTypesMatch<["input", "output"]>]> {
  let summary = "ONNX Trilu: the upper or lower triangle of the last two axes";
  let description = [{
    Keeps the elements with `j - i >= k` (`upper`) or `j - i <= k` (lower)
    of each matrix and zeroes the others; `k` is a one-element i64, 0 when
    absent.
  }];
  let arguments = (ins AnyTensor:$input, Optional<TensorOf<[I64]>>:$k,
                       BoolAttr:$upper);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = [{
    $input (`,` $k^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // HETERPS_DIALECT_HPS_HPSOPS_TD
