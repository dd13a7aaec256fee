#!/usr/bin/env bash
# Installs, from Debian's archive (apt, not pip), what the A2A conformance kit (a2aproject/a2a-tck,
# v0.3 line: the 0.3.x branch, tag 0.3.0.beta4) needs to run its mandatory suite against
# a2a-mailbridge with the system Python (/usr/bin/python3). Used by scripts/conformance-tck.ts.
# With --v1 <venv dir>: a venv for the v1.0 kit (scripts/conformance-tck10.ts); see below.
# Debian bookworm; run as root (or with sudo).
#
# The kit's requirements.txt / pyproject.toml, and what bookworm has for each:
#   pytest>=7.0.0                -> python3-pytest 7.2.1
#   pytest-asyncio>=0.20.0       -> python3-pytest-asyncio 0.20.3
#   httpx>=0.24.0                -> python3-httpx 0.23.3 (older than asked; the JSON-RPC client works with it)
#   requests>=2.31.0             -> python3-requests 2.28.1 (older than asked)
#   responses>=0.23.0            -> python3-responses 0.18.0 (older; not used by the mandatory suite)
#   deepdiff>=6.7.1              -> python3-deepdiff 6.2.2 (older; not used by the mandatory suite)
#   jsonschema>=4.20.0           -> python3-jsonschema 4.10.3 (older)
#   packaging>=21.0              -> python3-packaging 23.0
#   PyYAML>=5.0.0                -> python3-yaml 6.0
#   python-dotenv>=1.0.0         -> python3-dotenv 0.21.0 (older; run_tck.py only calls load_dotenv)
#   grpcio>=1.62.0               -> python3-grpcio 1.51.1 (older; imported by one mandatory module, gRPC unused)
#   protobuf>=4.25.0             -> python3-protobuf 3.21.12 (older; the kit's gRPC stubs need >= 5.26)
#   pyOpenSSL>=23.0.0            -> python3-openssl 23.0.0
#   googleapis-common-protos     -> NOT IN DEBIAN: only the kit's gRPC stubs import google.api.*;
#                                   the bridge has no gRPC interface, so the kit never loads them
#   pytest-json-report           -> NOT IN DEBIAN: only for run_tck.py --compliance-report; the
#                                   script reads pytest's built-in --junitxml instead
#   pytest-html                  -> NOT IN DEBIAN: only for run_tck.py --report (not used)
#   types-requests               -> NOT IN DEBIAN: type stubs, not needed to run
#   grpcio-tools                 -> python3-grpc-tools exists but is only for regenerating stubs (not installed)
#
# The mandatory suite itself only imports pytest, httpx, requests, dotenv, grpc, google.protobuf and
# OpenSSL (all of tests/mandatory/ is imported at collection, before the marker filter);
# `--minimal` installs just those (python3-deepdiff alone pulls in numpy and pandas).
set -euo pipefail

MINIMAL_PACKAGES=(
  python3
  python3-pytest
  python3-httpx
  python3-requests
  python3-dotenv
  python3-grpcio
  python3-protobuf
  python3-openssl
)
PACKAGES=(
  python3
  python3-pytest
  python3-pytest-asyncio
  python3-httpx
  python3-requests
  python3-responses
  python3-deepdiff
  python3-jsonschema
  python3-packaging
  python3-yaml
  python3-dotenv
  python3-grpcio
  python3-protobuf
  python3-openssl
)

MODS='"pytest", "pytest_asyncio", "httpx", "requests", "responses", "deepdiff", "jsonschema", "packaging", "yaml", "dotenv", "grpc", "google.protobuf", "OpenSSL"'

# The v1.0 kit (branch 1.0-dev, pyproject.toml) needs newer versions than Debian bookworm has:
# pytest>=8 (bookworm: 7.2.1), httpx>=0.27 (0.23.3), protobuf>=4.25 and googleapis-common-protos
# (its generated a2a_pb2 is imported by tests/compatibility/conftest.py; bookworm: 3.21, none),
# jsonschema>=4.21 (4.10.3). So `--v1 <dir>` makes a venv with Debian's python3-venv and installs
# them with pip from whatever package index pip is configured with on this machine. pytest-html,
# gherkin-official and Jinja2 are left out: only run_tck.py's HTML report and the kit's SUT code
# generator use them; scripts/conformance-tck10.ts runs pytest directly.
if [ "${1:-}" = "--v1" ]; then
  VENV="${2:?usage: $0 --v1 <venv dir>}"
  SUDO=()
  if [ "$(id -u)" -ne 0 ]; then SUDO=(sudo); fi
  DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y --no-install-recommends python3 python3-venv
  /usr/bin/python3 -m venv "$VENV"
  "$VENV/bin/pip" install --retries 0 --timeout 20 'pytest>=8.0' 'pytest-asyncio>=0.23' 'httpx>=0.27' 'grpcio>=1.60' 'protobuf>=4.25' 'googleapis-common-protos>=1.62' 'jsonschema>=4.21'
  "$VENV/bin/python" -c 'import pytest, pytest_asyncio, httpx, grpc, google.protobuf, google.api, jsonschema; print("v1.0 kit imports found:", pytest.__version__)'
  exit 0
fi
case "${1:-}" in
  --minimal)
    PACKAGES=("${MINIMAL_PACKAGES[@]}")
    MODS='"pytest", "httpx", "requests", "dotenv", "grpc", "google.protobuf", "OpenSSL"'
    ;;
  '') ;;
  *) echo "usage: $0 [--minimal] | --v1 <venv dir>" >&2; exit 2 ;;
esac

SUDO=()
if [ "$(id -u)" -ne 0 ]; then SUDO=(sudo); fi

"${SUDO[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y --no-install-recommends "${PACKAGES[@]}"

# What the mandatory suite imports, checked with the interpreter the script will use.
/usr/bin/python3 - <<PY
import importlib, sys
mods = [${MODS}]
missing = []
for m in mods:
    try:
        importlib.import_module(m)
    except Exception as e:  # noqa: BLE001
        missing.append(f"{m}: {e}")
print(f"/usr/bin/python3 {sys.version.split()[0]}: " + ("all kit imports found" if not missing else "missing " + "; ".join(missing)))
sys.exit(1 if missing else 0)
PY
