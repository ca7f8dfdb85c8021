# Sourced by the other scripts: the interpreter, where results go, parallelism, reuse.
#   PYTHON   interpreter (default: .venv/bin/python if present, else python3)
#   OUT      results root (default: outputs)
#   JOBS     worker processes (default: 2)
#   RESUME   true: reuse finished trials from the trial store (default: false, recompute)
if [ -z "${PYTHON:-}" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
OUT=${OUT:-outputs}
JOBS=${JOBS:-2}
RESUME=${RESUME:-false}
set -x
