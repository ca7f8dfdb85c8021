"""Calibrate and score the shape estimator's model-error covariance (issue 40 section 2,
docs/sensing.md, "A covariance that knows the model's error").

The dynamic shape estimator's tip error is mostly a structured model error the filter cannot
see (docs/sensing.md, "Why the shape estimate is overconfident"). This script fits, once per
arm, a covariance of that error as a function of what the filter knows
(:func:`quadarm.sensing.armfilter.me_features`), by Gaussian maximum likelihood on calibration
flights whose seeds are never scored, and scores it on other seeds. The filter's gain and
estimate are untouched: only the covariance it reports grows (``sensing.arm_imu.model_error``).

The flights are the recordings of ``research/sensing_nees.py record`` (the mission does not
read the shape estimate, so the recorded inputs are the flight's whatever the filter's
settings); each is replayed offline with the shipped filter (the table of
``sensing.shape_table``), bit for bit the flown one.

    python research/sensing_nees.py record REC/prb12_s100.npz sensing=realistic_arm seed=100
    python research/sensing_model_error.py fit OUT.json direction REC/prb12_s1{00..15}.npz
    python research/sensing_model_error.py fit OUT.json direction --isotropic-only REC3/...
    python research/sensing_model_error.py score OUT.json direction REC/prb12_s{0..15}.npz

(``fit``/``score`` ARGS: the JSON written or read, the shape table ``along`` or
``direction``, then the recordings of one arm, seed in the name ``..._s<seed>.npz``; the arm is
read from the name's prefix: ``prb12_...`` or ``<arm>_...`` for ``arm=<arm>``.)
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import chi2

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sensing_nees as sn  # noqa: E402

from quadarm.api import compose  # noqa: E402
from quadarm.runner import jit, sense  # noqa: E402
from quadarm.scenarios.estimates import arm_length  # noqa: E402
from quadarm.sensing import armfilter, modelerror  # noqa: E402

PHASES = sn.PHASES
# Filter settings the replay takes beyond the recording's (``sensing.align_swing=0.02``...: the
# flight does not read the shape estimate, so the recording is the flight's whatever they are),
# given on the command line as sensing.<key>=<value>.
EXTRA: list[str] = []
LO, HI = chi2.ppf(0.025, 2), chi2.ppf(0.975, 2)


@jit.numba.njit if jit.AVAILABLE else (lambda f: f)
def _rows(tab, prof, phi, xs, ps, tipcs, tips, trues, wbs, us, nb, nc, lim, ab, stills,  # noqa: ANN001
          me, fs, st0, st1) -> None:
    """Per sample: the features (``fs``), the filter's tip stats (``st0``: covariance and NEES,
    as logged) and, with ``me`` on, the reported ones (``st1``), by the flown functions;
    ``ab`` the accelerometers' turn-on bias spread (m/s^2), ``stills`` (n_k,) inside the
    alignment window."""
    th = np.zeros(phi.shape[0])
    for k in range(xs.shape[0]):
        armfilter.hinge_angles(tab, prof, phi, xs[k], th)
        armfilter.me_features(xs[k], ps[k], th, wbs[k], us[k], nb, nc, lim, ab, stills[k],
                              fs[k])
        armfilter.tip_stats(ps[k], tipcs[k], nc, tips[k], trues[k], st0[k])
        st1[k] = st0[k]
        if me[armfilter.ME_ON] > 0.0:
            armfilter.model_error(me, xs[k], ps[k], th, wbs[k], us[k], nb, nc, stills[k],
                                  tips[k], trues[k], st1[k], fs[k])


def _overrides(path: str) -> tuple[int, list[str]]:
    name = Path(path).name
    m = re.match(r"(.+)_s(\d+)\.npz$", name)
    if m is None:
        raise SystemExit(f"{path}: a recording is named <arm>_s<seed>.npz")
    arm = m.group(1)
    return int(m.group(2)), ([] if arm == "prb12" else [f"arm={arm}"])


def samples(paths: list[str], table: str, me: np.ndarray | None = None
            ) -> tuple[list[dict[str, np.ndarray]], Any]:
    """Each recording replayed with the shipped filter (``table``: the quasi-static table of
    a one-section arm): per sample t, the features, the tip error and covariance projected
    across the arm, the logged NEES and, with ``me``, the reported one."""
    out, tab, prep = [], None, None
    for path in paths:
        seed, ov = _overrides(path)
        r = dict(np.load(path))
        # The recording's alignment window (its physics steps, in the flown filter's
        # parameters), for the trial's settings and the replay.
        win = int(r["C_af"][armfilter.F_ALIGN])
        dt = compose(["sensing=realistic_arm", *ov]).sim.timestep
        ov = [*ov, *([f"sensing.align_s={win * dt:g}"] if win else [])]
        p = sn._prepared(["sensing=realistic_arm", f"seed={seed}",
                          f"sensing.shape_table={table}", *ov, *EXTRA])
        assert win == round(p.cfg.sensing.align_s / p.built.model.opt.timestep)
        prep = p
        cache = Path(f"{path}.{table}{''.join('.' + e for e in EXTRA)}.rows.npz")
        if me is None and cache.exists():  # the replay's rows, kept beside the recording
            out.append(dict(np.load(cache)))
            continue
        if r["C_tab"].shape[0] > 0:  # a one-section arm's table
            tab = _table(p, table) if tab is None else tab
            r["C_tab"] = tab
        xs, ps, tipcs, tips = sn.replay(r, p, p.cfg.sensing.arm_imu)
        nc = tipcs.shape[1]
        nb = int(r["C_af"][armfilter.F_NB])
        lim = modelerror.hinge_limit(p.built.model, p.cfg.arm.segments)
        mev = np.zeros(armfilter.N_ME) if me is None else me
        nk = xs.shape[0]
        fs = np.zeros((nk, armfilter.N_MEF))
        st0, st1 = np.zeros((nk, armfilter.N_TIPLOG)), np.zeros((nk, armfilter.N_TIPLOG))
        stills = sn.sample_steps(r, p) < win
        _rows(r["C_tab"], r["C_prof"], r["C_aphi"], xs, ps, tipcs, tips, r["pts_true"],
              r["wb"], r["uin"], nb, nc, lim, p.cfg.sensing.arm_imu.accel_bias, stills, mev,
              fs, st0, st1)
        e2, s2, w2 = modelerror.across(tips, r["pts_true"], st0[:, :6])
        row = dict(t=r["t"], f=fs, e2=e2, s2=s2, w2=w2, nees0=st0[:, 6], nees1=st1[:, 6],
                   err=np.linalg.norm(tips - r["pts_true"], axis=1), seed=seed)
        if me is None:
            np.savez(cache, **row)
        out.append(row)
    return out, prep


def _table(p: Any, kind: str) -> np.ndarray:
    """The trial's quasi-static table (sense._table), kept in the file $SHAPE_TABLE_CACHE
    when set (the direction table takes minutes on a loaded machine)."""
    import os

    cache = os.environ.get("SHAPE_TABLE_CACHE")
    if cache and Path(cache).exists():
        return np.load(cache)
    tab = sense._table(p, kind)
    if cache:
        np.save(cache, tab)
    return tab


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def fit(out_path: str, table: str, paths: list[str], isotropic_only: bool = False) -> None:
    rows, p = samples(paths, table)
    assert p is not None
    length = arm_length(p.cfg)
    iso = modelerror.ISOTROPIC_ONLY if isotropic_only else ()
    coef, info = modelerror.fit(np.concatenate([r["f"] for r in rows]),
                                np.concatenate([r["e2"] for r in rows]),
                                np.concatenate([r["s2"] for r in rows]),
                                np.concatenate([r["w2"] for r in rows]), length,
                                isotropic_only=iso)
    info["isotropic_only"] = list(iso)
    doc = modelerror.document(p.cfg, coef, length,
                              modelerror.hinge_limit(p.built.model, p.cfg.arm.segments),
                              made=dict(
        command="python research/sensing_model_error.py fit " + " ".join(
            [Path(out_path).name, table] + (["--isotropic-only"] if isotropic_only else [])
            + EXTRA
            + [Path(x).name for x in paths]),
        recordings="python research/sensing_nees.py record <arm>_s<seed>.npz "
                   "sensing=realistic_arm seed=<seed> [arm=<arm>]" + (
                       f" sensing.align_s={p.cfg.sensing.align_s:g}"
                       if p.cfg.sensing.align_s else "") + ", the mission",
        seeds=sorted(int(r["seed"]) for r in rows), samples=int(sum(len(r["t"]) for r in rows)),
        commit=_commit(), method="Gaussian maximum likelihood of the tip error across the "
        "arm, covariance S + Q(features), L-BFGS from a fixed start", **info),
        table_matters=p.cfg.arm.__class__.__name__ != "SectionArmConfig")
    Path(out_path).write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {out_path}: {json.dumps(doc['coefficients'])}")
    report(samples(paths, table, modelerror.vector(doc))[0], length,
           "training seeds (fitted on these)")


def report(rows: list[dict[str, np.ndarray]], length: float, title: str) -> None:
    """Per phase, over the recordings' ``rows`` (:func:`samples`): tip RMS, the NEES mean and
    the share inside the per-sample 95 % interval before (``nees0``) and after (``nees1``) the
    model error, and the share of times the seeds' mean NEES lies in its chi-square band."""
    print(f"{title}: {len(rows)} seeds; tip RMS % of L | NEES mean before -> after | in 95 % "
          f"before -> after | 16-seed mean in its band [chi2(2 n)/n], share of times before "
          f"-> after")
    n = len(rows)
    band = (chi2.ppf(0.025, 2 * n) / n, chi2.ppf(0.975, 2 * n) / n)
    for name, (a, b) in PHASES.items():
        rms, n0, n1, i0, i1 = [], [], [], [], []
        for r in rows:
            k = (r["t"] >= a) & (r["t"] < b)
            rms.append(np.sqrt(np.mean(r["err"][k] ** 2)) / length * 100)
            n0.append(r["nees0"][k].mean())
            n1.append(r["nees1"][k].mean())
            i0.append(np.mean((r["nees0"][k] > LO) & (r["nees0"][k] < HI)))
            i1.append(np.mean((r["nees1"][k] > LO) & (r["nees1"][k] < HI)))
        m = min(int(((r["t"] >= a) & (r["t"] < b)).sum()) for r in rows)
        per_t0 = np.mean([r["nees0"][(r["t"] >= a) & (r["t"] < b)][:m] for r in rows], axis=0)
        per_t1 = np.mean([r["nees1"][(r["t"] >= a) & (r["t"] < b)][:m] for r in rows], axis=0)

        def share(v: np.ndarray) -> float:
            return float(np.mean((v >= band[0]) & (v <= band[1])))

        print(f"  {name:13s} {np.mean(rms):.2f} ({np.std(rms):.2f}) | {np.mean(n0):6.1f} -> "
              f"{np.mean(n1):5.2f} ({np.std(n1):.2f}) | {np.mean(i0):.2f} -> {np.mean(i1):.2f} "
              f"| {share(per_t0):.2f} -> {share(per_t1):.2f}")
    print(f"  band of a {n}-seed mean at one time: [{band[0]:.2f}, {band[1]:.2f}]")


