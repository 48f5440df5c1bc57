//===- ReportHtml.cpp - the plan as a page of pictures --------------------===//
//
// hps-report format=html: one self-contained HTML file (inline SVG and CSS,
// no scripts, nothing fetched) that shows
//   - every layer in order as a cell coloured by its device type, one row
//     of cells per stage, with the stage's device, replicas and times;
//   - each stage's compute and data time (the longer one is its step);
//   - the plan's cost and throughput against every single-type plan (all
//     on the CPU type, all on the GPU type, ...) at the same floor;
//   - the optimal cost (the exact planner) over a sweep of floors up to
//     the most this plan's placement or a single-type plan reaches within
//     the device limits, with this plan on it.
// Hovering a cell shows its layer's figures (an SVG <title>).
//
//===----------------------------------------------------------------------===//

#include "PlanView.h"

#include "heterps/Planner/Exact.h"
#include "heterps/Planner/Placement.h"
#include "heterps/Support/Svg.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::hps;
namespace planner = heterps::planner;
using heterps::svg::colour;
using heterps::svg::escape;
using heterps::svg::num;

namespace {

/// Seconds in the unit that reads best.
std::string duration(double seconds) {
  if (!std::isfinite(seconds))
    return "-";
  if (seconds >= 1)
    return llvm::formatv("{0:F2} s", seconds).str();
  if (seconds >= 1e-3)
    return llvm::formatv("{0:F2} ms", seconds * 1e3).str();
  return llvm::formatv("{0:F1} us", seconds * 1e6).str();
}

std::string dollars(double v) {
  if (!std::isfinite(v))
    return "-";
  return v >= 1 ? llvm::formatv("${0:F2}", v).str()
                : llvm::formatv("${0}", llvm::format("%.3g", v)).str();
}

std::string rate(double samplesPerSecond) {
  return llvm::formatv("{0:F1} samples/s", samplesPerSecond).str();
}

constexpr const char *kStyle = R"(
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 1100px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.5em 0; }
td, th { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th { background: #f3f3f3; } td.name { text-align: left; }
.met { color: #117a37; } .missed { color: #b3261e; font-weight: bold; }
svg text { font-family: sans-serif; font-size: 12px; fill: #222; }
svg .axis { stroke: #888; stroke-width: 1; }
svg .layer:hover { stroke: #000; stroke-width: 2; }
.legend span { display: inline-block; margin-right: 1.2em; }
.legend i { display: inline-block; width: 0.9em; height: 0.9em;
            margin-right: 0.3em; vertical-align: -0.1em; }
)";

/// Device types that appear in a legend, in spec order.
void printLegend(llvm::raw_ostream &os, const planner::ClusterSpec &spec) {
  os << "<p class=\"legend\">";
  for (auto [i, d] : llvm::enumerate(spec.deviceTypes))
    os << "<span><i style=\"background:" << colour(i) << "\"></i>"
       << escape(d.name) << " (" << escape(d.kind) << ", $"
       << llvm::formatv("{0}", d.pricePerHour) << "/h, up to " << d.maxCount
       << ")</span>";
  os << "</p>\n";
}

/// One row per stage: its label, then a cell per layer (wrapping).
void printLayers(llvm::raw_ostream &os, const PlanView &v) {
  constexpr double kCell = 12, kGap = 2, kLabel = 330, kWidth = 1060;
  constexpr double kRowGap = 14;
  const int perLine =
      std::max(1, static_cast<int>((kWidth - kLabel) / (kCell + kGap)));
  double height = 0;
  for (const planner::Stage &s : v.stages) {
    int lines = (static_cast<int>(s.layers.size()) + perLine - 1) / perLine;
    height += std::max(2, lines) * (kCell + kGap) + kRowGap;
  }
  os << "<svg id=\"layers\" xmlns=\"http://www.w3.org/2000/svg\" width=\""
     << num(kWidth) << "\" height=\"" << num(height) << "\" role=\"img\">\n";
  double y = 0;
  for (auto [si, s] : llvm::enumerate(v.stages)) {
    const planner::StageTimes &t = v.figures.stages[si];
    const planner::DeviceType &d = v.spec.deviceTypes[s.deviceType];
    int lines = (static_cast<int>(s.layers.size()) + perLine - 1) / perLine;
    double rowHeight = std::max(2, lines) * (kCell + kGap);
    os << "<g class=\"stage\" data-stage=\"" << si << "\">\n";
    os << "<rect x=\"0\" y=\"" << num(y) << "\" width=\"" << num(kWidth)
       << "\" height=\"" << num(rowHeight) << "\" fill=\""
       << (si % 2 ? "#f7f7f7" : "#ffffff") << "\"/>\n";
    os << "<text x=\"4\" y=\"" << num(y + 12) << "\">stage " << si << ": "
       << escape(d.name) << " x" << s.replicas << ", " << s.layers.size()
       << " layer" << (s.layers.size() == 1 ? "" : "s") << "</text>\n";
    os << "<text x=\"4\" y=\"" << num(y + 26) << "\">compute " << duration(t.ct)
       << ", data " << duration(t.dt) << ", step " << duration(t.et())
       << "</text>\n";
    for (auto [j, l] : llvm::enumerate(s.layers)) {
      const planner::Layer &layer = v.layers[l];
      double x = kLabel + static_cast<double>(j % perLine) * (kCell + kGap);
      double cy = y + static_cast<double>(j / perLine) * (kCell + kGap);
      const planner::LayerCost &c = layer.costs[s.deviceType];
      os << "<rect class=\"layer\" data-layer=\"" << escape(layer.name)
         << "\" x=\"" << num(x) << "\" y=\"" << num(cy) << "\" width=\""
         << num(kCell) << "\" height=\"" << num(kCell) << "\" fill=\""
         << colour(s.deviceType) << "\"><title>" << escape(layer.name) << " ("
         << escape(layer.kind)
         << "): " << llvm::formatv("{0:E2}", static_cast<double>(layer.flops))
         << " FLOPs, " << layer.paramBytes << " parameter bytes; on "
         << escape(d.name) << " compute " << duration(c.oct) << ", data "
         << duration(c.odt) << "</title></rect>\n";
    }
    os << "</g>\n";
    y += rowHeight + kRowGap;
  }
  os << "</svg>\n";
}

/// Horizontal bars of each stage's compute and data time.
void printStageTimes(llvm::raw_ostream &os, const PlanView &v) {
  constexpr double kLabel = 150, kWidth = 1060, kBar = 10, kRow = 30;
  double longest = 0;
  for (const planner::StageTimes &t : v.figures.stages)
    longest = std::max({longest, t.ct, t.dt});
  if (longest <= 0)
    longest = 1;
  double scale = (kWidth - kLabel - 300) / longest;
  double height = kRow * static_cast<double>(v.stages.size()) + 24;
  os << "<svg id=\"stage-times\" xmlns=\"http://www.w3.org/2000/svg\" "
        "width=\""
     << num(kWidth) << "\" height=\"" << num(height) << "\" role=\"img\">\n";
  for (auto [si, s] : llvm::enumerate(v.stages)) {
    const planner::StageTimes &t = v.figures.stages[si];
    double y = kRow * static_cast<double>(si);
    os << "<text x=\"0\" y=\"" << num(y + 16) << "\">stage " << si << " ("
       << escape(v.spec.deviceTypes[s.deviceType].name) << " x" << s.replicas
       << ")</text>\n";
    os << "<rect class=\"compute\" x=\"" << num(kLabel) << "\" y=\""
       << num(y + 2) << "\" width=\"" << num(std::max(1.0, t.ct * scale))
       << "\" height=\"" << num(kBar) << "\" fill=\"" << colour(s.deviceType)
       << "\"><title>compute " << duration(t.ct) << "</title></rect>\n";
    os << "<rect class=\"data\" x=\"" << num(kLabel) << "\" y=\""
       << num(y + 3 + kBar) << "\" width=\"" << num(std::max(1.0, t.dt * scale))
       << "\" height=\"" << num(kBar) << "\" fill=\"" << colour(s.deviceType)
       << "\" fill-opacity=\"0.4\"><title>data " << duration(t.dt)
       << "</title></rect>\n";
    os << "<text x=\"" << num(kLabel + std::max(t.ct, t.dt) * scale + 6)
       << "\" y=\"" << num(y + 16) << "\">" << duration(t.ct) << " / "
       << duration(t.dt) << ", " << rate(v.figures.stageThroughput[si])
       << "</text>\n";
  }
  os << "<text x=\"" << num(kLabel) << "\" y=\"" << num(height - 4)
     << "\">solid: compute time, pale: data time (per batch of "
     << v.spec.job.batchSize << "; the longer one sets the stage's step)"
     << "</text>\n";
  os << "</svg>\n";
}

struct Alternative {
  std::string name;
  planner::PlacementEval eval;
};

/// The plan and every all-on-one-type plan at the same floor: a table and
/// bars of cost.
void printBaselines(llvm::raw_ostream &os, const PlanView &v) {
  planner::PlacementProblem problem(v.spec, v.layers, v.limit);
  std::vector<Alternative> rows;
  planner::PlacementEval self;
  self.feasible = v.feasible;
  self.cost = v.figures.cost;
  self.throughput = v.figures.throughput;
  rows.push_back({"this plan", self});
  for (auto [t, d] : llvm::enumerate(v.spec.deviceTypes))
    rows.push_back({"all on " + d.name + " (" + d.kind + ")",
                    planner::placeAllOnType(problem, t).eval});

  os << "<table id=\"baselines\"><tr><th>plan</th><th>cost</th>"
        "<th>throughput</th><th>floor "
     << llvm::formatv("{0:F1}", v.limit) << "</th></tr>\n";
  double highest = 0;
  for (const Alternative &a : rows) {
    if (a.eval.feasible)
      highest = std::max(highest, a.eval.cost);
    os << "<tr><td class=\"name\">" << escape(a.name) << "</td><td>"
       << (a.eval.feasible ? dollars(a.eval.cost) : "-") << "</td><td>"
       << rate(a.eval.throughput) << "</td><td class=\""
       << (a.eval.feasible ? "met\">met" : "missed\">missed") << "</td></tr>\n";
  }
  os << "</table>\n";
  if (highest <= 0)
    return;
  constexpr double kLabel = 220, kWidth = 1060, kRow = 24;
  double scale = (kWidth - kLabel - 120) / highest;
  os << "<svg id=\"baseline-costs\" xmlns=\"http://www.w3.org/2000/svg\" "
        "width=\""
     << num(kWidth) << "\" height=\""
     << num(kRow * static_cast<double>(rows.size())) << "\" role=\"img\">\n";
  for (auto [i, a] : llvm::enumerate(rows)) {
    double y = kRow * static_cast<double>(i);
    os << "<text x=\"0\" y=\"" << num(y + 15) << "\">" << escape(a.name)
       << "</text>\n";
    if (!a.eval.feasible) {
      os << "<text class=\"missed\" x=\"" << num(kLabel) << "\" y=\""
         << num(y + 15) << "\">misses the floor (best "
         << rate(a.eval.throughput) << ")</text>\n";
      continue;
    }
    // This plan in black, the single-type plans in their type's colour.
    const char *fill = i == 0 ? "#333333" : colour(i - 1);
    os << "<rect class=\"cost\" x=\"" << num(kLabel) << "\" y=\"" << num(y + 4)
       << "\" width=\"" << num(std::max(1.0, a.eval.cost * scale))
       << "\" height=\"14\" fill=\"" << fill << "\"/>\n<text x=\""
       << num(kLabel + a.eval.cost * scale + 6) << "\" y=\"" << num(y + 15)
       << "\">" << dollars(a.eval.cost) << "</text>\n";
  }
  os << "</svg>\n";
}

/// The most that this plan's placement or a plan on one device type
/// reaches within the device limits: the top of the sweep. (The exact
/// planner would find the true maximum, but a floor no plan meets is its
/// slowest case, up to a minute on 200 layers with four types.)
double reachableThroughput(const PlanView &v) {
  planner::PlacementProblem unbounded(v.spec, v.layers, 1e300);
  planner::Placement own(v.layers.size());
  for (const planner::Stage &s : v.stages)
    for (size_t l : s.layers)
      own[l] = s.deviceType;
  double best = unbounded.evaluate(own).throughput;
  for (size_t t = 0; t < v.spec.deviceTypes.size(); ++t)
    best =
        std::max(best, planner::placeAllOnType(unbounded, t).eval.throughput);
  return best;
}

/// The optimal cost at floors from far below this plan's up to the most
/// the limits let it or a single-type plan reach (a logarithmic axis:
/// floors span orders of magnitude), and this plan's point.
void printFloorSweep(llvm::raw_ostream &os, const PlanView &v) {
  constexpr int kPoints = 12;
  double best = reachableThroughput(v);
  if (!(best > 0) || !std::isfinite(best)) {
    os << "<p>No placement has a positive throughput within the device "
          "limits.</p>\n";
    return;
  }
  double low = best / 100;
  if (v.limit > 0 && v.limit / 4 < low)
    low = v.limit / 4;
  struct Point {
    double floor, cost;
  };
  std::vector<double> floors;
  for (int k = 0; k < kPoints; ++k)
    floors.push_back(low * std::pow(best / low, double(k) / (kPoints - 1)));
  if (v.limit > low && v.limit < best)
    floors.push_back(v.limit);
  std::sort(floors.begin(), floors.end());
  std::vector<Point> points;
  for (double floor : floors) {
    planner::SearchResult r =
        planner::placeExact(planner::PlacementProblem(v.spec, v.layers, floor));
    if (r.eval.feasible)
      points.push_back({floor, r.eval.cost});
  }
  if (points.empty())
    return;
  double maxCost = v.feasible ? v.figures.cost : 0;
  for (const Point &p : points)
    maxCost = std::max(maxCost, p.cost);
  constexpr double kLeft = 80, kTop = 10, kWidth = 700, kHeight = 280;
  auto px = [&](double floor) {
    return kLeft + std::log(floor / low) / std::log(best / low) * kWidth;
  };
  auto py = [&](double cost) {
    return kTop + kHeight - cost / maxCost * kHeight;
  };
  os << "<svg id=\"floor-sweep\" xmlns=\"http://www.w3.org/2000/svg\" "
        "width=\""
     << num(kLeft + kWidth + 40) << "\" height=\"" << num(kTop + kHeight + 50)
     << "\" role=\"img\">\n";
  os << "<line class=\"axis\" x1=\"" << num(kLeft) << "\" y1=\""
     << num(kTop + kHeight) << "\" x2=\"" << num(kLeft + kWidth) << "\" y2=\""
     << num(kTop + kHeight) << "\"/>\n<line class=\"axis\" x1=\"" << num(kLeft)
     << "\" y1=\"" << num(kTop) << "\" x2=\"" << num(kLeft) << "\" y2=\""
     << num(kTop + kHeight) << "\"/>\n";
  for (int tick = 0; tick <= 4; ++tick) {
    double cost = maxCost * tick / 4;
    double floor = low * std::pow(best / low, tick / 4.0);
    os << "<text x=\"" << num(kLeft - 6) << "\" y=\"" << num(py(cost) + 4)
       << "\" text-anchor=\"end\">" << dollars(cost) << "</text>\n";
    os << "<text x=\"" << num(px(floor)) << "\" y=\""
       << num(kTop + kHeight + 16) << "\" text-anchor=\"middle\">"
       << llvm::formatv("{0}", llvm::format("%.3g", floor)) << "</text>\n";
  }
  os << "<text x=\"" << num(kLeft + kWidth / 2) << "\" y=\""
     << num(kTop + kHeight + 38)
     << "\" text-anchor=\"middle\">throughput floor (samples/s, logarithmic)"
        "</text>\n";
  os << "<polyline fill=\"none\" stroke=\"#333\" stroke-width=\"2\" "
        "points=\"";
  for (const Point &p : points)
    os << num(px(p.floor)) << "," << num(py(p.cost)) << " ";
  os << "\"/>\n";
  for (const Point &p : points)
    os << "<circle class=\"optimum\" cx=\"" << num(px(p.floor)) << "\" cy=\""
       << num(py(p.cost)) << "\" r=\"3\" fill=\"#333\"><title>floor "
       << rate(p.floor) << ": optimal cost " << dollars(p.cost)
       << "</title></circle>\n";
  if (v.feasible && v.limit >= low && v.limit <= best)
    os << "<circle class=\"this-plan\" cx=\"" << num(px(v.limit)) << "\" cy=\""
       << num(py(v.figures.cost))
       << "\" r=\"6\" fill=\"none\" stroke=\"#D55E00\" stroke-width=\"3\">"
          "<title>this plan: floor "
       << rate(v.limit) << ", cost " << dollars(v.figures.cost)
       << "</title></circle>\n";
  os << "</svg>\n<p>Line: the cheapest plan (exact planner) at each floor, "
        "up to "
     << rate(best)
     << ", the most this plan's placement or a plan on one device type "
        "reaches within the device limits. Ring: this plan at its floor.</p>\n";
}

} // namespace

void mlir::hps::printHtml(llvm::raw_ostream &os, const PlanView &v) {
  const planner::PlanFigures &f = v.figures;
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<title>HeterPS plan: "
     << escape(v.model) << "</title>\n<style>" << kStyle
     << "</style></head>\n<body>\n<h1>Plan of " << escape(v.model)
     << "</h1>\n<p>Throughput " << rate(f.throughput) << " against a floor of "
     << rate(v.limit) << ": <span class=\""
     << (v.feasible ? "met\">met" : "missed\">NOT met") << "</span>. Cost "
     << dollars(f.cost) << " for " << v.spec.job.epochs << " epoch"
     << (v.spec.job.epochs == 1 ? "" : "s") << " of "
     << v.spec.job.samplesPerEpoch << " samples (" << duration(f.totalTime)
     << "), devices:";
  for (auto &[name, count] : f.devices)
    os << " " << escape(name) << " x" << count;
  os << ". " << v.layers.size() << " layers in " << v.stages.size() << " stage"
     << (v.stages.size() == 1 ? "" : "s");
  if (v.search)
    if (auto strategy = v.search.getAs<StringAttr>("strategy"))
      os << ", placed by " << escape(strategy.getValue());
  os << ".</p>\n";
  printLegend(os, v.spec);
  os << "<h2>Layers by stage</h2>\n";
  printLayers(os, v);
  os << "<h2>Stage times</h2>\n";
  printStageTimes(os, v);
  os << "<h2>Against plans on one device type</h2>\n";
  printBaselines(os, v);
  os << "<h2>Cost versus throughput floor</h2>\n";
  printFloorSweep(os, v);
  os << "</body></html>\n";
}
