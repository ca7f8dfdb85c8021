"""Build hook: the wheel carries the repository's top-level ``conf/`` as ``quadarm/conf``.

The config groups stay where the project's layout keeps them (``conf/`` next to
``quadarm/``), and every install finds them as package data
(:func:`quadarm.config.compose.shipped_conf_dir`). Everything else is declared in
``pyproject.toml``.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

CONF = Path(__file__).resolve().parent / "conf"


class BuildPyWithConf(build_py):
    """``build_py`` that also copies ``conf/**/*.yaml`` into ``<build>/quadarm/conf``. An
    editable install skips it: there the package reads ``conf/`` in place."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "quadarm" / "conf"
        for src in sorted(CONF.rglob("*.yaml")):
            dest = target / src.relative_to(CONF)
            self.mkpath(str(dest.parent))
            self.copy_file(str(src), str(dest))

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = list(super().get_outputs(include_bytecode))
        if not getattr(self, "editable_mode", False):
            target = Path(self.build_lib) / "quadarm" / "conf"
            outputs += [str(target / p.relative_to(CONF)) for p in sorted(CONF.rglob("*.yaml"))]
        return outputs


setup(cmdclass={"build_py": BuildPyWithConf})