def score(doc_path: str, table: str, paths: list[str]) -> None:
    doc = json.loads(Path(doc_path).read_text())
    rows, _ = samples(paths, table, modelerror.vector(doc))
    report(rows, doc["arm"]["length_m"], "held-out seeds (the flown functions)")


def quick(table: str, train: list[str], held: list[str], ridge: float, drop: list[str]
          ) -> None:
    """A variant of the fit (``ridge``, features ``drop``-ped) scored in numpy from the cached
    replays (modelerror.reported_nees): for choosing the fit, on the training seeds only."""
    rows, p = samples(train, table)
    assert p is not None
    length = arm_length(p.cfg)
    keep = [j for j, n in enumerate(armfilter.MEF_NAMES) if n not in drop]

    ib = armfilter.MEF_NAMES.index("accel_bias")

    def feats(r: dict[str, np.ndarray]) -> np.ndarray:
        f = np.zeros_like(r["f"])
        f[:, keep] = r["f"][:, keep]
        if "accel_bias_log" in drop:  # the variant: the log-ratio, not the ratio itself
            f[:, ib] = np.log(r["f"][:, ib])
        return f

    coef, info = modelerror.fit(np.concatenate([feats(r) for r in rows]),
                                np.concatenate([r["e2"] for r in rows]),
                                np.concatenate([r["s2"] for r in rows]),
                                np.concatenate([r["w2"] for r in rows]), length, ridge)
    print(info, np.round(coef, 2))
    for title, rs in (("train", rows), ("held out", samples(held, table)[0])):
        for r in rs:
            r["nees1"] = modelerror.reported_nees(coef, feats(r), r["e2"], r["s2"], r["w2"],
                                                  length)
        report(rs, length, title)


