"""Sensing: sensor models, the vehicle's error-state EKF and the arm-shape estimator.

Layer: beside :mod:`quadarm.control` (imports :mod:`quadarm.config` and :mod:`quadarm.model`,
never the runner). The per-step functions (:mod:`.sensors`, :mod:`.ekf`, :mod:`.shape`) are
written like :func:`quadarm.control.geometric.law`: on scalars and explicit loops over float64
arrays, so plain Python and numba give the same numbers. Everything random is drawn up front
per trial (:mod:`.noise`). The equations, presets and their sources are in ``docs/sensing.md``.
"""
