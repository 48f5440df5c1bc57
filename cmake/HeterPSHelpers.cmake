# Small helpers shared by the project's CMakeLists files.

# heterps_add_library(name SOURCES... [DEPENDS tablegen-targets...]
#                     [LINK_LIBS libs...])
# A shared library that links libMLIR.so/libLLVM.so (never the static MLIR
# archives) and is exported in the installed CMake package.
function(heterps_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPENDS;LINK_LIBS" ${ARGN})
  add_library(${name} SHARED ${ARG_SOURCES})
  if(ARG_DEPENDS)
    add_dependencies(${name} ${ARG_DEPENDS})
  endif()
  target_link_libraries(${name} PUBLIC ${ARG_LINK_LIBS} MLIR LLVM)
  target_include_directories(${name} PUBLIC
    $<BUILD_INTERFACE:${HETERPS_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${HETERPS_BINARY_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_include_directories(${name} SYSTEM PUBLIC
    ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
  install(TARGETS ${name} EXPORT HeterPSTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endfunction()

# Detects optional dependencies and records them for the summary.
macro(heterps_detect_optional)
  # The CUDA backend (lib/Runtime/Backends/CUDA) needs nvcc, cuBLASLt and
  # cuDNN 9; AUTO builds it wherever all three are found, ON requires them.
  set(HETERPS_HAVE_CUDA OFF)
  if(NOT HETERPS_ENABLE_CUDA STREQUAL "OFF")
    if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
      set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
    endif()
    include(CheckLanguage)
    check_language(CUDA)
    set(_cuda_missing "")
    if(CMAKE_CUDA_COMPILER)
      find_package(CUDAToolkit QUIET)
      find_path(HETERPS_CUDNN_INCLUDE_DIR cudnn.h
                HINTS ${CUDAToolkit_INCLUDE_DIRS})
      find_library(HETERPS_CUDNN_LIBRARY cudnn
                   HINTS ${CUDAToolkit_LIBRARY_DIR})
      if(NOT CUDAToolkit_FOUND OR NOT TARGET CUDA::cublasLt)
        set(_cuda_missing "the CUDA toolkit's cuBLASLt")
      elseif(NOT HETERPS_CUDNN_INCLUDE_DIR OR NOT HETERPS_CUDNN_LIBRARY)
        set(_cuda_missing "cuDNN (cudnn.h and libcudnn)")
      endif()
    else()
      set(_cuda_missing "a CUDA compiler (nvcc)")
    endif()
    if(_cuda_missing STREQUAL "")
      set(HETERPS_HAVE_CUDA ON)
    elseif(HETERPS_ENABLE_CUDA STREQUAL "ON")
      message(FATAL_ERROR "HETERPS_ENABLE_CUDA=ON but ${_cuda_missing} was not found")
    endif()
  endif()
  find_package(dnnl CONFIG QUIET)
  # gRPC carries a distributed job's calls (lib/Runtime/Distributed).
  find_package(gRPC CONFIG QUIET)
  if(NOT gRPC_FOUND)
    message(FATAL_ERROR "gRPC not found: install libgrpc++-dev and "
                        "protobuf-compiler-grpc (scripts/install-deps.sh)")
  endif()
  find_package(GTest QUIET)
  # Debian's python3-onnx/torch live in the system interpreter's dist-packages.
  set(HETERPS_PYTHON "/usr/bin/python3" CACHE FILEPATH
      "Python with the onnx (and optionally torch) modules, used by tests")
  # The same interpreter runs lit and builds the Python package against its
  # headers (python3-dev), whatever else is first on PATH.
  set(Python3_EXECUTABLE ${HETERPS_PYTHON})
  find_package(Python3 COMPONENTS Interpreter Development.Module QUIET)
  execute_process(COMMAND ${HETERPS_PYTHON} -c "import onnx"
                  RESULT_VARIABLE _onnx_rc OUTPUT_QUIET ERROR_QUIET)
  execute_process(COMMAND ${HETERPS_PYTHON} -c "import torch, torchvision"
                  RESULT_VARIABLE _torch_rc OUTPUT_QUIET ERROR_QUIET)
  set(HETERPS_HAVE_PY_ONNX OFF)
  set(HETERPS_HAVE_PY_TORCH OFF)
  if(_onnx_rc EQUAL 0)
    set(HETERPS_HAVE_PY_ONNX ON)
  endif()
  if(_torch_rc EQUAL 0)
    set(HETERPS_HAVE_PY_TORCH ON)
  endif()
  set(HETERPS_ONNX_TESTDATA_DIR "/usr/share/libonnx-testdata/data" CACHE PATH
      "ONNX backend test data (Debian package libonnx-testdata)")
endmacro()

function(_heterps_summary_line label value)
  if(value)
    message(STATUS "  ${label}: yes")
  else()
    message(STATUS "  ${label}: no")
  endif()
endfunction()

function(heterps_print_summary)
  message(STATUS "")
  message(STATUS "HeterPS-MLIR ${PROJECT_VERSION} configuration summary")
  message(STATUS "  MLIR/LLVM: ${LLVM_PACKAGE_VERSION} (${LLVM_LIBRARY_DIR})")
  message(STATUS "  ONNX: ${ONNX_VERSION}, Protobuf: ${Protobuf_VERSION}")
  _heterps_summary_line("CUDA backend: nvcc, cuBLASLt, cuDNN (${HETERPS_ENABLE_CUDA})" ${HETERPS_HAVE_CUDA})
  _heterps_summary_line("oneDNN" ${dnnl_FOUND})
  _heterps_summary_line("gRPC" ${gRPC_FOUND})
  _heterps_summary_line("GoogleTest" ${GTest_FOUND})
  _heterps_summary_line("python3 onnx module (importer tests)" ${HETERPS_HAVE_PY_ONNX})
  _heterps_summary_line("python3 torch/torchvision (CNN import tests)" ${HETERPS_HAVE_PY_TORCH})
  if(EXISTS ${HETERPS_ONNX_TESTDATA_DIR})
    message(STATUS "  ONNX backend test data: ${HETERPS_ONNX_TESTDATA_DIR}")
  else()
    message(STATUS "  ONNX backend test data: no (import sweep skipped)")
  endif()
  _heterps_summary_line("sanitizer tests" ${HETERPS_ENABLE_SANITIZER_TESTS})
  message(STATUS "")
endfunction()
