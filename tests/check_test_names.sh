#!/usr/bin/env bash
# ctest names a Catch test case after its name up to a ';' (CMake's list separator) and runs that
# prefix as the filter: it matches no test case and passes without running anything. Fails, naming
# them, when a TEST_CASE name in tests/ holds a semicolon.
set -euo pipefail
cd "$(dirname "$0")"
if grep -rnE --include='*.cpp' 'TEST_CASE\("([^"\\]|\\.)*;' .; then
  echo "check_test_names: the test cases above hold a ';' in their names: ctest would run none of them" >&2
  exit 1
fi
