/* tenlane/tenlane.h: the umbrella header. Including it gives the whole public API:
 * status codes and messages, allocator hooks, pools, contexts, sessions and tickets,
 * panics, the phase lease and tl_map, tensors, the core routes, einsum and linear algebra. */
#ifndef TENLANE_H
#define TENLANE_H

#include "tenlane/alloc.h"
#include "tenlane/context.h"
#include "tenlane/einsum.h"
#include "tenlane/export.h"
#include "tenlane/linalg.h"
#include "tenlane/map.h"
#include "tenlane/ops.h"
#include "tenlane/panic.h"
#include "tenlane/phase.h"
#include "tenlane/pool.h"
#include "tenlane/session.h"
#include "tenlane/status.h"
#include "tenlane/tensor.h"
#include "tenlane/version.h"

#endif
