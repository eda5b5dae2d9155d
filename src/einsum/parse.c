/* src/einsum/parse.c: the einsum spec grammar (numpy's), bound to the operands' ranks.
 *
 *   spec   := terms [ "->" term ]      terms := term { "," term }
 *   term   := { letter | "..." }       (at most one "..." per term; spaces anywhere)
 *
 * The invariant it keeps: a parsed term holds exactly one label per axis of its operand,
 * "..." expanded to the operand's leading broadcast axes aligned from the right, and the
 * output holds each label once, each one present in some input. Every rejection names the
 * spec, the byte position and the offending character or label. */
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "einsum_int.h"

const char *tl__einsum_label_name(int label, const tl__einsum_spec *parsed, char *buf) {
  if (label >= 0 && label < 26) {
    buf[0] = (char)('A' + label);
    buf[1] = '\0';
  } else if (label >= 26 && label < TL__EINSUM_LETTERS) {
    buf[0] = (char)('a' + label - 26);
    buf[1] = '\0';
  } else if (tl__einsum_is_broadcast(label)) {
    snprintf(buf, 32, "...[%d]", label - TL__EINSUM_LETTERS);
  } else if (parsed != NULL && label - TL__EINSUM_INTEGER_BASE < parsed->n_integers) {
    snprintf(buf, 32, "{%lld}", parsed->integer_values[label - TL__EINSUM_INTEGER_BASE]);
  } else {
    snprintf(buf, 32, "{#%d}", label - TL__EINSUM_INTEGER_BASE);
  }
  return buf;
}

static int letter_label(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -1;
}

/* A term before the ellipsis is expanded: its letters, and where "..." sat among them. */
typedef struct raw_term {
  int count;
  int labels[TL_MAX_RANK];
  int positions[TL_MAX_RANK];
  int ellipsis_at; /* index into labels where "..." goes, or -1 */
  int ellipsis_pos;
  int start; /* byte offset of the term */
} raw_term;

/* Scan one term from spec[*at] up to a ',' '-' or the end. */
/* The id of integer label "{...}" at spec[i] (i at the '{'); *next after the '}'. */
static tl_status integer_label(const char *spec, size_t i, tl__einsum_spec *out, int *label,
                               size_t *next) {
  size_t j = i + 1;
  long long value = 0;
  int digits = 0;
  while (spec[j] >= '0' && spec[j] <= '9' && digits <= 10) {
    value = value * 10 + (spec[j++] - '0');
    digits++;
  }
  if (digits == 0 || digits > 10 || spec[j] != '}') {
    return tl__fail(TL_E_INVALID,
                    "einsum spec \"%s\": the integer label at position %zu is not \"{N}\" with "
                    "N of 1 to 10 decimal digits",
                    spec, i);
  }
  *next = j + 1;
  for (int k = 0; k < out->n_integers; k++) {
    if (out->integer_values[k] == value) {
      *label = TL__EINSUM_INTEGER_BASE + k;
      return TL_OK;
    }
  }
  if (out->n_integers == TL__EINSUM_INTEGER_MAX) {
    return tl__fail(TL_E_INVALID,
                    "einsum spec \"%s\": more than %d distinct integer labels (the one at "
                    "position %zu)",
                    spec, TL__EINSUM_INTEGER_MAX, i);
  }
  out->integer_values[out->n_integers] = value;
  *label = TL__EINSUM_INTEGER_BASE + out->n_integers++;
  return TL_OK;
}

static tl_status scan_term(const char *spec, size_t *at, raw_term *term, tl__einsum_spec *out) {
  term->count = 0;
  term->ellipsis_at = -1;
  term->ellipsis_pos = -1;
  term->start = (int)*at;
  size_t i = *at;
  for (;;) {
    char c = spec[i];
    if (c == '\0' || c == ',' || c == '-') break;
    if (c == ' ') {
      i++;
      continue;
    }
    if (c == '.') {
      if (spec[i + 1] != '.' || spec[i + 2] != '.') {
        return tl__fail(TL_E_INVALID,
                        "einsum spec \"%s\": a '.' at position %zu is not part of \"...\"", spec,
                        i);
      }
      if (term->ellipsis_at >= 0) {
        return tl__fail(TL_E_INVALID,
                        "einsum spec \"%s\": a second \"...\" at position %zu in one term "
                        "(the first at %d)",
                        spec, i, term->ellipsis_pos);
      }
      term->ellipsis_at = term->count;
      term->ellipsis_pos = (int)i;
      i += 3;
      continue;
    }
    int label = letter_label(c);
    size_t next = i + 1;
    if (c == '{') {
      tl_status status = integer_label(spec, i, out, &label, &next);
      if (status != TL_OK) return status;
    }
    if (label < 0) {
      if (c == '>') {
        return tl__fail(TL_E_INVALID, "einsum spec \"%s\": '>' at position %zu without a '-'", spec,
                        i);
      }
      return tl__fail(TL_E_INVALID,
                      "einsum spec \"%s\": unknown label character '%c' (0x%02x) at position "
                      "%zu; labels are the letters a-z and A-Z, or integers written {N}",
                      spec, (c >= 0x20 && c < 0x7f) ? c : '?', (unsigned)(unsigned char)c, i);
    }
    if (term->count == TL_MAX_RANK) {
      return tl__fail(TL_E_SHAPE,
                      "einsum spec \"%s\": the term at position %d names more than %d axes "
                      "(at position %zu)",
                      spec, term->start, TL_MAX_RANK, i);
    }
    term->labels[term->count] = label;
    term->positions[term->count] = (int)i;
    term->count++;
    i = next;
  }
  *at = i;
  return TL_OK;
}

