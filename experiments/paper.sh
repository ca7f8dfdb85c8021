#!/usr/bin/env bash
# Every study of the paper, then all tables (Markdown + CSV), Figs. 1-5 and reproduction.md
# in $OUT/paper, built from the Parquet files of this run only. Add --readme README.md to
# refresh the README's reproduction table.
set -euo pipefail
. "$(dirname "$0")/common.sh"
"$PYTHON" -m quadarm.reproduce --out "$OUT/paper" --jobs "$JOBS" "$@"
