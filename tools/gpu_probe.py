#!/usr/bin/env python3
"""Is there a CUDA GPU here that a program can use? Asks the CUDA driver, builds nothing.

  tools/gpu_probe.py          print one JSON object; exit 0 when a device is usable, 3 when not

The answer comes from the driver library itself (libcuda.so.1, through ctypes), the way a CUDA
program would see it: cuInit, the devices it counts (CUDA_VISIBLE_DEVICES applies), and on each
one a context and a 1 MiB allocation, so a GPU that nvidia-smi lists but no program can use
(driver and library of different versions, a device held in exclusive mode, a stub libcuda) is
"not usable", with the driver's own error name as the reason. ./gradwire.sh gpu-check runs this
before it builds anything. Python 3 standard library only.

Output: {"usable": bool, "reason": str, "driver_cuda_version": "13.0" | null,
         "devices": [{"index", "name", "compute_capability": "9.0", "memory_bytes",
                      "usable", "error"}]}
"""
import ctypes
import json
import os
import sys

NOT_USABLE = 3


# Names for the errors a probe meets most, for a driver library that cannot name them itself (the
# toolkit's stub libcuda answers every call with 34).
KNOWN_ERRORS = {
    2: "CUDA_ERROR_OUT_OF_MEMORY",
    3: "CUDA_ERROR_NOT_INITIALIZED",
    34: "CUDA_ERROR_STUB_LIBRARY: the toolkit's stub libcuda, not a driver",
    35: "CUDA_ERROR_INSUFFICIENT_DRIVER: the driver is older than this CUDA",
    46: "CUDA_ERROR_DEVICES_UNAVAILABLE: busy or in exclusive mode",
    100: "CUDA_ERROR_NO_DEVICE",
    101: "CUDA_ERROR_INVALID_DEVICE",
    803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: driver and kernel module differ",
    999: "CUDA_ERROR_UNKNOWN",
}


class DriverError(Exception):
    pass


class Driver:
    """The few driver API calls the probe needs, each checked, its error named by the driver."""

    def __init__(self):
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise DriverError(f"the CUDA driver library libcuda.so.1 cannot be loaded ({e})")

    def error_name(self, rc):
        name = ctypes.c_char_p()
        if self.lib.cuGetErrorName(rc, ctypes.byref(name)) == 0 and name.value:
            return f"{name.value.decode()} ({rc})"
        return f"{KNOWN_ERRORS.get(rc, 'error')} ({rc})"

    def call(self, fn, *args):
        rc = getattr(self.lib, fn)(*args)
        if rc != 0:
            raise DriverError(f"{fn}: {self.error_name(rc)}")

    def has(self, fn):
        return hasattr(self.lib, fn)


def probe_device(drv, index):
    dev = ctypes.c_int()
    drv.call("cuDeviceGet", ctypes.byref(dev), index)
    name = ctypes.create_string_buffer(256)
    drv.call("cuDeviceGetName", name, 256, dev)
    major, minor = ctypes.c_int(), ctypes.c_int()
    drv.call("cuDeviceGetAttribute", ctypes.byref(major), 75, dev)  # COMPUTE_CAPABILITY_MAJOR
    drv.call("cuDeviceGetAttribute", ctypes.byref(minor), 76, dev)  # COMPUTE_CAPABILITY_MINOR
    mem = ctypes.c_size_t()
    drv.call("cuDeviceTotalMem_v2", ctypes.byref(mem), dev)
    info = {"index": index, "name": name.value.decode(errors="replace"),
            "compute_capability": f"{major.value}.{minor.value}", "memory_bytes": mem.value,
            "usable": False, "error": None}
    # Listing a device is not using it: a context and an allocation are what every test needs.
    ctx = ctypes.c_void_p()
    release = ("cuDevicePrimaryCtxRelease_v2" if drv.has("cuDevicePrimaryCtxRelease_v2")
               else "cuDevicePrimaryCtxRelease")
    try:
        drv.call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
    except DriverError as e:
        info["error"] = str(e)
        return info
    try:
        drv.call("cuCtxSetCurrent", ctx)
        ptr = ctypes.c_uint64()
        drv.call("cuMemAlloc_v2", ctypes.byref(ptr), ctypes.c_size_t(1 << 20))
        drv.call("cuMemFree_v2", ptr)
        info["usable"] = True
    except DriverError as e:
        info["error"] = str(e)
    finally:
        getattr(drv.lib, release)(dev)
    return info


def probe():
    result = {"usable": False, "reason": "", "driver_cuda_version": None, "devices": []}
    try:
        drv = Driver()
        version = ctypes.c_int()
        if drv.lib.cuDriverGetVersion(ctypes.byref(version)) == 0:
            v = version.value
            result["driver_cuda_version"] = f"{v // 1000}.{v % 1000 // 10}"
        drv.call("cuInit", 0)
        count = ctypes.c_int()
        drv.call("cuDeviceGetCount", ctypes.byref(count))
        for i in range(count.value):
            result["devices"].append(probe_device(drv, i))
    except DriverError as e:
        result["reason"] = str(e)
    usable = [d for d in result["devices"] if d["usable"]]
    result["usable"] = bool(usable)
    if usable:
        result["reason"] = f"{len(usable)} usable CUDA device(s)"
    elif result["devices"]:
        result["reason"] = "; ".join(f"device {d['index']} ({d['name']}): {d['error']}"
                                     for d in result["devices"])
    elif not result["reason"]:
        result["reason"] = "the CUDA driver counts no device"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if not usable and visible is not None:
        result["reason"] += f"; CUDA_VISIBLE_DEVICES='{visible}'"
    return result


def main():
    if len(sys.argv) > 1:
        print(__doc__, file=sys.stderr)
        return 2
    result = probe()
    print(json.dumps(result))
    return 0 if result["usable"] else NOT_USABLE


if __name__ == "__main__":
    sys.exit(main())
