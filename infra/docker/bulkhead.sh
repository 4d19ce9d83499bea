#!/bin/sh
# `bulkhead` in the jobs image: the bundled CLI.
exec node /app/main.js "$@"
