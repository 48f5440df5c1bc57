//===- RecurrentCells.h - LSTM, GRU and RNN over a sequence -----*- C++ -*-===//
//
// The forward and backward of ONNX's recurrent operators with their
// default activations, on plain f32 buffers: every step's input
// projection is one sgemm over the whole sequence, then each step an sgemm
// of the previous state by R^T and one pass over the gates. The backward
// (through time) runs the steps in reverse, one sgemm each for the state's
// gradient and R's, then one for W's and one for the input's over the
// whole sequence. Shared by the inference kernel and the training one.
//
// Layouts (hps.lstm, hps.gru, hps.rnn): x [T, N, I], w [D, G*H, I],
// r [D, G*H, H], b [D, 2*G*H] (W's biases, then R's), state [D, N, H]
// (LSTM: [2D, N, H], the hidden states then the cells) or null for
// zeros, y [T, D, N, H]; gates in ONNX's order (LSTM i, o, f, c; GRU z,
// r, h).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_RECURRENTCELLS_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_RECURRENTCELLS_H

#include "heterps/Runtime/Kernel.h"

#include <vector>

namespace heterps::runtime::cpu {

enum class RecurrentCell { LSTM, GRU, RNN };

struct RecurrentDims {
  RecurrentCell cell = RecurrentCell::LSTM;
  int64_t steps = 0, batch = 0, input = 0, hidden = 0, directions = 1;
  /// A single direction run from the last step ("reverse").
  bool reverse = false;
  /// GRU: r multiplies the state's product (with R's bias), not the state.
  bool linearBeforeReset = false;

  int64_t gates() const {
    return cell == RecurrentCell::LSTM ? 4 : cell == RecurrentCell::GRU ? 3 : 1;
  }
  /// Rows of the initial state: D, or 2D for LSTM's cells too.
  int64_t stateRows() const {
    return cell == RecurrentCell::LSTM ? 2 * directions : directions;
  }
};

/// The cell, hidden size, directions and GRU form of op `type` (LSTM, GRU
/// or RNN) from its attributes: read once, when its kernel is made.
llvm::Expected<RecurrentDims> recurrentAttrs(llvm::StringRef type,
                                             const OpAttributes &attrs);
/// Fills `d`'s steps, batch and input size from these inputs (state null
/// when absent), or an error naming the mismatch.
llvm::Error fitRecurrentDims(RecurrentDims &d, const Tensor &x, const Tensor &w,
                             const Tensor &r, const Tensor &b,
                             const Tensor *state);

/// What a direction's forward keeps for its backward: the activated gates
/// [T, N, G*H], LSTM's cells [T, N, H], GRU's state products with R's bias
/// [T, N, 3H] (linear_before_reset) or r * h [T, N, H] (otherwise).
struct RecurrentTape {
  std::vector<float> gates, cells, extra;
};

/// y from x, w, r, b and state; fills `tapes` (one per direction) when
/// non-null.
void recurrentForward(const RecurrentDims &d, const float *x, const float *w,
                      const float *r, const float *b, const float *state,
                      float *y, std::vector<RecurrentTape> *tapes);

/// The gradients from dy after recurrentForward filled `tapes` and y on
/// the same inputs: dx [T, N, I], dw, dr, db and (where state is
/// non-null) dstate, each of its input's shape; all overwritten.
void recurrentBackward(const RecurrentDims &d, const float *x, const float *w,
                       const float *r, const float *state, const float *y,
                       const std::vector<RecurrentTape> &tapes, const float *dy,
                       float *dx, float *dw, float *dr, float *db,
                       float *dstate);

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_RECURRENTCELLS_H
