#!/usr/bin/env bash
# Replaces the section NAME of a markdown FILE (the lines between "<!-- NAME: begin -->" and
# "<!-- NAME: end -->") with standard input; appends the section when the file lacks it. The
# scripts that regenerate docs/accuracy.md each own one section.
# Usage: some-command | scripts/doc-section.sh FILE NAME
set -euo pipefail
file=$1
name=$2
content=$(mktemp)
out=$(mktemp)
trap 'rm -f "$content" "$out"' EXIT
cat > "$content"
begin="<!-- $name: begin -->"
end="<!-- $name: end -->"
touch "$file"
if grep -qF "$begin" "$file"; then
  awk -v begin="$begin" -v end="$end" -v content="$content" '
    $0 == begin { print; while ((getline line < content) > 0) print line; skip = 1; next }
    $0 == end { skip = 0 }
    !skip { print }' "$file" > "$out"
else
  { cat "$file"; echo; echo "$begin"; cat "$content"; echo "$end"; } > "$out"
fi
cat "$out" > "$file"