/* Expand raw into a bound term with `ellipsis_axes` broadcast axes that take the last
 * ellipsis_axes of the spec's broadcast_rank labels. */
static void expand_term(const raw_term *raw, int ellipsis_axes, int broadcast_rank,
                        tl__einsum_term *out) {
  int k = 0;
  for (int i = 0; i <= raw->count; i++) {
    if (i == raw->ellipsis_at) {
      for (int e = 0; e < ellipsis_axes; e++) {
        out->labels[k] = TL__EINSUM_LETTERS + (broadcast_rank - ellipsis_axes + e);
        out->positions[k] = raw->ellipsis_pos;
        k++;
      }
    }
    if (i < raw->count) {
      out->labels[k] = raw->labels[i];
      out->positions[k] = raw->positions[i];
      k++;
    }
  }
  out->count = k;
  out->has_ellipsis = raw->ellipsis_at >= 0;
}

/* The output term: the explicit one checked against the inputs' labels (occurrences counts
 * each label's uses), or the implicit one (the broadcast axes, then every letter used
 * exactly once, in id order). */
static tl_status bind_output(const char *spec, int has_arrow, const raw_term *raw_output,
                             const int *occurrences, tl__einsum_spec *out) {
  tl__einsum_term *output = &out->output;
  out->explicit_output = has_arrow;
  if (has_arrow) {
    if (raw_output->count + (raw_output->ellipsis_at >= 0 ? out->broadcast_rank : 0) >
        TL_MAX_RANK) {
      return tl__fail(TL_E_SHAPE, "einsum spec \"%s\": the output has more than %d axes", spec,
                      TL_MAX_RANK);
    }
    expand_term(raw_output, raw_output->ellipsis_at >= 0 ? out->broadcast_rank : 0,
                out->broadcast_rank, output);
    int seen_at[TL__EINSUM_LABELS];
    for (int l = 0; l < TL__EINSUM_LABELS; l++) seen_at[l] = -1;
    for (int k = 0; k < output->count; k++) {
      int label = output->labels[k];
      char name[32];
      if (!tl__einsum_is_broadcast(label) && occurrences[label] == 0) {
        return tl__fail(TL_E_INVALID,
                        "einsum spec \"%s\": output label '%s' at position %d appears in no "
                        "input term",
                        spec, tl__einsum_label_name(label, out, name), output->positions[k]);
      }
      if (seen_at[label] >= 0) {
        return tl__fail(
            TL_E_INVALID, "einsum spec \"%s\": output label '%s' repeats (positions %d and %d)",
            spec, tl__einsum_label_name(label, out, name), seen_at[label], output->positions[k]);
      }
      seen_at[label] = output->positions[k];
    }
  } else {
    /* Implicit: the broadcast axes, then every letter used exactly once, in id order. */
    int k = 0;
    for (int e = 0; e < out->broadcast_rank; e++) {
      output->labels[k] = TL__EINSUM_LETTERS + e;
      output->positions[k] = -1;
      k++;
    }
    for (int label = 0; label < TL__EINSUM_LETTERS; label++) {
      if (occurrences[label] != 1) continue;
      if (k == TL_MAX_RANK) {
        return tl__fail(TL_E_SHAPE, "einsum spec \"%s\": the implicit output has more than %d axes",
                        spec, TL_MAX_RANK);
      }
      output->labels[k] = label;
      output->positions[k] = -1;
      k++;
    }
    /* then the integer labels used exactly once, by value (numpy's sublist order) */
    long long last = -1;
    for (;;) {
      int pick = -1;
      for (int i = 0; i < out->n_integers; i++) {
        long long v = out->integer_values[i];
        if (occurrences[TL__EINSUM_INTEGER_BASE + i] != 1 || v <= last) continue;
        if (pick < 0 || v < out->integer_values[pick]) pick = i;
      }
      if (pick < 0) break;
      if (k == TL_MAX_RANK) {
        return tl__fail(TL_E_SHAPE, "einsum spec \"%s\": the implicit output has more than %d axes",
                        spec, TL_MAX_RANK);
      }
      last = out->integer_values[pick];
      output->labels[k] = TL__EINSUM_INTEGER_BASE + pick;
      output->positions[k] = -1;
      k++;
    }
    output->count = k;
    output->has_ellipsis = out->broadcast_rank > 0;
  }
  return TL_OK;
}

