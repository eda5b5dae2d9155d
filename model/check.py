#!/usr/bin/env python3
"""model/check.py: run SPIN on the protocol model (model/tenlane.pml).

  check.py verify   [--work DIR]  every configuration of CONFIGS, then every LTL property
  check.py mutants  [--work DIR]  seed each bug of MUTANTS into a copy; SPIN must find each
  check.py bitstate [--work DIR]  everything on at once, bitstate hashing (minutes; not in CI)
  check.py page    [--root DIR]   docs/design/model.md names functions that exist where it says

verify and mutants exit 77 (ctest's skip code) with a message when spin or a C compiler is
missing. Each pan run prints its configuration, errors, states stored and seconds; a run that
reports an error, stops early or runs out of memory fails the command."""
import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "tenlane.pml")
SKIP = 77

# Exhaustive configurations (name, defines, pan compile flags, pan run flags):
# - phase_admission: 2 waiting owners + 1 non-waiting opener + 2 pool workers; owner 1 runs a
#   phase of 2 lanes whose callbacks may fail, return TL_E_CANCELLED, panic or cancel;
# - phase_outcomes: one owner, 2 lanes, 2 runs, every lane outcome, entry and cleanup faults,
#   and a ticket entry tried from inside a lane;
# - admission_workers: 2 owners + 1 non-waiting opener + 2 pool workers that each open once;
# - admission_tickets: 2 owners + 1 non-waiting opener + 2 workers + a thread entering owner
#   1's ticket at any moment, before, during or after its session.
# 'full_bitstate' (command `bitstate`, not part of `verify`) turns everything on at once under
# bitstate hashing; SPIN's hash factor says how much of the space it covered.
SAFETY = ["-O2", "-DSAFETY", "-DNOCLAIM", "-DCOLLAPSE", "-DMEMLIM=3072"]
CONFIGS = [
    ("phase_admission",
     "-DOWNERS=2 -DNOWAITERS=1 -DWORKERS=2 -DPHASE_OWNERS=1 -DRUNS=1 -DFAULTS=0 "
     "-DLANE_OUTCOMES=1 -DLANE_TICKETS=0 -DTICKETS=0 -DWORKER_OPENS=0", SAFETY, "-m400000 -w26"),
    ("phase_outcomes",
     "-DOWNERS=1 -DNOWAITERS=0 -DWORKERS=2 -DRUNS=2 -DFAULTS=1 -DLANE_OUTCOMES=1 "
     "-DLANE_TICKETS=1 -DTICKETS=0 -DWORKER_OPENS=0", SAFETY, "-m400000 -w26"),
    ("admission_workers",
     "-DOWNERS=2 -DNOWAITERS=1 -DWORKERS=2 -DPHASE_OWNERS=0 -DWORKER_OPENS=1 -DTICKETS=0",
     SAFETY, "-m400000 -w26"),
    ("admission_tickets",
     "-DOWNERS=2 -DNOWAITERS=1 -DWORKERS=2 -DPHASE_OWNERS=0 -DWORKER_OPENS=0 -DTICKETS=1",
     SAFETY, "-m400000 -w26"),
]
BITSTATE = ("full_bitstate",
            "-DOWNERS=2 -DNOWAITERS=1 -DWORKERS=2 -DPHASE_OWNERS=1 -DRUNS=2 -DFAULTS=1 "
            "-DLANE_OUTCOMES=1 -DLANE_TICKETS=1 -DTICKETS=1 -DWORKER_OPENS=1",
            ["-O2", "-DSAFETY", "-DNOCLAIM", "-DBITSTATE"], "-m400000 -w30 -k3")

# LTL properties on 2 owners + 1 non-waiting opener + 2 workers with owner 1's phase of 2
# lanes: mutex as a plain safety claim, the two liveness ones under weak fairness.
LTL_DEFINES = ("-DOWNERS=2 -DNOWAITERS=1 -DWORKERS=2 -DPHASE_OWNERS=1 -DRUNS=1 -DFAULTS=0 "
               "-DLANE_OUTCOMES=0 -DLANE_TICKETS=0 -DTICKETS=0 -DWORKER_OPENS=0")
LTL = [("mutex", "-a"), ("granted_2", "-a -f"), ("done", "-a -f")]
LIVENESS = ["-O2", "-DCOLLAPSE", "-DMEMLIM=3072", "-DNFAIR=3"]

