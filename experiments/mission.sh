#!/usr/bin/env bash
# The paper's 36 s demonstration mission (nominal gains): one run, summary printed.
set -euo pipefail
. "$(dirname "$0")/common.sh"
"$PYTHON" -m quadarm scenario=mission hydra.run.dir="$OUT/mission" runner.resume="$RESUME"
