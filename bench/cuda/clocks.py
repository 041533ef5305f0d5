"""clocks.py: the GPU's SM clock, power and energy beside long timings.

An H100 running attention kernels back to back reaches its power limit (700 W on the SXM
card): the driver then lowers the SM clock below its maximum, and a kernel's time follows its
energy as much as its cycles. Two modes:

  python3 clocks.py sample FILE SECONDS
      every 10 ms for SECONDS, one line to FILE: wall-clock time (s), the device's total energy
      (mJ since the driver loaded), SM clock (MHz), power (mW), clock event reasons (bit mask:
      0x4 = software power cap, 0x1 = idle). Reads NVML (libnvidia-ml.so.1) through ctypes: no
      package needed. Run it in the background while the timings run.

  python3 clocks.py report FILE LOG [LOG ...] [--reps N]
      for every RESULT line of the logs that carries t0= and t1= (bench_cuda --reps, and
      sdpa_bench.py --reps; [t0, t1] holds the 5 warm-up calls too, counted as launches), the
      samples inside its timed launches (from 0.3 s after t0, once
      the clock has settled; a quarter of the way in for timings of 0.6 s or less): mean SM clock, mean power, the reasons seen, and the energy of
      one launch, ΔE over the window divided by the launches in it (reps= on the line, else
      --reps, else 30; spread evenly over [t0, t1]). NVML's energy counter moves in steps of
      tens of milliseconds: over windows under a second it is noise, and n/a when it did not
      move at all.
"""
import bisect
import ctypes
import sys
import time


def sample(path, seconds):
    try:
        nv = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError as e:
        sys.exit(f"clocks.py: no NVML here ({e}): it comes with the NVIDIA driver")
    if nv.nvmlInit_v2() != 0:
        sys.exit("clocks.py: NVML did not initialise")
    h = ctypes.c_void_p()
    nv.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h))
    energy, clock, power, reasons = ctypes.c_ulonglong(), ctypes.c_uint(), ctypes.c_uint(), ctypes.c_ulonglong()
    end = time.time() + seconds
    with open(path, "w") as out:
        while time.time() < end:
            nv.nvmlDeviceGetTotalEnergyConsumption(h, ctypes.byref(energy))
            nv.nvmlDeviceGetClockInfo(h, 1, ctypes.byref(clock))   # NVML_CLOCK_SM
            nv.nvmlDeviceGetPowerUsage(h, ctypes.byref(power))
            nv.nvmlDeviceGetCurrentClocksEventReasons(h, ctypes.byref(reasons))
            out.write(f"{time.time():.4f} {energy.value} {clock.value} {power.value} {reasons.value:#x}\n")
            time.sleep(0.01)


def report(path, logs, reps=30):
    rows = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) == 5:
                rows.append((float(p[0]), int(p[1]), int(p[2]), int(p[3]), p[4]))
    ts = [r[0] for r in rows]
    print("| run | dtype | d | causal | TFLOP/s | SM clock (MHz) | power (W) | energy a launch (mJ) | TFLOP/J | reasons |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for log in logs:
        with open(log) as f:
            for line in f:
                if not line.startswith("RESULT ") or " t0=" not in line:
                    continue
                kv = dict(x.split("=", 1) for x in line.split()[2:] if "=" in x)
                t0, t1 = float(kv["t0"]), float(kv["t1"])
                settle = 0.3 if t1 - t0 > 0.6 else 0.25 * (t1 - t0)
                i, j = bisect.bisect_left(ts, t0 + settle), bisect.bisect_right(ts, t1) - 1
                if j <= i:
                    continue
                sel = rows[i:j + 1]
                launches = (int(kv.get("reps", reps)) + 5) * (rows[j][0] - rows[i][0]) / (t1 - t0)
                joules = (rows[j][1] - rows[i][1]) / 1000.0 / launches
                flops = float(kv["tflops"]) * 1e12 * float(kv["ms"]) * 1e-3
                # the energy counter moves in steps: a short window may see none
                energy = f"{joules * 1000:.0f} | {flops / joules / 1e12:.3f}" if joules > 0 else "n/a | n/a"
                who = ("v" + kv["v"]) if "v" in kv else kv.get("backend", "?")
                clock = sum(r[2] for r in sel) / len(sel)
                watts = sum(r[3] for r in sel) / len(sel) / 1000.0
                print(f"| {who} | {kv['dtype']} | {kv['d']} | {kv['causal']} | {kv['tflops']} | {clock:.0f} | {watts:.0f} | "
                      f"{energy} | {' '.join(sorted(set(r[4] for r in sel)))} |")


if __name__ == "__main__":
    usage = "usage: clocks.py sample FILE SECONDS | clocks.py report FILE LOG [LOG ...] [--reps N]"
    if len(sys.argv) == 4 and sys.argv[1] == "sample":
        try:
            seconds = float(sys.argv[3])
        except ValueError:
            sys.exit(f"clocks.py: SECONDS must be a number, not {sys.argv[3]!r}\n{usage}")
        sample(sys.argv[2], seconds)
    elif len(sys.argv) >= 4 and sys.argv[1] == "report":
        args, reps = sys.argv[3:], 30
        if "--reps" in args:
            k = args.index("--reps")
            if k + 1 >= len(args) or not args[k + 1].isdigit() or int(args[k + 1]) < 1:
                sys.exit(f"clocks.py: --reps takes a positive number of launches\n{usage}")
            reps = int(args[k + 1])
            args = args[:k] + args[k + 2:]
        if not args:
            sys.exit(usage)
        report(sys.argv[2], args, reps)
    else:
        sys.exit(usage)
