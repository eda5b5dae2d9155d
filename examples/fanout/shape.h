/* examples/fanout/shape.h: the command-line options that size the fan-out's problem, shared
 * by tenlane-fanout and tenlane-fanout-mpi (part of tenlane_fanout_patch, no MPI).
 *
 * Both programs take --patches, --length, --phys, --bond, --bond-range, --dtype and --tol
 * with the same ranges and the same complaints; this parses them, so the two programs
 * accept and refuse exactly the same values. Each program keeps the values in its own
 * options struct and hands their addresses here in a fan_shape_fields; it prints a
 * complaint its own way (program name, usage text) and picks its own exit status.
 *
 * Thread rules: call from one thread (the program's argv parsing); nothing is kept. */
#ifndef FANOUT_SHAPE_H
#define FANOUT_SHAPE_H

#include <stddef.h>

#include "patch.h"

/* getopt_long values of the shape options; a program numbers its own from FAN_SHAPE_END. */
enum {
  FAN_SHAPE_PATCHES = 256,
  FAN_SHAPE_LENGTH,
  FAN_SHAPE_PHYS,
  FAN_SHAPE_BOND,
  FAN_SHAPE_BOND_RANGE,
  FAN_SHAPE_DTYPE,
  FAN_SHAPE_TOL,
  FAN_SHAPE_END
};

/* The `struct option` rows of the shape options, for a program's long_options table. */
#define FAN_SHAPE_LONG_OPTIONS                                       \
  {"patches", required_argument, NULL, FAN_SHAPE_PATCHES},           \
      {"length", required_argument, NULL, FAN_SHAPE_LENGTH},         \
      {"phys", required_argument, NULL, FAN_SHAPE_PHYS},             \
      {"bond", required_argument, NULL, FAN_SHAPE_BOND},             \
      {"bond-range", required_argument, NULL, FAN_SHAPE_BOND_RANGE}, \
      {"dtype", required_argument, NULL, FAN_SHAPE_DTYPE}, {         \
    "tol", required_argument, NULL, FAN_SHAPE_TOL                    \
  }

/* Where a program keeps the shape options' values (all pointers non-NULL). */
typedef struct fan_shape_fields {
  size_t *patches;
  int *length, *phys;
  int *bond_lo, *bond_hi; /* --bond sets both */
  fan_dtype *dtype;
  double *tol;
} fan_shape_fields;

/* Parse the value `arg` of shape option `which` (a FAN_SHAPE_* value) into its field.
 * Returns NULL when taken; otherwise the complaint (a static string naming the option and
 * what it needs; `arg` is the offending value) and the field is left as it was. A `which`
 * outside the shape options is refused with "unknown option". */
const char *fan_shape_parse(int which, const char *arg, const fan_shape_fields *fields);

/* The check that needs every shape option at once: the largest grid side (the top bond
 * times --phys) stays <= 4096. Returns NULL when it does, else the complaint. */
const char *fan_shape_check(const fan_shape_fields *fields);

/* Whole decimal integer text in lo..hi into *out: 0, or -1 (empty, not a number, out of
 * range; *out unchanged). */
int fan_parse_ll(const char *text, long long lo, long long hi, long long *out);

#endif
