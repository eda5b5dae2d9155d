/* model/tenlane.pml: the admission arbiter, tickets, the phase and its lanes, at the level
 * of the code's atomic steps and locks. docs/design/model.md maps every step to the function
 * and lines it stands for, and lists what the model leaves out.
 *
 * Sessions register in the registry of open sessions (src/core/handle.c) and unregister
 * first when they close; a ticket joins under the registry's lock.
 *
 * Threads: OWNERS waiting owners (owner i is thread i), NOWAITERS non-waiting openers,
 * WORKERS pool workers (worker w runs lane w of every run; each may also try one waiting
 * open of its own), and TICKETS ticket threads holding owner 1's ticket. Owners 1..PHASE_OWNERS
 * open a phase in each session and run it RUNS times.
 *
 * Each Promela statement is one step another thread may interleave with. Steps are merged
 * (atomic) only where the merged code touches nothing another thread reads without the
 * arbiter's lock, or only thread-private data. Variables named g_* are ghosts: they record
 * what the properties need and are not in the code.
 *
 * A tag in square brackets at the end of a line marks where model/check.py seeds a bug. */

#ifndef OWNERS
#define OWNERS 2
#endif
#ifndef NOWAITERS
#define NOWAITERS 1
#endif
#ifndef WORKERS
#define WORKERS 2
#endif
#ifndef RUNS
#define RUNS 2
#endif
#ifndef SESSIONS
#define SESSIONS 1
#endif
#ifndef PHASE_OWNERS
#define PHASE_OWNERS 1
#endif
#ifndef TICKETS
#define TICKETS 1
#endif
#ifndef WORKER_OPENS
#define WORKER_OPENS 1
#endif
/* how many of the workers try their WORKER_OPENS opens (the first ones) */
#ifndef WORKER_OPENERS
#define WORKER_OPENERS WORKERS
#endif
/* 1: child entry and cleanup faults (session failures) may hit any lane */
#ifndef FAULTS
#define FAULTS 1
#endif
/* 1: a lane's callback may try tl_ticket_enter with owner 1's ticket on its worker */
#ifndef LANE_TICKETS
#define LANE_TICKETS 1
#endif
/* 1: a lane's callback may panic, fail, return TL_E_CANCELLED or call tl_lane_cancel */
#ifndef LANE_OUTCOMES
#define LANE_OUTCOMES 1
#endif

#define T_NOWAIT0 (OWNERS + 1)
#define T_WORKER0 (T_NOWAIT0 + NOWAITERS)
#define T_TICKET0 (T_WORKER0 + WORKERS)
#define NT (T_TICKET0 + TICKETS)
#define MAXGEN (OWNERS * SESSIONS + NOWAITERS + WORKERS * WORKER_OPENS + 2)

#define NONE 255

/* statuses */
#define S_OK 0
#define S_BUSY 1
#define S_STALE 2
#define S_REENTERED 3

/* wait modes */
#define WAIT 0
#define NOWAIT 1

/* a lane's code: 0, a real failure, or TL_E_CANCELLED */
#define C_FAIL 1
#define C_CANCELLED 2

/* a lane's session failure */
#define F_ENTRY 1
#define F_CLEANUP 2

/* outcome kinds */
#define K_OK 0
#define K_LANE 1
#define K_SESSION 2

/* ---- the arbiter (src/core/core_int.h: tl__arbiter) ---- */
byte lock;                 /* 0 free, else the thread that holds it */
byte holder;               /* the owner holding the context, 0 when free */
byte generation;           /* bumped at each grant */
bit closing;               /* atomic_int closing */
byte children;             /* atomic_int children */
byte granted;              /* atomic granted: the live grant's generation, 0 when none */
byte queue[NT];            /* the FIFO of waiting openers (head is queue[0]) */
byte qlen;
bit opener_granted[NT];    /* tl__opener.granted, one per (waiting) thread */
bit asleep_granted[NT];    /* the thread sleeps on its tl__opener.granted_cond */
bit asleep_children[NT];   /* the thread sleeps on children_done */

