#!/usr/bin/env python3
"""Follows a scale.sh log; measures Concord CPU and PostgreSQL CPU (all processes of the run's
cluster) from the crash restart (the 2nd 'restarted: pid') to the 'after a crash:' line.
Optionally perf-records the server over the load (--perf out.data)."""
import os, re, sys, time, subprocess
log, perf = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else None)
TCK = os.sysconf("SC_CLK_TCK")
def cpu(pid):
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / TCK
    except Exception: return 0.0
def pg_pids(workdir):
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit(): continue
        try:
            cmd = open(f"/proc/{p}/cmdline", "rb").read()
            exe = os.readlink(f"/proc/{p}/exe")
        except Exception: continue
        if "postgres" in exe and (workdir.encode() in cmd or b"postgres:" in cmd): out.append(int(p))
    return out
def pg_cpu(workdir):
    # the postmaster of the run's cluster and its children
    pids = pg_pids(workdir)
    master = [p for p in pids if workdir.encode() in open(f"/proc/{p}/cmdline","rb").read()]
    if not master: return 0.0
    m = master[0]; tot = cpu(m)
    for p in pids:
        try:
            ppid = int(open(f"/proc/{p}/stat").read().rsplit(")",1)[1].split()[1])
        except Exception: continue
        if ppid == m: tot += cpu(p)
    return tot
workdir = None; restarts = 0; pid = None; c0 = p0 = t0 = None; perfp = None
pos = 0
while True:
    try: data = open(log).read()
    except FileNotFoundError: time.sleep(0.05); continue
    lines = data[pos:].splitlines(keepends=True)
    for line in lines:
        if not line.endswith("\n"): break
        pos += len(line)
        m = re.search(r"work directory (\S+)", line)
        if m: workdir = m.group(1) + "/pg"
        m = re.search(r"restarted: pid (\d+)", line)
        if m:
            restarts += 1
            if restarts == 2:
                pid = int(m.group(1)); c0 = cpu(pid); p0 = pg_cpu(workdir); t0 = time.time()
                if perf: perfp = subprocess.Popen(["perf", "record", "-F", "999", "-g", "-a", "-o", perf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if "after a crash:" in line and pid:
            c1 = cpu(pid); p1 = pg_cpu(workdir)
            if perfp: perfp.send_signal(2); perfp.wait()
            m = re.search(r"'index_ready_s': ([\d.]+)", line)
            print(f"crash phase: {time.time()-t0:.2f} s wall, index ready {m.group(1) if m else '?'} s, Concord CPU {c1-c0:.2f} s, PostgreSQL CPU {p1-p0:.2f} s", flush=True)
            sys.exit(0)
    time.sleep(0.05)