def _n_eff(x: np.ndarray) -> float:
    """Effective number of independent samples of the series ``x``: n / (1 + 2 sum rho_k),
    the autocorrelation summed up to its first non-positive lag."""
    x = x - x.mean()
    n = len(x)
    spec = np.fft.rfft(x, 2 * n)
    acf = np.fft.irfft(spec * np.conj(spec))[:n]
    acf /= acf[0]
    cut = int(np.argmax(acf <= 0.0)) or n
    return n / (1.0 + 2.0 * float(acf[1:cut].sum()))


def flown(folders: list[str]) -> None:
    """Per phase, over the flown trials in ``folders`` (Parquet): tip RMS, NEES mean and the
    share inside the per-sample 95 % interval (mean over the seeds, as the metrics); the
    seeds' mean NEES against three two-sided 95 % bands of a mean of chi-square(2): of
    independent samples (chi2(2 N) / N, N all the phase's samples), of the effective number of
    independent samples (the NEES series' autocorrelation), and at one time over the seeds
    (the share of logged times inside)."""
    import pandas as pd

    trials = [Path(f) for f in folders]
    mets = pd.concat([pd.read_parquet(t / "metrics.parquet") for t in trials])
    series = [pd.read_parquet(t / "timeseries.parquet", columns=["t", "shape_nees"])
              for t in trials]
    n = len(trials)
    print(f"{n} trials; phase | tip RMS % L | NEES mean (std over seeds) | in 95 % | iid band "
          "| n_eff, its band | per-time band share")
    for name, (a, b) in PHASES.items():
        def col(metric: str, name: str = name) -> np.ndarray:
            return mets[(mets.phase == name) & (mets.metric == metric)]["value"].to_numpy()

        rms, nm, i95 = col("shape_tip_rms_pct"), col("shape_nees_mean"), col(
            "shape_nees_in95_share")
        vals = [s_["shape_nees"].to_numpy()[(s_["t"].to_numpy() >= a) & (s_["t"].to_numpy() < b)]
                for s_ in series]
        vals = [v[np.isfinite(v)] for v in vals]
        big_n = sum(len(v) for v in vals)
        n_eff = sum(_n_eff(v) for v in vals)
        iid = (chi2.ppf(0.025, 2 * big_n) / big_n, chi2.ppf(0.975, 2 * big_n) / big_n)
        ne = (chi2.ppf(0.025, 2 * n_eff) / n_eff, chi2.ppf(0.975, 2 * n_eff) / n_eff)
        k = min(len(v) for v in vals)
        per_t = np.mean([v[:k] for v in vals], axis=0)
        lo, hi = chi2.ppf(0.025, 2 * n) / n, chi2.ppf(0.975, 2 * n) / n
        share = float(np.mean((per_t >= lo) & (per_t <= hi)))
        print(f"{name} | {rms.mean():.2f} ({rms.std(ddof=1):.2f}) | {nm.mean():.2f} "
              f"({nm.std(ddof=1):.2f}) | {i95.mean():.2f} | [{iid[0]:.3f}, {iid[1]:.3f}] | "
              f"{n_eff:.0f}, [{ne[0]:.2f}, {ne[1]:.2f}] | {share:.2f} in [{lo:.2f}, {hi:.2f}]")


if __name__ == "__main__":
    cmd = sys.argv[1]
    EXTRA.extend(a for a in sys.argv[2:] if a.startswith("sensing."))
    args = [a for a in sys.argv[2:] if not a.startswith("sensing.")]
    if cmd == "fit":  # OUT TABLE [--isotropic-only] RECORDINGS...
        iso = "--isotropic-only" in args
        args = [a for a in args if a != "--isotropic-only"]
        fit(args[0], args[1], args[2:], iso)
    elif cmd == "score":
        score(args[0], args[1], args[2:])
    elif cmd == "flown":  # TRIAL_FOLDER ...
        flown(args)
    elif cmd == "quick":  # TABLE RIDGE DROP(comma list or -) TRAIN... -- HELD...
        split = args.index("--")
        quick(args[0], args[3:split], args[split + 1:], float(args[1]),
              [] if args[2] == "-" else args[2].split(","))
    else:
        raise SystemExit(f"unknown command {cmd!r}: fit or score")