/* ---- the registry of open sessions (src/core/handle.c): its lock, and which grants'
 * sessions are registered ---- */
byte rlock;
bit registered[MAXGEN];

/* thread-local marks (src/core/marker.c): each thread's count of marks for this
 * context is its local `mk` */

/* ---- the pool's broadcast (src/pool/pool_int.h) and every thread's waiter (waiter.h) ---- */
byte bc_generation;
byte bc_remaining;
byte bc_driver;            /* the waiter to wake when the broadcast is done */
byte bc_seen[WORKERS];
byte seq[NT];              /* tl__waiter.seq */
bit sleeping[NT];          /* tl__waiter.sleeping */
bit in_futex[NT];          /* the thread is inside FUTEX_WAIT */

/* ---- the run (src/core/core_int.h: tl__run) and the lane reports ---- */
bit cancel;                /* tl__run.cancel (the run lives at one place on the driver's stack) */
typedef report {
  bit entered;
  bit skipped;
  byte code;
  bit panicked;
  byte session_failure;
};
report rep[WORKERS];

/* ---- the ticket owner 1 handed out (tl_ticket: its grant's generation) ---- */
byte ticket_gen;

/* ---- ghosts ---- */
byte g_holders;            /* threads between a successful open and their admission close */
bit g_may_wait[NT];        /* the thread is an owner that may queue (not a worker, waits) */
byte g_stamp;              /* arrival stamps of waiting openers */
byte g_arrival[NT];
bit g_queued[NT];          /* for the LTL: the thread waits in the queue */
bit g_drained[MAXGEN];     /* that grant's close saw no child in flight */
byte g_entries;            /* ticket entries inside their callback */
byte g_run;                /* the current run's number (what a lane's run pointer names) */
byte g_cancel_run;         /* which run last set the flag */
byte g_lane_run[WORKERS];  /* the last run each worker ran a lane of */
byte g_lanes_busy;         /* lanes between their start and their return */
byte g_lanes_done;         /* lanes of the current run that returned */
bit g_late[WORKERS];       /* the flag was already set when the lane started */
byte g_owners_done;

/* ---------------------------------------------------------------- locks and waiters */

inline lock_acquire(me) { atomic { lock == 0 -> lock = me } }
inline lock_release(me) { assert(lock == me); lock = 0 }

/* pthread_cond_wait: release the lock and sleep in one step; after a wake, take the lock. */
inline cond_wait(flag, me) {
  atomic { lock_release(me); flag = 1 };
  (flag == 0);
  lock_acquire(me)
}

/* tl__waiter_wake (waiter.c): bump seq, then FUTEX_WAKE only when the waiter sleeps. */
inline waiter_wake(t) {
  seq[t]++;
  if
  :: sleeping[t] -> in_futex[t] = 0          /* [futex-wake] */
  :: else -> skip
  fi
}

/* ---------------------------------------------------------------- admission (arbiter.c) */

/* tl__admission_open: r, gen are the caller's. A critical section is one step when it makes
 * at most one access to a field read without the lock (granted): taking the lock moves right,
 * releasing it moves left, and fields under the lock are the holder's alone (Lipton's
 * reduction). pthread_cond_wait releases the lock and sleeps in one step; when the sleeper
 * is woken it takes the lock again (the atomic block resumes once that is possible). */
inline admission_open(me, mode, isworker) {
  atomic {
    lock == 0 -> lock = me;
    if
    :: holder == 0 && qlen == 0 ->
       holder = me;
       generation++;
       gen = generation;
       granted = gen;
       lock_release(me);
       r = S_OK
    :: else ->
       if
       :: mode == NOWAIT -> lock_release(me); r = S_BUSY     /* [nowait-refused] */
       :: else ->
          if
          :: isworker -> lock_release(me); r = S_BUSY        /* [worker-refused] */
          :: else ->
             /* non-waiting openers and pool workers never get here */
             assert(g_may_wait[me]);
             opener_granted[me] = 0;
             queue[qlen] = me;
             qlen++;
             g_stamp++;
             g_arrival[me] = g_stamp;
             g_queued[me] = 1;
             do
             :: opener_granted[me] -> break
             :: else ->
                lock_release(me);
                asleep_granted[me] = 1;
                (asleep_granted[me] == 0);
                lock == 0 -> lock = me
             od;
             gen = generation;
             lock_release(me);
             r = S_OK
          fi
       fi
    fi;
    if
    :: r == S_OK ->
       g_holders++;
       assert(g_holders == 1);   /* mutual exclusion */
       assert(holder == me)
    :: else -> skip
    fi
  }
}

