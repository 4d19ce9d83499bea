#!/bin/sh
# bulkhead-setup: what runs once before the servers start (compose's `setup`, or by hand).
# Connects as the owner (DATABASE_URL, PGPASSWORD_FILE), then:
#   1. bulkhead db migrate    the schema
#   2. bulkhead db roles      the NOLOGIN group roles, each with exactly its deployable's rights
#   3. for each argument <deployable>=<login role>:<password file>
#      bulkhead db roles --login <deployable> <login role> --password-file <file>
#      (creates the login role if missing, sets its password, makes it a member of the group)
# Every step is idempotent: running it again changes nothing or resets passwords to the files.
set -eu
bulkhead db migrate
bulkhead db roles
for login in "$@"; do
  deployable=${login%%=*}
  rest=${login#*=}
  role=${rest%%:*}
  file=${rest#*:}
  if [ "$deployable" = "$login" ] || [ "$role" = "$rest" ] || [ -z "$role" ] || [ -z "$file" ]; then
    echo "bulkhead-setup: \"$login\" is not <deployable>=<login role>:<password file>" >&2
    exit 2
  fi
  bulkhead db roles --login "$deployable" "$role" --password-file "$file"
done
echo "bulkhead-setup: schema migrated, group roles granted, $# login role(s) ready"