# Mutants: (name, what the bug is, [(tag, old, new)], defines). Each edit replaces `old` by
# `new` on the one line carrying [tag]; a tag that is missing or not unique fails the check,
# so the list cannot silently go stale when the model changes.
MUT_PHASE = ("-DOWNERS=1 -DNOWAITERS=0 -DWORKERS=2 -DRUNS=2 -DFAULTS=1 -DLANE_OUTCOMES=1 "
             "-DLANE_TICKETS=1 -DTICKETS=0 -DWORKER_OPENS=0")
MUT_ADMISSION = ("-DOWNERS=2 -DNOWAITERS=1 -DWORKERS=2 -DPHASE_OWNERS=0 -DWORKER_OPENS=1 "
                 "-DWORKER_OPENERS=1 -DTICKETS=0")
MUTANTS = [
    ("dropped_join", "tl_phase_run returns without waiting for the lanes",
     [("join-wait", ":: bc_remaining == 0 -> break", ":: true -> break")], MUT_PHASE),
    ("flag_not_reset", "a run reuses the previous run's cancellation flag",
     [("fresh-flag", "cancel = 0", "skip")], MUT_PHASE),
    ("wrong_precedence", "a lane failure outranks a session failure",
     [("precedence", ":: sl != NONE -> chosen = sl", ":: sl != NONE && fl == NONE -> chosen = sl"),
      ("precedence-lane", ":: sl == NONE && fl != NONE -> chosen = fl", ":: fl != NONE -> chosen = fl")],
     MUT_PHASE),
    ("highest_lane_wins", "among equal failures the highest lane is reported",
     [("lowest-failed", ":: fl == NONE -> fl = i", ":: true -> fl = i")], MUT_PHASE),
    ("missed_wakeup", "close hands the grant over without signalling the waiter",
     [("grant-signal", "asleep_granted[next] = 0;", "skip;")], MUT_ADMISSION),
    ("nowait_waits", "a non-waiting opener queues like a waiting one",
     [("nowait-refused", ":: mode == NOWAIT ->", ":: false ->")], MUT_ADMISSION),
    ("worker_waits", "a pool worker queues for admission",
     [("worker-refused", ":: isworker ->", ":: false ->")], MUT_ADMISSION),
    ("second_child", "a ticket entry on a lane's worker skips the mark check",
     [("ticket-mark-check", ":: mk > 0 ->", ":: false ->")], MUT_PHASE),
    ("late_lane_enters", "a lane that sees the flag before entry enters anyway",
     [("late-skip", ":: c -> rep[w].skipped = 1", ":: false -> rep[w].skipped = 1")], MUT_PHASE),
    ("lifo_handoff", "close hands the grant to the newest waiter",
     [("fifo-head", "next = queue[0];", "next = queue[qlen - 1];")],
     "-DOWNERS=3 -DNOWAITERS=0 -DWORKERS=1 -DPHASE_OWNERS=0 -DWORKER_OPENS=0 -DTICKETS=0"),
    ("stale_child_entry", "a ticket joins without the registry and its child entry reads "
     "granted before closing (the bug the model found, with the registry's guard gone too)",
     [("child-closing-first", "c = closing;", "live = granted;"),
      ("child-granted-second", "live = granted;", "c = closing;"),
      ("registry-check", ":: registered[ticket_gen] ->", ":: true ->")],
     "-DOWNERS=1 -DNOWAITERS=0 -DWORKERS=2 -DRUNS=1 -DFAULTS=0 -DLANE_OUTCOMES=0 "
     "-DLANE_TICKETS=0 -DTICKETS=1 -DWORKER_OPENS=0"),
    ("unlocked_children_wakeup", "the last child out wakes the closer without the lock",
     [("leave-locked", "lock_acquire(me);", "skip;"), ("leave-unlocked", "lock_release(me)", "skip")],
     "-DOWNERS=1 -DNOWAITERS=0 -DWORKERS=1 -DPHASE_OWNERS=0 -DWORKER_OPENS=0 -DTICKETS=1"),
    ("futex_wake_skipped", "a waker bumps seq but never wakes a sleeping waiter",
     [("futex-wake", ":: sleeping[t] -> in_futex[t] = 0", ":: sleeping[t] -> skip")],
     "-DOWNERS=1 -DNOWAITERS=0 -DWORKERS=2 -DRUNS=1 -DFAULTS=0 -DLANE_OUTCOMES=0 "
     "-DLANE_TICKETS=0 -DTICKETS=0 -DWORKER_OPENS=0"),
]


