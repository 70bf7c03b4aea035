"""Builds gradwire's library with CMake (the repository's own build, library target only) and the
extension gradwire._C against the installed torch, with its C++ ABI; the library is installed next
to the extension, which finds it through its run path ($ORIGIN)."""
import glob
import os
import shutil
import subprocess

import torch
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LIB_BUILD = os.path.join(HERE, "build", "gradwire-lib")
ABI = int(torch.compiled_with_cxx11_abi())


def cuda_setting():
    """GRADWIRE_ENABLE_CUDA (ON or OFF) where set; else ON for a CUDA torch where nvcc is found,
    so that the hook runs CUDA buckets in gradwire's kernels (docs/PYTORCH.md, On a GPU)."""
    chosen = os.environ.get("GRADWIRE_ENABLE_CUDA")
    if chosen is not None:
        if chosen not in ("ON", "OFF"):
            raise SystemExit("GRADWIRE_ENABLE_CUDA=%s: accepted: ON, OFF" % chosen)
        return chosen
    nvcc = shutil.which("nvcc") or os.path.exists("/usr/local/cuda/bin/nvcc")
    return "ON" if torch.version.cuda and nvcc else "OFF"


def build_library():
    subprocess.check_call([
        "cmake", "-S", ROOT, "-B", LIB_BUILD, "-DCMAKE_BUILD_TYPE=Release",
        "-DGRADWIRE_BUILD_TESTS=OFF", "-DGRADWIRE_BUILD_BENCHMARKS=OFF",
        f"-DGRADWIRE_ENABLE_CUDA={cuda_setting()}",
        f"-DCMAKE_CXX_FLAGS=-D_GLIBCXX_USE_CXX11_ABI={ABI}"])
    jobs = os.environ.get("JOBS", str(os.cpu_count() or 1))
    subprocess.check_call(["cmake", "--build", LIB_BUILD, "--target", "gradwire", "-j", jobs])


class Build(BuildExtension):
    def run(self):
        build_library()
        super().run()
        # The library beside the extension, under its soname (what the extension's NEEDED says).
        real = os.path.realpath(os.path.join(LIB_BUILD, "lib", "libgradwire.so"))
        soname = [f for f in glob.glob(os.path.join(LIB_BUILD, "lib", "libgradwire.so.*"))
                  if f.count(".so.") == 1 and f.split(".so.")[1].isdigit()][0]
        for where in {os.path.join(self.build_lib, "gradwire"),
                      os.path.join(HERE, "gradwire") if self.inplace else None} - {None}:
            os.makedirs(where, exist_ok=True)
            shutil.copyfile(real, os.path.join(where, os.path.basename(soname)))


setup(
    ext_modules=[
        CppExtension(
            "gradwire._C",
            sorted(glob.glob(os.path.join("csrc", "*.cc"))),
            include_dirs=[ROOT, os.path.join(LIB_BUILD, "generated")],
            library_dirs=[os.path.join(LIB_BUILD, "lib")],
            libraries=["gradwire"],
            extra_compile_args=["-O2"],
            extra_link_args=["-Wl,-rpath,$ORIGIN"],
        )
    ],
    cmdclass={"build_ext": Build},
)
