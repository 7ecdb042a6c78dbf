// Renders fabric-probe lint's checks for people (aligned text, one line per check) and
// for programs (--json).
#pragma once

#include <string>
#include <vector>

#include "probes/lint/lint.h"

namespace fabric::probes {

// One line per check: verdict, id, subject and message, in aligned columns, then a
// summary line ("7 checks: 5 pass, 1 warn, 0 fail, 1 unknown").
std::string render_lint_text(const std::vector<LintCheck>& checks);

// {"schema_version": 1, "checks": [{"id", "verdict", "subject", "message"}],
//  "summary": {"pass", "warn", "fail", "unknown"}, "ok": bool (no check failed)}
std::string render_lint_json(const std::vector<LintCheck>& checks);

} // namespace fabric::probes
