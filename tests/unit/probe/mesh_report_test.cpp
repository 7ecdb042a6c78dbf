// The mesh report's four forms, each read back the way its consumer would: the text
// matrix's columns line up, JSON and CSV parse to the same numbers, and the SVG is
// well-formed XML that names every host (with names that need escaping).
#include <algorithm>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "common/json.h"
#include "common/subprocess.h"
#include "libs/pair_schedules/mesh_report.h"

namespace fabric::probes {
namespace {

// Host names chosen to need CSV quoting and XML escaping.
const std::vector<std::string> kHosts = {"gpu-01", "gpu,02", "gpu<03>&\"x\"", "gpu-04", "gpu-05"};

MeshReport sample_report() {
  MeshReport r;
  r.hosts = kHosts;
  r.metric = "rdma_bw";
  r.unit = "Gb/s";
  r.matrix = MeshMatrix(5, std::vector<std::optional<double>>(5));
  for (std::size_t i = 0; i < 5; ++i) {
    for (std::size_t j = 0; j < 5; ++j) {
      if (i != j) r.matrix[i][j] = 95.0 + 0.1 * static_cast<double>(i + j);
    }
  }
  r.matrix[1][2] = 12.345678901234;
  r.matrix[3][0] = std::nullopt;
  auto outliers = find_outliers(r.matrix);
  EXPECT_TRUE(outliers.ok());
  r.outliers = *outliers;
  r.retests = {{1, 2, 12.5, ""}, {2, 1, std::nullopt, "timeout after 10 s"}};
  r.failures = {{3, 0, "connection refused by gpu-01:18515"}};
  return r;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

TEST(MeshReport, TextMatrixIsAlignedAndMarksProblems) {
  MeshReport r = sample_report();
  ASSERT_EQ(r.outliers.cells.size(), 1u);
  std::string text = render_mesh_text(r);
  auto lines = lines_of(text);
  ASSERT_GE(lines.size(), 7u) << text;
  EXPECT_EQ(lines[0], "rdma_bw (Gb/s): rows are sources, columns destinations");
  // Header and five rows: equal length, and every column ends at the same offset.
  for (std::size_t k = 2; k <= 6; ++k)
    EXPECT_EQ(lines[k].size(), lines[1].size()) << text;
  EXPECT_NE(lines[2].find("     -  "), std::string::npos) << text; // diagonal
  EXPECT_EQ(lines[3].rfind("gpu,02", 0), 0u);
  EXPECT_NE(lines[3].find("*12.3"), std::string::npos) << text;
  EXPECT_NE(lines[5].find(" x"), std::string::npos) << text; // gpu-04 -> gpu-01 failed
  EXPECT_NE(text.find("* slow pair gpu,02 -> gpu<03>&\"x\": 12.3 Gb/s; 12.35 is"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("retest gpu,02 -> gpu<03>&\"x\": 12.5 Gb/s (first run 12.3)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("retest gpu<03>&\"x\" -> gpu,02: failed: timeout after 10 s"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("x no result gpu-04 -> gpu-01: connection refused"), std::string::npos);
}

// One dead host among five: one line naming it and the pairs it cost, not eight chains;
// a failed pair between live hosts keeps its own line.
TEST(MeshReport, ADeadHostIsOneLine) {
  MeshReport r = sample_report();
  r.failures.clear();
  for (std::size_t other = 0; other < r.hosts.size(); ++other) {
    if (other == 4) continue;
    r.matrix[4][other] = r.matrix[other][4] = std::nullopt;
    r.failures.push_back({4, other, "tcp_bw to gpu-05: connecting: Connection refused"});
    r.failures.push_back({other, 4, "tcp_bw to gpu-05: connecting: Connection refused"});
  }
  r.failures.push_back({1, 2, "timeout after 10 s"});
  std::string text = render_mesh_text(r);
  EXPECT_EQ(text.find("x no result gpu-05 ->"), std::string::npos) << text;
  const std::string line = "x no result for host gpu-05 in any of its 8 pairs; first: tcp_bw to "
                           "gpu-05: connecting: Connection refused (every error: --log-level "
                           "debug)\n";
  EXPECT_NE(text.find(line), std::string::npos) << text;
  EXPECT_EQ(text.find("gpu-05 in any"), text.rfind("gpu-05 in any")) << text;
  EXPECT_NE(text.find("x no result gpu,02 -> gpu<03>&\"x\": timeout after 10 s"), std::string::npos)
      << text;
}

TEST(MeshReport, TextMarksSlowHostsAndSaysWhenAllIsWell) {
  MeshReport r = sample_report();
  r.outliers = {};
  r.retests.clear();
  EXPECT_NE(render_mesh_text(r).find("no outliers"), std::string::npos);
  FlaggedHost host;
  host.host = 4;
  host.reason = "as a source ...";
  r.outliers.hosts.push_back(host);
  std::string text = render_mesh_text(r);
  EXPECT_NE(text.find("\n!gpu-05 "), std::string::npos) << text;
  EXPECT_NE(text.find("! slow host gpu-05: as a source ..."), std::string::npos) << text;
}

TEST(MeshReport, JsonReadsBackToTheSameReport) {
  MeshReport r = sample_report();
  auto doc = json::parse(render_mesh_json(r), "mesh report");
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  const auto& d = *doc;
  EXPECT_EQ(d["schema_version"].GetInt(), 1);
  EXPECT_STREQ(d["metric"].GetString(), "rdma_bw");
  EXPECT_STREQ(d["unit"].GetString(), "Gb/s");
  EXPECT_STREQ(d["better"].GetString(), "higher");
  ASSERT_EQ(d["hosts"].Size(), 5u);
  for (rapidjson::SizeType i = 0; i < 5; ++i)
    EXPECT_EQ(d["hosts"][i].GetString(), kHosts[i]);
  const auto& m = d["matrix"];
  ASSERT_EQ(m.Size(), 5u);
  for (rapidjson::SizeType i = 0; i < 5; ++i) {
    ASSERT_EQ(m[i].Size(), 5u);
    for (rapidjson::SizeType j = 0; j < 5; ++j) {
      if (r.matrix[i][j] && i != j) {
        EXPECT_EQ(m[i][j].GetDouble(), *r.matrix[i][j]);
      } else {
        EXPECT_TRUE(m[i][j].IsNull()) << i << "," << j;
      }
    }
  }
  const auto& cells = d["outliers"]["cells"];
  ASSERT_EQ(cells.Size(), 1u);
  EXPECT_STREQ(cells[0]["source"].GetString(), "gpu,02");
  EXPECT_STREQ(cells[0]["destination"].GetString(), "gpu<03>&\"x\"");
  EXPECT_EQ(cells[0]["value"].GetDouble(), 12.345678901234);
  EXPECT_TRUE(cells[0]["reason"].IsString());
  EXPECT_EQ(d["outliers"]["hosts"].Size(), 0u);
  ASSERT_EQ(d["retests"].Size(), 2u);
  EXPECT_EQ(d["retests"][0]["value"].GetDouble(), 12.5);
  EXPECT_TRUE(d["retests"][0]["error"].IsNull());
  EXPECT_TRUE(d["retests"][1]["value"].IsNull());
  EXPECT_STREQ(d["retests"][1]["error"].GetString(), "timeout after 10 s");
  ASSERT_EQ(d["failures"].Size(), 1u);
  EXPECT_STREQ(d["failures"][0]["source"].GetString(), "gpu-04");
}

// RFC 4180 fields of one record (quoted fields may hold commas and doubled quotes).
std::vector<std::string> csv_record(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    char ch = line[i];
    if (quoted) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        fields.back() += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      fields.emplace_back();
    } else {
      fields.back() += ch;
    }
  }
  return fields;
}

TEST(MeshReport, CsvReadsBackToTheSameNumbers) {
  MeshReport r = sample_report();
  std::string csv = render_mesh_csv(r);
  auto lines = lines_of(csv);
  ASSERT_EQ(lines.size(), 6u) << csv;
  for (auto& line : lines) {
    ASSERT_FALSE(line.empty());
    EXPECT_EQ(line.back(), '\r') << "RFC 4180 records end in CRLF";
    line.pop_back();
  }
  auto header = csv_record(lines[0]);
  ASSERT_EQ(header.size(), 6u) << lines[0];
  EXPECT_EQ(header[0], "source");
  for (std::size_t j = 0; j < 5; ++j)
    EXPECT_EQ(header[j + 1], kHosts[j]);
  for (std::size_t i = 0; i < 5; ++i) {
    auto row = csv_record(lines[i + 1]);
    ASSERT_EQ(row.size(), 6u) << lines[i + 1];
    EXPECT_EQ(row[0], kHosts[i]);
    for (std::size_t j = 0; j < 5; ++j) {
      if (i == j || !r.matrix[i][j]) {
        EXPECT_EQ(row[j + 1], "") << i << "," << j;
      } else {
        EXPECT_EQ(std::stod(row[j + 1]), *r.matrix[i][j]) << row[j + 1];
      }
    }
  }
}

// A small XML well-formedness check: balanced tags, quoted attributes, known entities,
// no stray '<' or '&'. Returns the unescaped content of every <text> element, or an
// error message starting with "error:".
std::vector<std::string> check_xml(const std::string& xml) {
  std::vector<std::string> stack, texts;
  auto unescape = [](const std::string& s, std::string& out) -> bool {
    static const std::map<std::string, char> kEntities = {
        {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '<') return false;
      if (s[i] != '&') {
        out += s[i];
        continue;
      }
      auto semi = s.find(';', i);
      if (semi == std::string::npos) return false;
      auto it = kEntities.find(s.substr(i + 1, semi - i - 1));
      if (it == kEntities.end()) return false;
      out += it->second;
      i = semi;
    }
    return true;
  };
  std::size_t pos = 0;
  bool seen_root = false;
  std::string open_text; // content of the innermost <text>, when inside one
  while (pos < xml.size()) {
    auto lt = xml.find('<', pos);
    std::string content = xml.substr(pos, lt == std::string::npos ? std::string::npos : lt - pos);
    std::string plain;
    if (!unescape(content, plain)) return {"error: bad character data: " + content};
    if (!stack.empty() && stack.back() == "text") open_text += plain;
    if (lt == std::string::npos) break;
    auto gt = xml.find('>', lt);
    if (gt == std::string::npos) return {"error: unterminated tag"};
    std::string tag = xml.substr(lt + 1, gt - lt - 1);
    pos = gt + 1;
    if (tag.rfind("?xml", 0) == 0) continue;
    if (tag.front() == '/') {
      if (stack.empty() || stack.back() != tag.substr(1)) return {"error: mismatched </" + tag};
      if (stack.back() == "text") texts.push_back(open_text);
      stack.pop_back();
      continue;
    }
    bool self_closing = tag.back() == '/';
    if (self_closing) tag.pop_back();
    std::string name = tag.substr(0, tag.find_first_of(" \n\t"));
    // Attributes: name="value" pairs, values without '<' and with valid entities.
    std::size_t a = name.size();
    while (a < tag.size()) {
      a = tag.find_first_not_of(" \n\t", a);
      if (a == std::string::npos) break;
      auto eq = tag.find("=\"", a);
      if (eq == std::string::npos) return {"error: unquoted attribute in <" + tag};
      auto end = tag.find('"', eq + 2);
      if (end == std::string::npos) return {"error: unterminated attribute in <" + tag};
      std::string value;
      if (!unescape(tag.substr(eq + 2, end - eq - 2), value)) return {"error: bad attribute"};
      a = end + 1;
    }
    if (stack.empty()) {
      if (seen_root) return {"error: two root elements"};
      seen_root = true;
    }
    if (!self_closing) {
      stack.push_back(name);
      if (name == "text") open_text.clear();
    }
  }
  if (!stack.empty()) return {"error: unclosed <" + stack.back() + ">"};
  return texts;
}

TEST(MeshReport, SvgIsWellFormedAndLabelsEveryHost) {
  MeshReport r = sample_report();
  std::string svg = render_mesh_svg(r);
  auto texts = check_xml(svg);
  ASSERT_FALSE(!texts.empty() && texts[0].rfind("error:", 0) == 0) << texts[0];
  for (const auto& host : kHosts) {
    // Each host labels a row and a column.
    EXPECT_EQ(std::count(texts.begin(), texts.end(), host), 2) << host;
  }
  EXPECT_NE(svg.find("gpu&lt;03&gt;&amp;&quot;x&quot;"), std::string::npos);
  // The one flagged cell is outlined (and the legend shows the outline once more).
  std::size_t outlined = 0;
  for (auto p = svg.find("stroke-width=\"3\""); p != std::string::npos;
       p = svg.find("stroke-width=\"3\"", p + 1))
    ++outlined;
  EXPECT_EQ(outlined, 2u);
  // A missing cell is grey, and the legend explains grey.
  EXPECT_NE(svg.find("gpu-04 -&gt; gpu-01: no result"), std::string::npos);
  EXPECT_NE(svg.find("fill=\"#bdbdbd\""), std::string::npos);
  EXPECT_NE(svg.find(">no result</text>"), std::string::npos);
  // The scale's two ends are labelled with the unit.
  EXPECT_NE(svg.find(">12.3 Gb/s</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">slow pair</text>"), std::string::npos);

  // Where Python is installed, its XML parser must agree.
  SubprocessOptions options;
  options.stdin_text = svg;
  auto py = run_subprocess({"python3", "-c",
                            "import sys, xml.dom.minidom as m\n"
                            "d = m.parseString(sys.stdin.buffer.read())\n"
                            "print(d.documentElement.tagName)\n"
                            "for t in d.getElementsByTagName('text'):\n"
                            "    print(''.join(c.data for c in t.childNodes))\n"},
                           options);
  if (py.ok() && py->exit_status != 127) {
    ASSERT_EQ(py->exit_status, 0) << py->stderr_text;
    auto lines = lines_of(py->stdout_text);
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(lines[0], "svg");
    for (const auto& host : kHosts)
      EXPECT_EQ(std::count(lines.begin(), lines.end(), host), 2) << host;
  }
}

TEST(MeshReport, SvgColoursFollowTheDirectionOfGood) {
  MeshReport r;
  r.hosts = {"a", "b"};
  r.metric = "rdma_lat";
  r.unit = "us";
  r.better = Better::kLower;
  r.matrix = {{std::nullopt, 2.0}, {10.0, std::nullopt}};
  std::string svg = render_mesh_svg(r);
  auto cell_fill = [&](const std::string& tip) {
    auto at = svg.find(tip);
    EXPECT_NE(at, std::string::npos) << tip;
    auto fill = svg.find("fill=\"", at);
    return svg.substr(fill + 6, 7);
  };
  EXPECT_EQ(cell_fill("a -&gt; b: 2.0 us"), "#1a9850");  // lowest latency: green
  EXPECT_EQ(cell_fill("b -&gt; a: 10.0 us"), "#d73027"); // highest: red
  auto texts = check_xml(svg);
  ASSERT_FALSE(texts.empty());
  EXPECT_NE(texts[0].rfind("error:", 0), 0u) << texts[0];
  EXPECT_NE(std::find(texts.begin(), texts.end(), "2.0 us"), texts.end()); // the scale's ends
  EXPECT_NE(std::find(texts.begin(), texts.end(), "10.0 us"), texts.end());
}

// The lab's two-node map: 0.047 and 0.059 Gb/s both read "0.1" at one fixed decimal, and the
// legend explained a slow host, an outline and grey cells that the map did not have.
TEST(MeshReport, CellsReadApartAndTheLegendListsOnlyWhatTheMapShows) {
  MeshReport r;
  r.hosts = {"node1", "node2"};
  r.metric = "rdma_bw";
  r.unit = "Gb/s";
  r.matrix = {{std::nullopt, 0.0469147}, {0.0591362, std::nullopt}};
  const std::string svg = render_mesh_svg(r);
  auto texts = check_xml(svg);
  ASSERT_FALSE(!texts.empty() && texts[0].rfind("error:", 0) == 0) << texts[0];
  auto shown = [&](const std::string& t) {
    return std::find(texts.begin(), texts.end(), t) != texts.end();
  };
  EXPECT_TRUE(shown("0.047")) << svg;
  EXPECT_TRUE(shown("0.059")) << svg;
  EXPECT_TRUE(shown("0.047 Gb/s")) << svg; // the scale's ends, rounded as the cells are
  EXPECT_TRUE(shown("0.059 Gb/s")) << svg;
  EXPECT_FALSE(shown("!host: slow host")) << svg;
  EXPECT_FALSE(shown("slow pair")) << svg;
  EXPECT_FALSE(shown("no result")) << svg;
  EXPECT_EQ(svg.find("stroke-width=\"3\""), std::string::npos);
  EXPECT_NE(render_mesh_text(r).find("0.047"), std::string::npos) << render_mesh_text(r);
}

TEST(MeshReport, ValuesThatDifferInTheThirdDigitPrintApart) {
  MeshReport r;
  r.hosts = {"a", "b", "c"};
  r.metric = "rdma_bw";
  r.unit = "Gb/s";
  r.matrix = {{std::nullopt, 94.1, 94.3}, {94.3, std::nullopt, 94.1}, {94.1, 94.3, std::nullopt}};
  const std::string text = render_mesh_text(r);
  EXPECT_NE(text.find("94.1"), std::string::npos) << text;
  EXPECT_NE(text.find("94.3"), std::string::npos) << text;
  r.matrix = {{std::nullopt, 94.0, 95.0}, {96.0, std::nullopt, 97.0}, {98.0, 99.0, std::nullopt}};
  const std::string whole = render_mesh_text(r); // two digits suffice: no decimals
  EXPECT_NE(whole.find(" 94 "), std::string::npos) << whole;
  EXPECT_EQ(whole.find("94.0"), std::string::npos) << whole;
}

} // namespace
} // namespace fabric::probes
