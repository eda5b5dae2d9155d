/* examples/fanout/shape.c: parsing of the options that size the problem (shape.h). */
#include "shape.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int fan_parse_ll(const char *text, long long lo, long long hi, long long *out) {
  if (!text || !*text) return -1;
  char *end = NULL;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || *end != '\0' || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

/* "LO:HI" with 1 <= LO <= HI <= 1024. */
static int parse_range(const char *text, int *lo, int *hi) {
  const char *colon = text ? strchr(text, ':') : NULL;
  if (!colon) return -1;
  char left[32];
  size_t n = (size_t)(colon - text);
  if (n == 0 || n >= sizeof left) return -1;
  memcpy(left, text, n);
  left[n] = '\0';
  long long a = 0, b = 0;
  if (fan_parse_ll(left, 1, 1024, &a) || fan_parse_ll(colon + 1, 1, 1024, &b) || a > b) return -1;
  *lo = (int)a;
  *hi = (int)b;
  return 0;
}

/* A number strictly between 0 and 1. */
static int parse_tol(const char *text, double *out) {
  if (!text) return -1;
  char *end = NULL;
  errno = 0;
  double t = strtod(text, &end);
  if (errno || *end != '\0' || !(t > 0.0 && t < 1.0)) return -1;
  *out = t;
  return 0;
}

const char *fan_shape_parse(int which, const char *arg, const fan_shape_fields *f) {
  long long v = 0;
  switch (which) {
    case FAN_SHAPE_PATCHES:
      if (fan_parse_ll(arg, 1, 100000000, &v)) return "--patches needs 1..1e8";
      *f->patches = (size_t)v;
      return NULL;
    case FAN_SHAPE_LENGTH:
      if (fan_parse_ll(arg, 4, 4096, &v)) return "--length needs 4..4096";
      *f->length = (int)v;
      return NULL;
    case FAN_SHAPE_PHYS:
      if (fan_parse_ll(arg, 2, 64, &v)) return "--phys needs 2..64";
      *f->phys = (int)v;
      return NULL;
    case FAN_SHAPE_BOND:
      if (fan_parse_ll(arg, 1, 1024, &v)) return "--bond needs 1..1024";
      *f->bond_lo = *f->bond_hi = (int)v;
      return NULL;
    case FAN_SHAPE_BOND_RANGE:
      if (parse_range(arg, f->bond_lo, f->bond_hi))
        return "--bond-range needs LO:HI with 1 <= LO <= HI <= 1024";
      return NULL;
    case FAN_SHAPE_DTYPE:
      if (arg && strcmp(arg, "f64") == 0)
        *f->dtype = FAN_F64;
      else if (arg && strcmp(arg, "c128") == 0)
        *f->dtype = FAN_C128;
      else
        return "--dtype needs f64 or c128";
      return NULL;
    case FAN_SHAPE_TOL:
      if (parse_tol(arg, f->tol)) return "--tol needs a number in (0, 1)";
      return NULL;
    default:
      return "unknown option";
  }
}

const char *fan_shape_check(const fan_shape_fields *f) {
  if ((long long)*f->bond_hi * *f->phys > 4096)
    return "--bond (or the top of --bond-range) times --phys must stay <= 4096";
  return NULL;
}
