#!/usr/bin/env bash
# Installs every Debian package HeterPS-MLIR needs to build, test and benchmark.
# Idempotent and non-interactive: packages already present are skipped, so a
# rerun costs one dpkg query. Run as root (or with sudo available).
set -euo pipefail

PACKAGES=(
  # Toolchain and build.
  build-essential cmake ninja-build ccache git pkg-config
  # LLVM/MLIR 19: libMLIR.so, headers, TableGen, FileCheck and lit.
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools
  # ONNX (protobuf classes, checker, shape inference) and its backend test data.
  libonnx-dev libonnx-testdata libprotobuf-dev protobuf-compiler
  # gRPC: a distributed job's calls (parameter-server shards as processes).
  libgrpc++-dev protobuf-compiler-grpc openssl
  # Python side of the tests: ONNX model construction and PyTorch exports.
  python3 python3-numpy python3-onnx python3-torch python3-torchvision
  # PyTorch as a benchmark peer: Debian's torch calls the system BLAS for
  # Linear layers, which is otherwise the reference BLAS (2.5 GFLOP/s).
  libopenblas0-pthread
  # Unit tests.
  libgtest-dev libgmock-dev
  # The Python package (python/): pybind11 against the system interpreter's
  # headers, its pytest suite, and headless Chromium (with a font, for the
  # text) to render the plan pictures; Pillow reads the screenshots.
  python3-dev pybind11-dev python3-pytest python3-pil chromium fonts-liberation
  # Runtime kernels (CPU backend; Debian's oneDNN threads with OpenMP) and the
  # planner's LSTM (Eigen).
  libdnnl-dev libeigen3-dev
  # dnnl-config.cmake looks for OpenCL (Debian builds oneDNN with its OCL runtime).
  ocl-icd-opencl-dev
  # Training data: IDX reader (zlib for the gzipped files) and Fashion-MNIST.
  zlib1g-dev dataset-fashion-mnist
  # Fuzzing: clang with libFuzzer and its sanitizer runtimes (fuzz/).
  clang libclang-rt-14-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
