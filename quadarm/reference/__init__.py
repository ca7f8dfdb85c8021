"""Continuum references for the pseudo-rigid-body arm (no MuJoCo): the static Cosserat rod with
tendons (:mod:`.cosserat`)."""

from quadarm.reference.cosserat import Loads, Rod, RodSolution, solve

__all__ = ["Loads", "Rod", "RodSolution", "solve"]
