// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A statically linked program (docs/bad-inputs.md): there is no dynamic
// loader to preload heapgate into, so `heapgate record` refuses it.
int main() { return 0; }
