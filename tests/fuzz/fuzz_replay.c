/* tests/fuzz/fuzz_replay.c: runs a fuzz target over files without libFuzzer, for the normal
 * test suite: every file of every directory (or file) named on the command line is passed to
 * LLVMFuzzerTestOneInput once. The seed corpus and the regressions (inputs that once found a
 * bug) run this way in every build, sanitized or not. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *bytes, size_t size);

static int run_file(const char *path) {
  FILE *file = fopen(path, "rb");
  if (file == NULL) {
    fprintf(stderr, "cannot open %s\n", path);
    return 1;
  }
  static uint8_t bytes[1 << 20];
  size_t size = fread(bytes, 1, sizeof bytes, file);
  fclose(file);
  uint8_t *copy = malloc(size ? size : 1); /* exact size, so an over-read is caught */
  memcpy(copy, bytes, size);
  LLVMFuzzerTestOneInput(copy, size);
  free(copy);
  return 0;
}

int main(int argc, char **argv) {
  int files = 0, errors = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "missing %s\n", argv[i]);
      return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
      errors += run_file(argv[i]);
      files++;
      continue;
    }
    DIR *dir = opendir(argv[i]);
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
      if (entry->d_name[0] == '.') continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", argv[i], entry->d_name);
      errors += run_file(path);
      files++;
    }
    closedir(dir);
  }
  printf("replayed %d inputs\n", files);
  return errors != 0 || files == 0;
}
