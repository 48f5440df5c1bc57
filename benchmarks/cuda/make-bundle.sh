#!/bin/bash
# Packs the GPU test suite and benchmark for a GPU machine that has the CUDA
# libraries but not this build's other dependencies (LLVM, oneDNN,
# Protobuf), nor room for the models' weights:
#   OUT/bundle.tar.xz  bin/ (HeterPSCUDATests, heterps-cuda-bench) and lib/
#                      (the shared libraries they load that a stock Ubuntu
#                      or Debian lacks; CUDA's come from the GPU machine);
#   OUT/models/        <model>.onnx without weights (weights.py strip) and
#                      <model>.pb, its executable plan.
# run-on-gpu.sh, copied beside them, unpacks and runs everything there.
# Libraries that only ever load for code the GPU suite does not run (Z3 for
# LLVM's static analyser, ICU's data for libxml2) are replaced by empty stubs
# with their names, to keep the bundle small.
#
# Usage: make-bundle.sh BUILD_DIR OUT_DIR [MODEL.onnx...]
set -euo pipefail
build=$(realpath "$1")
out=$(realpath -m "$2")
shift 2
here=$(dirname "$(realpath "$0")")
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$out/models"

bins=("$build/bin/HeterPSCUDATests" "$build/bin/heterps-cuda-bench")
cp "${bins[@]}" "$stage/bin/"
# Everything they load, but the C runtime, CUDA's libraries and what every
# Linux distribution has.
skip='^((libc|libm|libstdc\+\+|libgcc_s|ld-linux-x86-64|libpthread|libdl|librt|libz|libzstd|liblzma|libffi|libtinfo|libssl|libcrypto|libz3|libicudata)\.so|libcud|libcublas)'
ldd "${bins[@]}" | awk '/=>/ {print $1, $3}' | sort -u |
  while read -r name path; do
    [[ "$name" =~ $skip ]] && continue
    cp -L "$path" "$stage/lib/$name"
  done
echo 'char icudt72_dat[16];' > "$stage/icu.c"
gcc -shared -fPIC -o "$stage/lib/libicudata.so.72" -Wl,-soname,libicudata.so.72 "$stage/icu.c"
echo '' > "$stage/z3.c"
gcc -shared -fPIC -o "$stage/lib/libz3.so.4" -Wl,-soname,libz3.so.4 "$stage/z3.c"
rm "$stage"/*.c
tar -C "$stage" -cf - bin lib | xz -T2 -6 > "$out/bundle.tar.xz"

for model in "$@"; do
  name=$(basename "$model" .onnx)
  # The plan names the model by the path it was given: relative, beside it.
  ln -sf "$(realpath "$model")" "$out/models/$name.onnx"
  (cd "$out/models" && "$build/bin/heterps-opt" "$name.onnx" \
     --hps-lower-to-runtime="output=$name.pb" -o /dev/null)
  rm "$out/models/$name.onnx"
  /usr/bin/python3 "$here/weights.py" strip "$model" "$out/models/$name.onnx"
done
cp "$here/run-on-gpu.sh" "$here/weights.py" "$here/torch_peer.py" \
  "$here/../import/export_torchvision.py" "$out/"
du -sh "$out"
