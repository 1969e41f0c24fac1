// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
