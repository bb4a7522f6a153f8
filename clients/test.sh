#!/usr/bin/env bash
# Installs each client's pinned dependencies from its registry and runs its
# end-to-end tests against the real origin and sidecar binaries.
#
#   clients/test.sh                 all clients: python, node, java
#   clients/test.sh python node     only those
#
# Builds the Go binaries with `make build` when bin/ lacks them, unless
# LOOKAHEAD_BIN points at a directory that holds them. Runs every client even
# after one fails, prints each one's elapsed seconds, and exits non-zero when
# any failed.
set -uo pipefail

clients="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$clients/.." && pwd)"
langs=("$@")
((${#langs[@]})) || langs=(python node java)

export LOOKAHEAD_BIN="${LOOKAHEAD_BIN:-$repo/bin}"
if [ ! -x "$LOOKAHEAD_BIN/origin" ] || [ ! -x "$LOOKAHEAD_BIN/sidecar" ]; then
  if [ "$LOOKAHEAD_BIN" != "$repo/bin" ]; then
    echo "clients: LOOKAHEAD_BIN=$LOOKAHEAD_BIN has no origin and sidecar binaries" >&2
    exit 1
  fi
  echo "--- building the Go binaries (make build)"
  start=$(date +%s)
  make -C "$repo" build || exit 1
  echo "--- go build: ok in $(($(date +%s) - start))s"
fi

test_python() {
  cd "$clients/python" || return 1
  local py="${PYTHON:-python3.11}"
  command -v "$py" >/dev/null || py=python3
  if [ ! -x .venv/bin/python ]; then
    "$py" -m venv .venv || return 1
  fi
  .venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt || return 1
  # The committed stubs must match api/proto.
  PYTHON=.venv/bin/python ./generate.sh --check || return 1
  .venv/bin/python -m pytest -q -p no:cacheprovider
}

test_node() {
  cd "$clients/node" || return 1
  npm ci --no-audit --no-fund --loglevel=error || return 1
  # The shipped API descriptor must match api/proto, and the TypeScript
  # example must type-check against the shipped .d.ts.
  node scripts/generate.js --check || return 1
  npm run --silent typecheck || return 1
  npm test --silent
}

test_java() {
  cd "$clients/java" || return 1
  # install: test, then publish dev.lookahead:lookahead-client to the local
  # Maven repository, from which the separate example project resolves it.
  mvn -q -B -Dstyle.color=never install
  local rc=$?
  if ((rc == 0)); then
    mvn -q -B -Dstyle.color=never -f example/pom.xml package || rc=1
    [ -f example/target/lookahead-example-0.1.0-SNAPSHOT.jar ] || { echo "java: example jar not built" >&2; rc=1; }
  fi
  # -q hides surefire's own summary: print its counts, so a run that
  # executed no test, or skipped some, shows.
  local report
  for report in target/surefire-reports/TEST-*.xml; do
    [ -f "$report" ] || { echo "java: no surefire report: no test ran" >&2; return 1; }
    grep -o '<testsuite [^>]*>' "$report" | grep -o ' \(name\|tests\|failures\|errors\|skipped\)="[^"]*"' | tr -d '\n'
    echo
    if grep -o '<testsuite [^>]*>' "$report" | grep -q ' skipped="[1-9]'; then
      echo "java: skipped tests do not count as passing" >&2
      rc=1
    fi
  done
  return $rc
}

passed=0 failed=0
summary=()
for lang in "${langs[@]}"; do
  if ! declare -F "test_$lang" >/dev/null; then
    echo "clients: unknown client '$lang' (python, node, java)" >&2
    exit 2
  fi
  echo "--- $lang"
  start=$(date +%s)
  ("test_$lang")
  rc=$?
  secs=$(($(date +%s) - start))
  if ((rc == 0)); then
    passed=$((passed + 1))
    summary+=("$lang: ok in ${secs}s")
  else
    failed=$((failed + 1))
    summary+=("$lang: FAILED (exit $rc) in ${secs}s")
  fi
  echo "--- ${summary[-1]}"
done

echo "--- summary"
printf '%s\n' "${summary[@]}"
echo "clients: $passed passed, $failed failed"
((failed == 0))
