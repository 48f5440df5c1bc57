//===- Builtin.cpp - the backends built into the runtime ------------------===//
//
// A new backend is a folder beside this file with its own CMakeLists.txt,
// plus one line here (and its declaration) that registers it by kind.
//
//===----------------------------------------------------------------------===//

#include "heterps/Runtime/Backend.h"

namespace heterps::runtime {
namespace cpu {
void registerCPUBackend();
} // namespace cpu
namespace emulated {
void registerEmulatedBackend();
} // namespace emulated
namespace cuda {
void registerCUDABackend();
} // namespace cuda
} // namespace heterps::runtime

void heterps::runtime::registerBuiltinBackends() {
  cpu::registerCPUBackend();
  emulated::registerEmulatedBackend();
#ifdef HETERPS_HAVE_CUDA_BACKEND
  cuda::registerCUDABackend();
#endif
}
