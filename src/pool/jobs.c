/* src/pool/jobs.c: the job queue behind tl_pool_parallel_for. A loop becomes one job whose
 * chunks any worker claims under the queue lock (the calling thread claims too when it is
 * a worker of the same pool). The job lives on the submitter's stack: it returns only once
 * every chunk reported done, and a worker reads what it needs before reporting. */
#include "pool_int.h"

/* Claim and run one chunk of the oldest job. worker_index is reported to fn (-1 for a
 * thread running a chunk of its own loop). Returns 1 if a chunk ran. */
int tl__pool_run_job_chunk(tl_pool *pool, int worker_index);

int tl__pool_run_job_chunk(tl_pool *pool, int worker_index) {
  if (atomic_load_explicit(&pool->jobs_queued, memory_order_acquire) == 0) return 0;
  pthread_mutex_lock(&pool->job_lock);
  tl__job *job = pool->job_head;
  if (job == NULL) {
    pthread_mutex_unlock(&pool->job_lock);
    return 0;
  }
  size_t chunk = job->next_chunk++;
  if (job->next_chunk == job->chunks) {
    pool->job_head = job->next;
    if (pool->job_head == NULL) pool->job_tail = NULL;
    atomic_fetch_sub_explicit(&pool->jobs_queued, 1, memory_order_release);
  }
  pthread_mutex_unlock(&pool->job_lock);

  /* chunk < chunks, so begin < count; the end is clamped without forming begin + grain,
   * which wraps for a grain near SIZE_MAX. */
  size_t begin = chunk * job->grain;
  size_t end = job->count - begin > job->grain ? begin + job->grain : job->count;
  size_t chunks = job->chunks;
  tl__waiter *submitter = job->submitter;
  job->fn(begin, end, worker_index, job->arg);
  /* After this increment the job may be gone: touch nothing of it. */
  if (atomic_fetch_add_explicit(&job->done_chunks, 1, memory_order_acq_rel) + 1 == chunks) {
    tl__waiter_wake(submitter);
  }
  return 1;
}

static int job_done(void *arg) {
  tl__job *job = arg;
  return atomic_load_explicit(&job->done_chunks, memory_order_acquire) == job->chunks;
}

tl_status tl_pool_parallel_for(tl_pool *pool, size_t count, size_t grain, tl_pool_range_fn fn,
                               void *arg) {
  if (pool == NULL || fn == NULL)
    return tl__fail(TL_E_INVALID, "tl_pool_parallel_for: pool (%p) and fn must not be NULL",
                    (void *)pool);
  tl_status forked = tl__pool_refuse_forked(pool, "tl_pool_parallel_for");
  if (forked != TL_OK) return forked;
  if (count == 0) return TL_OK;
  if (grain == 0) {
    /* About four chunks a worker; rounded up without forming count + pieces - 1, which
     * wraps (to a grain of 0, then a division by it) for a count near SIZE_MAX. */
    size_t pieces = (size_t)pool->workers * 4;
    grain = tl__size_div_up(count, pieces > 0 ? pieces : 1);
  }
  size_t chunks = tl__size_div_up(count, grain);
  int own_index = tl_pool_current_index(pool);
  if (chunks == 1) {
    /* Nothing to share: waking a worker would only add its wake-up latency. */
    fn(0, count, own_index >= 0 ? own_index : -1, arg);
    return TL_OK;
  }
  tl__job job;
  job.next = NULL;
  job.fn = fn;
  job.arg = arg;
  job.count = count;
  job.grain = grain;
  job.chunks = chunks;
  job.next_chunk = 0;
  atomic_init(&job.done_chunks, 0);
  job.submitter = tl__waiter_self();

  /* The job lives on this stack frame: the last chunk's claim unlinks it, and this function
   * returns only after every chunk reported done. */
  pthread_mutex_lock(&pool->job_lock);
  if (pool->job_tail != NULL) {
    // cppcheck-suppress autoVariables ; unlinked by the last claim, before we return
    pool->job_tail->next = &job;
  } else {
    // cppcheck-suppress autoVariables ; unlinked by the last claim, before we return
    pool->job_head = &job;
  }
  // cppcheck-suppress autoVariables ; unlinked by the last claim, before we return
  pool->job_tail = &job;
  atomic_fetch_add_explicit(&pool->jobs_queued, 1, memory_order_seq_cst);
  pthread_mutex_unlock(&pool->job_lock);
  tl__pool_wake_all(pool);
  /* A worker of this pool helps through tl__pool_wait; it runs chunks of its own job. */
  tl__pool_wait(pool, job_done, &job);
  return TL_OK;
}
