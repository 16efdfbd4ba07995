#!/usr/bin/env bash
# Build the wheel and check what it ships (issue 14, item 7): py.typed, the installed templates,
# the licence file, and METADATA's PEP 639 License-Expression, project URLs and extras; and what it
# must not ship (issue 39): benchmark code, which lives in benchmarks/ beside hybrid_es/ (a
# `benchmarks` folder anywhere in the wheel, or a bench*.py module).
#
#   scripts/check_wheel.sh [OUT]   builds into OUT (default: a temporary folder), prints a summary
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="$("$ROOT/scripts/setup.sh")"
OUT="${1:-$(mktemp -d)}"
"$VENV/bin/pip" wheel -q --no-deps -w "$OUT" "$ROOT" >&2
WHEEL="$(ls "$OUT"/hybrid_es-*.whl)"
"$VENV/bin/python" - "$WHEEL" <<'PY'
import re
import sys
import zipfile
from email.parser import Parser

wheel = zipfile.ZipFile(sys.argv[1])
names = wheel.namelist()
meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
meta = Parser().parsestr(wheel.read(meta_name).decode())
problems = []
if "hybrid_es/py.typed" not in names:
    problems.append("hybrid_es/py.typed is missing")
templates = [n for n in names if n.startswith("hybrid_es/_es_templates/") and n.endswith(".json")]
if not templates:
    problems.append("no es_templates under hybrid_es/_es_templates/")
if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
    problems.append("the LICENSE file is missing from .dist-info/licenses/")
if meta["License-Expression"] != "Apache-2.0":
    problems.append(f"License-Expression is {meta['License-Expression']!r}")
urls = meta.get_all("Project-URL") or []
if not urls:
    problems.append("no Project-URL")
extras = meta.get_all("Provides-Extra") or []
for extra in ("cli", "models", "adapters", "all"):
    if extra not in extras:
        problems.append(f"no {extra} extra")
bench = [n for n in names if re.search(r"(^|/)benchmarks/|(^|/)bench[^/]*\.py$", n)]
if bench:
    problems.append(f"benchmark code in the wheel: {', '.join(bench)}")
requires = [r for r in meta.get_all("Requires-Dist") or [] if "extra ==" not in r]
if any(r.startswith(("typer", "rich")) for r in requires):
    problems.append(f"typer or rich in the base requirements: {requires}")
print(f"{sys.argv[1]}: {len(names)} files, {len(templates)} templates, {len(bench)} benchmark files")
print(f"Metadata-Version {meta['Metadata-Version']}, License-Expression {meta['License-Expression']}")
for url in urls:
    print(f"Project-URL {url}")
print("extras:", ", ".join(extras))
if problems:
    sys.exit("check_wheel: " + "; ".join(problems))
print("check_wheel: ok")
PY
