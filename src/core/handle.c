/* src/core/handle.c: what a tl_session * handle is. A handle is not the session's
 * address (the one session object of a context is reused by every open, so a kept address
 * would work again after a reopen); it is a 64-bit open number, drawn once per open from
 * a process-wide counter and never reused. Resolving it never dereferences it:
 *  - the opening thread finds it in its own thread-local list of held sessions (no lock);
 *  - anything else looks in the process-wide list of open sessions, under one lock, which
 *    tells a foreign use (TL_E_WRONG_THREAD) from a closed one (TL_E_STALE).
 * The thread-local list is also how a thread that exits while holding sessions is seen:
 * a thread-exit destructor hands each of them to tl__session_abandon. The registry lock is
 * taken around fork() so that a child never inherits it held. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "base/base.h"
#include "core/core_int.h"

typedef struct held_session {
  uint64_t id;
  tl_session *session;
} held_session;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static tl_session *open_sessions; /* linked through next_open; under registry_lock */
static atomic_uint_fast64_t last_id;
static pthread_key_t exit_key;
static pthread_once_t setup_once = PTHREAD_ONCE_INIT;

static _Thread_local held_session held[TL_CONTEXTS_PER_THREAD_MAX];
static _Thread_local int held_count;

static void owner_thread_exit(void *unused) {
  (void)unused;
  /* The thread is ending with sessions still open: close each for it, newest first. */
  while (held_count > 0) tl__session_abandon(held[held_count - 1].session);
}

static void lock_for_fork(void) { pthread_mutex_lock(&registry_lock); }
static void unlock_after_fork(void) { pthread_mutex_unlock(&registry_lock); }

static void setup(void) {
  pthread_key_create(&exit_key, owner_thread_exit);
  pthread_atfork(lock_for_fork, unlock_after_fork, unlock_after_fork);
}

static void forget_held(const tl_session *session) {
  for (int i = held_count - 1; i >= 0; i--) {
    if (held[i].session == session) {
      memmove(&held[i], &held[i + 1], (size_t)(held_count - 1 - i) * sizeof held[0]);
      held_count--;
      return;
    }
  }
}

tl_session *tl__session_register(tl_session *session) {
  pthread_once(&setup_once, setup);
  session->id = atomic_fetch_add(&last_id, 1) + 1;
  pthread_mutex_lock(&registry_lock);
  session->next_open = open_sessions;
  open_sessions = session;
  pthread_mutex_unlock(&registry_lock);
  /* The marks limit (TL_CONTEXTS_PER_THREAD_MAX) already bounds what one thread holds. */
  held[held_count].id = session->id;
  held[held_count].session = session;
  held_count++;
  pthread_setspecific(exit_key, (void *)1); /* any non-NULL value arms the destructor */
  return (tl_session *)(uintptr_t)session->id;
}

void tl__session_unregister(tl_session *session) {
  pthread_mutex_lock(&registry_lock);
  for (tl_session **link = &open_sessions; *link != NULL; link = &(*link)->next_open) {
    if (*link == session) {
      *link = session->next_open;
      break;
    }
  }
  pthread_mutex_unlock(&registry_lock);
  session->next_open = NULL;
  forget_held(session);
}

tl_session *tl__session_resolve(const tl_session *handle, const char *call, tl_status *status) {
  uint64_t id = (uint64_t)(uintptr_t)handle;
  if (handle == NULL) {
    *status = tl__fail(TL_E_INVALID, "%s: session is NULL", call);
    return NULL;
  }
  for (int i = 0; i < held_count; i++) {
    if (held[i].id == id) return held[i].session;
  }
  tl_owner owner = 0;
  pthread_mutex_lock(&registry_lock);
  for (tl_session *s = open_sessions; s != NULL; s = s->next_open) {
    if (s->id == id) owner = s->owner;
  }
  pthread_mutex_unlock(&registry_lock);
  if (owner != 0) {
    *status = tl__fail(TL_E_WRONG_THREAD,
                       "%s: session of owner %llu used from a thread other than the one that "
                       "opened it; another thread reaches the session through a ticket "
                       "(tl_session_ticket, then tl_ticket_enter on that thread)",
                       call, (unsigned long long)owner);
  } else {
    *status = tl__fail(TL_E_STALE,
                       "%s: the session (open number %llu) was closed, or this is not a "
                       "session handle",
                       call, (unsigned long long)id);
  }
  return NULL;
}

tl_session *tl__session_find_any(const tl_session *handle) {
  uint64_t id = (uint64_t)(uintptr_t)handle;
  tl_session *found = NULL;
  if (handle == NULL) return NULL;
  for (int i = 0; i < held_count; i++) {
    if (held[i].id == id) return held[i].session;
  }
  pthread_mutex_lock(&registry_lock);
  for (tl_session *s = open_sessions; s != NULL; s = s->next_open) {
    if (s->id == id) found = s;
  }
  pthread_mutex_unlock(&registry_lock);
  return found;
}

tl_owner tl__session_owner_any(const tl_session *handle) {
  uint64_t id = (uint64_t)(uintptr_t)handle;
  tl_owner owner = 0;
  if (handle == NULL) return 0;
  pthread_mutex_lock(&registry_lock);
  for (tl_session *s = open_sessions; s != NULL; s = s->next_open) {
    if (s->id == id) owner = s->owner;
  }
  pthread_mutex_unlock(&registry_lock);
  return owner;
}

tl_status tl__session_join(const tl_ticket *ticket, const char *call, struct tl_context **ctx) {
  tl_status status = TL_E_STALE;
  *ctx = NULL;
  pthread_mutex_lock(&registry_lock);
  for (tl_session *s = open_sessions; s != NULL; s = s->next_open) {
    /* Serials, never the context's address: a context made later at a reused address has
     * another serial, and its sessions other open numbers. */
    if (s->id == ticket->session_serial && s->ctx->serial == ticket->context_serial &&
        s->owner == ticket->owner) {
      /* Under the lock: the session cannot close (and its context cannot be destroyed)
       * before this entry is counted, so close's drain waits for it. */
      status = tl__child_enter(&s->ctx->arbiter, ticket->owner, s->generation);
      if (status == TL_OK) *ctx = s->ctx;
      break;
    }
  }
  pthread_mutex_unlock(&registry_lock);
  if (status == TL_E_STALE) {
    return tl__fail(TL_E_STALE,
                    "%s: the ticket outlived its session: owner %llu's session %llu on context "
                    "%llu is closed (a context at the same address is not the ticket's)",
                    call, (unsigned long long)ticket->owner,
                    (unsigned long long)ticket->session_serial,
                    (unsigned long long)ticket->context_serial);
  }
  return status;
}

int tl__session_phase_elsewhere(uint64_t token) {
  int found = 0;
  pthread_mutex_lock(&registry_lock);
  for (tl_session *s = open_sessions; s != NULL; s = s->next_open) {
    if (atomic_load(&s->phase_token) == token) found = 1;
  }
  pthread_mutex_unlock(&registry_lock);
  return found;
}
