"""Run one measurement in a fresh process: python harness.py MODE 'setup code' 'call code'
MODE: tm (tracemalloc) or rss (VmHWM after clear_refs)."""
import sys, time, os, gc
mode, setup, call = sys.argv[1], sys.argv[2], sys.argv[3]
import numpy as np
import precision
print("precision from", precision.__file__, file=sys.stderr)
ns = {"np": np}
exec(setup, ns)
gc.collect()
def vm(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
def inbytes():
    return sum(v.nbytes for k, v in ns.items() if isinstance(v, np.ndarray) and not k.startswith("_"))
ib = inbytes()
if mode == "tm":
    import tracemalloc
    tracemalloc.start()
    t0 = time.perf_counter()
    exec("__out = " + call, ns)
    dt = time.perf_counter() - t0
    cur, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    out = ns["__out"]
    ob = out.nbytes if isinstance(out, np.ndarray) else 0
    print(f"TM in={ib/2**20:.1f}MiB out={ob/2**20:.1f}MiB peak={peak/2**20:.1f}MiB beyond_out={(peak-ob)/2**20:.1f}MiB t={dt:.2f}s")
else:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    base = vm("VmRSS:")
    h0 = vm("VmHWM:")
    t0 = time.perf_counter()
    exec("__out = " + call, ns)
    dt = time.perf_counter() - t0
    hwm = vm("VmHWM:")
    out = ns["__out"]
    ob = out.nbytes if isinstance(out, np.ndarray) else 0
    print(f"RSS in={ib/2**20:.1f}MiB out={ob/2**20:.1f}MiB base={base/2**20:.0f}MiB hwm0={h0/2**20:.0f} hwm={hwm/2**20:.0f}MiB growth={(hwm-base)/2**20:.1f}MiB beyond_out={(hwm-base-ob)/2**20:.1f}MiB t={dt:.2f}s")
