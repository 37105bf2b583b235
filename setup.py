"""Builds sluice._sluice with CMake; the package metadata is in pyproject.toml.

    pip install --no-build-isolation --no-index .

CMake configures build-python/cmake (outside setuptools' temporary directories,
so a reinstall rebuilds only what changed) with only the extension target:
no tests, tools or CUDA. Environment: SLUICE_BUILD_JOBS (default: 2, the build
shares the machine), SLUICE_BUILD_TYPE (default Release), SLUICE_CMAKE_ARGS
(extra arguments, split on spaces), SLUICE_CMAKE_BUILD_DIR: a CMake build
directory of this checkout that exists already (tools/test.sh passes its
build/), where the extension is added and built from the libraries built
there, with that directory's own settings (build type, tests, tools), so
nothing is compiled twice.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        existing = os.environ.get("SLUICE_CMAKE_BUILD_DIR", "")
        if existing:
            build_dir = Path(existing).resolve()
            if not (build_dir / "CMakeCache.txt").exists():
                raise RuntimeError(f"SLUICE_CMAKE_BUILD_DIR={existing}: no CMakeCache.txt there; configure it first")
            configure = ["cmake", "-S", str(ROOT), "-B", str(build_dir)]
        else:
            build_dir = ROOT / "build-python" / "cmake"
            build_dir.mkdir(parents=True, exist_ok=True)
            configure = [
                "cmake", "-S", str(ROOT), "-B", str(build_dir),
                "-DCMAKE_BUILD_TYPE=" + os.environ.get("SLUICE_BUILD_TYPE", "Release"),
                "-DSLUICE_BUILD_TESTS=OFF", "-DSLUICE_BUILD_TOOLS=OFF", "-DSLUICE_BUILD_CUDA=OFF",
            ]
        configure += ["-DSLUICE_BUILD_PYTHON=ON", "-DPython3_EXECUTABLE=" + sys.executable]
        if shutil.which("ninja") and not (build_dir / "CMakeCache.txt").exists():
            configure += ["-G", "Ninja"]
        configure += os.environ.get("SLUICE_CMAKE_ARGS", "").split()
        subprocess.run(configure, check=True)
        jobs = os.environ.get("SLUICE_BUILD_JOBS", "2")
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "_sluice", "-j", jobs], check=True)
        built = sorted((build_dir / "python").glob("_sluice*.so"))
        if not built:
            raise RuntimeError(f"CMake built no _sluice*.so under {build_dir / 'python'}")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[-1], target)


setup(
    ext_modules=[CMakeExtension("sluice._sluice")],
    cmdclass={"build_ext": CMakeBuild},
    # setuptools' own build/ would land in the CMake build directory build/.
    options={"build": {"build_base": "build-python/setuptools"}, "egg_info": {"egg_base": "build-python"}},
)
