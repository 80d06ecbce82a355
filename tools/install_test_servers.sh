#!/usr/bin/env bash
# Install the real OpenAI-compatible embedding servers the provider tests run against, each in
# its own virtual environment beside .venv (git-ignored):
#   .venv-infinity   infinity-emb[server,torch]==0.0.78 on torch 2.13.0 CPU   (always)
#   .venv-max        Modular MAX, max[serve]==26.7.0                          (with --max)
# Idempotent: an environment that is installed and starts is left alone. Exits non-zero on failure.
#
# torch comes from the CPU wheel this machine kind keeps in pip's find-links: the
# constraints below pin torch==2.13.0+cpu, so pip fails rather than pull the multi-GB CUDA build
# from PyPI when that wheel is missing. The other versions are the set that resolved and was
# tested here, pinned so a new release upstream cannot break the tests.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
WITH_MAX=0
for arg in "$@"; do
  case "$arg" in
    --max) WITH_MAX=1 ;;
    -h | --help) sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown option: $arg (use --max or --help)" >&2; exit 2 ;;
  esac
done

INFINITY_REQUIREMENTS=("infinity-emb[server,torch]==0.0.78" "torch==2.13.0")
INFINITY_CONSTRAINTS='annotated-doc==0.0.7
annotated-types==0.8.0
anyio==4.16.0
backoff==2.2.1
certifi==2026.10.18
charset-normalizer==3.5.2
click==8.1.8
cloudpickle==3.1.2
distro==1.9.0
fastapi==0.165.0
filelock==4.2.11
fsspec==2026.9.0
h11==0.16.0
hf-xet==1.8.0
httptools==0.9.0
huggingface-hub==0.36.2
idna==3.20
infinity-emb==0.0.78
jinja2==3.1.6
joblib==1.6.0
markdown-it-py==4.3.0
markupsafe==3.0.4
mdurl==0.1.2
mpmath==1.3.0
narwhals==2.29.0
networkx==3.6.1
numpy==1.26.4
opentelemetry-api==1.45.2
orjson==3.13.0
packaging==26.3
pillow==13.0.0
posthog==7.91.1
prometheus-fastapi-instrumentator==8.1.0
prometheus-client==0.26.0
pydantic==2.14.3
pydantic-core==2.50.4
pygments==2.21.0
python-dotenv==1.2.4
pyyaml==6.0.3
regex==2026.11.15
requests==2.34.2
rich==13.9.4
safetensors==0.8.0
scikit-learn==1.9.1
scipy==1.17.1
sentence-transformers==3.4.1
setuptools==84.2.1
shellingham==1.5.4
starlette==1.10.0
sympy==1.14.0
threadpoolctl==3.8.0
tokenizers==0.22.2
torch==2.13.0+cpu
tqdm==4.70.1
transformers==4.57.6
typer==0.12.5
typing-inspection==0.4.5
typing-extensions==4.16.0
urllib3==2.8.0
uvicorn==0.32.1
uvloop==0.23.0
watchfiles==1.3.0
websockets==17.4'

MAX_REQUIREMENTS=("max[serve]==26.7.0")
# pip cannot find on its own the OpenTelemetry set that max's opentelemetry-sdk<1.36 allows
MAX_CONSTRAINTS='opentelemetry-api==1.35.0
opentelemetry-sdk==1.35.0
opentelemetry-proto==1.35.0
opentelemetry-exporter-otlp-proto-common==1.35.0
opentelemetry-exporter-otlp-proto-grpc==1.35.0
opentelemetry-exporter-otlp-proto-http==1.35.0
opentelemetry-exporter-prometheus==0.56b0
opentelemetry-semantic-conventions==0.56b0
torch==2.13.0+cpu'

# install NAME VENV CHECK-COMMAND: create VENV and pip-install the NAME_REQUIREMENTS under
# NAME_CONSTRAINTS, unless its stamp matches them and CHECK-COMMAND (run in VENV/bin) works.
install() {
  local name="$1" venv="$ROOT/$2" check="$3"
  local -n requirements="${name}_REQUIREMENTS"
  local -n constraints="${name}_CONSTRAINTS"
  local spec stamp="$venv/.installed" start
  spec="$(printf '%s\n' "${requirements[@]}" "$constraints" | sha256sum | cut -d' ' -f1)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$spec" ] \
    && (cd "$venv/bin" && eval "./$check") >/dev/null 2>&1; then
    echo "$2: already installed ($(du -sh "$venv" | cut -f1))"
    return 0
  fi
  start=$(date +%s)
  echo "$2: installing ${requirements[*]} ..."
  rm -rf "$venv"
  "$PYTHON" -m venv "$venv"
  printf '%s\n' "$constraints" >"$venv/constraints.txt"
  if ! "$venv/bin/python" -m pip install --quiet --no-input \
    -c "$venv/constraints.txt" "${requirements[@]}" \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2); then
    echo "$2: pip install failed (is the torch 2.13.0+cpu wheel in pip's find-links? see 'pip config list')" >&2
    return 1
  fi
  if ! output="$(cd "$venv/bin" && eval "./$check" 2>&1)"; then
    printf '%s\n' "$output" | tail -20 >&2
    echo "$2: installed, but '$check' fails" >&2
    return 1
  fi
  echo "$spec" >"$stamp"
  echo "$2: installed in $(($(date +%s) - start)) s ($(du -sh "$venv" | cut -f1))"
}

total=$(date +%s)
install INFINITY .venv-infinity "infinity_emb v2 --help"
if [ "$WITH_MAX" = 1 ]; then
  install MAX .venv-max "max serve --help"
fi
echo "test servers ready in $(($(date +%s) - total)) s"