/* tl__admission_drain_children */
inline drain_children(me) {
  closing = 1;
  lock_acquire(me);
  do
  :: children > 0 -> cond_wait(asleep_children[me], me)
  :: else -> break
  od;
  atomic { g_drained[gen] = 1; lock_release(me) }
}

/* tl__admission_close: hand the grant to the oldest waiter, or free the context. Three
 * stores are read without the lock (granted = 0, closing = 0, granted = next generation), so
 * the section is three steps. The signal rides with the release: the woken opener needs the
 * lock before it can do anything. */
inline admission_close(me) {
  atomic {
    lock == 0 -> lock = me;
    assert(g_entries == 0 && g_lanes_busy == 0);   /* close waited for every child */
    g_holders--;
    granted = 0
  };
  if
  :: qlen > 0 ->
     closing = 0;
     atomic {
       next = queue[0];                             /* [fifo-head] */
       /* FIFO: the one granted arrived before every other waiter */
       i = 0;
       do
       :: i < qlen -> assert(g_arrival[next] <= g_arrival[queue[i]]); i++
       :: else -> break
       od;
       /* unlink next */
       i = 0;
       do
       :: i < qlen && queue[i] != next -> i++
       :: else -> break
       od;
       do
       :: i + 1 < qlen -> queue[i] = queue[i + 1]; i++
       :: else -> break
       od;
       qlen--;
       queue[qlen] = 0;
       holder = next;
       generation++;
       g_queued[next] = 0;
       granted = generation;
       opener_granted[next] = 1;
       asleep_granted[next] = 0;                    /* [grant-signal] */
       lock_release(me);
       i = 0;
       next = 0
     }
  :: else -> atomic { closing = 0; holder = 0; lock_release(me) }
  fi
}

/* tl__child_enter: count in, check the live grant and closing, count out if refused. */
inline child_enter(me, want) {
  children++;
  c = closing;                                      /* [child-closing-first] */
  live = granted;                                   /* [child-granted-second] */
  if
  :: live == want && !c -> atomic { r = S_OK; live = 0; c = 0 }
  :: else -> child_leave(me); r = S_STALE
  fi
}

/* tl__child_leave: the last one out wakes a closer, under the lock. */
inline child_leave(me) {
  atomic { was = children; children-- };
  if
  :: was == 1 ->
     c = closing;
     if
     :: c ->
        lock_acquire(me);                           /* [leave-locked] */
        i = 0;
        do
        :: i < NT -> asleep_children[i] = 0; i++
        :: else -> break
        od;
        lock_release(me)                            /* [leave-unlocked] */
     :: else -> skip
     fi
  :: else -> skip
  fi;
  atomic { was = 0; c = 0; i = 0 }
}

/* a thread pushes its mark: at most one child (one mark for the context) per thread */
inline mark_push(me) {
  atomic { mk++; assert(mk <= 1) }
}

/* tl__session_register / tl__session_unregister: one step each under the registry lock */
inline session_register(me) {
  atomic { rlock == 0 -> rlock = me; registered[gen] = 1; rlock = 0 }
}
inline session_unregister(me) {
  atomic { rlock == 0 -> rlock = me; registered[gen] = 0; rlock = 0 }
}

/* tl_ticket_enter on thread me with owner 1's ticket; r says what it returned. The child
 * entry happens inside tl__session_join, under the registry lock, and only while the
 * ticket's session is registered. */
