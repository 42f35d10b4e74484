// libFuzzer's driver (compiler-rt, linked by -sanitize=fuzzer), declared for Swift: the
// harnesses' entry points hand it argc/argv and their LLVMFuzzerTestOneInput (see Fuzz/README.md).
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
