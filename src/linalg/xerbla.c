/* src/linalg/xerbla.c: tenlane's own handler for LAPACK's and BLAS's argument errors.
 *
 * Reference LAPACK reports an illegal argument by calling xerbla_, whose default prints a
 * line and stops the program. Defining xerbla_ here takes its place: LAPACK is
 * linked into libtenlane from its archive, so the static link binds LAPACK's calls to this
 * definition. It stays hidden like every internal symbol: a program that also calls the
 * system's LAPACK keeps that library's own handler. The handler only records the routine and the
 * argument in the calling thread's slot and returns; LAPACK then returns to its caller with a
 * negative info, and the route turns the record into TL_E_PROVIDER (tl__la_provider_fail). The slot
 * is per thread, so a lane, a ticket entry and the root all see only their own. */
#include <stdio.h>
#include <string.h>

#include "linalg_int.h"

static _Thread_local char pending_routine[16];
static _Thread_local int pending_argument;

/* The Fortran interface (declared in linalg_int.h): the routine's name (not NUL-terminated),
 * the argument's 1-based position, and the name's length (gfortran's hidden argument). */
int xerbla_(const char *routine, const int *argument, size_t routine_length) {
  size_t length = 0;
  if (routine != NULL) {
    while (length < routine_length && length < sizeof pending_routine - 1 &&
           routine[length] != ' ' && routine[length] != '\0')
      length++;
    memcpy(pending_routine, routine, length);
  }
  pending_routine[length] = '\0';
  if (length == 0) snprintf(pending_routine, sizeof pending_routine, "?");
  pending_argument = argument != NULL ? *argument : 0;
  if (pending_argument == 0) pending_argument = -1; /* the slot is pending even for 0 */
  return 0;
}

int tl__xerbla_take(char routine[16], int *argument) {
  if (pending_argument == 0) return 0;
  memcpy(routine, pending_routine, sizeof pending_routine);
  *argument = pending_argument;
  pending_argument = 0;
  return 1;
}

int tl__xerbla_pending(void) { return pending_argument != 0; }
