//===- AtomicFile.h - files replaced whole or not at all --------*- C++ -*-===//
//
// A trained model, a checkpoint or a report is written to a temporary file
// next to its destination, flushed to disk (fsync) and renamed over it, so
// a kill -9 or a machine's crash while writing leaves the old file whole. The
// temporary file is named after the writing process (DEST.tmp-PID): a later
// save to the same destination removes what a killed process left behind.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_ATOMICFILE_H
#define HETERPS_RUNTIME_ATOMICFILE_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace heterps::runtime {

/// An error unless `path` can be replaced by writeFileAtomically: it is not
/// a directory and a file can be created next to it. Called before long
/// work, so that a bad path does not cost the work.
llvm::Error checkCanReplace(llvm::StringRef path);

/// Writes `path` through `write` into a temporary file that is renamed
/// over `path` once complete (removed on failure, on SIGINT/SIGTERM, or by
/// the next save after a kill).
llvm::Error
writeFileAtomically(llvm::StringRef path,
                    llvm::function_ref<llvm::Error(llvm::raw_ostream &)> write);

/// `value` as JSON indented by 2, with a final newline, written as
/// writeFileAtomically does (reports, profiles, placements).
llvm::Error writeJsonFileAtomically(llvm::StringRef path,
                                    const llvm::json::Value &value);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_ATOMICFILE_H
