#!/usr/bin/env python3
"""Prints the `[defaults]` table (and `none = [...]`) of a class file from the constructor defaults
that shared/reference/diffusers-transformers.md lists for CLASS: the start of a new
profiles/classes/CLASS.toml (docs/profiles.md, "A diffusers class as data").

usage: scripts/class-defaults.py CLASS [REFERENCE]
"""
import ast
import sys
from pathlib import Path


def class_fields(reference: Path, name: str) -> str:
    lines = reference.read_text().splitlines()
    for i, line in enumerate(lines):
        if line.startswith(f"## {name} "):
            return lines[i + 1].strip().strip("`")
    sys.exit(f"{name}: not a class of {reference}")


def toml_value(node: ast.AST):
    v = ast.literal_eval(node)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, (list, tuple)) and all(isinstance(e, int) and not isinstance(e, bool) for e in v):
        return "[" + ", ".join(str(e) for e in v) + "]"
    return None  # a list of floats or strings: no expression reads it


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    here = Path(__file__).resolve().parent.parent
    reference = Path(sys.argv[2]) if len(sys.argv) > 2 else here.parent / "shared/reference/diffusers-transformers.md"
    call = ast.parse(f"f({class_fields(reference, sys.argv[1])})", mode="eval").body
    none, rows = [], []
    for kw in call.keywords:
        if isinstance(kw.value, ast.Constant) and kw.value.value is None:
            none.append(kw.arg)
            continue
        value = toml_value(kw.value)
        rows.append(f"{kw.arg} = {value}" if value is not None else f"# {kw.arg} = {ast.unparse(kw.value)} (not read)")
    print("none = [" + ", ".join(f'"{n}"' for n in none) + "]  # fields whose default is None")
    print("\n[defaults]  # the constructor's, diffusers 58eb52c (shared/reference/diffusers-transformers.md)")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