inline ticket_enter(me) {
  if
  :: mk > 0 -> r = S_REENTERED               /* [ticket-mark-check] */
  :: else ->
     atomic { rlock == 0 -> rlock = me };
     if
     :: registered[ticket_gen] -> child_enter(me, ticket_gen)  /* [registry-check] */
     :: else -> r = S_STALE
     fi;
     rlock = 0;
     if
     :: r == S_OK ->
        atomic {
          /* an entry is admitted only while its grant's close has not drained */
          assert(!g_drained[ticket_gen]);
          g_entries++
        };
        mark_push(me);
        /* the callback runs on a one-thread child surface */
        atomic { mk--; g_entries-- };
        child_leave(me)
     :: else -> skip
     fi
  fi
}

/* ---------------------------------------------------------------- the lane (lane.c) */

/* set_cancel, with the lane's own report write `what` in the same step */
#define set_cancel_as(rn, what) atomic { what; cancel = 1; g_cancel_run = rn }

/* read the flag; a set flag was set by this run (a fresh flag per run) */
inline read_cancel(rn) {
  atomic {
    c = cancel;
    assert(!c || g_cancel_run == rn)
  }
}

/* lane_body for worker w (never the inline lane: the model has a pool). The report and the
 * marks are the lane's own (the driver reads reports only after the join), so writes to them
 * ride along with the neighbouring step that reads the shared flag. */
inline lane_body(me, w, rn) {
  atomic {
    /* at most one lane per worker per run */
    assert(g_lane_run[w] != rn);
    g_lane_run[w] = rn;
    g_lanes_busy++;
    g_late[w] = cancel;
    rep[w].entered = 0;
    rep[w].skipped = 0;
    rep[w].code = 0;
    rep[w].panicked = 0;
    rep[w].session_failure = 0;
    read_cancel(rn)
  };
  if
  :: c -> rep[w].skipped = 1                        /* [late-skip] */
  :: else ->
     if
     :: FAULTS -> set_cancel_as(rn, rep[w].session_failure = F_ENTRY)
     :: true ->
        atomic {
          mark_push(me);
          /* a lane that started after the flag was set never enters */
          assert(!g_late[w]);
          rep[w].entered = 1;
          read_cancel(rn)
        };
        if
        :: !c ->
           /* the callback */
           if
           :: true -> skip
           :: LANE_OUTCOMES -> set_cancel_as(rn, rep[w].code = C_FAIL)
           :: LANE_OUTCOMES -> set_cancel_as(rn, rep[w].code = C_CANCELLED)
           :: LANE_OUTCOMES -> set_cancel_as(rn, rep[w].panicked = 1)
           :: LANE_OUTCOMES -> set_cancel_as(rn, skip)  /* tl_lane_cancel, then return 0 */
           :: LANE_TICKETS && ticket_gen != 0 ->
              ticket_enter(me);
              assert(r == S_REENTERED)               /* the lane's thread carries a mark */
           fi
        :: else -> skip
        fi;
        /* cleanup, on every path */
        if
        :: FAULTS -> set_cancel_as(rn, rep[w].session_failure = F_CLEANUP)
        :: true -> skip
        fi;
        mk--
     fi
  fi;
  atomic { g_lanes_busy--; g_lanes_done++; c = 0 }
}

/* ---------------------------------------------------------------- the run (lane.c) */

/* every lane of this run started and returned */
inline check_joined() {
  assert(g_lanes_busy == 0 && g_lanes_done == WORKERS)
}

/* The outcome rule, stated on its own: a session failure beats a real lane failure, which
 * beats a lane that returned TL_E_CANCELLED; the lowest lane among equals; else OK. */
