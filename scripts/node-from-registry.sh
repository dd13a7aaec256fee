#!/usr/bin/env bash
# Installs a pinned Node.js from the npm registry's `node-linux-<arch>` package into .node/<version>
# of this checkout (ignored by git) and prints the folder that holds bin/node and include/node.
#
#   scripts/node-from-registry.sh 22        # the pinned floor (latest 22.x)
#   scripts/node-from-registry.sh 26        # the pinned current LTS
#
# Use it as:   dir=$(scripts/node-from-registry.sh 26)
#              export PATH="$dir/bin:$PATH" npm_config_nodedir="$dir"
# (npm_config_nodedir makes native addons build against these headers, not a download.)
#
# Needs any working `npm` (the machine's own, even on an end-of-life Node) and Linux x64 or arm64.
# The tarball is checked against the sha512 pinned below before it is unpacked.
set -euo pipefail
cd "$(dirname "$0")/.."

major="${1:?usage: scripts/node-from-registry.sh 22|26}"
case "$major" in
  22) version=22.23.5
      x64=sha512-3jhC+wcoWxKZxcRqF2sUSl0c9HEXFnur/nuIPx6O6CWKV0jOUWQm7Htw5SuXqqlMCEhi0cJqybFPEb5hhcBiMw==
      arm64=sha512-e1LOUGKVruPGuLVutn8+Cgm5pI1APm4Kvh+zbb/qe/ZpD9s+TQby5iUgZOWmPpbSKpj0Td8DP1N0NEnXasHizg== ;;
  26) version=26.12.1
      x64=sha512-jk5LMAmgHlPlPMWpsUrSOqNaEZG+11UNd35hWQ+p5/XGaelWuTqJ69IcAy/5xtPPN4d5ZRBNOGB6gLMCh2kL9A==
      arm64=sha512-8Oxs6Y7rDcKufVIM/zYRSwytj46WOrZk7yFCLTKDcs17bBjAeD9HMAqo97hMfMyxozIud0S4vZCs5WB/3iavNQ== ;;
  *) echo "node-from-registry: no pinned Node $major (pinned: 22, 26)" >&2; exit 2 ;;
esac
case "$(uname -m)" in
  x86_64) arch=x64; want=$x64 ;;
  aarch64|arm64) arch=arm64; want=$arm64 ;;
  *) echo "node-from-registry: no node-linux package for $(uname -m)" >&2; exit 2 ;;
esac
[ "$(uname -s)" = Linux ] || { echo "node-from-registry: Linux only; elsewhere install Node $major from nodejs.org" >&2; exit 2; }

dest=".node/$version"
if [ ! -x "$dest/bin/node" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "node-linux-$arch@$version" >/dev/null)
  tgz="$tmp/node-linux-$arch-$version.tgz"
  got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 | tr -d '\n')"
  if [ "$got" != "$want" ]; then
    echo "node-from-registry: node-linux-$arch@$version does not match the pinned sha512; refusing it" >&2
    exit 1
  fi
  mkdir -p "$tmp/x" && tar -xzf "$tgz" -C "$tmp/x"
  rm -rf "$dest" && mkdir -p .node && mv "$tmp/x/package" "$dest"
fi
"$dest/bin/node" --version >/dev/null
echo "$PWD/$dest"