def tools_missing():
    missing = [tool for tool in ("spin", "cc") if shutil.which(tool) is None]
    return missing


def apply_edits(text, edits):
    lines = text.split("\n")
    for tag, old, new in edits:
        hits = [i for i, line in enumerate(lines) if "[" + tag + "]" in line]
        if len(hits) != 1:
            raise SystemExit("check.py: tag [%s] is on %d lines of the model, expected 1" % (tag, len(hits)))
        line = lines[hits[0]]
        if line.count(old) != 1:
            raise SystemExit("check.py: the line tagged [%s] does not hold %r once: %r" % (tag, old, line))
        lines[hits[0]] = line.replace(old, new)
    return "\n".join(lines)


# Seconds one pan run may take before it counts as a failure (TL_MODEL_BUDGET overrides; the
# runs take well under a minute each on an idle core).
BUDGET = int(os.environ.get("TL_MODEL_BUDGET", "540"))


def run_pan(workdir, name, text, defines, cflags, runflags, claim=None, budget=None):
    """Generate, compile and run one verifier; returns a dict of what pan reported."""
    os.makedirs(workdir, exist_ok=True)
    with open(os.path.join(workdir, "model.pml"), "w") as f:
        f.write(text)
    start = time.time()
    gen = subprocess.run(["spin", "-a"] + defines.split() + ["model.pml"], cwd=workdir,
                         capture_output=True, text=True)
    if gen.returncode != 0:
        return {"name": name, "ok": False, "why": "spin -a failed: " + gen.stdout + gen.stderr}
    cc = subprocess.run(["cc"] + cflags + ["-w", "-o", "pan", "pan.c"], cwd=workdir,
                        capture_output=True, text=True)
    if cc.returncode != 0:
        return {"name": name, "ok": False, "why": "cc pan.c failed: " + cc.stderr[-2000:]}
    args = ["./pan"] + runflags.split() + (["-N", claim] if claim else [])
    budget = budget or BUDGET
    try:
        out = subprocess.run(args, cwd=workdir, capture_output=True, text=True, timeout=budget).stdout
    except subprocess.TimeoutExpired:
        return {"name": name, "ok": False, "why": "pan ran past %d s" % budget, "errors": None}
    result = {"name": name, "seconds": time.time() - start, "out": out}
    with open(os.path.join(workdir, "pan.out"), "w") as f:
        f.write(out)
    m = re.search(r"errors: (\d+)", out)
    result["errors"] = int(m.group(1)) if m else None
    m = re.search(r"^\s*([0-9.e+]+) states, stored", out, re.M)
    result["states"] = int(float(m.group(1))) if m else None
    m = re.search(r"hash factor: ([0-9.e+]+)", out)
    result["hash_factor"] = m.group(1) if m else None
    result["complete"] = ("Search not completed" not in out and "max search depth too small" not in out
                          and "out of memory" not in out.lower())
    first = re.search(r"^(pan:\d+:.*|pan: .*(violated|invalid end state|acceptance cycle|non-progress).*)$",
                      out, re.M)
    result["first_error"] = first.group(1).strip() if first else ""
    return result


