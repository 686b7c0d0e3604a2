/*
 * tests/unit/test_fuzz_regressions.c - every committed fuzz input through
 * its parser (issue 18): for each target of tests/fuzz/targets.def, every
 * file of tests/fuzz/corpus/<target>/ (the seeds) and of
 * tests/fuzz/regressions/<target>/ (one reproducer per bug the fuzzers
 * found, named after what it broke) goes through nas_fuzz_<target>, the
 * code libFuzzer runs (scripts/fuzz.sh). A broken promise aborts; under
 * scripts/test-sanitize.sh, ASan and UBSan report memory errors, leaks and
 * undefined behaviour. Allocations are capped (3 GB of address space, or
 * 2 GB per allocation under ASan) so that a parser trusting a size a
 * header claims fails here as under libFuzzer. Each target must have seeds.
 */
#include <setjmp.h> /* cmocka needs these three */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h> /* setrlimit */
#include "fuzz.h"

#if defined(__SANITIZE_ADDRESS__)
#define NAS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NAS_ASAN 1
#endif
#endif

/* Allocations are capped as libFuzzer caps them (-malloc_limit_mb), so an
 * input that makes a parser allocate what a header claims fails here too
 * (a target turns NAS_ENOMEM on a small input into an abort): under ASan
 * through its options (ASAN_OPTIONS from the environment still apply),
 * otherwise through the address-space limit. */
#ifdef NAS_ASAN
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "max_allocation_size_mb=2048:allocator_may_return_null=1";
}
#endif

static void cap_memory(void)
{
#ifndef NAS_ASAN
    struct rlimit rl = {(rlim_t)3 << 30, (rlim_t)3 << 30};
    if (setrlimit(RLIMIT_AS, &rl) != 0)
        print_message("cannot cap the address space: allocations are not checked\n");
#endif
}

#define FUZZ_DIR NAS_SOURCE_DIR "/tests/fuzz"

typedef int (*target_fn)(const uint8_t *data, size_t size);

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Feed every regular file of dir to fn, in name order; returns how many
 * (0 when the directory does not exist). */
static int feed_dir(const char *dir, target_fn fn)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    char *names[4096];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 4096) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "README.md") == 0)
            continue;
        names[n] = strdup(e->d_name);
        assert_non_null(names[n]);
        n++;
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], cmp_names);
    for (int i = 0; i < n; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "rb");
        if (!f)
            fail_msg("cannot open %s", path);
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        fseek(f, 0, SEEK_SET);
        uint8_t *buf = malloc(size > 0 ? (size_t)size : 1);
        assert_non_null(buf);
        if (size > 0 && fread(buf, 1, (size_t)size, f) != (size_t)size)
            fail_msg("cannot read %s", path);
        fclose(f);
        fprintf(stderr, "  %s (%ld bytes): ", path + strlen(FUZZ_DIR) + 1, size);
        int rc = fn(buf, (size_t)size);
        fprintf(stderr, "returned %d\n", rc);
        free(buf);
        free(names[i]);
    }
    return n;
}

static void run_target(const char *name, target_fn fn)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/corpus/%s", FUZZ_DIR, name);
    int seeds = feed_dir(dir, fn);
    if (seeds == 0)
        fail_msg("target %s has no seeds in %s", name, dir);
    snprintf(dir, sizeof dir, "%s/regressions/%s", FUZZ_DIR, name);
    int regs = feed_dir(dir, fn);
    printf("target %s: %d seeds, %d reproducers ok\n", name, seeds, regs);
}

#define NAS_FUZZ_TARGET(name, what)                                                \
    static void test_##name(void **state)                                          \
    {                                                                              \
        (void)state;                                                               \
        run_target(#name, nas_fuzz_##name);                                        \
    }
#include "targets.def"
#undef NAS_FUZZ_TARGET

int main(void)
{
    const struct CMUnitTest tests[] = {
#define NAS_FUZZ_TARGET(name, what) cmocka_unit_test(test_##name),
#include "targets.def"
#undef NAS_FUZZ_TARGET
    };
    cap_memory();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
