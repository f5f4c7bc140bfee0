#!/usr/bin/env bash
# CI: the README's first command, `pip install .` (no torch, no transformers), in a fresh venv; there
#   (a) the tests that need only the core install (`-m plain`: Hub push and offline error messages), and
#   (b) a smoke run of the main job: `judge` against the local OpenAI-compatible test server, then `report`.
# Everything runs from a temporary folder, so it is the installed package that is imported, not the checkout.
# Needs LFRQA_DATA_DIR (the pinned LFRQA files; .ci/run sets ../shared/lfrqa).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
: "${LFRQA_DATA_DIR:?set LFRQA_DATA_DIR to a folder with the pinned LFRQA files (../shared/lfrqa)}"
export LFRQA_DATA_DIR PIP_DISABLE_PIP_VERSION_CHECK=1

WORK="$(mktemp -d "${TMPDIR:-/tmp}/rag-qa-arena-plain.XXXXXX")"
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

echo "plain install: fresh venv in $WORK"
python -m venv "$WORK/venv"
PY="$WORK/venv/bin/python"
BIN="$WORK/venv/bin"
"$PY" -m pip install -q "$ROOT" pytest pytest-timeout
"$PY" -m pip check
if ! "$PY" -c 'import importlib.util as u, sys; sys.exit(any(u.find_spec(m) for m in ("torch", "transformers", "colbert")))'; then
  echo "error: \`pip install .\` installed torch, transformers or colbert-ai: they belong in the extras" >&2
  exit 1
fi

# Offline, and every cache inside $WORK.
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_HOME="$WORK/hf" HF_DATASETS_CACHE="$WORK/hf/datasets" \
  RAG_QA_ARENA_CACHE="$WORK/cache"
unset OPENAI_API_KEY OPENAI_BASE_URL

# (a) The core-install tests, from a copy of tests/ (pyproject.toml for the pytest settings and markers).
cp -r "$ROOT/tests" "$ROOT/pyproject.toml" "$WORK/"
find "$WORK/tests" -name __pycache__ -prune -exec rm -rf {} +
# Exit code 5 (no test collected) is an error here: the `plain` marker must select the tests.
(cd "$WORK" && "$PY" -m pytest -q -p no:cacheprovider -m plain tests)

# (b) Smoke run: 3 LFRQA fiqa questions answered by a "system", judged by the local test server.
cd "$WORK"
"$PY" - <<'EOF'
import json

import lfrqa

rows = lfrqa.load("fiqa").select(range(3))
with open("preds.jsonl", "w", encoding="utf-8") as handle:
    for row in rows:
        handle.write(json.dumps({"qid": row["qid"], "answer": "An index fund tracks a market index."}) + "\n")
EOF
"$PY" -m tests.openai_server --url-file "$WORK/server.url" &
SERVER_PID=$!
for _ in $(seq 1 100); do [ -s "$WORK/server.url" ] && break; sleep 0.1; done
[ -s "$WORK/server.url" ] || { echo "error: the test server did not start" >&2; exit 1; }
BASE_URL="$(cat "$WORK/server.url")"

OPENAI_API_KEY="sk-test-plain-install" "$BIN/rag-qa-arena" judge --predictions preds.jsonl \
  --judge openai:test-model --base-url "$BASE_URL" --out "$WORK/runs/smoke" --no-progress
"$BIN/rag-qa-arena" report "$WORK/runs/smoke" --out "$WORK/leaderboard"
test -s "$WORK/runs/smoke/summary.json" || { echo "error: judge wrote no summary.json" >&2; exit 1; }
test -s "$WORK/leaderboard/leaderboard.json" || { echo "error: report wrote no leaderboard.json" >&2; exit 1; }
"$PY" -c 'import json, sys; board = json.load(open(sys.argv[1])); assert board, "empty leaderboard"' \
  "$WORK/leaderboard/leaderboard.json"
echo "plain install: ok (core tests passed; judge + report smoke run wrote leaderboard.json)"
