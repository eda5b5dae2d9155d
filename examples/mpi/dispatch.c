/* examples/mpi/dispatch.c: batches out to idle ranks, results back in item order.
 *
 * The root (rank 0) owns the item counter. It hands each worker rank batches of
 * consecutive items, keeping up to DEPTH of them queued on every worker, and computes
 * smaller chunks of its own in between. A worker runs its batches in the order received,
 * one phase each, and sends each batch's results back as soon as its phase returns; the
 * root copies them to their items' places and refills that worker's queue.
 *
 * MPI threading (FUNNELED): every MPI call here is made by the thread that initialised
 * MPI, between two phases, never from a lane. While that thread is parked in a phase it
 * cannot answer anyone, so:
 *   - a worker holds up to DEPTH (3) batches, so it starts the next one at once and its
 *     queue outlasts two of its own batches while the root computes;
 *   - the root's own chunk is about a quarter of a worker batch's time, so the root comes
 *     back to refill a queue long before the worker has emptied it, even when the CPUs
 *     run at different speeds;
 *   - no rank waits inside a send for a peer that is inside a phase: replies go
 *     non-blocking (their data arrives at once, only their buffer is held), batch messages
 *     are small enough to go out inline (send_now).
 *
 * Failures: a batch whose item fails reports its lowest failing item (every item below it
 * in the batch ran). The root then hands out nothing more, every rank drains the batches it
 * already holds, and the lowest failing item over all reports is the answer. Because
 * batches leave the root in item order, every item below that one was handed out and ran:
 * the answer is the lowest failing item of the whole input, whatever the rank count. */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi_fanout.h"

enum { DEPTH = 3, TAG_BATCH = 11, TAG_REPLY = 12, TAG_PING = 13 };

/* What a worker sends back after a batch, followed by `count` fan_result. */
typedef struct reply_header {
  int64_t first, count;
  int64_t status; /* 0 ok, 1 an item failed, 3 the rank's engine failed */
  int64_t failed_item;
  char why[300];
} reply_header;

static size_t reply_bytes(size_t count) {
  return sizeof(reply_header) + count * sizeof(fan_result);
}

static void nap(void) {
  struct timespec ts = {0, 20000}; /* 20 us: a waiting rank leaves its CPU to the lanes */
  nanosleep(&ts, NULL);
}

static void wait_quiet(MPI_Request *request) {
  int done = 0;
  MPI_Test(request, &done, MPI_STATUS_IGNORE);
  while (!done) {
    nap();
    MPI_Test(request, &done, MPI_STATUS_IGNORE);
  }
}

void mpi_quiet_barrier(void) {
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  wait_quiet(&request);
}

void mpi_quiet_bcast(int *value) {
  MPI_Request request;
  MPI_Ibcast(value, 1, MPI_INT, 0, MPI_COMM_WORLD, &request);
  wait_quiet(&request);
}

/* Send a batch message (16 bytes). Blocking on purpose: a message this small goes out
 * inline (Open MPI's shared-memory transport: up to 256 bytes) and MPI_Send returns at once,
 * whereas the request of a non-blocking send would still be open when the root goes into
 * its next phase. Replies are larger (340 + 40 bytes per item); for those a blocking send
 * returns only once the root has taken the message (measured: up to a whole root chunk),
 * so they go non-blocking, their data delivered at once (up to the 4 KiB eager limit), and
 * each buffer is reused only DEPTH batches later. */
static void send_now(const void *data, size_t bytes, int to, int tag) {
  MPI_Send(data, (int)bytes, MPI_BYTE, to, tag, MPI_COMM_WORLD);
}

