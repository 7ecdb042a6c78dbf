// The all-pairs report in four forms: a text matrix for a terminal, JSON, CSV for a
// spreadsheet, and a self-contained SVG heatmap.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "libs/pair_schedules/outliers.h"

namespace fabric::probes {

// A flagged pair measured again.
struct MeshRetest {
  std::size_t source = 0, destination = 0;
  std::optional<double> value; // nullopt when the retest failed
  std::string error;           // why it failed; "" otherwise
};

// A pair without a result.
struct MeshFailure {
  std::size_t source = 0, destination = 0;
  std::string error;
};

struct MeshReport {
  std::vector<std::string> hosts; // matrix rows and columns, in this order
  std::string metric;             // the test: "rdma_bw", "tcp_lat", ...
  std::string unit;               // "Gb/s" or "us"
  Better better = Better::kHigher;
  MeshMatrix matrix; // [source][destination]
  // Rows are groups of hosts (a leaf): the diagonal holds the pairs inside a group.
  bool self_pairs = false;
  OutlierReport outliers;
  std::vector<MeshRetest> retests;
  std::vector<MeshFailure> failures;
};

// Rows are sources, columns destinations; '-' on the diagonal, 'x' where no result,
// '*' before a flagged cell, '!' before a flagged host's name; then the flagged hosts and
// cells with their reasons, retests and failures.
std::string render_mesh_text(const MeshReport& report);

// {"schema_version": 1, "metric", "unit", "better": "higher"|"lower", "hosts": [...],
//  "matrix": [[null, 95.1, ...], ...],
//  "outliers": {"hosts": [{"host", "as_source", "as_destination", "source_median",
//                          "destination_median", "reason"}],
//               "cells": [{"source", "destination", "value", "row_median",
//                          "column_median", "reason"}]},
//  "retests": [{"source", "destination", "value", "error"}],
//  "failures": [{"source", "destination", "error"}]}
// Hosts are named everywhere; null stands for no value.
void write_mesh_json(json::Writer& out, const MeshReport& report);
std::string render_mesh_json(const MeshReport& report, bool pretty = true);

// RFC 4180: a header "source,<host>,<host>..." and one row per source; an empty field
// where there is no result (and on the diagonal). Values at full precision.
std::string render_mesh_csv(const MeshReport& report);

// A standalone SVG document: host labels on both axes, cells coloured from bad (red)
// through yellow to good (green) with the value written in them, a legend with the
// scale's two ends, no-result cells grey, flagged cells outlined, flagged hosts' labels
// in bold red, and a tooltip (<title>) per cell. The scale spans at least 20% of the best
// value (25% for latency), so that a few percent of noise does not look alarming.
std::string render_mesh_svg(const MeshReport& report);

// The pieces every mesh report shares. RFC 4180 quoting of one CSV field; the shortest
// text that reads back as the same double.
std::string mesh_csv_field(const std::string& field);
std::string exact_number(double value);
// {"schema_version": 1, "test": "mesh", "hosts": [...], "tests": [...]}, each test's
// object written by `write_test(writer, index)`.
std::string render_mesh_document(const std::vector<std::string>& hosts, std::size_t tests,
                                 const std::function<void(json::Writer&, std::size_t)>& write_test,
                                 bool pretty = true);

} // namespace fabric::probes
