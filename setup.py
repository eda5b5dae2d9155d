"""The build step pip and python3 -m build run (pyproject.toml): configure and build the
CMake target tenlane_python (the extension tenlane._core, libtenlane.a linked in) for the
running interpreter, then place the module where setuptools packs or links it. The CMake
build lives in build-py/cmake (set TENLANE_CMAKE_BUILD to use another folder) with the
project's default configuration (RelWithDebInfo), tests and benchmarks off; CMAKE_ARGS adds options. Needs cmake,
ninja and the Debian packages scripts/install-deps names; nothing is downloaded."""

import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def version():
    text = open(os.path.join(ROOT, "include", "tenlane", "version.h")).read()
    return re.search(r'#define TL_VERSION_STRING "([^"]+)"', text).group(1)


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = os.environ.get("TENLANE_CMAKE_BUILD") or os.path.join(ROOT, "build-py", "cmake")
        configure = [
            "cmake", "-S", ROOT, "-B", build, "-G", "Ninja",
            "-DTL_BUILD_TESTS=OFF", "-DTL_BUILD_BENCHES=OFF", "-DTL_BUILD_EXAMPLES=OFF",
            "-DTL_PYTHON=" + sys.executable,
        ] + shlex.split(os.environ.get("CMAKE_ARGS", ""))
        subprocess.check_call(configure)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
        subprocess.check_call(["cmake", "--build", build, "--target", "tenlane_python",
                               "-j", jobs])
        suffix = subprocess.check_output(
            [sys.executable, "-c",
             "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"], text=True).strip()
        built = os.path.join(build, "python", "tenlane", "_core" + suffix)
        if not os.path.exists(built):
            raise RuntimeError(
                "setup.py: CMake made no %s (is python3-dev, python3-numpy or libdlpack-dev "
                "missing? run scripts/install-deps)" % built)
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built, target)


setup(
    version=version(),
    ext_modules=[CMakeExtension("tenlane._core")],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": "build-py/setuptools"}},
)
