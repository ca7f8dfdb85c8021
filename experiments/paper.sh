#!/usr/bin/env bash
# The studies of the reproduction and their tables (Markdown + CSV) and figures in $OUT/paper,
# built from the Parquet files of this run only:
#   paper.sh --studies paper    the paper's studies, Tables II-III, Figs. 1-5, reproduction.md
#   paper.sh --studies beyond   the studies beyond the paper, their tables and beyond.md
#   paper.sh --studies all      both (the default)
# Add --readme to refresh every generated block of README.md and docs/*.md.
set -euo pipefail
. "$(dirname "$0")/common.sh"
"$PYTHON" -m quadarm.reproduce --out "$OUT/paper" --jobs "$JOBS" "$@"
