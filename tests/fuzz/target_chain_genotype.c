/*
 * tests/fuzz/target_chain_genotype.c - genotype strings through a chain
 * space's parser (nas_space_parse on a NAS_SPACE_CHAIN space, space/chain.c).
 * Byte 0 bit 0 picks one of two chain spaces declared below (built once per
 * process: a config parse per input would hide the genotype parser); the
 * rest is the string. Promises checked: those of every space type
 * (nas_fuzz_genotype_roundtrip: NAS_EFORMAT with a message, or a
 * string that formats back and re-parses to the same tokens, with a
 * canonical key), and a parsed genotype is valid in the space.
 */
#include <stdlib.h>
#include <string.h>
#include "nas/space.h"
#include "fuzz.h"

/* Every decision kind: channel and depth choices, SE choice, first-layer
 * ops, zero and skip ops, three activations (tests/data/conf/chain_mixed.conf). */
static const char MIXED[] =
    "space: { type = \"chain\"; input = [3, 20, 20]; classes = 7; se_gate = \"sigmoid\";\n"
    "  stem = { kernel = 5; channels = 8; stride = 2; activation = \"hswish\"; };\n"
    "  stages = (\n"
    "    { channels = [8, 12]; stride = 1; layers = 3; depth = [1, 3];\n"
    "      ops = [\"mb2_k3\", \"conv_k1\", \"skip\"]; activation = \"relu\"; },\n"
    "    { channels = 16; stride = 2; layers = 3; depth = [2, 3]; se = \"choice\";\n"
    "      first_ops = [\"mb3_k5\", \"skip\"]; ops = [\"mb1_k3\", \"mb3_k5\", \"zero\"];\n"
    "      activation = \"hswish\"; },\n"
    "    { channels = [16, 24]; stride = 1; layers = 2;\n"
    "      ops = [\"conv_k3\", \"mb6_k7\", \"skip\"]; se = true; activation = \"relu6\"; });\n"
    "  head = { channels = 32; mix = 48; activation = \"hswish\"; pool = \"avg\"; dropout = 0.2; };\n"
    "};\n";
/* A long one: five stages of four layers, every MBConv kernel and expansion. */
static const char LONG[] =
    "space: { type = \"chain\"; input = [1, 28, 28]; classes = 10;\n"
    "  stem = { kernel = 3; channels = 8; stride = 1; activation = \"relu\"; };\n"
    "  stages = (\n"
    "    { channels = 8; stride = 1; layers = 1; ops = [\"mb1_k3\"]; },\n"
    "    { channels = [12, 16]; stride = 2; layers = 4; depth = [2, 4];\n"
    "      ops = [\"mb3_k3\", \"mb3_k5\", \"mb3_k7\", \"mb4_k3\", \"mb4_k5\", \"mb4_k7\", \"mb6_k3\",\n"
    "             \"mb6_k5\", \"mb6_k7\"]; se = \"choice\"; activation = \"hswish\"; },\n"
    "    { channels = 24; stride = 2; layers = 4; depth = [2, 4];\n"
    "      first_ops = [\"mb3_k3\", \"mb6_k7\"]; ops = [\"mb3_k3\", \"mb6_k7\", \"skip\", \"zero\"];\n"
    "      activation = \"relu6\"; },\n"
    "    { channels = [24, 32]; stride = 1; layers = 4; depth = [2, 4];\n"
    "      ops = [\"mb3_k5\", \"mb6_k3\"]; se = true; },\n"
    "    { channels = 32; stride = 1; layers = 4; depth = [2, 4]; ops = [\"mb6_k5\", \"conv_k3\"]; });\n"
    "  head = { channels = 64; activation = \"hswish\"; pool = \"avg\"; };\n"
    "};\n";

static nas_space *chain_space(int which)
{
    static nas_space *cache[2]; /* built once per process; the fuzzer never frees them */
    if (!cache[which]) {
        nas_config *cfg = malloc(sizeof *cfg);
        NAS_FUZZ_CHECK(cfg != NULL, "malloc");
        nas_error err;
        NAS_FUZZ_CHECK(nas_config_parse_string(which ? LONG : MIXED, "chain.conf", cfg, &err) ==
                           NAS_OK, "space %d: %s", which, err.msg);
        NAS_FUZZ_CHECK(nas_space_create(&cfg->space, &cache[which], &err) == NAS_OK,
                       "space %d: %s", which, err.msg);
        free(cfg);
    }
    return cache[which];
}

int nas_fuzz_chain_genotype(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const nas_space *sp = chain_space(data[0] & 1);
    char *str = nas_fuzz_cstr(data + 1, size - 1);
    nas_genotype g;
    int rc = nas_fuzz_genotype_roundtrip(sp, str, &g);
    if (rc == NAS_OK)
        NAS_FUZZ_CHECK(nas_space_is_valid(sp, &g), "'%s' parsed to an invalid genotype", str);
    free(str);
    return rc;
}
