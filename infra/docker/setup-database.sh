#!/bin/sh
# bulkhead-setup: what runs once before the servers start (compose's `setup`, or by hand).
# Connects as the superuser (DATABASE_URL, PGPASSWORD_FILE), the only step that does, then:
#   1. bulkhead db owner      hands the database to bulkhead_owner, a role that is no superuser (a
#                             login with the password in BULKHEAD_OWNER_PASSWORD_FILE, when set)
#   2. bulkhead db migrate    the schema, created as bulkhead_owner
#   3. bulkhead db roles      the NOLOGIN group roles, each with exactly its deployable's rights
#   4. for each argument <deployable>=<login role>:<password file>
#      bulkhead db roles --login <deployable> <login role> --password-file <file>
#      (creates the login role if missing, sets its password and connection limit, makes it a member
#      of the group)
# Every step is idempotent: running it again changes nothing or resets passwords to the files.
set -eu
if [ -n "${BULKHEAD_OWNER_PASSWORD_FILE:-}" ]; then
  bulkhead db owner --password-file "$BULKHEAD_OWNER_PASSWORD_FILE"
else
  bulkhead db owner
fi
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
echo "bulkhead-setup: schema owned by bulkhead_owner and migrated, group roles granted, $# login role(s) ready"
