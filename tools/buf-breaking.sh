#!/usr/bin/env bash
# buf breaking of api/proto (the working tree) against an earlier version
# from git history, with buf.yaml's rules (FILE). Which version:
#
#   BUF_BREAKING_AGAINST=<rev>   that one (a tag, a commit, origin/main, ...);
#   on a branch                  its merge base with main (or origin/main):
#                                everything the branch changes;
#   on main, or without a main   the previous commit (HEAD~1): what the last
#                                commit changed.
#
# The reference is read with `git archive`, so a detached HEAD works, and a
# shallow clone is deepened by one commit when the parent is missing. A
# deliberate breaking change: land it with BUF_BREAKING_AGAINST set to the
# commit itself, and say so in its message.
set -euo pipefail
cd "$(dirname "$0")/.."

against="${BUF_BREAKING_AGAINST:-}"
if [ -z "$against" ]; then
  against=HEAD~1
  for ref in refs/heads/main refs/remotes/origin/main; do
    git rev-parse -q --verify "$ref^{commit}" >/dev/null || continue
    base="$(git merge-base HEAD "$ref" || true)"
    if [ -n "$base" ] && [ "$base" != "$(git rev-parse HEAD)" ]; then
      against="$base"
    fi
    break
  done
fi

if ! git rev-parse -q --verify "$against^{commit}" >/dev/null; then
  if [ "$(git rev-parse --is-shallow-repository)" = true ]; then
    git fetch -q --deepen=1 || true
  fi
  if ! git rev-parse -q --verify "$against^{commit}" >/dev/null; then
    if [ "$against" = HEAD~1 ] && [ "$(git rev-parse --is-shallow-repository)" = false ]; then
      echo "buf breaking: HEAD is the first commit, nothing earlier to compare with"
      exit 0
    fi
    echo "buf breaking: $against is not in this clone; fetch more history or set BUF_BREAKING_AGAINST" >&2
    exit 1
  fi
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if ! git archive "$against" buf.yaml api/proto 2>/dev/null | tar -x -C "$tmp"; then
  echo "buf breaking: $against has no buf.yaml and api/proto, nothing to compare with"
  exit 0
fi
echo "buf breaking: api/proto against $(git rev-parse --short "$against") ($against)"
go tool -modfile=tools/go.mod buf breaking --against "$tmp"
