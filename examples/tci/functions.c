/* examples/tci/functions.c: the registry of built-in functions, selectable by name. Each is
 * vectorised over a batch of points, like a user callback. */
#include <math.h>
#include <string.h>

#include "tci.h"

/* The 1-D oscillating function of Fernandez, Ritter et al. (SciPost Phys. Codebases 2024):
 * cos(x/B) cos(x/(4 sqrt5 B)) exp(-x^2) + 2 exp(-x), B = 2^-30, on [0, ln 20].
 *
 * Its phases reach 3e9 radians, so a double x (and a double phase) is off by up to 1e-6
 * radians: computed plainly, the values at the grid points carry rounding noise of a few
 * 1e-8 relative that no tensor train of small rank follows. So it is evaluated at the point
 * of the finest grid (2^40 cells on [0, ln 20]) nearest x, which is exact for every grid of
 * this function (R <= 40; x is within 1e-12 of its cell), with the phases carried as sums of
 * two doubles and reduced mod 2 pi before the cosines: values correct to about 1e-15.
 * Its integral is 19/10 up to a term of order exp(-2^58). */
#define OSC_LN20_HI 0x1.7f7427b73e391p+1 /* ln 20 = HI + LO */
#define OSC_LN20_LO 0x1.40ee67e188c1ep-53
#define OSC_C_HI 0x1.c9f25c5bfedd9p-4 /* 1 / (4 sqrt 5) = HI + LO */
#define OSC_C_LO 0x1.ab294a33804a5p-59
#define OSC_2PI_HI 0x1.921fb54442d18p+2 /* 2 pi = HI + LO */
#define OSC_2PI_LO 0x1.1a62633145c07p-52

/* cos(hi + lo) for |hi| < 2^34, |lo| <= ulp(hi): the phase less its whole turns first. */
static double cos_of_sum(double hi, double lo) {
  double k = nearbyint(hi / OSC_2PI_HI);
  double turn = k * OSC_2PI_HI, turn_err = fma(k, OSC_2PI_HI, -turn); /* k 2pi_HI exactly */
  double r = hi - turn; /* exact: hi and turn are within a factor 2 of each other, or k = 0 */
  r = ((r - turn_err) + lo) - k * OSC_2PI_LO;
  return cos(r);
}

static int osc1d(const double *x, size_t n, int dims, double *y, void *arg) {
  (void)dims;
  (void)arg;
  const double cells = ldexp(1.0, 40);
  for (size_t i = 0; i < n; i++) {
    double t = nearbyint(x[i] / OSC_LN20_HI * cells) / cells; /* x = ln 20 * t, t exact */
    /* x = p + e + t LO exactly to rounding; x / B = x 2^30 (exact scaling). */
    double p = OSC_LN20_HI * t, e = fma(OSC_LN20_HI, t, -p) + OSC_LN20_LO * t;
    double ph1 = ldexp(p, 30), ph1_lo = ldexp(e, 30);
    double q = ph1 * OSC_C_HI;
    double q_lo = fma(ph1, OSC_C_HI, -q) + ph1 * OSC_C_LO + ph1_lo * OSC_C_HI;
    double xv = p + e;
    y[i] = cos_of_sum(ph1, ph1_lo) * cos_of_sum(q, q_lo) * exp(-xv * xv) + 2.0 * exp(-xv);
  }
  return 0;
}

/* 2-D, sharp features: a steep curved front (width 0.01) and a narrow ridge along the
 * diagonal x + y = -0.4 (width ~0.03) crossing it. */
static int sharp2d(const double *x, size_t n, int dims, double *y, void *arg) {
  (void)dims;
  (void)arg;
  for (size_t i = 0; i < n; i++) {
    double u = x[2 * i], v = x[2 * i + 1];
    double front = tanh((u - 0.3 * sin(3.0 * v)) / 0.01);
    double ridge = u + v + 0.4;
    y[i] = front + 0.5 * exp(-ridge * ridge / 1e-3);
  }
  return 0;
}

/* 3-D smooth: cos(x + y^2 + z) / (1 + x^2 + y^2 + z^2) on [-1, 1]^3. */
static int smooth3d(const double *x, size_t n, int dims, double *y, void *arg) {
  (void)dims;
  (void)arg;
  for (size_t i = 0; i < n; i++) {
    double a = x[3 * i], b = x[3 * i + 1], c = x[3 * i + 2];
    y[i] = cos(a + b * b + c) / (1.0 + a * a + b * b + c * c);
  }
  return 0;
}

/* 2-D with a known integral: a Gaussian of width 0.08 centred in [0, 1]^2; its integral is
 * (s sqrt(pi) erf(0.5 / s))^2. It is below 1e-16 at the edges, so the grid's Riemann sum
 * agrees with the integral to rounding. */
#define GAUSS_S 0.08
static int gauss2d(const double *x, size_t n, int dims, double *y, void *arg) {
  (void)dims;
  (void)arg;
  for (size_t i = 0; i < n; i++) {
    double u = x[2 * i] - 0.5, v = x[2 * i + 1] - 0.5;
    y[i] = exp(-(u * u + v * v) / (GAUSS_S * GAUSS_S));
  }
  return 0;
}

static tci_function builtins[4];

static void builtins_init(void) {
  if (builtins[0].name) return;
  const double pi = 3.14159265358979323846;
  double g = GAUSS_S * sqrt(pi) * erf(0.5 / GAUSS_S);
  tci_function table[4] = {
      {"osc1d",
       "cos(x/B)cos(x/(4sqrt5 B))exp(-x^2)+2exp(-x), B=2^-30, on [0, ln 20]",
       1,
       {0.0},
       {log(20.0)},
       osc1d,
       NULL,
       40,
       1,
       1.9,
       1,
       NULL},
      {"sharp2d",
       "tanh((x-0.3sin(3y))/0.01)+0.5exp(-(x+y+0.4)^2/1e-3) on [-1,1]^2",
       2,
       {-1.0, -1.0},
       {1.0, 1.0},
       sharp2d,
       NULL,
       10,
       0,
       0.0,
       1,
       NULL},
      {"smooth3d",
       "cos(x+y^2+z)/(1+x^2+y^2+z^2) on [-1,1]^3",
       3,
       {-1.0, -1.0, -1.0},
       {1.0, 1.0, 1.0},
       smooth3d,
       NULL,
       10,
       0,
       0.0,
       1,
       NULL},
      {"gauss2d",
       "exp(-((x-.5)^2+(y-.5)^2)/0.08^2) on [0,1]^2, integral (0.08 sqrt(pi))^2",
       2,
       {0.0, 0.0},
       {1.0, 1.0},
       gauss2d,
       NULL,
       16,
       1,
       g * g,
       1,
       NULL},
  };
  memcpy(builtins, table, sizeof table);
}

int tci_function_call(const tci_function *f, const uint64_t *index, const double *x, size_t n,
                      double *y) {
  return f->index_fn ? f->index_fn(index, n, f->dims, y, f->arg) : f->fn(x, n, f->dims, y, f->arg);
}

size_t tci_builtin_count(void) { return sizeof builtins / sizeof builtins[0]; }

const tci_function *tci_builtin_at(size_t i) {
  builtins_init();
  return i < tci_builtin_count() ? &builtins[i] : NULL;
}

const tci_function *tci_builtin(const char *name) {
  builtins_init();
  for (size_t i = 0; i < tci_builtin_count(); i++)
    if (name && strcmp(builtins[i].name, name) == 0) return &builtins[i];
  return NULL;
}
