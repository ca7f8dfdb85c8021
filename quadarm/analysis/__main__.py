"""``python -m quadarm.analysis DIR... [-o OUT] [--tables table2,workspace] [--no-figures]``

Builds the paper's tables (Markdown + CSV), figures (PNG) and ``reproduction.md`` from the
Parquet files of any run or sweep directories; nothing is simulated.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from quadarm.analysis.report import readme_block, update_readme, write_report
from quadarm.analysis.studies import ALIASES, NAMES


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m quadarm.analysis", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dirs", nargs="+", type=Path, help="run or sweep directories")
    parser.add_argument("-o", "--out", type=Path, default=None,
                        help="output folder (default: the first directory)")
    parser.add_argument("--tables", default=None,
                        help=f"comma-separated subset of {','.join(NAMES)} "
                             "(default: every table whose trials are present)")
    parser.add_argument("--no-figures", action="store_true", help="tables only")
    parser.add_argument("--readme", type=Path, default=None,
                        help="also refresh the reproduction table between the markers of "
                             "this README")
    args = parser.parse_args(argv)
    names = args.tables.split(",") if args.tables else None
    unknown = sorted(set(names or []) - {*NAMES, *ALIASES})
    if unknown:
        parser.error(f"--tables: unknown table {unknown[0]}; choose from "
                     f"{', '.join(NAMES)}")
    out = args.out or args.dirs[0]
    try:
        report = write_report(args.dirs, out, names, with_figures=not args.no_figures)
    except (FileNotFoundError, ValueError) as err:
        print(f"quadarm.analysis: error: {err}", file=sys.stderr)
        return 2
    for reason in report.refused:
        print(f"quadarm.analysis: not built: {reason}", file=sys.stderr)
    for t in report.tables:
        failed = len(t.failed)
        print(f"{t.name}: {len(t.checks)} values vs the paper"
              + (f", {failed} OUTSIDE tolerance" if failed else "") if len(t.checks)
              else f"{t.name}: table written (no value of the paper to compare)")
    if args.readme and not update_readme(args.readme, readme_block(
            report.tables, "python -m quadarm.analysis " + " ".join(map(str, args.dirs)))):
        print(f"quadarm.analysis: {args.readme} has no reproduction markers", file=sys.stderr)
    print(f"wrote {len(report.files)} files -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
