//===- Profile.cpp - read measured per-layer costs ------------------------===//

#include "heterps/Planner/Profile.h"

#include "heterps/Support/NestingDepth.h"
#include "heterps/Support/PrintableLine.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <limits>

using namespace heterps::planner;

static llvm::Error profileError(llvm::StringRef filename,
                                const llvm::Twine &what) {
  return heterps::printableError(filename + ": " + what);
}

llvm::Expected<Profile>
heterps::planner::parseProfile(llvm::StringRef text, llvm::StringRef filename) {
  if (llvm::Error e = checkNestingDepth(text, filename))
    return std::move(e);
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(text);
  if (!json)
    return profileError(filename,
                        "invalid JSON: " + llvm::toString(json.takeError()));
  const llvm::json::Object *nodes = json->getAsObject();
  if (!nodes)
    return profileError(filename, "expected an object keyed by node name");
  Profile profile;
  for (const auto &[node, devices] : *nodes) {
    const llvm::json::Object *byDevice = devices.getAsObject();
    if (!byDevice)
      return profileError(filename, "node '" + node.str() +
                                        "': expected an object keyed by "
                                        "device type");
    for (const auto &[device, fields] : *byDevice) {
      std::string where =
          "node '" + node.str() + "', device type '" + device.str() + "'";
      const llvm::json::Object *obj = fields.getAsObject();
      if (!obj)
        return profileError(filename, where + ": expected an object");
      LayerCost cost;
      struct Field {
        const char *name;
        double *slot;
      } known[] = {{"oct_s", &cost.oct},
                   {"odt_s", &cost.odt},
                   {"alpha", &cost.alpha},
                   {"beta", &cost.beta},
                   {"b0", &cost.b0}};
      for (const auto &entry : *obj)
        if (llvm::none_of(
                known, [&](const Field &f) { return entry.first == f.name; }))
          return profileError(filename, where + ": unknown key '" +
                                            entry.first.str() + "'");
      for (const Field &f : known) {
        std::optional<double> v = obj->getNumber(f.name);
        if (!v)
          return profileError(filename,
                              where + ": missing number '" + f.name + "'");
        *f.slot = *v;
      }
      // Written so that NaN fails every test.
      auto in = [](double x, double lo, double hi) {
        return std::isfinite(x) && x >= lo && x <= hi;
      };
      double max = std::numeric_limits<double>::max();
      if (!in(cost.oct, 0, max) || !in(cost.odt, 0, max) ||
          !in(cost.b0, 0, max) || cost.b0 == 0 || !in(cost.alpha, 0, 1) ||
          !in(cost.beta, 0, 1))
        return profileError(filename,
                            where + ": need oct_s, odt_s >= 0, b0 > 0 and "
                                    "alpha, beta in [0, 1]");
      profile[node.str()][device.str()] = cost;
    }
  }
  return profile;
}

llvm::Expected<Profile> heterps::planner::loadProfile(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return profileError(path, "cannot open: " + buffer.getError().message());
  return parseProfile((*buffer)->getBuffer(), path);
}
