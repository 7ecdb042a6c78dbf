#!/bin/sh
# Runs a test program without privileges (as nobody, no capabilities) to check that the
# netns tier skips with a clear message instead of failing where it cannot run.
if [ "$(id -u)" -eq 0 ]; then
  exec setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all "$@"
fi
exec "$@"
