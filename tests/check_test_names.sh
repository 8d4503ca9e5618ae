#!/usr/bin/env bash
# ctest names a Catch test case after its name up to a ';' (CMake's list separator) and runs that
# prefix as the filter: it matches no test case and passes without running anything. A name that
# starts with '-' reaches Catch as an option, which it refuses: the test fails without running.
# Fails, naming them, when a TEST_CASE name in tests/ holds a semicolon or starts with a dash.
set -euo pipefail
cd "$(dirname "$0")"
status=0
if grep -rnE --include='*.cpp' 'TEST_CASE\("([^"\\]|\\.)*;' .; then
  echo "check_test_names: the test cases above hold a ';' in their names: ctest would run none of them" >&2
  status=1
fi
if grep -rnE --include='*.cpp' 'TEST_CASE\("-' .; then
  echo "check_test_names: the test cases above start with '-': Catch would read the name as an option" >&2
  status=1
fi
exit $status
