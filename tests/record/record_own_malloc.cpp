// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A program with its own malloc, as one linked with tcmalloc or mimalloc has
// (docs/bad-inputs.md): `heapgate record` refuses it. Forwards to glibc's.
#include <cstddef>

extern "C" void* __libc_malloc(std::size_t size);
extern "C" void* malloc(std::size_t size) { return __libc_malloc(size); }

int main() { return 0; }
