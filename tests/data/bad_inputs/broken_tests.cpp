// SPDX-License-Identifier: MIT
// Input of bad_inputs_catalogue_check.cmake's own test: BI04 has no row, BI-03 no test.
TEST(BadInputs, BI01_Fine) {}
TEST(BadInputs, BI04_Extra) {}
