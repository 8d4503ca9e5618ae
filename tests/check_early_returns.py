#!/usr/bin/env python3
"""Fails, naming file and line, when a TEST_CASE in tests/ returns early: a `return` in a test
case's body outside a lambda (`if (!ran) return;`, `WARN(...); return;`). ctest reports such a
test Passed though it asserted nothing; a test whose precondition cannot hold here ends with
CPPLAN_SKIP(reason) instead (tests/support/skip.h), which ctest reports Skipped.

`--self-test` checks the checker on snippets that must and must not be reported."""

import pathlib
import re
import sys

# The text just before a lambda's body: `[captures](parameters) mutable noexcept -> type`.
LAMBDA_HEAD = re.compile(r"\]\s*(\((?:[^()]|\([^()]*\))*\))?\s*(mutable\s*)?(noexcept\s*)?(->\s*[\w:<>,\s&*]+)?$")
RETURN = re.compile(r"\breturn\b")


def blank_comments_and_literals(text):
    """`text` with comments, string and character literals replaced by spaces (newlines kept), so
    that braces and `return` inside them do not count."""
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|R"(\w*)\(.*?\)\1"|"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'', re.S)
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def matching(text, start, opening, closing):
    """The index of the bracket closing the one at `start`."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == opening:
            depth += 1
        elif text[i] == closing:
            depth -= 1
            if depth == 0:
                return i
    return len(text) - 1


def test_case_bodies(text):
    """(start, end) of each TEST_CASE's body, its braces excluded."""
    for m in re.finditer(r"\bTEST_CASE\s*\(", text):
        after_arguments = matching(text, m.end() - 1, "(", ")") + 1
        body = text.index("{", after_arguments)
        yield body + 1, matching(text, body, "{", "}")


def early_returns(text):
    """Line numbers of the `return`s in test case bodies that no lambda encloses."""
    clean = blank_comments_and_literals(text)
    lines = []
    for start, end in test_case_bodies(clean):
        returns = {m.start() for m in RETURN.finditer(clean, start, end)}
        in_lambda = []  # one entry per open brace: whether it opened a lambda's body
        for i in range(start, end):
            if clean[i] == "{":
                in_lambda.append(bool(LAMBDA_HEAD.search(clean[max(start, i - 300):i].rstrip())))
            elif clean[i] == "}" and in_lambda:
                in_lambda.pop()
            elif i in returns and not any(in_lambda):
                lines.append(clean.count("\n", 0, i) + 1)
    return lines


def check_tree(root):
    failures = []
    for path in sorted(root.rglob("*.cpp")) + sorted(root.rglob("*.h")):
        if "data" in path.relative_to(root).parts:
            continue
        for line in early_returns(path.read_text()):
            failures.append(f"{path.relative_to(root)}:{line}")
    for f in failures:
        print(f"{f}: a test case returns early; assert its subject, or CPPLAN_SKIP(reason) (tests/support/skip.h)")
    return 1 if failures else 0


SELF_TEST = {
    # snippet: the lines reported
    'TEST_CASE("a", "[x]") {\n  if (!ran) {\n    WARN("no Gloo");\n    return;\n  }\n  CHECK(1);\n}\n': [4],
    'TEST_CASE("b", "[x]") {\n  if (cores < 2) return;  // nothing\n  CHECK(1);\n}\n': [2],
    'TEST_CASE("c", "[x]") {\n  SECTION("s") {\n    return;\n  }\n}\n': [3],
    'TEST_CASE("d", "[x]") {\n  auto f = [&](int a, const std::vector<int>& v) {\n    if (a) return;\n  };\n'
    '  std::thread t([] { return; });\n  auto g = [&]() -> int { return 1; };\n  CHECK(1);\n}\n': [],
    'TEST_CASE("e", "[x]") {\n  // return; in a comment\n  CHECK(s == "return;");\n  CPPLAN_SKIP("no");\n}\n': [],
    'void helper() {\n  return;\n}\nTEST_CASE("f ( { ", "[x]") {\n  returned = 1;\n  CHECK(returned);\n}\n': [],
}


def self_test():
    failed = 0
    for snippet, expected in SELF_TEST.items():
        got = early_returns(snippet)
        if got != expected:
            print(f"self-test: expected lines {expected}, got {got} for:\n{snippet}")
            failed = 1
    return failed


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    sys.exit(check_tree(pathlib.Path(__file__).resolve().parent))
