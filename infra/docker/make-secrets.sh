#!/bin/sh
# Writes a random password for PostgreSQL's superuser, each deployable's login role and the audit
# sealer's, and the audit key, into infra/docker/secrets/, where compose.yaml reads them. Leaves
# existing files alone.
set -eu
dir="$(dirname "$0")/secrets"
mkdir -p "$dir"
chmod 700 "$dir"
umask 022 # the files are mounted one by one into containers that run as uid 1000
# The secret files compose.yaml declares (`  <name>: { file: ./secrets/<name> }`), so a server added
# by `bulkhead new server` gets its password here without this script changing.
names=$(sed -n 's/^  \([a-z0-9_]*\): { file: \.\/secrets\/\1 }$/\1/p' "$(dirname "$0")/compose.yaml")
[ -n "$names" ] || { echo "make-secrets.sh: no secret files found in compose.yaml" >&2; exit 1; }
for name in $names; do
  if [ -s "$dir/$name" ]; then
    echo "kept    $dir/$name"
  else
    head -c 24 /dev/urandom | base64 | tr -d '/+=\n' >"$dir/$name"
    echo "created $dir/$name"
  fi
done
