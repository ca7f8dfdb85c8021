"""``python -m quadarm.collect DIR... [-o OUT]``: merge run and sweep directories into one
``runs.parquet`` + ``metrics.parquet`` (default OUT: the first DIR)."""

from __future__ import annotations

import argparse
import sys

from quadarm.results.collect import write_collection


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m quadarm.collect", description=__doc__)
    p.add_argument("dirs", nargs="+", help="run or sweep directories (searched recursively)")
    p.add_argument("-o", "--out", help="output directory (default: the first DIR)")
    args = p.parse_args(argv)
    try:
        runs, metrics = write_collection(args.dirs, args.out or args.dirs[0])
    except FileNotFoundError as err:
        print(f"quadarm.collect: error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {runs} and {metrics}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
