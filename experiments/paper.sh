#!/usr/bin/env bash
# Every study of the paper, then all tables (Markdown + CSV), Figs. 1-5 and reproduction.md
# in $OUT/paper, built from the Parquet files of this run only, and the studies beyond the
# paper (arm feed-forward, active damping: beyond_the_paper.md; --no-beyond skips them). Add
# --readme README.md to refresh the README's reproduction and beyond-the-paper tables.
set -euo pipefail
. "$(dirname "$0")/common.sh"
"$PYTHON" -m quadarm.reproduce --out "$OUT/paper" --jobs "$JOBS" "$@"