inline check_outcome() {
  atomic {
    ek = K_OK; el = NONE; i = 0;
    do
    :: i < WORKERS && el == NONE ->
       if :: rep[i].session_failure != 0 -> ek = K_SESSION; el = i :: else -> skip fi; i++
    :: else -> break
    od;
    i = 0;
    do
    :: i < WORKERS && el == NONE ->
       if :: rep[i].code == C_FAIL -> ek = K_LANE; el = i :: else -> skip fi; i++
    :: else -> break
    od;
    i = 0;
    do
    :: i < WORKERS && el == NONE ->
       if :: rep[i].code == C_CANCELLED -> ek = K_LANE; el = i :: else -> skip fi; i++
    :: else -> break
    od;
    assert(kind == ek && chosen == el)
  }
}

/* reduce(): the code's own loop, after the join (no lane writes reports any more) */
inline reduce() {
  atomic {
    sl = NONE; fl = NONE; cl = NONE; pl = NONE; i = 0;
    do
    :: i < WORKERS ->
       if :: rep[i].panicked && pl == NONE -> pl = i :: else -> skip fi;
       if :: rep[i].session_failure != 0 && sl == NONE -> sl = i :: else -> skip fi;
       if
       :: rep[i].code == C_CANCELLED -> if :: cl == NONE -> cl = i :: else -> skip fi
       :: rep[i].code == C_FAIL ->
          if :: fl == NONE -> fl = i :: else -> skip fi  /* [lowest-failed] */
       :: else -> skip
       fi;
       i++
    :: else -> break
    od;
    if
    :: sl != NONE -> chosen = sl                     /* [precedence] */
    :: sl == NONE && fl != NONE -> chosen = fl       /* [precedence-lane] */
    :: sl == NONE && fl == NONE -> chosen = cl
    fi;
    if
    :: sl != NONE -> kind = K_SESSION
    :: sl == NONE && chosen != NONE -> kind = K_LANE
    :: else -> kind = K_OK
    fi
  }
}

/* tl_phase_run with a pool: the driver is thread me, holding grant gen. */
inline phase_run(me) {
  atomic {
    /* tl__run is the driver's until the broadcast publishes it */
    g_run++;
    rn = g_run;
    g_lanes_done = 0;
    cancel = 0                                      /* [fresh-flag] */
  };
  child_enter(me, gen);
  assert(r == S_OK);   /* the session cannot close while its phase is open */
  /* tl_pool_broadcast */
  atomic {
    /* the fields are the driver's until the generation bump publishes them */
    bc_driver = me;
    bc_remaining = WORKERS;
    bc_generation++
  };
  i = 0;
  do
  :: i < WORKERS -> waiter_wake(T_WORKER0 + i); i++
  :: else -> i = 0; break
  od;
  /* tl__pool_wait until bc_remaining == 0, on the driver's own waiter */
  do
  :: bc_remaining == 0 -> break                    /* [join-wait] */
  :: else ->
     s = seq[me];
     sleeping[me] = 1;
     if
     :: bc_remaining != 0 ->
        atomic { if :: seq[me] == s -> in_futex[me] = 1 :: else -> skip fi };
        (in_futex[me] == 0)
     :: else -> skip
     fi;
     atomic { sleeping[me] = 0; s = 0 }
  od;
  child_leave(me);
  read_cancel(rn);
  if
  :: !c ->
     /* the fast path: nothing set the flag */
     kind = K_OK; chosen = NONE;
     check_joined();
     check_outcome();
     assert(rep[0].entered && rep[WORKERS - 1].entered)
  :: else ->
     reduce();
     check_joined();
     check_outcome();
     if
     :: pl != NONE -> panicked = 1   /* tl_panic after the join: the phase and the session end */
     :: else -> skip
     fi
  fi;
  forget_run()
}

/* After a run nothing reads the reports or the driver's scratch values again until the next
 * run rewrites them: clear them so that states differing only there are one state. (The flag
 * is kept: a run that failed to reset it would read it.) */
inline forget_run() {
  atomic {
    i = 0;
    do
    :: i < WORKERS ->
       rep[i].entered = 0; rep[i].skipped = 0; rep[i].code = 0;
       rep[i].panicked = 0; rep[i].session_failure = 0; g_late[i] = 0;
       i++
    :: else -> break
    od;
    i = 0; kind = 0; chosen = 0; ek = 0; el = 0; sl = 0; fl = 0; cl = 0; pl = 0; c = 0; r = 0
  }
}

