//===- Fusion.h - load-time rewrites of a plan ------------------*- C++ -*-===//
//
// The CPU backend's plan rewrites (CPUBackend::rewriteForInference and
// rewriteForTraining). They keep the plan's outputs unchanged and join only
// ops that `mine` accepts and that share a device and a stage. Values that
// foldBatchNorms adds are defined only by the weight map it extends (not by
// `Plan.weights`).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_FUSION_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_FUSION_H

#include "heterps/Runtime/Backend.h"

namespace heterps::runtime {

/// An OpFilter that accepts every op.
inline bool anyOp(const plan::Op &) { return true; }

/// Folds an activation (Relu, LeakyRelu, Clip, Sigmoid, Tanh, Elu, Swish,
/// HardSwish, Gelu) into the Conv or MatMul whose output only it reads, and
/// a Relu into such a BatchNormalization: the producer gets the attribute
/// `activation` (and `activation_<attr>` copies) and the activation's
/// output. Returns the number of fused ops.
int fuseActivations(plan::Plan &plan, OpFilter mine = anyOp);

/// The fusions training kernels can run backwards: a Relu into the Conv,
/// BatchNormalization or Add whose output only it reads (the Relu's
/// gradient mask is the fused op's output > 0; a ResNet block's Add and
/// Relu then take one pass over the tensor forward instead of two). Same
/// attributes as fuseActivations.
/// Inference kernels run the result too. Returns the number of fused ops.
int fuseTrainableActivations(plan::Plan &plan, OpFilter mine = anyOp);

/// For training, after fuseTrainableActivations: where a MaxPool reads the
/// output of a Conv with a fused Relu, or a Concat of such outputs, and is
/// the only reader of each, the Relus' gradient mask moves to the MaxPool's
/// output gradient (the Conv gets `relu_grad_masked` = 1, the MaxPool
/// `grad_mask_relu` = 1). A max-pooled Relu output is > 0 exactly where the
/// window's selected input is, so the gradients are the same, bit for bit,
/// and the mask covers the pooled tensor instead of the larger one.
/// Returns the number of MaxPools.
int moveReluMasksToMaxPools(plan::Plan &plan, OpFilter mine = anyOp);

/// For training: a MatMul by the Transpose of a 2-D value (nn.Linear's
/// x W^T, which PyTorch's training export leaves as Transpose(W)), the
/// Transpose read only there, reads the value itself with `trans_b` = 1.
/// The weight is then not copied transposed in every forward pass, nor its
/// gradient back in every backward pass (ViT-B/16: 0.2 s of a 5 s step at
/// batch 8). Returns the number of Transposes removed.
int foldWeightTransposes(plan::Plan &plan, OpFilter mine = anyOp);

/// Before fuseTrainableActivations (training) or fuseResidualAdds
/// (inference): an ungrouped Conv reading
/// a channel Concat of 4-D values, directly or through MaxPools,
/// AveragePools and Dropouts that are the only readers of what they read,
/// becomes one Conv per Concat input over a Slice of the weights' input
/// channels, each summing the one before it (fourth input; the bias goes to
/// the first), with the pools and dropouts repeated per input. A Conv is
/// linear in its input channels, so the result is the same up to rounding,
/// and the Concat's copies go: of its inputs in the forward pass and of its
/// gradient in the backward pass (oneDNN's convolutions cannot write into
/// or read from a channel slice of a batch; in inference at batch 1 the
/// Concat's inputs are computed in place, but only those of kernels that
/// chose one layout). Done only where the Conv's output is smaller than the
/// Concat's (SqueezeNet's squeeze convolutions), as the sums cost passes
/// over it. Returns the number of Concats removed.
int splitConcatConvs(plan::Plan &plan, OpFilter mine = anyOp);

/// Folds an Add of a Conv's output and another value of the same declared
/// shape (a residual connection) into the Conv, as a fourth input the Conv
/// sums into its result; the other value must be defined before the Conv.
/// Run before fuseActivations so that Conv+Add+Relu becomes one Conv; an
/// Add's own fused activation (a trained plan's) moves to the Conv.
/// Returns the number of fused ops.
int fuseResidualAdds(plan::Plan &plan, OpFilter mine = anyOp);

/// Folds a 3x3, 5x5 or 7x7 depthwise Conv (stride 1 or 2, pads half the
/// window, constant weights) into the 1x1 Conv (stride 1, no pads, no
/// summed input, constant weights) whose output only it reads, so that the
/// pointwise result never leaves the cache (oneDNN's depthwise post-op for
/// 3x3 windows, the backend's own kernel for all three). The 1x1 Conv gets
/// inputs 4 and 5 (the depthwise weight and bias, -1 when absent; input 3 stays
/// -1), the attribute `dw_stride`, the depthwise Conv's fused activation as
/// `dw_activation*` and its output. Run after fuseActivations. Returns the
/// number of fused pairs.
int fuseDepthwiseConvs(plan::Plan &plan, const WeightMap &weights,
                       OpFilter mine = anyOp);

/// Folds the 1x1 Conv (stride 1, no pads, constant weights and bias, any
/// summed input defined before the pair) that alone reads a pair of
/// fuseDepthwiseConvs, or a SqueezeExcite of fuseSqueezeExcites, into it:
/// the inverted-residual block's projection back to its narrow width. The
/// pair gets inputs 6, 7 and 8 (the SqueezeExcite 5, 6 and 7: the
/// projection's weight, bias and summed input, -1 when absent), its fused
/// activation as `proj_activation*` and its output. Run after
/// fuseDepthwiseConvs and fuseSqueezeExcites. Returns the number of fused
/// ops.
int fuseProjections(plan::Plan &plan, const WeightMap &weights,
                    OpFilter mine = anyOp);

/// Replaces GELU as PyTorch exports it, x * (erf(x / sqrt(2)) + 1) * 0.5
/// (Div by a constant sqrt(2), Erf, Add of a constant 1, Mul by x, Mul by a
/// constant 0.5, each intermediate read only by the next), with one op of
/// type Gelu (oneDNN's gelu_erf). Returns the number of fused patterns.
int fuseGelus(plan::Plan &plan, const WeightMap &weights,
              OpFilter mine = anyOp);

/// Folds an Add of a constant bias (N elements, broadcast along the last
/// axis) into the MatMul by a constant 2-D [K, N] weight whose output only
/// it reads: the MatMul gets the bias as a third input (oneDNN's bias).
/// A Linear layer as PyTorch exports it for 3-D inputs. Returns the number
/// of fused Adds.
int fuseMatMulBiases(plan::Plan &plan, const WeightMap &weights,
                     OpFilter mine = anyOp);

/// Replaces layer normalisation over the last axis as PyTorch exports it
/// (ReduceMean, Sub, Pow 2, ReduceMean, Add epsilon, Sqrt, Div, then Mul by
/// a [C] scale and optionally Add of a [C] bias, each intermediate read
/// only within the pattern) with one LayerNormalization. Returns the number
/// of fused patterns.
int fuseLayerNorms(plan::Plan &plan, const WeightMap &weights,
                   OpFilter mine = anyOp);

/// Replaces x * Sigmoid(x) (SiLU) with one op of type Swish and
/// x * HardSigmoid(x) with alpha 1/6 and beta 1/2 (HardSwish as PyTorch
/// exports it at opset 13) with one HardSwish, where the gate's output only
/// the Mul reads. Run before fuseActivations, which then folds them into
/// the Conv before them. Returns the number of fused pairs.
int fuseSelfGates(plan::Plan &plan, OpFilter mine = anyOp);

/// Replaces squeeze-excitation, x * gate(Conv2(act(Conv1(GlobalAverage-
/// Pool(x))))) with 1x1 Convs by constant weights (Conv1 with no
/// activation, Relu or Swish; the gate a Sigmoid or HardSigmoid op, or a
/// Sigmoid fused into Conv2), each intermediate read only by the next, by
/// one SqueezeExcite op (SqueezeExciteKernel.cpp). Run after
/// fuseActivations. Returns the number of fused blocks.
int fuseSqueezeExcites(plan::Plan &plan, const WeightMap &weights,
                       OpFilter mine = anyOp);

/// Replaces scaled dot-product attention, Softmax(mask(scale * Q x Kt +
/// biases)) x V along the last axis, with one op of type Attention
/// (AttentionKernel.cpp): Q, Kt and V each the output of a Transpose read
/// only here or the value itself, and each of those either itself or a
/// Gather of one index along axis 0 of a Transpose (Swin's q, k and v, three
/// slices of one transposed tensor); a Mul or Div by a one-element weight on
/// Q or on the scores (`scale`); Adds of f32 weights that broadcast to the
/// scores, through Reshapes that keep their last two axes (`bias_ranks`,
/// `bias_views`: Swin's relative-position bias and shift mask); an optional
/// Where between the scores and a one-element fill by a bool mask
/// (`mask_fill`, `mask_fill_where` = 1 when the fill is taken where the
/// mask is true); an inference Dropout on the probabilities; and a
/// Transpose of the result read only there. The Attention reads the
/// Transposes' inputs (`q_perm`, `k_perm`, `v_perm`, with `q_index`, ...
/// for a Gather's index) and writes the result transposed (`out_perm`), so
/// that none of the transposed copies is made; a Transpose under Gathers
/// goes once all its readers are fused. Q, K and V must have the same
/// batch axes (where both sizes are known), and every matrix row must stay
/// contiguous (the head dimension last in the sources of Q, V and the
/// result, and K's or Kt's last axis last in its source). Returns the number
/// of fused patterns.
int fuseAttention(plan::Plan &plan, const WeightMap &weights,
                  OpFilter mine = anyOp);

/// For training: fuseAttention's pattern without a mask, biases, a Dropout
/// or Gathers, which Train/AttentionGrad.cpp runs forward and back: a
/// ViT's attention without the transposed copies of its Q, K, V and output
/// in either pass. Returns the number of fused patterns.
int fuseTrainableAttention(plan::Plan &plan, const WeightMap &weights,
                           OpFilter mine = anyOp);

/// Folds an Add of two values of the same declared shape into the
/// LayerNormalization (over the last axis) of its sum: one op of type
/// SkipLayerNormalization (a, b, scale[, bias]) that normalises a + b and,
/// when the sum is read elsewhere too (a pre-norm transformer's residual
/// stream), gives it as a second output. Not done when a reader of the sum
/// comes before the LayerNormalization. Returns the number of fused pairs.
int fuseSkipLayerNorms(plan::Plan &plan, OpFilter mine = anyOp);

/// Folds an inference BatchNormalization (constant parameters; a fused
/// Relu or none) into the channel Concat whose output only it reads:
/// DenseNet's pre-activation batch norm of each layer's concatenated
/// features. The Concat gets the per-channel `scale` and `shift` (float
/// lists) and the `activation`, and applies them as it copies its inputs,
/// so the concatenated features are written once instead of copied and
/// then normalised. Run after fuseActivations. Returns the number of
/// folded batch norms.
int fuseConcatBatchNorms(plan::Plan &plan, const WeightMap &weights,
                         OpFilter mine = anyOp);

/// Replaces ShuffleNet's concat and channel shuffle of two groups, a
/// channel Concat of two inputs of C/2 channels each, Reshape to
/// [N, 2, C/2, H, W], Transpose [0, 2, 1, 3, 4] and Reshape back to
/// [N, C, H, W] (static channels and spatial sizes, each intermediate read
/// only by the next), with one op of type ConcatShuffle that writes the
/// two inputs' channels interleaved. Returns the number of fused patterns.
int fuseChannelShuffles(plan::Plan &plan, OpFilter mine = anyOp);

/// Gives a ConcatShuffle whose output only two Slices read, one taking the
/// first half of its channels and one the second (ShuffleNet's chunk of
/// the shuffled tensor into its block's two branches; bounds that are
/// weights), the Slices' outputs as two outputs of its own, which it
/// writes directly instead of the whole; the Slices go. Returns the number
/// of rewritten shuffles.
int fuseShuffleChunks(plan::Plan &plan, const WeightMap &weights,
                      OpFilter mine = anyOp);

/// Replaces Concat(Slice(x, [k, d) of an axis), Slice(x, [0, k) of it)),
/// torch.roll as PyTorch exports it (Swin's cyclic shift of the windows;
/// static d, bounds that are weights or attributes, each Slice read only
/// there), with one op of type Roll (`offsets` per axis: element j of an
/// axis is element (j + offset) mod d of x); a Roll of a Roll read only by
/// it takes both offsets. Two copies of every element become one. Returns
/// the number of Concats replaced.
int fuseRolls(plan::Plan &plan, const WeightMap &weights,
              OpFilter mine = anyOp);

/// Folds a Pad with zeros on the spatial axes (constant mode, pads a
/// weight) into the Conv or AveragePool that is its only reader, as extra
/// `pads` (an AveragePool then counts them: count_include_pad = 1; not in
/// ceil mode, nor over pads of its own it excluded). Returns the number of
/// folded Pads.
int fusePads(plan::Plan &plan, const WeightMap &weights, OpFilter mine = anyOp);

/// Folds an inference BatchNormalization into the Conv feeding it when the
/// Conv's weight and bias and all BN parameters are weights: new weight
/// values (appended to the plan and `weights`) replace the Conv's; a Relu
/// fused into the batch norm moves onto the Conv. Returns the number of
/// folded ops.
int foldBatchNorms(plan::Plan &plan, WeightMap &weights, OpFilter mine = anyOp);

} // namespace heterps::runtime

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_FUSION_H