tl_status tl__einsum_parse(const char *spec, int n_operands, const int *ranks,
                           tl__einsum_spec *out) {
  if (spec == NULL) return tl__fail(TL_E_INVALID, "einsum: spec is NULL");
  size_t length = strnlen(spec, TL_EINSUM_SPEC_MAX + 1);
  if (length > TL_EINSUM_SPEC_MAX) {
    return tl__fail(TL_E_INVALID, "einsum spec is longer than %d bytes", TL_EINSUM_SPEC_MAX);
  }
  if (n_operands < 1 || n_operands > TL_EINSUM_MAX_OPERANDS) {
    return tl__fail(TL_E_INVALID,
                    "einsum: n_operands is %d, expected 1..%d (TL_EINSUM_MAX_OPERANDS); spec "
                    "\"%.96s\"",
                    n_operands, TL_EINSUM_MAX_OPERANDS, spec);
  }
  out->n_integers = 0;
  raw_term raw_inputs[TL_EINSUM_MAX_OPERANDS];
  raw_term raw_output;
  size_t at = 0;
  int n_terms = 0;
  int has_arrow = 0;
  for (;;) {
    if (n_terms == TL_EINSUM_MAX_OPERANDS) {
      return tl__fail(TL_E_INVALID, "einsum spec \"%s\": more than %d operand terms", spec,
                      TL_EINSUM_MAX_OPERANDS);
    }
    tl_status status = scan_term(spec, &at, &raw_inputs[n_terms], out);
    if (status != TL_OK) return status;
    n_terms++;
    if (spec[at] == ',') {
      at++;
      continue;
    }
    if (spec[at] == '-') {
      if (spec[at + 1] != '>') {
        return tl__fail(TL_E_INVALID, "einsum spec \"%s\": '-' at position %zu without a '>'", spec,
                        at);
      }
      at += 2;
      has_arrow = 1;
    }
    break;
  }
  if (has_arrow) {
    tl_status status = scan_term(spec, &at, &raw_output, out);
    if (status != TL_OK) return status;
    if (spec[at] != '\0') {
      return tl__fail(TL_E_INVALID,
                      "einsum spec \"%s\": unexpected '%c' at position %zu in the output term",
                      spec, spec[at], at);
    }
  }
  if (n_terms != n_operands) {
    return tl__fail(TL_E_INVALID, "einsum spec \"%s\" has %d operand term%s but %d operand%s given",
                    spec, n_terms, n_terms == 1 ? "" : "s", n_operands,
                    n_operands == 1 ? " was" : "s were");
  }

  /* Bind each term to its operand's rank. */
  int broadcast_rank = 0;
  int ellipsis_axes[TL_EINSUM_MAX_OPERANDS];
  for (int i = 0; i < n_terms; i++) {
    const raw_term *raw = &raw_inputs[i];
    int rank = ranks[i];
    if (raw->ellipsis_at < 0) {
      if (raw->count != rank) {
        return tl__fail(TL_E_SHAPE,
                        "einsum spec \"%s\": term %d (at position %d) names %d axes but operand "
                        "%d has rank %d",
                        spec, i, raw->start, raw->count, i, rank);
      }
      ellipsis_axes[i] = 0;
    } else {
      if (raw->count > rank) {
        return tl__fail(TL_E_SHAPE,
                        "einsum spec \"%s\": term %d (at position %d) names %d axes besides "
                        "\"...\" but operand %d has rank %d",
                        spec, i, raw->start, raw->count, i, rank);
      }
      ellipsis_axes[i] = rank - raw->count;
      if (ellipsis_axes[i] > broadcast_rank) broadcast_rank = ellipsis_axes[i];
    }
  }
  out->n_inputs = n_terms;
  out->broadcast_rank = broadcast_rank;
  int occurrences[TL__EINSUM_LABELS];
  memset(occurrences, 0, sizeof occurrences);
  for (int i = 0; i < n_terms; i++) {
    expand_term(&raw_inputs[i], ellipsis_axes[i], broadcast_rank, &out->inputs[i]);
    for (int k = 0; k < out->inputs[i].count; k++) occurrences[out->inputs[i].labels[k]]++;
  }

  return bind_output(spec, has_arrow, &raw_output, occurrences, out);
}
