//===- ExternalData.cpp - ONNX tensors stored outside the model -----------===//

#include "heterps/Runtime/ExternalData.h"

#include "heterps/Support/PrintableLine.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <optional>

using namespace heterps::runtime;

static llvm::Error fail(const llvm::Twine &what) {
  return heterps::printableError(what);
}

/// Whether `path` (absolute, symbolic links resolved) lies in `dir` (the
/// same).
static bool isInside(llvm::StringRef path, llvm::StringRef dir) {
  if (!path.starts_with(dir))
    return false;
  return path.size() > dir.size() &&
         (dir.ends_with("/") || path[dir.size()] == '/');
}

llvm::Expected<ExternalDataRef>
heterps::runtime::resolveExternalData(const onnx::TensorProto &tensor,
                                      llvm::StringRef modelDir) {
  std::string location;
  std::optional<uint64_t> offset, length;
  for (const auto &entry : tensor.external_data()) {
    llvm::StringRef key = entry.key(), value = entry.value();
    if (key == "location") {
      location = entry.value();
      continue;
    }
    if (key != "offset" && key != "length")
      continue; // "checksum" and keys of later ONNX versions
    uint64_t number;
    if (value.getAsInteger(10, number))
      return fail("external data '" + key +
                  "' must be a non-negative integer, got '" +
                  value.take_front(40) + "'");
    (key == "offset" ? offset : length) = number;
  }
  if (location.empty())
    return fail("external data has no location");
  // The location names a file beside the model, as ONNX's checker requires:
  // never an absolute path or one that climbs out of the model's folder.
  llvm::StringRef loc = location;
  if (llvm::sys::path::is_absolute(loc) || loc.contains('\0') ||
      llvm::any_of(llvm::make_range(llvm::sys::path::begin(loc),
                                    llvm::sys::path::end(loc)),
                   [](llvm::StringRef part) { return part == ".."; }))
    return fail("external data location '" + loc +
                "' is outside the model's folder (it must be a relative path "
                "without '..')");
  llvm::SmallString<256> dir(modelDir.empty() ? "." : modelDir);
  llvm::SmallString<256> file(dir);
  llvm::sys::path::append(file, loc);
  llvm::SmallString<256> realDir, realFile;
  if (std::error_code ec = llvm::sys::fs::real_path(file, realFile))
    return fail("external data file '" + loc + "' " +
                (ec == std::errc::no_such_file_or_directory
                     ? "not found next to the model"
                     : "cannot be read: " + ec.message()));
  if (llvm::sys::fs::real_path(dir, realDir) || !isInside(realFile, realDir))
    return fail("external data location '" + loc +
                "' leads outside the model's folder (through a symbolic "
                "link)");
  if (!llvm::sys::fs::is_regular_file(realFile))
    return fail("external data location '" + loc + "' is not a regular file");
  uint64_t size = 0;
  if (std::error_code ec = llvm::sys::fs::file_size(realFile, size))
    return fail("cannot read external data file '" + loc +
                "': " + ec.message());
  ExternalDataRef ref{std::string(realFile), offset.value_or(0), 0};
  if (ref.offset > size)
    return fail("external data file '" + loc + "' has " + llvm::Twine(size) +
                " bytes, less than the offset " + llvm::Twine(ref.offset));
  ref.length = length.value_or(size - ref.offset);
  if (ref.length > size - ref.offset)
    return fail("external data file '" + loc + "' has " + llvm::Twine(size) +
                " bytes, the tensor needs " + llvm::Twine(ref.length) +
                " from offset " + llvm::Twine(ref.offset));
  return ref;
}

llvm::Expected<std::string>
heterps::runtime::readExternalData(const onnx::TensorProto &tensor,
                                   llvm::StringRef modelDir,
                                   uint64_t expectedBytes) {
  llvm::Expected<ExternalDataRef> ref = resolveExternalData(tensor, modelDir);
  if (!ref)
    return ref.takeError();
  if (ref->length != expectedBytes)
    return fail("external data holds " + llvm::Twine(ref->length) +
                " bytes, expected " + llvm::Twine(expectedBytes));
  if (expectedBytes == 0)
    return std::string();
  auto buffer =
      llvm::MemoryBuffer::getFileSlice(ref->path, ref->length, ref->offset);
  if (!buffer)
    return fail("cannot read external data file '" + ref->path +
                "': " + buffer.getError().message());
  return std::string((*buffer)->getBuffer());
}