def cpu_used():
    """CPU seconds of spin, cc and pan together, and the wall time since start."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return "%.0f s CPU in spin, cc and pan; %.0f s wall" % (used.ru_utime + used.ru_stime,
                                                           time.time() - STARTED)


STARTED = time.time()


def describe(r):
    if r.get("errors") is None:
        return "%-20s NO RESULT: %s" % (r["name"], r.get("why", r.get("out", "")[-500:]))
    extra = ""
    if r.get("hash_factor"):
        extra = ", hash factor %s" % r["hash_factor"]
    return "%-20s errors %d, %s states stored, %.1f s%s%s" % (
        r["name"], r["errors"], "{:,}".format(r["states"] or 0), r["seconds"], extra,
        "" if r["complete"] else ", SEARCH INCOMPLETE")


def verify(work, jobs, only=None):
    text = open(MODEL).read()
    if only:
        tasks = [(name, text, d, c, f, None) for name, d, c, f in CONFIGS + [BITSTATE] if name in only]
    else:
        tasks = [(name, text, d, c, f, None) for name, d, c, f in CONFIGS]
        tasks += [("ltl_" + p, text, LTL_DEFINES, LIVENESS, flags + " -m400000 -w26", p) for p, flags in LTL]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(lambda t: run_pan(os.path.join(work, t[0]), t[0], t[1], t[2], t[3], t[4], t[5]), tasks))
    failed = 0
    for r in results:
        print(describe(r))
        if r.get("errors") != 0 or not r.get("complete"):
            failed += 1
            if r.get("out"):
                print(r["out"][-3000:])
    print("verify: %d of %d runs clean (%s)" % (len(results) - failed, len(results), cpu_used()))
    return 1 if failed else 0


def mutants(work, jobs, only=None):
    text = open(MODEL).read()
    tasks = [(name, what, apply_edits(text, edits), d) for name, what, edits, d in MUTANTS
             if not only or name in only]

    def one(t):
        name, what, mutated, defines = t
        # -e-free: stop at the first error; an error is what a caught mutant shows.
        return what, run_pan(os.path.join(work, "mut_" + name), name, mutated, defines, SAFETY,
                             "-m400000 -w26")

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(one, tasks))
    caught = 0
    for what, r in results:
        hit = bool(r.get("errors"))
        caught += hit
        print("%-20s %s: %s (%s)" % (r["name"], "caught" if hit else "SURVIVED", what,
                                    r.get("first_error") or r.get("why", "no error")))
    print("mutants: %d of %d caught (%s)" % (caught, len(results), cpu_used()))
    return 0 if caught == len(results) else 1


# ---- the page check: every row `| step | `src/file.c` | `function` | lines a-b |` must name
# a function defined in that file whose body contains lines a..b.
ROW = re.compile(r"^\|[^|]*\|\s*`(src/[^`]+)`\s*\|\s*`([A-Za-z_][A-Za-z0-9_]*)`\s*\|\s*(\d+)(?:[-\u2013](\d+))?\s*\|")


def function_span(lines, name):
    """(first, last) 1-based lines of the definition of `name`, or None."""
    start = None
    for i, line in enumerate(lines):
        if re.match(r"^[A-Za-z_].*\b%s\(" % re.escape(name), line) and not line.rstrip().endswith(";"):
            start = i
            break
    if start is None:
        return None
    for j in range(start, len(lines)):
        if lines[j].startswith("}"):
            return start + 1, j + 1
    return None


def page(root):
    path = os.path.join(root, "docs", "design", "model.md")
    rows = 0
    bad = []
    for number, line in enumerate(open(path), 1):
        m = ROW.match(line)
        if not m:
            continue
        rows += 1
        file, func, a, b = m.group(1), m.group(2), int(m.group(3)), int(m.group(4) or m.group(3))
        full = os.path.join(root, file)
        if not os.path.exists(full):
            bad.append("model.md:%d: %s does not exist" % (number, file))
            continue
        span = function_span(open(full).read().split("\n"), func)
        if span is None:
            bad.append("model.md:%d: %s defines no function %s" % (number, file, func))
        elif not (span[0] <= a <= b <= span[1]):
            bad.append("model.md:%d: lines %d-%d are not inside %s, which is at %s:%d-%d" %
                       (number, a, b, func, file, span[0], span[1]))
    for b in bad:
        print(b)
    print("page: %d rows, %d wrong" % (rows, len(bad)))
    return 1 if bad or rows == 0 else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["verify", "mutants", "bitstate", "page"])
    parser.add_argument("--only", nargs="*", help="run only these configurations or mutants")
    parser.add_argument("--work", help="folder for the generated verifiers (default: a temporary one)")
    parser.add_argument("--root", default=os.path.dirname(HERE))
    parser.add_argument("--jobs", type=int, default=2)
    opts = parser.parse_args()
    if opts.command == "page":
        return page(opts.root)
    missing = tools_missing()
    if missing:
        print("check.py: skipped: %s not installed (scripts/install-deps installs spin)" % " and ".join(missing))
        return SKIP
    work = opts.work or tempfile.mkdtemp(prefix="tenlane-model-")
    os.makedirs(work, exist_ok=True)
    if opts.command == "bitstate":
        return verify(work, 1, [BITSTATE[0]])
    if opts.command == "verify":
        return verify(work, opts.jobs, opts.only)
    return mutants(work, opts.jobs, opts.only)


if __name__ == "__main__":
    sys.exit(main())
