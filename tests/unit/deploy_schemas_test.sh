#!/usr/bin/env bash
# deploy/ against Kubernetes' own OpenAPI schemas and the CRDs' (tests/deploy/schema): every
# object valid, and the validator itself rejecting each object of tests/data/deploy/invalid.
#   deploy_schemas_test.sh REPO
set -euo pipefail
repo=${1:?usage: deploy_schemas_test.sh REPO}
validator=$repo/tests/deploy/schema/validate_manifests.mjs
command -v node >/dev/null || { echo "node is missing: run scripts/setup.sh" >&2; exit 1; }
node "$validator" --expect-invalid "$repo"/tests/data/deploy/invalid/*.yaml
node "$validator" "$repo/deploy"