/* ---------------------------------------------------------------- threads */

inline session_close(me) {
  session_unregister(me);                           /* [unregister-first] */
  drain_children(me);
  mk--;
  admission_close(me)
}

proctype Owner(byte me) {
  byte mk, r, gen, live, c, was, i, next, s, rn, kind, chosen, ek, el, sl, fl, cl, pl;
  byte sessions, runs;
  bit panicked;
  g_may_wait[me] = 1;
  do
  :: sessions < SESSIONS ->
     sessions++;
     admission_open(me, WAIT, 0);
     atomic { assert(r == S_OK); mark_push(me) };
     session_register(me);
     if
     :: me == 1 && (TICKETS || LANE_TICKETS) && ticket_gen == 0 -> ticket_gen = gen
     :: else -> skip
     fi;
     if
     :: me <= PHASE_OWNERS ->
        runs = 0;
        panicked = 0;
        do
        :: runs < RUNS && !panicked -> runs++; phase_run(me)
        :: else -> break
        od
     :: else -> skip
     fi;
     session_close(me)
  :: else -> break
  od;
  g_owners_done++
}

proctype NoWaiter(byte me) {
  byte mk, r, gen, live, c, was, i, next;
  admission_open(me, NOWAIT, 0);
  if
  :: r == S_OK -> mark_push(me); session_register(me); session_close(me)
  :: else -> assert(r == S_BUSY)
  fi
}

proctype Worker(byte me) {
  byte w = me - T_WORKER0;
  byte mk, r, gen, live, c, was, i, next, g, s, rn, opens;
  do
  :: g = bc_generation;
     if
     :: g != bc_seen[w] ->
        /* run_broadcast */
        atomic { bc_seen[w] = g; g = 0; rn = g_run };
        lane_body(me, w, rn);
        atomic { was = bc_remaining; bc_remaining--; rn = 0 };
        if
        :: was == 1 -> was = 0; waiter_wake(bc_driver)
        :: else -> was = 0
        fi
     :: else ->
        g = 0;
        if
        :: opens < WORKER_OPENS && w < WORKER_OPENERS ->
           /* a pool worker opens a session (tl_session_open, TL_WAIT) */
           opens++;
           admission_open(me, WAIT, 1);
           if
           :: r == S_OK -> mark_push(me); session_register(me); session_close(me)
           :: else -> assert(r == S_BUSY)
           fi
        :: true ->
           /* idle: the sleep protocol of worker_main */
           s = seq[me];
           sleeping[me] = 1;
           if
           :: bc_generation == bc_seen[w] ->
              atomic { if :: seq[me] == s -> in_futex[me] = 1 :: else -> skip fi };
end_idle:     (in_futex[me] == 0)
           :: else -> skip
           fi;
           atomic { sleeping[me] = 0; s = 0 }
        fi
     fi
  od
}

proctype Ticket(byte me) {
  byte mk, r, live, c, was, i;
  (ticket_gen != 0);
  ticket_enter(me)
}

init {
  byte t;
  atomic {
    t = 1;
    do
    :: t <= OWNERS -> run Owner(t); t++
    :: else -> break
    od;
    do
    :: t < T_WORKER0 -> run NoWaiter(t); t++
    :: else -> break
    od;
    do
    :: t < T_TICKET0 -> run Worker(t); t++
    :: else -> break
    od;
    do
    :: t < NT -> run Ticket(t); t++
    :: else -> break
    od
  }
}

/* LTL (checked one at a time with pan -a -N name, under weak fairness):
 * mutex: never two holders; waiter_1: owner 2, once queued, is granted (no lost wake-up);
 * done: every owner finishes (no deadlock, no thread left waiting). */
ltl mutex { [] (g_holders <= 1) }
ltl granted_2 { [] (g_queued[2] -> <> !g_queued[2]) }
ltl done { <> (g_owners_done == OWNERS) }
