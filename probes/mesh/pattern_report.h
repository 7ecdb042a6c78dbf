// The pattern mesh's report (pattern_mesh.h) in four forms, bounded at any size: a text
// summary and a JSON summary (the plan, the median and the low limit, the verdict with
// its evidence, the first failures), every measured pair in CSV for a file, and an SVG
// heatmap aggregated by leaf (or by blocks of hosts when they have no leaves).
#pragma once

#include <string>
#include <vector>

#include "common/json.h"
#include "common/result.h"
#include "libs/pair_schedules/mesh_report.h"
#include "probes/mesh/pattern_mesh.h"

namespace fabric::probes {

// At most this many failures in the text and JSON; all of them in the CSV.
inline constexpr std::size_t kMaxListedFailures = 20;
// A heatmap has at most this many rows: hosts without leaves are grouped in blocks.
inline constexpr std::size_t kMaxHeatmapGroups = 64;

std::string render_pattern_text(const PatternMeshReport& report);

// {"metric", "unit", "better", "pattern", "pattern_rounds", "follow_up_rounds",
//  "results", "median", "low_limit", "low_results",
//  "verdict": {"kind", "text", "hosts": [...], "leaf", "candidates": [...],
//              "evidence": [{"source", "destination", "round", "value", "why"}]},
//  "failures": {"count", "first": [{"source", "destination", "error"}]}}
void write_pattern_json(json::Writer& out, const PatternMeshReport& report);
// {"schema_version", "test": "mesh", "hosts": [...], "tests": [write_pattern_json...]}
std::string render_pattern_reports_json(const std::vector<PatternMeshReport>& reports);

// RFC 4180: "round,source,destination,source_leaf,destination_leaf,value,low,error", one
// row per measured pair, the follow-up rounds after the pattern's.
std::string render_pattern_csv(const PatternMeshReport& report);

// Medians between groups (leaves, or blocks of consecutive hosts), the pairs inside a
// group on the diagonal; the verdict's node, leaf or path flagged. A mesh of at most
// kMaxHeatmapGroups hosts without leaves keeps one row per host.
MeshReport group_pattern_report(const PatternMeshReport& report);
std::string render_pattern_svg(const PatternMeshReport& report);

// A system error when a pair had no result (exit 2), else below threshold when a fault
// was found (exit 3), else Ok.
Result<void> pattern_verdict(const std::vector<PatternMeshReport>& reports);

} // namespace fabric::probes
