"""CPU seconds from /proc: a process's, and a throwaway PostgreSQL cluster's by process role.

Shared by the scenario scripts (`from proc_cpu import ...`). PostgreSQL's CPU counts the
postmaster, its children alive now, and the children it has reaped (its cutime/cstime): a
backend or autovacuum worker that exits during a phase keeps its CPU in the total, so the total
only grows.
"""
import os

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid):
    return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()


def proc_cpu(pid):
    """utime + stime of one process, in seconds; 0 once it is gone."""
    try:
        f = _stat(pid)
        return (int(f[11]) + int(f[12])) / TICK
    except OSError:
        return 0.0


def _postmaster(pg_dir):
    try:
        return int(open(os.path.join(pg_dir, "data", "postmaster.pid")).readline())
    except (OSError, ValueError):
        return None


def _children(master):
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if int(_stat(p)[1]) == master:
                    yield int(p)
            except OSError:
                pass


def _role(pid):
    """"backends" for a connection's process ("postgres: user db host …"), else the background
    process's name (checkpointer, walwriter, autovacuum worker …)."""
    try:
        title = open(f"/proc/{pid}/cmdline").read().replace("\0", " ").strip()
    except OSError:
        return "gone"
    words = title.removeprefix("postgres: ").split(" ")
    background = {"checkpointer": 1, "background": 2, "walwriter": 1, "autovacuum": 2, "logical": 3, "archiver": 1, "stats": 2}
    if title.startswith("postgres: ") and words[0] in background:
        return " ".join(words[:background[words[0]]])
    return "backends"


def pg_cpu_by_role(pg_dir):
    """The cluster's CPU seconds by role: "backends" (serving connections), each background
    process by name, "postmaster", and "exited" (children reaped, whatever they were)."""
    master = _postmaster(pg_dir) if pg_dir else None
    if master is None:
        return {}
    try:
        f = _stat(master)
    except OSError:
        return {}
    roles = {"postmaster": (int(f[11]) + int(f[12])) / TICK, "exited": (int(f[13]) + int(f[14])) / TICK}
    for pid in _children(master):
        role = _role(pid)
        roles[role] = roles.get(role, 0.0) + proc_cpu(pid)
    return roles


def pg_cpu(pg_dir):
    """The whole cluster's CPU seconds (see the module's note)."""
    return sum(pg_cpu_by_role(pg_dir).values())


def role_delta(before, after):
    """What each role spent between two `pg_cpu_by_role` readings (only those that spent)."""
    return {k: round(after.get(k, 0.0) - before.get(k, 0.0), 3) for k in after if after.get(k, 0.0) - before.get(k, 0.0) > 0}
