"""The OpenGL backend named by ``MUJOCO_GL``, checked before MuJoCo is imported.

MuJoCo imports PyOpenGL's platform for ``MUJOCO_GL=egl`` or ``osmesa`` at ``import mujoco``;
when the system library is missing, that import fails several frames deep in PyOpenGL
(``AttributeError: 'NoneType' object has no attribute 'glGetError'``). The entry points call
:func:`missing_library` first and stop with one line that names the library instead.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

# The system library each headless backend loads, and its Debian package (docs/install.md).
GL_LIBRARIES = {"egl": ("EGL", "libegl1"), "osmesa": ("OSMesa", "libosmesa6")}


def missing_library() -> str | None:
    """One line naming the library ``MUJOCO_GL`` needs when it cannot be loaded, else None
    (also None once MuJoCo is imported: then it is too late and it did load)."""
    backend = os.environ.get("MUJOCO_GL", "").strip().lower()
    if backend not in GL_LIBRARIES or "mujoco" in sys.modules:
        return None
    name, package = GL_LIBRARIES[backend]
    try:
        ctypes.CDLL(ctypes.util.find_library(name) or f"lib{name}.so")
    except OSError:
        return (f"MUJOCO_GL={backend} needs the {name} library (lib{name}.so), which is not "
                f"installed (Debian/Ubuntu: apt-get install {package}); install it, or choose "
                "another backend (MUJOCO_GL=egl or osmesa, docs/install.md)")
    return None


def require(prog: str) -> None:
    """Exit with code 1 ("could not run") and :func:`missing_library`'s line, if any."""
    problem = missing_library()
    if problem:
        print(f"{prog}: error: {problem}", file=sys.stderr)
        raise SystemExit(1)
