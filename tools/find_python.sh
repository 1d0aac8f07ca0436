#!/usr/bin/env bash
# Print the path of a Python interpreter of version $1 (default 3.12) that really runs:
# one on PATH, else one that pyenv holds (its shim refuses versions not selected). Without one:
# with --strict print nothing and exit 1; otherwise fall back to python3.11 (or python3) with a
# warning on stderr (TensorFlow 2.19 supports 3.11 too). Never silent.
want=${1:-3.12}
works() { "$1" -c "import sys; assert sys.version_info[:2] == tuple(map(int, '$2'.split('.')))" 2>/dev/null; }
for candidate in "$(command -v "python$want" 2>/dev/null)" \
                 $(ls -d "$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"/versions/"$want".*/bin/python"$want" 2>/dev/null | sort -V -r); do
  if [ -n "$candidate" ] && works "$candidate" "$want"; then echo "$candidate"; exit 0; fi
done
if [ "$2" = "--strict" ]; then exit 1; fi
fallback=$(command -v python3.11 || command -v python3)
echo "find_python: no working Python $want here; using $("$fallback" --version 2>&1) ($fallback) instead." >&2
echo "$fallback"
