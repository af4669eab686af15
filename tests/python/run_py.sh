#!/bin/sh
# run_py.sh SCRIPT ARGS...: runs a test script with Debian's /usr/bin/python3, which must have
# numpy (Debian package python3-numpy); without it the test is skipped (exit 77) and says why.
py=/usr/bin/python3
if ! [ -x "$py" ] || ! "$py" -c 'import numpy' >/dev/null 2>&1; then
    echo "skipped: /usr/bin/python3 with numpy not found (Debian package python3-numpy)"
    exit 77
fi
exec "$py" "$@"
