/*
 * tests/fuzz/fuzz_main.c - the libFuzzer entry point of one target:
 * compiled once per target with -DNAS_FUZZ_FN=nas_fuzz_<name>
 * (tests/fuzz/CMakeLists.txt).
 */
#include <stddef.h>
#include <stdint.h>
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    NAS_FUZZ_FN(data, size);
    return 0;
}
