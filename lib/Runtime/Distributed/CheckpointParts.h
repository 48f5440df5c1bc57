//===- CheckpointParts.h - a process's own part of a checkpoint -*- C++ -*-===//
//
// Internal to the distributed runtime. A shard or a worker writes its part
// of a checkpoint into DIR/step-N/NAME (its own --checkpoint directory; the
// name is its role's) atomically, and reads it back checked against the
// size and hash the coordinator's manifest recorded.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_DISTRIBUTED_CHECKPOINTPARTS_H
#define HETERPS_LIB_RUNTIME_DISTRIBUTED_CHECKPOINTPARTS_H

#include "heterps/Runtime/Distributed/Roles.h"
#include "heterps/Runtime/Distributed/Services.pb.h"

#include <google/protobuf/message_lite.h>

namespace heterps::runtime::distributed {

/// "ps0.pb", "worker-s1r0.pb".
std::string partName(const Role &role);

/// Writes `message` as `dir`/step-`step`/`name`; what it wrote.
llvm::Expected<PartInfo>
writePart(const std::string &dir, int64_t step, const std::string &name,
          const google::protobuf::MessageLite &message);

/// Reads `dir`/step-`step`/`name` into `message`, checked against
/// `expected` (its name, size and hash).
llvm::Error readPart(const std::string &dir, int64_t step,
                     const std::string &name, const PartInfo &expected,
                     google::protobuf::MessageLite &message);

} // namespace heterps::runtime::distributed

#endif // HETERPS_LIB_RUNTIME_DISTRIBUTED_CHECKPOINTPARTS_H