double mpi_one_way_us(void) {
  enum { TRIPS = 200 };
  int rank = 0, world = 1;
  char byte = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (world < 2 || rank > 1) return 0.0;
  double t0 = fan_now();
  for (int i = 0; i < TRIPS; i++) {
    if (rank == 0) {
      MPI_Send(&byte, 1, MPI_BYTE, 1, TAG_PING, MPI_COMM_WORLD);
      MPI_Recv(&byte, 1, MPI_BYTE, 1, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(&byte, 1, MPI_BYTE, 0, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(&byte, 1, MPI_BYTE, 0, TAG_PING, MPI_COMM_WORLD);
    }
  }
  return rank == 0 ? 1e6 * (fan_now() - t0) / (2.0 * TRIPS) : 0.0;
}

static void note_failure(mpi_failure *failure, size_t item, int rank, const char *why) {
  if (failure->failed && failure->item <= item) return;
  failure->failed = 1;
  failure->item = item;
  failure->rank = rank;
  snprintf(failure->why, sizeof failure->why, "%s", why);
}

/* ---- Root ---------------------------------------------------------------------------- */

typedef struct worker_link {
  int outstanding; /* batches sent and not yet answered */
  int stop_sent;
  char *reply;
} worker_link;

typedef struct root_state {
  mpi_rank *rank;
  int workers; /* world - 1; worker w is rank w + 1 */
  worker_link *links;
  MPI_Request *reply_requests;
  int *done_index;
  size_t next, total, batch;
  size_t root_chunk; /* the root's own chunk before the tail */
  int *lanes_of;     /* lanes of every rank */
  int all_lanes;     /* their sum */
  int stop;          /* set by the first failure: nothing more is handed out */
  int engine_failed;
  fan_result *results;
  mpi_failure *failure;
  char engine_why[340]; /* "rank N: " and a 300-byte reason */
} root_state;

static void post(int w, int64_t first, int64_t count) {
  int64_t batch[2] = {first, count};
  send_now(batch, sizeof batch, w + 1, TAG_BATCH);
}

/* The next batch for a rank with `lanes` lanes: `cap` items, but in the tail at most half
 * of that rank's share of what is left, so the ranks run out of work at about one time. */
static size_t next_count(const root_state *rs, int lanes, size_t cap) {
  size_t left = rs->total - rs->next;
  size_t count = left * (size_t)lanes / (2 * (size_t)rs->all_lanes);
  if (count > cap) count = cap;
  if (count < 1) count = 1;
  return count < left ? count : left;
}

/* Top up worker w's queue, or tell it to stop once nothing more will come. */
static void refill(root_state *rs, int w) {
  worker_link *link = &rs->links[w];
  while (!rs->stop && rs->next < rs->total && link->outstanding < DEPTH) {
    size_t count = next_count(rs, rs->lanes_of[w + 1], rs->batch);
    post(w, (int64_t)rs->next, (int64_t)count);
    rs->next += count;
    if (link->outstanding++ == 0)
      MPI_Irecv(link->reply, (int)reply_bytes(rs->batch), MPI_BYTE, w + 1, TAG_REPLY,
                MPI_COMM_WORLD, &rs->reply_requests[w]);
  }
  if ((rs->stop || rs->next >= rs->total) && !link->stop_sent) {
    post(w, 0, 0);
    link->stop_sent = 1;
  }
}

static void take_reply(root_state *rs, int w) {
  worker_link *link = &rs->links[w];
  const reply_header *head = (const reply_header *)link->reply;
  if (head->status == 0) {
    memcpy(rs->results + head->first, link->reply + sizeof *head,
           sizeof(fan_result) * (size_t)head->count);
  } else if (head->status == 1) {
    note_failure(rs->failure, (size_t)head->failed_item, w + 1, head->why);
    rs->stop = 1;
  } else {
    snprintf(rs->engine_why, sizeof rs->engine_why, "rank %d: %s", w + 1, head->why);
    rs->engine_failed = 1;
    rs->stop = 1;
  }
  if (--link->outstanding > 0)
    MPI_Irecv(link->reply, (int)reply_bytes(rs->batch), MPI_BYTE, w + 1, TAG_REPLY, MPI_COMM_WORLD,
              &rs->reply_requests[w]);
}

/* Answer every worker whose reply has arrived. Returns the batches still outstanding. */
static int serve(root_state *rs) {
  int outstanding = 0;
  if (rs->workers > 0) {
    int done = 0;
    MPI_Testsome(rs->workers, rs->reply_requests, &done, rs->done_index, MPI_STATUSES_IGNORE);
    for (int i = 0; done != MPI_UNDEFINED && i < done; i++) take_reply(rs, rs->done_index[i]);
  }
  for (int w = 0; w < rs->workers; w++) {
    refill(rs, w);
    outstanding += rs->links[w].outstanding;
  }
  return outstanding;
}

/* The root's own chunk: a quarter of a worker batch's time (when lanes run at one speed),
 * so it is back well before a worker's queue empties even when its CPU is the slower one.
 * A phase on the root costs microseconds, so small chunks are cheap; at least one item per
 * root lane. */
static size_t root_chunk(const root_state *rs) {
  if (rs->workers == 0) return rs->batch;
  int widest = 1;
  for (int w = 1; w <= rs->workers; w++)
    if (rs->lanes_of[w] > widest) widest = rs->lanes_of[w];
  size_t chunk = rs->batch * (size_t)rs->lanes_of[0] / (4 * (size_t)widest);
  return chunk < (size_t)rs->lanes_of[0] ? (size_t)rs->lanes_of[0] : chunk;
}

static void root_loop(root_state *rs, mpi_rank_stats *stats) {
  double dispatch = 0.0;
  for (;;) {
    double s0 = fan_now();
    int outstanding = serve(rs);
    dispatch += fan_now() - s0;
    if (!rs->stop && rs->next < rs->total) {
      size_t first = rs->next, count = next_count(rs, rs->lanes_of[0], rs->root_chunk);
      rs->next += count;
      size_t failed_item = 0;
      char why[300];
      int rc = mpi_rank_batch(rs->rank, first, count, rs->results + first, 1, &failed_item, why,
                              sizeof why);
      if (rc == 1) note_failure(rs->failure, failed_item, 0, why);
      if (rc == 3) {
        snprintf(rs->engine_why, sizeof rs->engine_why, "rank 0: %s", why);
        rs->engine_failed = 1;
      }
      if (rc) rs->stop = 1;
    } else if (outstanding == 0) {
      break;
    } else {
      nap();
    }
  }
  stats->dispatch_s = dispatch;
}

int mpi_dispatch_root(mpi_rank *rank, int world, fan_result *results, mpi_rank_stats *stats,
                      mpi_failure *failure, char *why, size_t why_size) {
  root_state rs;
  memset(&rs, 0, sizeof rs);
  rs.rank = rank;
  rs.workers = world - 1;
  rs.total = rank->opt->patches;
  rs.batch = rank->opt->batch;
  rs.results = results;
  rs.failure = failure;
  int *lanes_of = calloc((size_t)world, sizeof *lanes_of);
  rs.links = calloc((size_t)(world > 1 ? world - 1 : 1), sizeof *rs.links);
  rs.reply_requests = calloc((size_t)(world > 1 ? world - 1 : 1), sizeof *rs.reply_requests);
  rs.done_index = calloc((size_t)(world > 1 ? world - 1 : 1), sizeof *rs.done_index);
  int ok = lanes_of && rs.links && rs.reply_requests && rs.done_index;
  for (int w = 0; ok && w < rs.workers; w++) {
    rs.reply_requests[w] = MPI_REQUEST_NULL;
    rs.links[w].reply = malloc(reply_bytes(rs.batch));
    ok = rs.links[w].reply != NULL;
  }
  if (!ok) {
    /* Without its state the root cannot answer anyone: end the job rather than hang it. */
    fprintf(stderr, "tenlane-fanout-mpi: out of memory for the root's dispatch state\n");
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_Gather(&rank->lanes, 1, MPI_INT, lanes_of, 1, MPI_INT, 0, MPI_COMM_WORLD);
  int status = 0;
  rs.lanes_of = lanes_of;
  for (int r = 0; r < world; r++) rs.all_lanes += lanes_of[r];
  rs.root_chunk = root_chunk(&rs);
  stats->root_chunk = (double)rs.root_chunk;
  mpi_quiet_barrier(); /* the timed run starts on every rank at once */
  double t0 = fan_now();
  root_loop(&rs, stats);
  double t1 = fan_now();
  stats->wall_s = t1 - t0;
  if (rs.engine_failed && status == 0) {
    snprintf(why, why_size, "%s", rs.engine_why);
    status = 3;
  }
  for (int w = 0; w < rs.workers; w++) free(rs.links[w].reply);
  free(rs.links);
  free(rs.reply_requests);
  free(rs.done_index);
  free(lanes_of);
  return status;
}

/* ---- Worker -------------------------------------------------------------------------- */

int mpi_dispatch_worker(mpi_rank *rank, mpi_rank_stats *stats, char *why, size_t why_size) {
  char *replies[DEPTH];
  MPI_Request reply_requests[DEPTH];
  int ok = 1;
  for (int i = 0; i < DEPTH; i++) {
    replies[i] = malloc(reply_bytes(rank->opt->batch));
    reply_requests[i] = MPI_REQUEST_NULL;
    ok = ok && replies[i];
  }
  int64_t inbox[2][2];
  MPI_Request inbox_request;
  if (!ok) {
    /* Without its reply buffers this rank cannot answer: end the job rather than hang it. */
    fprintf(stderr, "tenlane-fanout-mpi: out of memory for a worker's reply buffers\n");
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_Gather(&rank->lanes, 1, MPI_INT, NULL, 1, MPI_INT, 0, MPI_COMM_WORLD);
  mpi_quiet_barrier();
  double t0 = fan_now(), dispatch = 0.0;
  int status = 0, cur = 0, slot = 0;
  MPI_Irecv(inbox[cur], (int)sizeof inbox[cur], MPI_BYTE, 0, TAG_BATCH, MPI_COMM_WORLD,
            &inbox_request);
  wait_quiet(&inbox_request);
  while (inbox[cur][1] > 0) {
    double s0 = fan_now();
    /* Posted before the phase: the next batch lands while this one runs. */
    MPI_Irecv(inbox[cur ^ 1], (int)sizeof inbox[cur], MPI_BYTE, 0, TAG_BATCH, MPI_COMM_WORLD,
              &inbox_request);
    /* This buffer's reply left DEPTH - 1 batches ago; the root has long taken it. */
    wait_quiet(&reply_requests[slot]);
    dispatch += fan_now() - s0;
    reply_header *head = (reply_header *)replies[slot];
    head->first = inbox[cur][0];
    head->count = inbox[cur][1];
    head->why[0] = '\0';
    size_t failed_item = 0;
    head->status = mpi_rank_batch(rank, (size_t)head->first, (size_t)head->count,
                                  (fan_result *)(replies[slot] + sizeof *head), 1, &failed_item,
                                  head->why, sizeof head->why);
    head->failed_item = (int64_t)failed_item;
    if (head->status == 3) status = 3;
    s0 = fan_now();
    MPI_Isend(replies[slot], (int)reply_bytes((size_t)head->count), MPI_BYTE, 0, TAG_REPLY,
              MPI_COMM_WORLD, &reply_requests[slot]);
    slot = (slot + 1) % DEPTH;
    dispatch += fan_now() - s0;
    wait_quiet(&inbox_request);
    cur ^= 1;
  }
  for (int i = 0; i < DEPTH; i++) wait_quiet(&reply_requests[i]);
  stats->wall_s = fan_now() - t0;
  stats->dispatch_s = dispatch;
  if (status == 3) snprintf(why, why_size, "an engine failure, reported to the root");
  for (int i = 0; i < DEPTH; i++) free(replies[i]);
  return status;
}
