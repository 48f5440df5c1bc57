//===- CheckpointParts.cpp - a process's own part of a checkpoint ---------===//

#include "CheckpointParts.h"

#include "heterps/Runtime/AtomicFile.h"
#include "heterps/Runtime/Train/Checkpoint.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"

using namespace heterps::runtime;
using namespace heterps::runtime::distributed;

static llvm::Error partError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::string distributed::partName(const Role &role) {
  if (role.kind == Role::ParameterServer)
    return "ps" + std::to_string(role.shard) + ".pb";
  return "worker-s" + std::to_string(role.stage) + "r" +
         std::to_string(role.replica) + ".pb";
}

static std::string partPath(const std::string &dir, int64_t step,
                            const std::string &name) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, train::partsDirName(step), name);
  return path.str().str();
}

static uint64_t hashOf(llvm::StringRef bytes) {
  return llvm::xxh3_64bits(llvm::ArrayRef(
      reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()));
}

llvm::Expected<PartInfo>
distributed::writePart(const std::string &dir, int64_t step,
                       const std::string &name,
                       const google::protobuf::MessageLite &message) {
  if (dir.empty())
    return partError("this process has no --checkpoint directory");
  std::string path = partPath(dir, step, name);
  if (std::error_code ec =
          llvm::sys::fs::create_directories(llvm::sys::path::parent_path(path)))
    return partError(path + ": " + ec.message());
  std::string bytes;
  if (!message.SerializeToString(&bytes))
    return partError(path + ": cannot serialise the part");
  if (llvm::Error e =
          writeFileAtomically(path, [&](llvm::raw_ostream &os) -> llvm::Error {
            os << bytes;
            return llvm::Error::success();
          }))
    return std::move(e);
  PartInfo info;
  info.set_name(name);
  info.set_bytes(static_cast<int64_t>(bytes.size()));
  info.set_xxh3(hashOf(bytes));
  return info;
}

llvm::Error distributed::readPart(const std::string &dir, int64_t step,
                                  const std::string &name,
                                  const PartInfo &expected,
                                  google::protobuf::MessageLite &message) {
  if (dir.empty())
    return partError("this process has no --checkpoint directory");
  std::string path = partPath(dir, step, name);
  if (expected.name() != name)
    return partError(path + ": the checkpoint's part for this process is '" +
                     expected.name() + "'");
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return partError(path + ": " + buffer.getError().message());
  llvm::StringRef bytes = (*buffer)->getBuffer();
  if (static_cast<int64_t>(bytes.size()) != expected.bytes() ||
      hashOf(bytes) != expected.xxh3())
    return partError(path + ": not the part the checkpoint names (" +
                     llvm::Twine(bytes.size()) +
                     " bytes, the checkpoint says " +
                     llvm::Twine(expected.bytes()) + ", or another hash)");
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return partError(path + ": damaged");
  return llvm::Error::success();
}
