# -*- Python -*-
# lit configuration of the HeterPS-MLIR test suite (check-heterps).

import os

import lit.formats
from lit.llvm import llvm_config

config.name = "HETERPS"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py",
                   "install-consumer"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.heterps_obj_root, "test")

llvm_config.use_default_substitutions()  # FileCheck, not, count, %python...
# %python must be the interpreter with Debian's onnx/torch modules, not the
# one running lit (LLVM's default substitution).
config.substitutions = [s for s in config.substitutions if s[0] != "%python"]
config.substitutions.append(("%python", config.heterps_python))
config.substitutions.append(("%make_model",
    config.heterps_python + " " +
    os.path.join(config.test_source_root, "Target", "ONNX", "Inputs",
                 "make_model.py")))
config.substitutions.append(("%make_hostile",
    config.heterps_python + " " +
    os.path.join(config.test_source_root, "HostileInput", "Inputs",
                 "make_hostile.py")))
config.substitutions.append(("%onnx_testdata", config.heterps_onnx_testdata))

llvm_config.with_environment("PATH", config.heterps_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    ["heterps-opt", "heterps-import-sweep", "heterps-run"], [config.heterps_tools_dir])

if config.heterps_have_py_onnx:
    config.available_features.add("py-onnx")
if config.heterps_have_py_torch:
    config.available_features.add("torch")
if os.path.isdir(config.heterps_onnx_testdata):
    config.available_features.add("onnx-testdata")
