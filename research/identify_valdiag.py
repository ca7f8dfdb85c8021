"""A diagnostic, never a choice: score candidates that ``research/identify_split.py`` wrote
(``TAG.json`` in the current folder) on all train rows and on val (aligned tip RMSE, mm), with
the split's stage 1 (``identify_split.split_problem``: the shipped calibration's arm and
tracked point). docs/identify.md, "Sixth round", uses it once, after the round's rule had
decided, to ask whether the held-out ``pair23_*`` score ranks candidates as val does; nothing
it scores is shipped.

    .venv/bin/python research/identify_valdiag.py TAG [TAG ...]
"""

from __future__ import annotations

import json
import sys

from identify_split import split_problem

from quadarm.identify import data, fit


def main(tags: list[str]) -> None:
    problem, cfg = split_problem([], {})
    recs = {w: data.read(cfg, w, problem.arm.length) for w in ("train", "val")}
    for tag in tags:
        with open(f"{tag}.json") as fh:
            values = json.load(fh)["values"]
        out = {w: round(fit.evaluate(problem, values, recs[w].pull, recs[w].tip)[1]["rmse_mm"], 3)
               for w in ("train", "val")}
        print(json.dumps({"tag": tag, **out}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
