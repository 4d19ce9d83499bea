#!/bin/sh
# Runs the command given (the server, or the CLI in the jobs image) after one optional step:
# a secret may come as a file (a compose or Kubernetes secret) instead of a variable.
#   PGPASSWORD_FILE          → PGPASSWORD, which postgres.js uses when DATABASE_URL has no password
#   BULKHEAD_AUDIT_KEY_FILE  → BULKHEAD_AUDIT_KEY (the audit sealer and verifier)
# `exec` hands over the process, so the signals tini forwards reach Node itself.
set -eu
for name in PGPASSWORD BULKHEAD_AUDIT_KEY; do
  file=$(printenv "${name}_FILE" || true)
  [ -n "$file" ] || continue
  if [ ! -r "$file" ]; then
    echo "bulkhead: ${name}_FILE=$file is not a readable file" >&2
    exit 1
  fi
  value=$(head -n 1 "$file")
  export "$name=$value"
  unset "${name}_FILE"
done
exec "$@"
